"""MemoryService: the one object that wires the store, short-term sessions, long-term memory,
recall, promotion, context assembly and the memory tools — what the HTTP API, the MCP server
and a Python agent all use.

>>> from kg.settings import Settings
>>> service = MemoryService.open(Settings(store=":memory:"))
>>> _ = service.start_session("s1", project="demo")
>>> service.remember("demo", "Tests use pytest", session_id="s1").content
'Tests use pytest'
>>> service.close()
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from kg.context import (
    ContextBuilder,
    ResponseProcessor,
    SessionHooks,
    TurnContext,
    format_for_prompt,
)
from kg.context.token_budget import DEFAULT_TOTAL
from kg.errors import KgError
from kg.graphs import long_term
from kg.longterm import LongTermMemory
from kg.longterm.errors import RecallUnavailableError
from kg.longterm.items import (
    Item,
    ItemHit,
    MemoryEntry,
    MemoryPage,
    item_content,
    item_of,
    list_memories,
    make_item,
    namespaces,
    recalled_items,
)
from kg.longterm.promotion import PromotionEngine, PromotionResult
from kg.longterm.tools import TOOL_DEFINITIONS, MemoryToolExecutor, ToolContext
from kg.memory import Memory
from kg.recall.catch_up import IndexCatchUp
from kg.recall.engine import MAX_LIMIT as RECALL_MAX_LIMIT
from kg.recall.engine import RecallEngine
from kg.recall.query_text import InvalidQueryError
from kg.recall.startup import open_recall
from kg.session_operations import PromotionReport, SessionOperations
from kg.settings import Settings
from kg.shortterm import SessionManager
from kg.store import Store, open_store
from kg.system_knowledge import ensure_ontology
from kg.terms import MemoryType, SourceType, parse_term, validate_identifier

__all__ = ["API_SESSION", "Hit", "MemoryService", "PromotionReport"]

# Memories written outside any agent session (HTTP or MCP remember without a session id) are
# asserted in this session, so every memory keeps a jido:assertedIn link.
API_SESSION = "api"
DEFAULT_FORGET_REASON = "forgotten on request"
# A query hint is usually the user's whole message; recall looks at its first 1,000 bytes.
MAX_HINT_CHARS = 250


class Hit(Protocol):
    """A recall hit: a memory and its score."""

    @property
    def memory(self) -> Memory:
        """The recalled memory."""
        ...

    @property
    def score(self) -> float:
        """Its relevance score (higher is better)."""
        ...


class MemoryService(SessionOperations):
    """The memory system of one store, safe to share between request threads."""

    def __init__(
        self,
        store: Store,
        *,
        long_term: LongTermMemory,
        recall_engine: RecallEngine | None = None,
        promotion: PromotionEngine | None = None,
        owns_store: bool = False,
        token_budget: int = DEFAULT_TOTAL,
        catch_up: IndexCatchUp | None = None,
    ) -> None:
        self.store = store
        self.catch_up = catch_up  # started by the caller; stopped by close()
        self.long_term = long_term
        self.recall_engine = recall_engine
        self.promotion = promotion if promotion is not None else PromotionEngine(long_term)
        self.sessions = SessionManager(on_close=self._on_close)
        self.builder = ContextBuilder(self.sessions, memories=self)
        self.processor = ResponseProcessor(self.sessions)
        self.hooks = SessionHooks(
            self.sessions, self.builder, processor=self.processor, token_budget=token_budget
        )
        self.tools = MemoryToolExecutor(long_term, recall_engine=recall_engine)
        self._owns_store = owns_store
        self._closing: dict[str, PromotionResult] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, settings: Settings, *, store: Store | None = None) -> MemoryService:
        """Open the configured store (unless given), long-term memory and the recall index."""
        owns = store is None
        store = store if store is not None else open_store(settings)
        ensure_ontology(store)
        recall = open_recall(settings, store)
        return cls(store, long_term=recall.long_term, recall_engine=recall.engine,
                   owns_store=owns, catch_up=recall.catch_up)

    def close(self) -> None:
        """Finish background work, flush recall counts; close the store if this opened it."""
        if self.catch_up is not None:
            self.catch_up.stop()
        self.hooks.close()
        self.long_term.close()
        if self.recall_engine is not None:
            self.recall_engine.index.close()
        if self._owns_store:
            self.store.close()

    # -- context assembly ---------------------------------------------------------------------

    def assemble_context(
        self, session_id: str, *, query_hint: str | None = None, token_budget: int = DEFAULT_TOTAL,
        include_memories: bool = True, base_prompt: str = "",
    ) -> TurnContext:
        """The budgeted context of the session and the system prompt rendered from it."""
        context = self.builder.build(
            session_id, token_budget=token_budget, query_hint=query_hint,
            include_memories=include_memories,
        )
        memory = format_for_prompt(context)
        prompt = "\n\n".join(part for part in (base_prompt.strip(), memory) if part)
        return TurnContext(prompt, context)

    def relevant_memories(
        self, project: str, *, query: str | None, min_confidence: float | None, limit: int
    ) -> list[Memory]:
        """MemorySource for ContextBuilder: recall with a query, the most confident without."""
        if query and self.recall_engine is not None:
            hint = query[:MAX_HINT_CHARS]
            try:
                hits = self.recall_engine.recall(
                    project, hint, min_confidence=min_confidence or 0.0, limit=limit
                )
            except KgError:
                hits = []  # e.g. a hint with no searchable word: fall through to no-hint
            if hits:
                return [hit.memory for hit in hits]
            if min_confidence is None:
                return []
        floor = min_confidence if min_confidence is not None else 0.0
        found = [m for m in self.long_term.memories(project) if m.confidence >= floor]
        found.sort(key=lambda m: (m.confidence, m.recorded_at), reverse=True)
        return found[:limit]

    # -- long-term memory ---------------------------------------------------------------------

    def remember(
        self, project: str, content: str, *, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        session_id: str | None = None, agent: str | None = None, rationale: str | None = None,
    ) -> Memory:
        """Write a memory into the project (merged into an equivalent one if it exists)."""
        outcome = self.long_term.remember(
            content, project=project, session=session_id or API_SESSION, type=memory_type,
            confidence=confidence, source_type=source_type, agent=agent, rationale=rationale,
        )
        return outcome.memory

    def put_item(
        self, project: str, namespace: str, key: str, value: Mapping[str, Any], *,
        content: str | None = None, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        session_id: str | None = None, agent: str | None = None, rationale: str | None = None,
    ) -> MemoryEntry:
        """File a memory at (namespace, key), superseding the one there; content from value."""
        item = make_item(namespace, key, dict(value) if isinstance(value, Mapping) else value)
        outcome = self.long_term.remember(
            item_content(item.value) if content is None else content, project=project,
            session=session_id or API_SESSION, type=memory_type, confidence=confidence,
            source_type=source_type, agent=agent, rationale=rationale, item=item,
        )
        return MemoryEntry(outcome.memory, item)

    def list_memories(
        self, project: str, *, memory_type: MemoryType | str | None = None,
        namespace_prefix: str | None = None, namespace: str | None = None,
        key: str | None = None, value_filter: Mapping[str, Any] | None = None,
        limit: int = 20, offset: int = 0,
    ) -> MemoryPage:
        """The project's current memories, newest first (items: by namespace, key, value)."""
        kind = None if memory_type is None else parse_term(MemoryType, memory_type)
        return list_memories(
            self.long_term, project, at=datetime.now(UTC), memory_type=kind,
            namespace_prefix=namespace_prefix, namespace=namespace, key=key,
            value_filter=value_filter, limit=limit, offset=offset,
        )

    def item_namespaces(self, project: str, *, prefix: str = "") -> list[str]:
        """The namespace paths of the project's current items in or below `prefix`, sorted."""
        return namespaces(self.store, project, prefix=prefix)

    def item_of(self, project: str, memory_id: str) -> Item | None:
        """The item a memory of the project is filed as (None for a plain memory)."""
        validate_identifier(project, name="project id")
        return item_of(self.store, long_term(project), memory_id)

    def recall_items(
        self, project: str, query: str, *, namespace_prefix: str = "",
        value_filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
        mode: str = "hybrid",
    ) -> list[ItemHit]:
        """Items in or below `namespace_prefix` best matching `query`, among recall's best."""
        try:
            # Recall ranks the whole project; the items are picked from its best hits.
            hits = self.recall(project, query[:MAX_HINT_CHARS], limit=RECALL_MAX_LIMIT,
                               mode=mode)
        except InvalidQueryError:  # no searchable word: the newest items, unranked (score 0)
            page = self.list_memories(project, namespace_prefix=namespace_prefix,
                                      value_filter=value_filter, limit=limit, offset=offset)
            return [ItemHit(e.memory, e.item, 0.0) for e in page.entries if e.item is not None]
        return recalled_items(self.store, project, ((h.memory, h.score) for h in hits),
                              prefix=namespace_prefix, value_filter=value_filter, limit=limit,
                              offset=offset)

    def get_memory(self, project: str, memory_id: str) -> Memory:
        """One current memory of the project."""
        validate_identifier(project, name="project id")
        return self.long_term.get(memory_id, project=project)

    def forget(
        self, project: str, memory_id: str, *, reason: str | None = None,
        replacement_id: str | None = None,
    ) -> Memory:
        """Retire a memory (kept in history with its reason)."""
        validate_identifier(project, name="project id")
        return self.long_term.forget(
            memory_id, project=project, reason=reason or DEFAULT_FORGET_REASON,
            replacement_id=replacement_id,
        )

    def recall(
        self, project: str, query: str, *, types: Sequence[MemoryType] | None = None,
        min_confidence: float = 0.0, limit: int = 10, mode: str = "hybrid",
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The project's memories best matching `query`, best first."""
        if self.recall_engine is None:
            raise RecallUnavailableError("recall is not available: no recall engine is configured")
        return list(self.recall_engine.recall(
            project, query, types=types, min_confidence=min_confidence, limit=limit, mode=mode,
            as_of=as_of,
        ))

    # -- memory tools -------------------------------------------------------------------------

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The JSON-schema definitions of remember / recall / forget."""
        return [dict(tool) for tool in TOOL_DEFINITIONS]

    def execute_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None, *, project: str,
        session_id: str | None = None, agent: str | None = None,
    ) -> dict[str, Any]:
        """Run a memory tool call; returns `{"ok": …}` and never raises for bad input."""
        context = ToolContext(project=project, session=session_id or API_SESSION, agent=agent)
        return self.tools.execute(name, arguments, context=context)

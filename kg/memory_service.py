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

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kg.context import (
    ContextBuilder,
    ResponseProcessor,
    SessionHooks,
    TurnContext,
    format_for_prompt,
    stage_episodes,
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
from kg.longterm.promotion import PromotionEngine, PromotionResult, PromotionTrigger
from kg.longterm.tools import TOOL_DEFINITIONS, MemoryToolExecutor, ToolContext
from kg.memory import Memory
from kg.recall.catch_up import IndexCatchUp
from kg.recall.embedding import embedder_of
from kg.recall.engine import MAX_LIMIT as RECALL_MAX_LIMIT
from kg.recall.engine import RecallEngine, index_location
from kg.recall.keyword_index import KeywordIndex
from kg.recall.query_text import InvalidQueryError
from kg.settings import Settings
from kg.shortterm import (
    ContextItem,
    ContextKeyNotFoundError,
    Message,
    PendingItem,
    Role,
    Session,
    SessionManager,
)
from kg.store import Store, open_store
from kg.system_knowledge import ensure_ontology
from kg.terms import (
    AccessType,
    ContextKey,
    ContextSource,
    MemoryType,
    SessionStatus,
    SourceType,
    parse_term,
    validate_identifier,
    validate_score,
)

log = logging.getLogger(__name__)

__all__ = ["API_SESSION", "Hit", "MemoryService", "PromotionReport"]

# Memories written outside any agent session (HTTP or MCP remember without a session id) are
# asserted in this session, so every memory keeps a jido:assertedIn link.
API_SESSION = "api"
DEFAULT_FORGET_REASON = "forgotten on request"
# A query hint is usually the user's whole message; recall looks at its first 1,000 bytes.
MAX_HINT_CHARS = 250
RECALL_FLUSH_EVERY = 50_000


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


@dataclass(frozen=True, slots=True)
class PromotionReport:
    """What one promotion run did."""

    promoted: tuple[str, ...] = ()
    skipped: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)


class MemoryService:
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
        location = index_location(settings)
        index = KeywordIndex(location, embedder=embedder_of(settings))
        # Recall counts are written by the tracker's 5-second timer thread, not by the request
        # that fills a batch: a synchronous flush (a store write plus re-indexing) in the middle
        # of context assembly was the whole p95 (measured: 41 ms vs a 2.4 ms median).
        long_term = LongTermMemory(store, listeners=[index], flush_every=RECALL_FLUSH_EVERY)
        engine = RecallEngine(store, long_term, index=index)
        if not index.is_compatible():
            # A whole rebuild (every memory embedded again: minutes for a large store) before
            # serving: say why, as a server starting up would otherwise look hung.
            # The old index's count, not the store's: counting those is a scan (~26 s at 1M).
            log.warning("%s; rebuilding it from the store (%d memories) before serving",
                        _incompatibility(index, location, settings), index.fingerprint().count)
            started = time.monotonic()
            engine.ensure_index(progress=False)
            log.info("recall index rebuilt in %.1f s", time.monotonic() - started)
        elif settings.index_check == "startup" or index.created:
            # A missing index must exist before serving: built in the background, it would
            # hold the index's lock (every recall and write waiting) for minutes at 1M.
            if index.created:
                log.info("recall index %s is new; building it from the store before serving",
                         location or "(in memory)")
            engine.ensure_index(progress=False)
        else:
            # Words left behind (a crash, or an index from before a change of the word
            # fields) are re-indexed from the index's own rows before serving: meanwhile
            # keyword recall would find nothing.
            if engine.repair_text(progress=False):
                log.info("recall index: the words were re-indexed before serving")
            _verify_in_background(engine)
        catch_up = None
        if settings.backend == "remote" and settings.index_catch_up_interval > 0:
            # Other instances write to the same server: learn of their writes while running.
            catch_up = IndexCatchUp(store, long_term, index,
                                    interval=settings.index_catch_up_interval)
            catch_up.start()
        return cls(store, long_term=long_term, recall_engine=engine, owns_store=owns,
                   catch_up=catch_up)

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

    # -- sessions -----------------------------------------------------------------------------

    def start_session(
        self, session_id: str | None = None, *, project: str, agent: str | None = None
    ) -> Session:
        """Open a session in `project` and write its record."""
        validate_identifier(project, name="project id")
        session = self.sessions.start(session_id, project=project, agent=agent)
        self.long_term.records.started(session.id, project=project, agent=agent)
        return session

    def snapshot_session(self, session_id: str) -> dict[str, Any]:
        """The session's whole short-term state as JSON-able data; the session stays here."""
        return self.sessions.snapshot(session_id)

    def hand_off_session(self, session_id: str) -> dict[str, Any]:
        """Snapshot the session and release it here, unpromoted, for another instance."""
        return self.sessions.detach(session_id)

    def restore_session(self, data: Mapping[str, Any]) -> Session:
        """Continue a session from a snapshot taken here or on another instance."""
        return self.sessions.restore(data)

    def session(self, session_id: str) -> Session:
        """The open session with this id (SessionNotFoundError if none)."""
        return self.sessions.get(session_id)

    def session_project(self, session_id: str) -> str | None:
        """The project of an open session (what authorisation scopes by)."""
        return self.sessions.get(session_id).project

    def pause_session(self, session_id: str) -> Session:
        """Pause a session and promote what is ready."""
        session = self.sessions.pause(session_id)
        with session.lock:
            self.promotion.promote(session, trigger=PromotionTrigger.SESSION_PAUSE)
        self._record(session, SessionStatus.PAUSED)
        return session

    def resume_session(self, session_id: str) -> Session:
        """Resume a paused session."""
        session = self.sessions.resume(session_id)
        self._record(session, SessionStatus.ACTIVE)
        return session

    def close_session(self, session_id: str) -> tuple[Session, PromotionReport]:
        """Close a session; its activated episodes and ready memories are promoted."""
        session = self.sessions.close(session_id)
        with self._lock:
            result = self._closing.pop(session.id, None)
        self._record(session, SessionStatus.CLOSED)
        return session, _report(result)

    def _on_close(self, session: Session) -> None:
        stage_episodes(session)
        result = self.promotion.promote(session, trigger=PromotionTrigger.SESSION_CLOSE, drain=True)
        with self._lock:
            self._closing[session.id] = result

    def _record(self, session: Session, status: SessionStatus) -> None:
        if session.project is None:
            return
        write = {
            SessionStatus.ACTIVE: self.long_term.records.resumed,
            SessionStatus.PAUSED: self.long_term.records.paused,
            SessionStatus.CLOSED: self.long_term.records.closed,
        }[status]
        write(session.id, project=session.project, agent=session.agent)

    # -- working context, conversation, pending memories, promotion ----------------------------

    def list_context(self, session_id: str) -> tuple[list[ContextItem], int, int]:
        """The working context's items, their tokens and the budget."""
        with self.sessions.use(session_id, allow_paused=True) as session:
            ctx = session.working_context
            return ctx.to_list(), ctx.current_tokens, ctx.max_tokens

    def get_context_item(self, session_id: str, key: ContextKey) -> ContextItem:
        """One item (counting an access); ContextKeyNotFoundError if the key holds none."""
        with self.sessions.use(session_id, allow_paused=True) as session:
            session.working_context.get(key)
            item = session.working_context.item(key)
            if item is None:
                raise ContextKeyNotFoundError(
                    f"session {session_id!r} has no context item {key.value!r}",
                    details={"session_id": session_id, "key": key.value},
                )
            session.access_log.record(key, AccessType.READ)
            return item

    def put_context_item(
        self, session_id: str, key: ContextKey, value: Any, *, source: ContextSource,
        confidence: float, memory_type: MemoryType | None = None,
    ) -> ContextItem:
        """Add or replace an item; returns it as stored."""
        with self.sessions.use(session_id) as session:
            session.working_context.put(
                key, value, source=source, confidence=confidence, memory_type=memory_type
            )
            session.access_log.record(key, AccessType.WRITE)
            item = session.working_context.item(key)
            assert item is not None
            return item

    def delete_context_item(self, session_id: str, key: ContextKey) -> None:
        """Remove an item; ContextKeyNotFoundError if there was none."""
        with self.sessions.use(session_id) as session:
            if not session.working_context.delete(key):
                raise ContextKeyNotFoundError(
                    f"session {session_id!r} has no context item {key.value!r}",
                    details={"session_id": session_id, "key": key.value},
                )

    def list_messages(self, session_id: str) -> tuple[list[Message], int]:
        """The conversation, oldest first, and its tokens."""
        with self.sessions.use(session_id, allow_paused=True) as session:
            return session.conversation.window(), session.conversation.token_count()

    def add_message(self, session_id: str, role: Role | str, content: str, *,
                    item: Mapping[str, Any] | None = None) -> Message:
        """Capture a message (conversation buffer and episodic working memory), with its item."""
        with self.sessions.use(session_id, allow_paused=True) as session:
            # The session's lock is held across both, so the item lands on this message.
            self.hooks.capture_message(session_id, role, content)
            if item is not None:
                return session.conversation.attach_item(item)
            return session.conversation.window(1)[0]

    def pop_message(self, session_id: str) -> Message | None:
        """Remove and return the newest message of the conversation (None if it is empty)."""
        with self.sessions.use(session_id) as session:
            return session.conversation.pop()

    def clear_messages(self, session_id: str) -> None:
        """Empty the conversation buffer (episodes already captured stay for promotion)."""
        with self.sessions.use(session_id) as session:
            session.conversation.clear()

    def process_response(self, session_id: str, content: str) -> dict[str, str]:
        """Capture an assistant reply and return the working context inferred from it."""
        inferred = self.hooks.after_response(session_id, content)
        assert isinstance(inferred, dict)
        return inferred

    def add_pending(
        self, session_id: str, content: str, *, memory_type: MemoryType, confidence: float,
        source_type: SourceType, rationale: str | None, importance_score: float | None,
    ) -> PendingItem:
        """Stage a memory: an agent decision, or implicit when an importance score is given."""
        opts: dict[str, Any] = {"memory_type": memory_type, "confidence": confidence,
                                "source_type": source_type, "rationale": rationale}
        with self.sessions.use(session_id) as session:
            pending = session.pending_memories
            if importance_score is None:
                item_id = pending.add_agent_decision(content, **opts)
            else:
                item_id = pending.add_implicit(content, importance_score=importance_score, **opts)
            item = pending.get(item_id)
            assert item is not None
            return item

    def list_pending(self, session_id: str, *, threshold: float = 0.6) -> list[PendingItem]:
        """Items ready for promotion at `threshold`, highest importance first."""
        validate_score(threshold, name="threshold")
        return self.sessions.get_pending_memories(session_id, threshold=threshold)

    def promote(self, session_id: str) -> PromotionReport:
        """Run promotion for the session now."""
        with self.sessions.use(session_id, allow_paused=True) as session:
            return _report(self.promotion.promote(session, trigger=PromotionTrigger.MANUAL))

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


def _report(result: PromotionResult | None) -> PromotionReport:
    if result is None:
        return PromotionReport()
    return PromotionReport(
        promoted=(*result.promoted, *result.merged),
        skipped=len(result.skipped),
        details={
            "trigger": result.trigger.value,
            "created": list(result.promoted),
            "merged": list(result.merged),
            "failed": [{"candidate": f.candidate, "error": f.error} for f in result.failed],
            "skipped": [{"candidate": s.candidate, "reason": s.reason} for s in result.skipped],
        },
    )


def _verify_in_background(engine: RecallEngine) -> None:
    """Compare an existing index with the store off the start-up path; rebuild if stale."""

    def verify() -> None:
        # Not under the index's lock: the store scan takes ~26 s at 1M memories, and recalls
        # and writes waited for it (the first recall after start-up took 31 s). ensure_index
        # takes the lock itself when the fingerprints differ, to check again and repair.
        try:
            engine.ensure_index(progress=False)
        except Exception:  # a failed check must not take the service down; recall still works
            log.exception("checking the recall index against the store failed")

    threading.Thread(target=verify, name="recall-index-check", daemon=True).start()


def _incompatibility(index: KeywordIndex, location: Path | None, settings: Settings) -> str:
    """Why an existing recall index cannot be used as it is (for the start-up log)."""
    where = f"recall index {location or '(in memory)'}"
    schema, embedder = index.built_with()
    if embedder != index.embedder_name:
        return (f"{where} was built with embedder {embedder or ''!r} but settings "
                f"want {index.embedder_name!r} (KG_EMBEDDER={settings.embedder})")
    return f"{where} has schema {schema!r}, not this code's"

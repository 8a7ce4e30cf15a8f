"""MemoryClient: MemoryService's operations on a running `jido-kg serve`, over its HTTP API.

>>> with MemoryClient("http://127.0.0.1:7879", token="s3cret") as memory:  # doctest: +SKIP
...     session = memory.start_session(project="shop")
...     memory.remember("shop", "Orders ship from Leeds")
...     hits = memory.recall("shop", "where do orders ship from")

Methods are named and shaped as MemoryService's and return its record types (see
kg.client.decoding for the few fields HTTP does not carry, SessionInfo for sessions); errors
are the kg.errors classes the service raised. Reads are retried after a connection failure or
a 503, writes never (kg.client.transport).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

from kg.client import operations as ops
from kg.client.records import SessionInfo
from kg.client.transport import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT, Transport
from kg.context import TurnContext
from kg.context.token_budget import DEFAULT_TOTAL
from kg.longterm.items import ItemHit, MemoryEntry, MemoryPage
from kg.memory import Memory
from kg.memory_service import Hit, PromotionReport
from kg.shortterm import ContextItem, Message, PendingItem, Role
from kg.terms import ContextKey, ContextSource, MemoryType, SourceType

__all__ = ["MemoryClient"]

T = TypeVar("T")


class MemoryClient:
    """A blocking client of the memory HTTP API of one service (thread-safe, like httpx)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF) -> None:
        self.transport = Transport(url, token=token, timeout=timeout, retries=retries,
                                   backoff=backoff)

    @property
    def url(self) -> str:
        """The service's root URL."""
        return self.transport.url

    def _run(self, operation: ops.Operation[T]) -> T:
        return operation.result(self.transport.send(operation.call), url=self.url)

    def close(self) -> None:
        """Close the connections to the service."""
        self.transport.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # -- sessions ---------------------------------------------------------------------------

    def start_session(self, session_id: str | None = None, *, project: str,
                      agent: str | None = None) -> SessionInfo:
        """Open a session in `project` (a random id when none is given)."""
        return self._run(ops.start_session(session_id, project=project, agent=agent))

    def session(self, session_id: str) -> SessionInfo:
        """The open session with this id (SessionNotFoundError if none)."""
        return self._run(ops.session(session_id))

    def session_project(self, session_id: str) -> str | None:
        """The project of an open session."""
        return self.session(session_id).project

    def pause_session(self, session_id: str) -> SessionInfo:
        """Pause a session and promote what is ready."""
        return self._run(ops.pause_session(session_id))

    def resume_session(self, session_id: str) -> SessionInfo:
        """Resume a paused session."""
        return self._run(ops.resume_session(session_id))

    def close_session(self, session_id: str) -> tuple[SessionInfo, PromotionReport]:
        """Close a session; its activated episodes and ready memories are promoted."""
        return self._run(ops.close_session(session_id))

    def snapshot_session(self, session_id: str) -> dict[str, Any]:
        """The session's whole short-term state as JSON-able data; the session stays open."""
        return self._run(ops.snapshot_session(session_id))

    def hand_off_session(self, session_id: str) -> dict[str, Any]:
        """Snapshot the session and release it there, unpromoted, for another instance."""
        return self._run(ops.hand_off_session(session_id))

    def restore_session(self, data: Mapping[str, Any]) -> SessionInfo:
        """Continue a session from a snapshot taken on this or another instance."""
        return self._run(ops.restore_session(data))

    # -- working context, conversation, pending memories, promotion ------------------------

    def list_context(self, session_id: str) -> tuple[list[ContextItem], int, int]:
        """The working context's items, their tokens and the budget."""
        return self._run(ops.list_context(session_id))

    def get_context_item(self, session_id: str, key: ContextKey | str) -> ContextItem:
        """One item (counting an access); ContextKeyNotFoundError if the key holds none."""
        return self._run(ops.get_context_item(session_id, key))

    def put_context_item(
        self, session_id: str, key: ContextKey | str, value: Any, *,
        source: ContextSource | str = ContextSource.EXPLICIT, confidence: float = 1.0,
        memory_type: MemoryType | str | None = None,
    ) -> ContextItem:
        """Add or replace an item; returns it as stored."""
        return self._run(ops.put_context_item(session_id, key, value, source=source,
                                              confidence=confidence, memory_type=memory_type))

    def delete_context_item(self, session_id: str, key: ContextKey | str) -> None:
        """Remove an item; ContextKeyNotFoundError if there was none."""
        self._run(ops.delete_context_item(session_id, key))

    def list_messages(self, session_id: str) -> tuple[list[Message], int]:
        """The conversation, oldest first, and its tokens."""
        return self._run(ops.list_messages(session_id))

    def add_message(self, session_id: str, role: Role | str, content: str, *,
                    item: Mapping[str, Any] | None = None) -> Message:
        """Capture a message (conversation buffer and episodic working memory), with its item."""
        return self._run(ops.add_message(session_id, role, content, item=item))

    def pop_message(self, session_id: str) -> Message | None:
        """Remove and return the newest message of the conversation (None if it is empty)."""
        return self._run(ops.pop_message(session_id))

    def clear_messages(self, session_id: str) -> None:
        """Empty the conversation buffer (episodes already captured stay for promotion)."""
        self._run(ops.clear_messages(session_id))

    def process_response(self, session_id: str, content: str) -> dict[str, str]:
        """Capture an assistant reply and return the working context inferred from it."""
        return self._run(ops.process_response(session_id, content))

    def add_pending(
        self, session_id: str, content: str, *, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        rationale: str | None = None, importance_score: float | None = None,
    ) -> PendingItem:
        """Stage a memory: an agent decision, or implicit when an importance score is given."""
        return self._run(ops.add_pending(
            session_id, content, memory_type=memory_type, confidence=confidence,
            source_type=source_type, rationale=rationale, importance_score=importance_score,
        ))

    def list_pending(self, session_id: str, *, threshold: float = 0.6) -> list[PendingItem]:
        """Items ready for promotion at `threshold`, highest importance first."""
        return self._run(ops.list_pending(session_id, threshold=threshold))

    def promote(self, session_id: str) -> PromotionReport:
        """Run promotion for the session now."""
        return self._run(ops.promote(session_id))

    def assemble_context(
        self, session_id: str, *, query_hint: str | None = None,
        token_budget: int = DEFAULT_TOTAL, include_memories: bool = True, base_prompt: str = "",
    ) -> TurnContext:
        """The budgeted context of the session and the system prompt rendered from it."""
        return self._run(ops.assemble_context(
            session_id, query_hint=query_hint, token_budget=token_budget,
            include_memories=include_memories, base_prompt=base_prompt,
        ))

    # -- long-term memory -------------------------------------------------------------------

    def remember(
        self, project: str, content: str, *, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        session_id: str | None = None, agent: str | None = None, rationale: str | None = None,
    ) -> Memory:
        """Write a memory into the project (merged into an equivalent one if it exists)."""
        return self._run(ops.remember(
            project, content, memory_type=memory_type, confidence=confidence,
            source_type=source_type, session_id=session_id, agent=agent, rationale=rationale,
        ))

    def put_item(
        self, project: str, namespace: str, key: str, value: Mapping[str, Any], *,
        content: str | None = None, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        session_id: str | None = None, agent: str | None = None, rationale: str | None = None,
    ) -> MemoryEntry:
        """File a memory at (namespace, key), superseding the one there; content from value."""
        return self._run(ops.put_item(
            project, namespace, key, value, content=content, memory_type=memory_type,
            confidence=confidence, source_type=source_type, session_id=session_id, agent=agent,
            rationale=rationale,
        ))

    def list_memories(
        self, project: str, *, memory_type: MemoryType | str | None = None,
        namespace_prefix: str | None = None, namespace: str | None = None,
        key: str | None = None, value_filter: Mapping[str, Any] | None = None,
        limit: int = 20, offset: int = 0,
    ) -> MemoryPage:
        """The project's current memories, newest first (items: by namespace, key, value)."""
        return self._run(ops.list_memories(
            project, memory_type=memory_type, namespace_prefix=namespace_prefix,
            namespace=namespace, key=key, value_filter=value_filter, limit=limit, offset=offset,
        ))

    def item_namespaces(self, project: str, *, prefix: str = "") -> list[str]:
        """The namespace paths of the project's current items in or below `prefix`, sorted."""
        return self._run(ops.item_namespaces(project, prefix=prefix))

    def recall_items(
        self, project: str, query: str, *, namespace_prefix: str = "",
        value_filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
        mode: str = "hybrid",
    ) -> list[ItemHit]:
        """Items in or below `namespace_prefix` best matching `query`, among recall's best."""
        return self._run(ops.recall_items(
            project, query, namespace_prefix=namespace_prefix, value_filter=value_filter,
            limit=limit, offset=offset, mode=mode,
        ))

    def get_memory(self, project: str, memory_id: str) -> Memory:
        """One current memory of the project."""
        return self._run(ops.get_memory(project, memory_id))

    def forget(self, project: str, memory_id: str, *, reason: str | None = None,
               replacement_id: str | None = None) -> Memory:
        """Retire a memory (kept in history with its reason)."""
        return self._run(ops.forget(project, memory_id, reason=reason,
                                    replacement_id=replacement_id))

    def recall(
        self, project: str, query: str, *, types: Sequence[MemoryType | str] | None = None,
        min_confidence: float = 0.0, limit: int = 10, mode: str = "hybrid",
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The project's memories best matching `query`, best first (RemoteHit records)."""
        return self._run(ops.recall(project, query, types=types, min_confidence=min_confidence,
                                    limit=limit, mode=mode, as_of=as_of))

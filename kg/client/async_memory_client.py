"""AsyncMemoryClient: MemoryClient for asyncio code, on httpx.AsyncClient.

The same operations, records, errors and retry rule as MemoryClient (both send the calls of
kg.client.operations); every method is a coroutine.

>>> async with AsyncMemoryClient("http://127.0.0.1:7879") as memory:  # doctest: +SKIP
...     hits = await memory.recall("shop", "where do orders ship from")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

from kg.client import operations as ops
from kg.client.records import SessionInfo
from kg.client.transport import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    AsyncTransport,
)
from kg.context import TurnContext
from kg.context.token_budget import DEFAULT_TOTAL
from kg.longterm.items import ItemHit, MemoryEntry, MemoryPage
from kg.memory import Memory
from kg.memory_service import Hit, PromotionReport
from kg.shortterm import ContextItem, Message, PendingItem, Role
from kg.terms import ContextKey, ContextSource, MemoryType, SourceType

__all__ = ["AsyncMemoryClient"]

T = TypeVar("T")


class AsyncMemoryClient:
    """An asyncio client of the memory HTTP API of one service."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 retries: int = DEFAULT_RETRIES, backoff: float = DEFAULT_BACKOFF) -> None:
        self.transport = AsyncTransport(url, token=token, timeout=timeout, retries=retries,
                                        backoff=backoff)

    @property
    def url(self) -> str:
        """The service's root URL."""
        return self.transport.url

    async def _run(self, operation: ops.Operation[T]) -> T:
        return operation.result(await self.transport.send(operation.call), url=self.url)

    async def aclose(self) -> None:
        """Close the connections to the service."""
        await self.transport.aclose()

    async def __aenter__(self) -> AsyncMemoryClient:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    # -- sessions ---------------------------------------------------------------------------

    async def start_session(self, session_id: str | None = None, *, project: str,
                            agent: str | None = None) -> SessionInfo:
        """Open a session in `project` (a random id when none is given)."""
        return await self._run(ops.start_session(session_id, project=project, agent=agent))

    async def session(self, session_id: str) -> SessionInfo:
        """The open session with this id (SessionNotFoundError if none)."""
        return await self._run(ops.session(session_id))

    async def session_project(self, session_id: str) -> str | None:
        """The project of an open session."""
        return (await self.session(session_id)).project

    async def pause_session(self, session_id: str) -> SessionInfo:
        """Pause a session and promote what is ready."""
        return await self._run(ops.pause_session(session_id))

    async def resume_session(self, session_id: str) -> SessionInfo:
        """Resume a paused session."""
        return await self._run(ops.resume_session(session_id))

    async def close_session(self, session_id: str) -> tuple[SessionInfo, PromotionReport]:
        """Close a session; its activated episodes and ready memories are promoted."""
        return await self._run(ops.close_session(session_id))

    async def snapshot_session(self, session_id: str) -> dict[str, Any]:
        """The session's whole short-term state as JSON-able data; the session stays open."""
        return await self._run(ops.snapshot_session(session_id))

    async def hand_off_session(self, session_id: str) -> dict[str, Any]:
        """Snapshot the session and release it there, unpromoted, for another instance."""
        return await self._run(ops.hand_off_session(session_id))

    async def restore_session(self, data: Mapping[str, Any]) -> SessionInfo:
        """Continue a session from a snapshot taken on this or another instance."""
        return await self._run(ops.restore_session(data))

    # -- working context, conversation, pending memories, promotion ------------------------

    async def list_context(self, session_id: str) -> tuple[list[ContextItem], int, int]:
        """The working context's items, their tokens and the budget."""
        return await self._run(ops.list_context(session_id))

    async def get_context_item(self, session_id: str, key: ContextKey | str) -> ContextItem:
        """One item (counting an access); ContextKeyNotFoundError if the key holds none."""
        return await self._run(ops.get_context_item(session_id, key))

    async def put_context_item(
        self, session_id: str, key: ContextKey | str, value: Any, *,
        source: ContextSource | str = ContextSource.EXPLICIT, confidence: float = 1.0,
        memory_type: MemoryType | str | None = None,
    ) -> ContextItem:
        """Add or replace an item; returns it as stored."""
        return await self._run(ops.put_context_item(
            session_id, key, value, source=source, confidence=confidence,
            memory_type=memory_type,
        ))

    async def delete_context_item(self, session_id: str, key: ContextKey | str) -> None:
        """Remove an item; ContextKeyNotFoundError if there was none."""
        await self._run(ops.delete_context_item(session_id, key))

    async def list_messages(self, session_id: str) -> tuple[list[Message], int]:
        """The conversation, oldest first, and its tokens."""
        return await self._run(ops.list_messages(session_id))

    async def add_message(self, session_id: str, role: Role | str, content: str, *,
                    item: Mapping[str, Any] | None = None) -> Message:
        """Capture a message (conversation buffer and episodic working memory), with its item."""
        return await self._run(ops.add_message(session_id, role, content, item=item))

    async def pop_message(self, session_id: str) -> Message | None:
        """Remove and return the newest message of the conversation (None if it is empty)."""
        return await self._run(ops.pop_message(session_id))

    async def clear_messages(self, session_id: str) -> None:
        """Empty the conversation buffer (episodes already captured stay for promotion)."""
        await self._run(ops.clear_messages(session_id))

    async def process_response(self, session_id: str, content: str) -> dict[str, str]:
        """Capture an assistant reply and return the working context inferred from it."""
        return await self._run(ops.process_response(session_id, content))

    async def add_pending(
        self, session_id: str, content: str, *, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        rationale: str | None = None, importance_score: float | None = None,
    ) -> PendingItem:
        """Stage a memory: an agent decision, or implicit when an importance score is given."""
        return await self._run(ops.add_pending(
            session_id, content, memory_type=memory_type, confidence=confidence,
            source_type=source_type, rationale=rationale, importance_score=importance_score,
        ))

    async def list_pending(self, session_id: str, *, threshold: float = 0.6) -> list[PendingItem]:
        """Items ready for promotion at `threshold`, highest importance first."""
        return await self._run(ops.list_pending(session_id, threshold=threshold))

    async def promote(self, session_id: str) -> PromotionReport:
        """Run promotion for the session now."""
        return await self._run(ops.promote(session_id))

    async def assemble_context(
        self, session_id: str, *, query_hint: str | None = None,
        token_budget: int = DEFAULT_TOTAL, include_memories: bool = True, base_prompt: str = "",
    ) -> TurnContext:
        """The budgeted context of the session and the system prompt rendered from it."""
        return await self._run(ops.assemble_context(
            session_id, query_hint=query_hint, token_budget=token_budget,
            include_memories=include_memories, base_prompt=base_prompt,
        ))

    # -- long-term memory -------------------------------------------------------------------

    async def remember(
        self, project: str, content: str, *, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        session_id: str | None = None, agent: str | None = None, rationale: str | None = None,
    ) -> Memory:
        """Write a memory into the project (merged into an equivalent one if it exists)."""
        return await self._run(ops.remember(
            project, content, memory_type=memory_type, confidence=confidence,
            source_type=source_type, session_id=session_id, agent=agent, rationale=rationale,
        ))

    async def put_item(
        self, project: str, namespace: str, key: str, value: Mapping[str, Any], *,
        content: str | None = None, memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8, source_type: SourceType | str = SourceType.AGENT,
        session_id: str | None = None, agent: str | None = None, rationale: str | None = None,
    ) -> MemoryEntry:
        """File a memory at (namespace, key), superseding the one there; content from value."""
        return await self._run(ops.put_item(
            project, namespace, key, value, content=content, memory_type=memory_type,
            confidence=confidence, source_type=source_type, session_id=session_id, agent=agent,
            rationale=rationale,
        ))

    async def list_memories(
        self, project: str, *, memory_type: MemoryType | str | None = None,
        namespace_prefix: str | None = None, namespace: str | None = None,
        key: str | None = None, value_filter: Mapping[str, Any] | None = None,
        limit: int = 20, offset: int = 0,
    ) -> MemoryPage:
        """The project's current memories, newest first (items: by namespace, key, value)."""
        return await self._run(ops.list_memories(
            project, memory_type=memory_type, namespace_prefix=namespace_prefix,
            namespace=namespace, key=key, value_filter=value_filter, limit=limit, offset=offset,
        ))

    async def item_namespaces(self, project: str, *, prefix: str = "") -> list[str]:
        """The namespace paths of the project's current items in or below `prefix`, sorted."""
        return await self._run(ops.item_namespaces(project, prefix=prefix))

    async def recall_items(
        self, project: str, query: str, *, namespace_prefix: str = "",
        value_filter: Mapping[str, Any] | None = None, limit: int = 10, offset: int = 0,
        mode: str = "hybrid",
    ) -> list[ItemHit]:
        """Items in or below `namespace_prefix` best matching `query`, among recall's best."""
        return await self._run(ops.recall_items(
            project, query, namespace_prefix=namespace_prefix, value_filter=value_filter,
            limit=limit, offset=offset, mode=mode,
        ))

    async def get_memory(self, project: str, memory_id: str) -> Memory:
        """One current memory of the project."""
        return await self._run(ops.get_memory(project, memory_id))

    async def forget(self, project: str, memory_id: str, *, reason: str | None = None,
                     replacement_id: str | None = None) -> Memory:
        """Retire a memory (kept in history with its reason)."""
        return await self._run(ops.forget(project, memory_id, reason=reason,
                                          replacement_id=replacement_id))

    async def recall(
        self, project: str, query: str, *, types: Sequence[MemoryType | str] | None = None,
        min_confidence: float = 0.0, limit: int = 10, mode: str = "hybrid",
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The project's memories best matching `query`, best first (RemoteHit records)."""
        return await self._run(ops.recall(project, query, types=types,
                                          min_confidence=min_confidence, limit=limit, mode=mode,
                                          as_of=as_of))

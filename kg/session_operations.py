"""The session side of MemoryService: sessions, their working context, conversation, pending
memories and promotion (kg.memory_service composes it with long-term memory and recall)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kg.context import SessionHooks, stage_episodes
from kg.longterm import LongTermMemory
from kg.longterm.promotion import PromotionEngine, PromotionResult, PromotionTrigger
from kg.shortterm import (
    ContextItem,
    ContextKeyNotFoundError,
    Message,
    PendingItem,
    Role,
    Session,
    SessionManager,
)
from kg.terms import (
    AccessType,
    ContextKey,
    ContextSource,
    MemoryType,
    SessionStatus,
    SourceType,
    validate_identifier,
    validate_score,
)

__all__ = ["PromotionReport", "SessionOperations"]


@dataclass(frozen=True, slots=True)
class PromotionReport:
    """What one promotion run did."""

    promoted: tuple[str, ...] = ()
    skipped: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)


class SessionOperations:
    """Session operations over the parts a MemoryService holds (the attributes below)."""

    sessions: SessionManager
    long_term: LongTermMemory
    promotion: PromotionEngine
    hooks: SessionHooks
    _closing: dict[str, PromotionResult]
    _lock: threading.Lock

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

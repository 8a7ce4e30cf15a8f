"""SessionManager: the table of open sessions, their life cycle, and thread-safe access to them.

Locking: a manager lock guards only the id → Session table and is never held while a session
is being worked on; each session's own RLock serialises the operations on that session. So
requests for different sessions run without blocking each other, and a request never sees a
half-applied operation on its own session. An operation that fetched a session just before
another thread closed it finds the status CLOSED once it holds the lock, and fails as if the
session did not exist.

Status: an ACTIVE session accepts everything. A PAUSED one (agent idle, promotion running) still
serves reads, snapshots and clear_promoted_memories but refuses new agent input with
SessionStateError until resume(). close() removes the session and returns it, final state
intact, for the promotion engine's last run.

The memory methods below are seed 000 §1.5's Session.State client API; anything else is done
with `with manager.use(session_id) as session:` on the session's structures directly.
"""

from __future__ import annotations

import builtins
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kg.errors import KgError
from kg.shortterm.access_log import AccessKey, AccessStats
from kg.shortterm.conversation_buffer import Message, Role
from kg.shortterm.errors import (
    ContextKeyNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStateError,
)
from kg.shortterm.pending_memories import PendingItem
from kg.shortterm.session import Session, SessionConfig
from kg.terms import AccessType, ContextKey, SessionStatus, validate_session_id

__all__ = ["SessionHook", "SessionHookError", "SessionManager"]

SessionHook = Callable[[Session], None]


class SessionHookError(KgError):
    """An on_pause/on_close hook raised; the status change itself has happened."""

    code = "session_hook_failed"

    def __init__(self, message: str, *, session: Session) -> None:
        super().__init__(message, details={"session_id": session.id})
        self.session = session


class SessionManager:
    """Starts, finds, pauses, resumes and closes isolated sessions; safe across threads."""

    def __init__(
        self,
        *,
        config: SessionConfig | None = None,
        on_pause: SessionHook | None = None,
        on_close: SessionHook | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.config = config if config is not None else SessionConfig()
        self._on_pause = on_pause
        self._on_close = on_close
        self._now = now
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    # -- life cycle ---------------------------------------------------------------------------

    def start(
        self, session_id: str | None = None, *, project: str | None = None, agent: str | None = None
    ) -> Session:
        """Open a new ACTIVE session (with a fresh random id if none is given)."""
        sid = uuid.uuid4().hex if session_id is None else validate_session_id(session_id)
        session = Session(sid, project=project, agent=agent, config=self.config, now=self._now)
        self._insert(session)
        return session

    def get(self, session_id: str) -> Session:
        """The open session with this id (use `use()` to operate on it safely)."""
        sid = validate_session_id(session_id)
        with self._lock:
            session = self._sessions.get(sid)
        if session is None:
            raise SessionNotFoundError(f"no open session {sid!r}", details={"session_id": sid})
        return session

    def list(self, *, status: SessionStatus | None = None) -> builtins.list[str]:
        """Ids of the open sessions, optionally only those with `status`, sorted."""
        with self._lock:
            sessions = builtins.list(self._sessions.values())
        return sorted(s.id for s in sessions if status is None or s.status is status)

    def pause(self, session_id: str) -> Session:
        """Mark an ACTIVE session PAUSED, then run on_pause with it."""
        with self.use(session_id, allow_paused=True) as session:
            self._require(session, SessionStatus.ACTIVE, "pause")
            session.status = SessionStatus.PAUSED
            self._run_hook(self._on_pause, session, "on_pause")
            return session

    def resume(self, session_id: str) -> Session:
        """Mark a PAUSED session ACTIVE again."""
        with self.use(session_id, allow_paused=True) as session:
            self._require(session, SessionStatus.PAUSED, "resume")
            session.status = SessionStatus.ACTIVE
            return session

    def close(self, session_id: str) -> Session:
        """Remove the session, mark it CLOSED, run on_close, and return it with its final state."""
        with self.use(session_id, allow_paused=True) as session:
            with self._lock:
                del self._sessions[session.id]
            session.status = SessionStatus.CLOSED
            self._run_hook(self._on_close, session, "on_close")
            return session

    def snapshot(self, session_id: str) -> dict[str, Any]:
        """The session's whole short-term state as JSON-able data."""
        with self.use(session_id, allow_paused=True) as session:
            return session.snapshot()

    def snapshot_all(self, *, timeout: float = -1) -> dict[str, dict[str, Any] | None]:
        """Every open session's snapshot by id; None for one whose lock stayed taken `timeout` s.

        For a process that must outlive its own end (api/worker.py): its sessions continue
        from these in the next process. A session closed meanwhile is left out.
        """
        with self._lock:
            sessions = builtins.list(self._sessions.values())
        found: dict[str, dict[str, Any] | None] = {}
        for session in sessions:
            if not session.lock.acquire(timeout=timeout):
                found[session.id] = None
                continue
            try:
                if session.status is not SessionStatus.CLOSED:
                    found[session.id] = session.snapshot()
            finally:
                session.lock.release()
        return found

    def detach(self, session_id: str) -> dict[str, Any]:
        """Snapshot a session and drop it here without closing it (hand-off to another process)."""
        with self.use(session_id, allow_paused=True) as session:
            data = session.snapshot()
            with self._lock:
                del self._sessions[session.id]
            # Any holder of the old object now sees it as gone; the snapshot carries the state.
            session.status = SessionStatus.CLOSED
            return data

    def restore(self, data: Mapping[str, Any]) -> Session:
        """Open a session from snapshot() data (e.g. taken in another process)."""
        session = Session.restore(data, now=self._now)
        if session.status is SessionStatus.CLOSED:
            raise SessionStateError(f"session {session.id!r} was closed; it cannot be restored")
        self._insert(session)
        return session

    @contextmanager
    def use(self, session_id: str, *, allow_paused: bool = False) -> Iterator[Session]:
        """Hold the session's lock for the duration of the block and yield the session."""
        session = self.get(session_id)
        with session.lock:
            if session.status is SessionStatus.CLOSED:
                raise SessionNotFoundError(f"session {session.id!r} was closed")
            if session.status is SessionStatus.PAUSED and not allow_paused:
                raise SessionStateError(
                    f"session {session.id!r} is paused; resume it first",
                    details={"session_id": session.id, "status": session.status.value},
                )
            yield session

    # -- seed 000 §1.5: working context -----------------------------------------------------

    def update_context(
        self, session_id: str, key: ContextKey | str, value: Any, **opts: Any
    ) -> None:
        """WorkingContext.put on the session (options: source, confidence, memory_type)."""
        with self.use(session_id) as session:
            session.working_context.put(key, value, **opts)

    def get_context(self, session_id: str, key: ContextKey | str) -> Any:
        """The value at `key`, counting the access; ContextKeyNotFoundError if it has none."""
        with self.use(session_id, allow_paused=True) as session:
            if session.working_context.item(key) is None:
                raise ContextKeyNotFoundError(
                    f"session {session.id!r} has no context item {str(key)!r}",
                    details={"session_id": session.id, "key": str(key)},
                )
            return session.working_context.get(key)

    def get_all_context(self, session_id: str) -> dict[ContextKey, Any]:
        """The whole working context as key → value."""
        with self.use(session_id, allow_paused=True) as session:
            return session.working_context.to_map()

    def clear_context(self, session_id: str) -> None:
        """Empty the working context."""
        with self.use(session_id) as session:
            session.working_context.clear()

    # -- seed 000 §1.5: pending memories ----------------------------------------------------

    def add_pending_memory(self, session_id: str, content: str, **opts: Any) -> str:
        """PendingMemories.add_implicit on the session; returns the item id."""
        with self.use(session_id) as session:
            return session.pending_memories.add_implicit(content, **opts)

    def add_agent_memory_decision(self, session_id: str, content: str, **opts: Any) -> str:
        """PendingMemories.add_agent_decision on the session; returns the item id."""
        with self.use(session_id) as session:
            return session.pending_memories.add_agent_decision(content, **opts)

    def get_pending_memories(
        self, session_id: str, *, threshold: float = 0.6
    ) -> builtins.list[PendingItem]:
        """Items ready for promotion (agent decisions included), highest importance first."""
        with self.use(session_id, allow_paused=True) as session:
            return session.pending_memories.ready_for_promotion(threshold)

    def clear_promoted_memories(self, session_id: str, ids: Iterable[str]) -> int:
        """Remove promoted ids from the session's pending memories; returns how many went."""
        with self.use(session_id, allow_paused=True) as session:
            return session.pending_memories.clear_promoted(ids)

    # -- seed 000 §1.5: access log and conversation ------------------------------------------

    def record_access(
        self, session_id: str, key: AccessKey | str, access_type: AccessType | str = AccessType.READ
    ) -> None:
        """AccessLog.record on the session."""
        with self.use(session_id) as session:
            session.access_log.record(key, access_type)

    def get_access_stats(self, session_id: str, key: AccessKey | str) -> AccessStats:
        """Frequency and recency of `key` in the session's access log."""
        with self.use(session_id, allow_paused=True) as session:
            return session.access_log.get_stats(key)

    def append_message(
        self, session_id: str, role: Role | str, content: str
    ) -> builtins.list[Message]:
        """ConversationBuffer.append on the session; returns the messages evicted."""
        with self.use(session_id) as session:
            return session.conversation.append(role, content)

    # -- internals ----------------------------------------------------------------------------

    def _insert(self, session: Session) -> None:
        with self._lock:
            if session.id in self._sessions:
                raise SessionExistsError(
                    f"session {session.id!r} is already open", details={"session_id": session.id}
                )
            self._sessions[session.id] = session

    @staticmethod
    def _require(session: Session, status: SessionStatus, action: str) -> None:
        if session.status is not status:
            raise SessionStateError(
                f"cannot {action} session {session.id!r}: it is {session.status.value}",
                details={"session_id": session.id, "status": session.status.value},
            )

    @staticmethod
    def _run_hook(hook: SessionHook | None, session: Session, name: str) -> None:
        if hook is None:
            return
        try:
            hook(session)
        except Exception as e:
            raise SessionHookError(
                f"{name} hook failed for session {session.id!r}: {e}", session=session
            ) from e

"""Records of the client that have no exact kg counterpart over HTTP: session summaries, hits."""

from __future__ import annotations

from dataclasses import dataclass

from kg.memory import Memory
from kg.shortterm import Session
from kg.terms import SessionStatus

__all__ = ["RemoteHit", "SessionInfo"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session's identity, status and the sizes of its short-term structures.

    MemoryService returns the live `kg.shortterm.Session`; over HTTP only this summary travels
    (its attribute names are the Session's). `snapshot_session` gives the whole state.
    """

    id: str
    project: str | None
    agent: str | None
    status: SessionStatus
    created_at: float  # POSIX seconds, as Session.created_at (to the microsecond)
    context_items: int
    pending_memories: int
    messages: int
    episodes: int

    @classmethod
    def of(cls, session: Session) -> SessionInfo:
        """The summary of a live session (read it under its lock or after it closed)."""
        return cls(
            id=session.id,
            project=session.project,
            agent=session.agent,
            status=session.status,
            created_at=session.created_at,
            context_items=session.working_context.size(),
            pending_memories=session.pending_memories.size(),
            messages=session.conversation.size(),
            episodes=session.working_memory.size(),
        )


@dataclass(frozen=True, slots=True)
class RemoteHit:
    """A recall hit as the HTTP API carries it: the memory and its fused score.

    It satisfies `kg.memory_service.Hit`; the per-signal scores of `kg.recall.RecallHit`
    (keyword, semantic, recency, frequency, salience) stay on the server.
    """

    memory: Memory
    score: float

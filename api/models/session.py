"""Session bodies of the memory HTTP API: start, state, snapshot, close and its promotion run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from api.models.base import Identifier, InputModel, OutputModel, utc_datetime
from kg.memory_service import PromotionReport
from kg.shortterm import Session
from kg.terms import SessionStatus

__all__ = [
    "PromotionOut",
    "SessionClosed",
    "SessionOut",
    "SessionSnapshot",
    "SessionStart",
    "promotion_out",
    "session_out",
]


class SessionStart(InputModel):
    """Start a session (a random id is minted when none is given)."""

    session_id: Identifier | None = None
    project: Identifier
    agent: Identifier | None = None


class SessionOut(OutputModel):
    """A session's identity, status and the sizes of its short-term structures."""

    session_id: str
    project: str | None
    agent: str | None
    status: SessionStatus
    created_at: datetime
    context_items: int
    pending_memories: int
    messages: int
    episodes: int


class SessionSnapshot(InputModel):
    """A session's whole short-term state, to continue it on another instance."""

    snapshot: dict[str, Any] = Field(
        description="Opaque, versioned data from a snapshot or hand-off route."
    )


class PromotionOut(OutputModel):
    """The outcome of one promotion run."""

    promoted: list[str] = Field(description="Ids of the long-term memories written.")
    skipped: int = Field(description="Candidates below threshold or otherwise not promoted.")
    details: dict[str, Any] = Field(default_factory=dict)


class SessionClosed(OutputModel):
    """A closed session and the promotion run its closing triggered."""

    session: SessionOut
    promotion: PromotionOut


def session_out(session: Session) -> SessionOut:
    """SessionOut of a kg Session (read it under its lock or after it closed)."""
    return SessionOut(
        session_id=session.id,
        project=session.project,
        agent=session.agent,
        status=session.status,
        created_at=utc_datetime(session.created_at),
        context_items=session.working_context.size(),
        pending_memories=session.pending_memories.size(),
        messages=session.conversation.size(),
        episodes=session.working_memory.size(),
    )


def promotion_out(report: PromotionReport) -> PromotionOut:
    """PromotionOut of a promotion report."""
    return PromotionOut(promoted=list(report.promoted), skipped=report.skipped,
                        details=dict(report.details))

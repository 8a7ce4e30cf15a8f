"""Long-term memory bodies of the memory HTTP API: remember, recall and forget."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from api.models.base import (
    Identifier,
    InputModel,
    OutputModel,
    Score,
    Text,
    memory_type_field,
)
from kg.memory import Memory
from kg.memory_service import Hit
from kg.terms import MemoryType, SourceType

__all__ = [
    "ForgetRequest",
    "MemoryOut",
    "RecallHitOut",
    "RecallRequest",
    "RecallResponse",
    "RememberRequest",
    "memory_out",
    "recall_hit_out",
]


class RememberRequest(InputModel):
    """Write a long-term memory (the `remember` tool)."""

    content: Text
    type: MemoryType = memory_type_field(MemoryType.FACT, "The kind of memory.")
    confidence: Score = 0.8
    source_type: SourceType = SourceType.AGENT
    session_id: Identifier | None = None
    agent: Identifier | None = None
    rationale: Annotated[str, StringConstraints(max_length=10_000)] | None = None


class MemoryOut(OutputModel):
    """A long-term memory."""

    id: str
    project: str
    session: str
    type: MemoryType = Field(description="The kind of memory.")
    content: str
    confidence: float
    confidence_level: str
    source_type: SourceType
    timestamp: datetime
    recorded_at: datetime
    agent: str | None
    rationale: str | None
    retired_at: datetime | None
    retirement_reason: str | None
    superseded_by: str | None
    access_count: int


class ForgetRequest(InputModel):
    """Retire a memory (the `forget` tool); it stays in history with the reason."""

    reason: Annotated[str, StringConstraints(max_length=1_000)] | None = None
    replacement_id: Identifier | None = None


class RecallRequest(InputModel):
    """Find memories (the `recall` tool)."""

    query: Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
    types: list[MemoryType] | None = Field(
        default=None,
        description="Only memories of these types (a list: the plural of a memory's `type`); "
        "omit for every type.",
    )
    min_confidence: Score = 0.0
    limit: Annotated[int, Field(ge=1, le=50)] = 10
    mode: Literal["hybrid", "text", "semantic"] = "hybrid"
    as_of: datetime | None = None


class RecallHitOut(OutputModel):
    """One recalled memory and its score."""

    memory: MemoryOut
    score: float


class RecallResponse(OutputModel):
    """Recall hits, best first."""

    hits: list[RecallHitOut]


def memory_out(memory: Memory) -> MemoryOut:
    """MemoryOut of a long-term memory."""
    return MemoryOut(
        id=memory.id,
        project=memory.project,
        session=memory.session,
        type=memory.type,
        content=memory.content,
        confidence=memory.confidence,
        confidence_level=memory.level.value,
        source_type=memory.source_type,
        timestamp=memory.timestamp,
        recorded_at=memory.recorded_at,
        agent=memory.agent,
        rationale=memory.rationale,
        retired_at=memory.retired_at,
        retirement_reason=memory.retirement_reason,
        superseded_by=memory.superseded_by,
        access_count=memory.access_count,
    )


def recall_hit_out(hit: Hit) -> RecallHitOut:
    """RecallHitOut of a recall hit."""
    return RecallHitOut(memory=memory_out(hit.memory), score=float(hit.score))

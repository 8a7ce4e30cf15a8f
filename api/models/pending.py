"""Pending-memory bodies of the memory HTTP API: memories staged for promotion."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from api.models.base import InputModel, OutputModel, Score, Text, memory_type_field
from kg.shortterm import PendingItem
from kg.terms import MemoryType, SourceType

__all__ = ["PendingIn", "PendingList", "PendingOut", "pending_out"]


class PendingIn(InputModel):
    """Stage a memory for promotion: an agent decision, or implicit with an importance score."""

    content: Text
    type: MemoryType = memory_type_field(MemoryType.FACT, "The kind of memory to promote it as.")
    confidence: Score = 0.8
    source_type: SourceType = SourceType.AGENT
    rationale: Annotated[str, StringConstraints(max_length=10_000)] | None = None
    importance_score: Score | None = Field(
        default=None, description="Omit for an agent decision (always promoted)."
    )


class PendingOut(OutputModel):
    """One staged memory."""

    id: str
    content: str
    type: MemoryType = Field(description="The kind of memory it will be promoted as.")
    confidence: float
    source_type: SourceType
    rationale: str | None
    suggested_by: str
    importance_score: float


class PendingList(OutputModel):
    """The items ready for promotion, highest importance first."""

    items: list[PendingOut]


def pending_out(item: PendingItem) -> PendingOut:
    """PendingOut of a staged memory."""
    return PendingOut(
        id=item.id,
        content=item.content,
        type=item.memory_type,
        confidence=item.confidence,
        source_type=item.source_type,
        rationale=item.rationale,
        suggested_by=item.suggested_by.value,
        importance_score=item.importance_score,
    )

"""Long-term memory bodies of the memory HTTP API: remember, recall and forget."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from api.models.base import (
    Identifier,
    InputModel,
    OutputModel,
    Score,
    Text,
    memory_type_field,
)
from kg.longterm.items import MAX_KEY_CHARS, MAX_NAMESPACE_CHARS, Item, MemoryPage
from kg.memory import Memory
from kg.memory_service import Hit
from kg.terms import MemoryType, SourceType

__all__ = [
    "ForgetRequest",
    "MemoryList",
    "MemoryOut",
    "NamespaceList",
    "RecallHitOut",
    "RecallRequest",
    "RecallResponse",
    "RememberRequest",
    "memory_list_out",
    "memory_out",
    "recall_hit_out",
]

Namespace = Annotated[str, StringConstraints(max_length=MAX_NAMESPACE_CHARS)]
Key = Annotated[str, StringConstraints(max_length=MAX_KEY_CHARS)]


class RememberRequest(InputModel):
    """Write a long-term memory (the `remember` tool), or put a key-value item."""

    content: Text | None = Field(
        default=None, description="What is remembered; required unless `value` is given "
        "(then it defaults to value.content text, else the value's canonical JSON).")
    type: MemoryType = memory_type_field(MemoryType.FACT, "The kind of memory.")
    confidence: Score = 0.8
    source_type: SourceType = SourceType.AGENT
    session_id: Identifier | None = None
    agent: Identifier | None = None
    rationale: Annotated[str, StringConstraints(max_length=10_000)] | None = None
    namespace: Namespace | None = Field(
        default=None, description="With `key`: file the memory as a key-value item at this "
        "namespace path (labels joined by '.'); it supersedes the item there.")
    key: Key | None = Field(default=None, description="The item's key in its namespace.")
    value: dict[str, Any] | None = Field(
        default=None, description="The item's exact JSON object (kept as given).")

    @model_validator(mode="after")
    def _item_or_content(self) -> RememberRequest:
        if (self.namespace is None) != (self.key is None):
            raise ValueError("namespace and key go together (the address of an item)")
        if self.key is not None and self.value is None:
            raise ValueError("an item (namespace and key) needs its value")
        if self.key is None and self.value is not None:
            raise ValueError("a value belongs to an item: give its namespace and key")
        if self.content is None and self.value is None:
            raise ValueError("content is required (or an item's value)")
        return self


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
    namespace: str | None = Field(
        default=None, description="A key-value item's namespace path (else null).")
    key: str | None = Field(default=None, description="A key-value item's key (else null).")
    value: dict[str, Any] | None = Field(
        default=None, description="A key-value item's exact JSON value (else null).")


class MemoryList(OutputModel):
    """A page of a project's current memories, newest first."""

    memories: list[MemoryOut]
    next_offset: int | None = Field(description="The offset of the next page; null on the last.")


class NamespaceList(OutputModel):
    """The namespace paths of a project's current key-value items, sorted."""

    namespaces: list[str]


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
    mode: Literal["hybrid", "text", "semantic", "rerank"] = Field(
        default="hybrid", description="hybrid: keywords, time and question keys (and the "
        "service's embedder, if any); text: keywords only; semantic: the embedder alone; "
        "rerank: hybrid's best 40 reordered by the MiniLM model (slower; needs its package).")
    as_of: datetime | None = None
    namespace_prefix: Namespace | None = Field(
        default=None, description="Only key-value items in or below this namespace path ('' "
        "for every namespace), picked from recall's 50 best memories of the project.")
    filter: dict[str, Any] | None = Field(
        default=None, description="Items only: conditions on value fields (a JSON value, or "
        "operators $eq $ne $gt $gte $lt $lte), as LangGraph's store filter.")
    offset: Annotated[int, Field(ge=0, le=49)] = Field(
        default=0, description="Items only: how many matching items to skip.")

    @model_validator(mode="after")
    def _items_only(self) -> RecallRequest:
        if self.namespace_prefix is None and (self.filter is not None or self.offset):
            raise ValueError("filter and offset apply to items: give namespace_prefix "
                             "('' for every namespace)")
        if self.namespace_prefix is not None and (self.types or self.as_of):
            raise ValueError("types and as_of do not apply to items")
        return self


class RecallHitOut(OutputModel):
    """One recalled memory and its score."""

    memory: MemoryOut
    score: float


class RecallResponse(OutputModel):
    """Recall hits, best first."""

    hits: list[RecallHitOut]


def memory_out(memory: Memory, item: Item | None = None) -> MemoryOut:
    """MemoryOut of a long-term memory (and of its item, when it is filed as one)."""
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
        namespace=None if item is None else item.namespace,
        key=None if item is None else item.key,
        value=None if item is None else item.value,
    )


def memory_list_out(page: MemoryPage) -> MemoryList:
    """MemoryList of a page of the memory listing."""
    return MemoryList(memories=[memory_out(e.memory, e.item) for e in page.entries],
                      next_offset=page.next_offset)


def recall_hit_out(hit: Hit, item: Item | None = None) -> RecallHitOut:
    """RecallHitOut of a recall hit (and of the item its memory is filed as)."""
    return RecallHitOut(memory=memory_out(hit.memory, item), score=float(hit.score))

"""Context bodies of the memory HTTP API: working-context items and the assembled context."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from api.models.base import InputModel, OutputModel, Score, memory_type_field
from api.models.conversation import MessageOut, message_out
from api.models.memory import MemoryOut, memory_out
from kg.context import TurnContext
from kg.shortterm import ContextItem
from kg.terms import ContextKey, ContextSource, MemoryType

__all__ = [
    "ContextAssemblyRequest",
    "ContextAssemblyResponse",
    "ContextItemOut",
    "ContextItemPut",
    "ContextList",
    "TokenCountsOut",
    "assembly_out",
    "context_item_out",
]


class ContextItemPut(InputModel):
    """A working-context value with its provenance."""

    value: Any
    source: ContextSource = ContextSource.EXPLICIT
    confidence: Score = 1.0
    type: MemoryType | None = memory_type_field(
        None, "The kind of memory the item is promoted as; omit to infer it from key and source."
    )


class ContextItemOut(OutputModel):
    """One working-context item."""

    key: ContextKey
    value: Any
    source: ContextSource
    confidence: float
    access_count: int
    type: MemoryType | None = Field(
        description="The kind of memory the item would be promoted as (given on PUT or "
        "inferred); null for an item that is never promoted."
    )
    tokens: int


class ContextList(OutputModel):
    """Every item of a session's working context."""

    items: list[ContextItemOut]
    tokens: int
    max_tokens: int


class ContextAssemblyRequest(InputModel):
    """Assemble the memory context of a session for the next LLM call."""

    query_hint: Annotated[str, StringConstraints(max_length=100_000)] | None = None
    token_budget: Annotated[int, Field(ge=0, le=10_000_000)] = 32_000
    include_memories: bool = True
    base_prompt: Annotated[str, StringConstraints(max_length=100_000)] = ""


class TokenCountsOut(OutputModel):
    """Estimated tokens of each part of an assembled context."""

    system: int
    conversation: int
    working: int
    long_term: int
    total: int


class ContextAssemblyResponse(OutputModel):
    """The assembled context and the system prompt rendered from it."""

    session_id: str
    prompt: str
    working_context: dict[str, Any]
    long_term_memories: list[MemoryOut]
    conversation: list[MessageOut]
    token_counts: TokenCountsOut
    budget: dict[str, int]


def context_item_out(item: ContextItem) -> ContextItemOut:
    """ContextItemOut of a working-context item."""
    return ContextItemOut(
        key=item.key,
        value=item.value,
        source=item.source,
        confidence=item.confidence,
        access_count=item.access_count,
        type=item.suggested_type,
        tokens=item.tokens,
    )


def assembly_out(turn: TurnContext) -> ContextAssemblyResponse:
    """ContextAssemblyResponse of an assembled turn context."""
    ctx = turn.context
    assert ctx is not None
    counts = ctx.token_counts
    return ContextAssemblyResponse(
        session_id=ctx.session_id,
        prompt=turn.system_prompt,
        working_context=ctx.working_context,
        long_term_memories=[memory_out(mem) for mem in ctx.long_term_memories],
        conversation=[message_out(msg) for msg in ctx.conversation],
        token_counts=TokenCountsOut(system=counts.system, conversation=counts.conversation,
                                    working=counts.working, long_term=counts.long_term,
                                    total=counts.total),
        budget=asdict(ctx.budget),
    )

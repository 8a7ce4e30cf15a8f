"""Pydantic models of the memory HTTP API's request and response bodies (one per concept)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from kg.context import TurnContext
from kg.memory import Memory
from kg.memory_service import Hit, PromotionReport
from kg.shortterm import ContextItem, Message, PendingItem, Session
from kg.terms import ContextKey, ContextSource, MemoryType, SessionStatus, SourceType

__all__ = [
    "ContextAssemblyRequest",
    "ContextAssemblyResponse",
    "ContextItemOut",
    "ContextItemPut",
    "ContextList",
    "ErrorBody",
    "ErrorResponse",
    "ForgetRequest",
    "MemoryOut",
    "MessageIn",
    "MessageList",
    "MessageOut",
    "PendingIn",
    "PendingList",
    "PendingOut",
    "PromotionOut",
    "RecallHitOut",
    "RecallRequest",
    "RecallResponse",
    "RememberRequest",
    "ResponseIn",
    "ResponseOut",
    "SessionClosed",
    "SessionOut",
    "SessionStart",
    "TokenCountsOut",
    "assembly_out",
    "context_item_out",
    "memory_out",
    "message_out",
    "pending_out",
    "promotion_out",
    "recall_hit_out",
    "session_out",
]

Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class _In(BaseModel):
    # Unknown fields are an error: a typo ("confidance") must not be silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True)


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Out):
    """The inside of every error response."""

    status: int
    code: str
    message: str
    details: dict[str, Any]


class ErrorResponse(_Out):
    """`{"error": {...}}`: the one error shape of the service."""

    error: ErrorBody


class SessionStart(_In):
    """Start a session (a random id is minted when none is given)."""

    session_id: Identifier | None = None
    project: Identifier
    agent: Identifier | None = None


class SessionOut(_Out):
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


class SessionSnapshot(_In):
    """A session's whole short-term state, to continue it on another instance."""

    snapshot: dict[str, Any] = Field(
        description="Opaque, versioned data from a snapshot or hand-off route."
    )


class PromotionOut(_Out):
    """The outcome of one promotion run."""

    promoted: list[str] = Field(description="Ids of the long-term memories written.")
    skipped: int = Field(description="Candidates below threshold or otherwise not promoted.")
    details: dict[str, Any] = Field(default_factory=dict)


class SessionClosed(_Out):
    """A closed session and the promotion run its closing triggered."""

    session: SessionOut
    promotion: PromotionOut


class ContextItemPut(_In):
    """A working-context value with its provenance."""

    value: Any
    source: ContextSource = ContextSource.EXPLICIT
    confidence: Score = 1.0
    memory_type: MemoryType | None = None


class ContextItemOut(_Out):
    """One working-context item."""

    key: ContextKey
    value: Any
    source: ContextSource
    confidence: float
    access_count: int
    suggested_type: MemoryType | None
    tokens: int


class ContextList(_Out):
    """Every item of a session's working context."""

    items: list[ContextItemOut]
    tokens: int
    max_tokens: int


class PendingIn(_In):
    """Stage a memory for promotion: an agent decision, or implicit with an importance score."""

    content: Text
    memory_type: MemoryType = MemoryType.FACT
    confidence: Score = 0.8
    source_type: SourceType = SourceType.AGENT
    rationale: Annotated[str, StringConstraints(max_length=10_000)] | None = None
    importance_score: Score | None = Field(
        default=None, description="Omit for an agent decision (always promoted)."
    )


class PendingOut(_Out):
    """One staged memory."""

    id: str
    content: str
    memory_type: MemoryType
    confidence: float
    source_type: SourceType
    rationale: str | None
    suggested_by: str
    importance_score: float


class PendingList(_Out):
    """The items ready for promotion, highest importance first."""

    items: list[PendingOut]


class MessageIn(_In):
    """A conversation message (also captured as an episode of the session)."""

    role: Literal["user", "assistant", "system", "tool"]
    content: Annotated[str, StringConstraints(max_length=100_000)]


class MessageOut(_Out):
    """A message in the conversation buffer."""

    role: str
    content: str
    timestamp: datetime
    tokens: int


class MessageList(_Out):
    """The conversation buffer, oldest first."""

    messages: list[MessageOut]
    tokens: int


class ResponseIn(_In):
    """An LLM reply to capture and infer working context from."""

    content: Annotated[str, StringConstraints(max_length=100_000)]


class ResponseOut(_Out):
    """What the response processor inferred (stored as inferred, confidence 0.6)."""

    inferred: dict[str, str]


class RememberRequest(_In):
    """Write a long-term memory (the `remember` tool)."""

    content: Text
    memory_type: MemoryType = MemoryType.FACT
    confidence: Score = 0.8
    source_type: SourceType = SourceType.AGENT
    session_id: Identifier | None = None
    agent: Identifier | None = None
    rationale: Annotated[str, StringConstraints(max_length=10_000)] | None = None


class MemoryOut(_Out):
    """A long-term memory."""

    id: str
    project: str
    session: str
    type: MemoryType
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


class ForgetRequest(_In):
    """Retire a memory (the `forget` tool); it stays in history with the reason."""

    reason: Annotated[str, StringConstraints(max_length=1_000)] | None = None
    replacement_id: Identifier | None = None


class RecallRequest(_In):
    """Find memories (the `recall` tool)."""

    query: Annotated[str, StringConstraints(min_length=1, max_length=1_000)]
    types: list[MemoryType] | None = None
    min_confidence: Score = 0.0
    limit: Annotated[int, Field(ge=1, le=50)] = 10
    mode: Literal["hybrid", "text", "semantic"] = "hybrid"
    as_of: datetime | None = None


class RecallHitOut(_Out):
    """One recalled memory and its score."""

    memory: MemoryOut
    score: float


class RecallResponse(_Out):
    """Recall hits, best first."""

    hits: list[RecallHitOut]


class ContextAssemblyRequest(_In):
    """Assemble the memory context of a session for the next LLM call."""

    query_hint: Annotated[str, StringConstraints(max_length=100_000)] | None = None
    token_budget: Annotated[int, Field(ge=0, le=10_000_000)] = 32_000
    include_memories: bool = True
    base_prompt: Annotated[str, StringConstraints(max_length=100_000)] = ""


class TokenCountsOut(_Out):
    """Estimated tokens of each part of an assembled context."""

    system: int
    conversation: int
    working: int
    long_term: int
    total: int


class ContextAssemblyResponse(_Out):
    """The assembled context and the system prompt rendered from it."""

    session_id: str
    prompt: str
    working_context: dict[str, Any]
    long_term_memories: list[MemoryOut]
    conversation: list[MessageOut]
    token_counts: TokenCountsOut
    budget: dict[str, int]


# -- converters from kg objects (kg never imports api, so they live here) ---------------------


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def session_out(session: Session) -> SessionOut:
    """SessionOut of a kg Session (read it under its lock or after it closed)."""
    return SessionOut(
        session_id=session.id,
        project=session.project,
        agent=session.agent,
        status=session.status,
        created_at=_when(session.created_at),
        context_items=session.working_context.size(),
        pending_memories=session.pending_memories.size(),
        messages=session.conversation.size(),
        episodes=session.working_memory.size(),
    )


def context_item_out(item: ContextItem) -> ContextItemOut:
    """ContextItemOut of a working-context item."""
    return ContextItemOut(
        key=item.key,
        value=item.value,
        source=item.source,
        confidence=item.confidence,
        access_count=item.access_count,
        suggested_type=item.suggested_type,
        tokens=item.tokens,
    )


def message_out(message: Message) -> MessageOut:
    """MessageOut of a conversation message."""
    return MessageOut(
        role=message.role.value,
        content=message.content,
        timestamp=_when(message.timestamp),
        tokens=message.tokens,
    )


def pending_out(item: PendingItem) -> PendingOut:
    """PendingOut of a staged memory."""
    return PendingOut(
        id=item.id,
        content=item.content,
        memory_type=item.memory_type,
        confidence=item.confidence,
        source_type=item.source_type,
        rationale=item.rationale,
        suggested_by=item.suggested_by.value,
        importance_score=item.importance_score,
    )


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


def promotion_out(report: PromotionReport) -> PromotionOut:
    """PromotionOut of a promotion report."""
    return PromotionOut(promoted=list(report.promoted), skipped=report.skipped,
                        details=dict(report.details))


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

"""ContextBuilder: assembles short-term and long-term memory into an LLM prompt (seed 004 §5.1).

build() reads a session's conversation and working context and asks a MemorySource for the
relevant long-term memories — 10 when there is a query hint (usually the user's message), else
the 5 best with confidence ≥ 0.7 — then cuts every part to its share of the token budget:
the conversation keeps its most recent messages, the working context its most confident and
most recently used items, the memories their highest-confidence ones. format_for_prompt()
renders the result as markdown with every remembered value sanitised (kg.context.sanitizer).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kg.context.sanitizer import sanitize
from kg.context.token_budget import (
    DEFAULT_BUDGET,
    Budget,
    allocate_budget,
    truncate_conversation,
    truncate_memories,
)
from kg.memory import Memory
from kg.shortterm import ContextItem, Message, SessionManager
from kg.tokens import TOKEN_COUNTER, TokenCounter

__all__ = [
    "HINT_LIMIT",
    "NO_HINT_LIMIT",
    "NO_HINT_MIN_CONFIDENCE",
    "ContextBuilder",
    "MemoryContext",
    "MemorySource",
    "TokenCounts",
    "confidence_badge",
    "format_for_prompt",
    "format_memories",
    "format_working_context",
]

HINT_LIMIT = 10
NO_HINT_LIMIT = 5
NO_HINT_MIN_CONFIDENCE = 0.7


class MemorySource(Protocol):
    """Where long-term memories come from (the MemoryService over recall and the store)."""

    def relevant_memories(
        self, project: str, *, query: str | None, min_confidence: float | None, limit: int
    ) -> list[Memory]:
        """Memories of `project` relevant to `query` (or the most confident, with no query)."""
        ...


@dataclass(frozen=True, slots=True)
class TokenCounts:
    """Estimated tokens of each assembled part and their sum."""

    system: int
    conversation: int
    working: int
    long_term: int
    total: int


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """An assembled context (seed 004 §5.1.1.2), every part already within its budget."""

    session_id: str
    project: str | None
    conversation: list[Message]
    working_context: dict[str, Any]
    long_term_memories: list[Memory]
    system_context: str
    token_counts: TokenCounts
    budget: Budget = field(default=DEFAULT_BUDGET)


class ContextBuilder:
    """Builds budgeted MemoryContexts for the sessions of one SessionManager."""

    def __init__(
        self,
        sessions: SessionManager,
        *,
        memories: MemorySource | None = None,
        counter: TokenCounter = TOKEN_COUNTER,
    ) -> None:
        self.sessions = sessions
        self.memories = memories
        self.counter = counter

    def build(
        self,
        session_id: str,
        *,
        token_budget: Budget | int | None = None,
        query_hint: str | None = None,
        include_memories: bool = True,
        system_context: str = "",
    ) -> MemoryContext:
        """Assemble the session's context; SessionNotFoundError if there is no such session."""
        budget = _budget(token_budget)
        with self.sessions.use(session_id, allow_paused=True) as session:
            conversation = self.get_conversation(session.conversation.window(), budget.conversation)
            items = session.working_context.to_list()
            project = session.project
        working = self._truncate_working(items, budget.working)
        long_term: list[Memory] = []
        if include_memories and project is not None:
            long_term = self.get_relevant_memories(project, query_hint)
        return self.assemble(
            session_id, project, conversation, working, long_term, budget, system_context
        )

    def get_conversation(self, messages: Sequence[Message], budget: int) -> list[Message]:
        """The most recent messages that fit in `budget` tokens, oldest first."""
        return truncate_conversation(messages, budget, counter=self.counter)

    def get_working_context(self, session_id: str) -> dict[str, Any]:
        """The session's working context as a plain key → value map."""
        with self.sessions.use(session_id, allow_paused=True) as session:
            return {item.key.value: item.value for item in session.working_context.to_list()}

    def get_relevant_memories(self, project: str, query_hint: str | None) -> list[Memory]:
        """10 memories relevant to the hint, or the 5 best with confidence ≥ 0.7 without one."""
        if self.memories is None:
            return []
        hint = query_hint.strip() if query_hint else ""
        if hint:
            return self.memories.relevant_memories(
                project, query=hint, min_confidence=None, limit=HINT_LIMIT
            )
        return self.memories.relevant_memories(
            project, query=None, min_confidence=NO_HINT_MIN_CONFIDENCE, limit=NO_HINT_LIMIT
        )

    def assemble(
        self,
        session_id: str,
        project: str | None,
        conversation: list[Message],
        working: list[ContextItem],
        memories: list[Memory],
        budget: Budget,
        system_context: str = "",
    ) -> MemoryContext:
        """Combine the parts, cut each to its budget and count their tokens."""
        conversation = self.get_conversation(conversation, budget.conversation)
        working = self._truncate_working(working, budget.working)
        memories = truncate_memories(
            memories, budget.long_term, confidence=lambda m: m.confidence, counter=self.counter
        )
        system = _cut(system_context, budget.system * self.counter.chars_per_token)
        counts = TokenCounts(
            system=self.counter.estimate_tokens(system),
            conversation=self.counter.count_messages(conversation),
            working=sum(item.tokens for item in working),
            long_term=self.counter.count_memories(memories),
            total=0,
        )
        total = counts.system + counts.conversation + counts.working + counts.long_term
        return MemoryContext(
            session_id=session_id,
            project=project,
            conversation=conversation,
            working_context={item.key.value: item.value for item in working},
            long_term_memories=memories,
            system_context=system,
            token_counts=TokenCounts(
                counts.system, counts.conversation, counts.working, counts.long_term, total
            ),
            budget=budget,
        )

    @staticmethod
    def _truncate_working(items: list[ContextItem], budget: int) -> list[ContextItem]:
        # Most confident first, then most recently used; the result keeps insertion order.
        ranked = sorted(items, key=lambda i: (i.confidence, i.last_accessed), reverse=True)
        keep: set[int] = set()
        remaining = budget
        for item in ranked:
            if item.tokens <= remaining:
                keep.add(id(item))
                remaining -= item.tokens
        return [item for item in items if id(item) in keep]


def _budget(value: Budget | int | None) -> Budget:
    if value is None:
        return DEFAULT_BUDGET
    if isinstance(value, Budget):
        return value
    return allocate_budget(value)


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars]


def confidence_badge(confidence: float) -> str:
    """`(high confidence)` at ≥ 0.8, `(medium confidence)` at ≥ 0.5, else `(low confidence)`."""
    if confidence >= 0.8:
        return "(high confidence)"
    if confidence >= 0.5:
        return "(medium confidence)"
    return "(low confidence)"


def _format_value(value: Any) -> str:
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
        return sanitize(", ".join(str(v) for v in value))
    return sanitize(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


def format_working_context(working: dict[str, Any]) -> str:
    """One `- **Key**: value` line per item, values sanitised."""
    return "\n".join(
        f"- **{key.replace('_', ' ').capitalize()}**: {_format_value(value)}"
        for key, value in working.items()
    )


def format_memories(memories: Sequence[Memory]) -> str:
    """One `- [type] (level confidence) content _(date)_` line per memory, content sanitised."""
    return "\n".join(
        f"- [{m.type.value}] {confidence_badge(m.confidence)} {sanitize(m.content)} "
        f"_({m.timestamp.date().isoformat()})_"
        for m in memories
    )


def format_for_prompt(context: MemoryContext) -> str:
    """Markdown for the system prompt: `## Session Context` and `## Remembered Information`."""
    parts = []
    if context.working_context:
        parts.append("## Session Context\n" + format_working_context(context.working_context))
    if context.long_term_memories:
        parts.append("## Remembered Information\n" + format_memories(context.long_term_memories))
    return "\n\n".join(parts)

"""Token budgets for context assembly (seed 004 §5.4.2): allocation and truncation.

>>> allocate_budget(32_000)
Budget(total=32000, system=2000, conversation=20000, working=4000, long_term=6000)
>>> allocate_budget(160).system, allocate_budget(160).conversation
(10, 100)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kg.errors import ValidationError
from kg.tokens import TOKEN_COUNTER, Countable, HasContent, TokenCounter

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TOTAL",
    "Budget",
    "allocate_budget",
    "enforce_budget",
    "truncate_conversation",
    "truncate_memories",
]

DEFAULT_TOTAL = 32_000
# A budget larger than any context window in use; bigger values are almost surely a caller bug.
MAX_TOTAL = 10_000_000

T = TypeVar("T")
M = TypeVar("M", bound=HasContent)
C = TypeVar("C", bound=Countable)


@dataclass(frozen=True, slots=True)
class Budget:
    """Tokens allotted to each part of an assembled context."""

    total: int
    system: int
    conversation: int
    working: int
    long_term: int


def allocate_budget(total: int) -> Budget:
    """Split `total`: system min(2000, total/16), conversation 5/8, working 1/8, long-term 3/16."""
    if type(total) is not int or not 0 <= total <= MAX_TOTAL:
        raise ValidationError(
            f"token budget must be an int in [0, {MAX_TOTAL}], got {total!r}",
            details={"field": "token_budget", "value": repr(total)},
        )
    return Budget(
        total=total,
        system=min(2_000, total // 16),
        conversation=total * 5 // 8,
        working=total // 8,
        long_term=total * 3 // 16,
    )


DEFAULT_BUDGET = allocate_budget(DEFAULT_TOTAL)


def enforce_budget(
    items: Sequence[T],
    budget: int,
    *,
    count: Callable[[Sequence[T]], int],
    truncate: Callable[[Sequence[T], int], list[T]],
) -> list[T]:
    """Return `items` unchanged if they fit in `budget`, else `truncate(items, budget)`."""
    if count(items) <= budget:
        return list(items)
    return truncate(items, budget)


def truncate_conversation(
    messages: Sequence[C], budget: int, *, counter: TokenCounter = TOKEN_COUNTER
) -> list[C]:
    """Keep the most recent messages that fit in `budget`, oldest first."""
    kept: list[C] = []
    remaining = budget
    for message in reversed(messages):
        tokens = counter.count_message(message)
        if tokens > remaining:
            # Stop rather than skip: a gap in the middle of a conversation misleads the model.
            break
        kept.append(message)
        remaining -= tokens
    kept.reverse()
    return kept


def truncate_memories(
    memories: Sequence[M],
    budget: int,
    *,
    confidence: Callable[[M], float],
    counter: TokenCounter = TOKEN_COUNTER,
) -> list[M]:
    """Keep the highest-confidence memories that fit in `budget`, highest first."""
    ranked = sorted(memories, key=confidence, reverse=True)  # stable: ties keep recall order
    kept: list[M] = []
    remaining = budget
    for memory in ranked:
        tokens = counter.count_memory(memory)
        if tokens > remaining:
            break
        kept.append(memory)
        remaining -= tokens
    return kept

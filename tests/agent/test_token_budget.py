"""Token budget (seed 004 §5.4.3). Mapping, seed test → test here:

estimate_tokens reasonable → test_estimate_tokens_reasonable; handles empty string →
test_estimate_tokens_empty; count_message overhead → test_count_message_overhead; count_memory
overhead → test_count_memory_overhead; count_messages sums → test_count_messages_sums;
count_memories sums → test_count_memories_sums; allocate_budget distributes →
test_allocate_budget_default; handles small budgets → test_allocate_budget_small;
enforce_budget within budget → test_enforce_budget; truncate_conversation preserves recent →
test_truncate_conversation_keeps_recent; truncate_memories preserves highest confidence →
test_truncate_memories_keeps_confident; context assembly respects total budget →
test_assembly_respects_total_budget.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kg.context.token_budget import (
    DEFAULT_BUDGET,
    allocate_budget,
    enforce_budget,
    truncate_conversation,
    truncate_memories,
)
from kg.errors import ValidationError
from kg.memory import Memory
from kg.memory_service import MemoryService
from kg.terms import MemoryType, SourceType
from kg.tokens import TOKEN_COUNTER as TC


def memory(content: str, confidence: float) -> Memory:
    now = datetime(2025, 1, 2, tzinfo=UTC)
    return Memory(id=content[:8] or "m", project="p", session="s", type=MemoryType.FACT,
                  content=content, confidence=confidence, source_type=SourceType.AGENT,
                  timestamp=now, recorded_at=now)


def test_estimate_tokens_reasonable() -> None:
    assert TC.estimate_tokens("a" * 400) == 100
    assert TC.estimate_tokens("hello world, this is a sentence.") == 8


def test_estimate_tokens_empty() -> None:
    assert TC.estimate_tokens("") == 0
    assert TC.estimate_tokens(None) == 0


def test_count_message_overhead() -> None:
    assert TC.count_message({"role": "user", "content": "abcdefgh"}) == 2 + 4


def test_count_memory_overhead() -> None:
    assert TC.count_memory(memory("abcdefgh", 0.9)) == 2 + 10


def test_count_messages_sums() -> None:
    msgs = [{"role": "user", "content": "a" * 8}, {"role": "assistant", "content": "b" * 40}]
    assert TC.count_messages(msgs) == (2 + 4) + (10 + 4)


def test_count_memories_sums() -> None:
    assert TC.count_memories([memory("a" * 8, 0.9), memory("b" * 4, 0.5)]) == 12 + 11


def test_allocate_budget_default() -> None:
    b = allocate_budget(32_000)
    assert (b.total, b.system, b.conversation, b.working, b.long_term) == (
        32_000, 2_000, 20_000, 4_000, 6_000)
    assert b == DEFAULT_BUDGET


@pytest.mark.parametrize("total", [0, 1, 15, 16, 100, 1_000, 8_192, 128_000, 1_000_000])
def test_allocate_budget_small(total: int) -> None:
    b = allocate_budget(total)
    assert b.system == min(2_000, total // 16)
    assert (b.conversation, b.working, b.long_term) == (total * 5 // 8, total // 8, total * 3 // 16)
    assert b.system + b.conversation + b.working + b.long_term <= total


@pytest.mark.parametrize("bad", [-1, 1.5, "32000", None, True, 10**9])
def test_allocate_budget_rejects_bad_totals(bad: object) -> None:
    with pytest.raises(ValidationError):
        allocate_budget(bad)  # type: ignore[arg-type]


def test_enforce_budget() -> None:
    msgs = [{"role": "user", "content": "x" * 40} for _ in range(10)]  # 14 tokens each

    def trunc(items: object, budget: int) -> list[dict[str, str]]:
        return truncate_conversation(items, budget)  # type: ignore[arg-type]

    assert enforce_budget(msgs, 1_000, count=TC.count_messages, truncate=trunc) == msgs
    kept = enforce_budget(msgs, 50, count=TC.count_messages, truncate=trunc)
    assert len(kept) == 3 and TC.count_messages(kept) <= 50


def test_truncate_conversation_keeps_recent() -> None:
    msgs = [{"role": "user", "content": f"message {i:03d}"} for i in range(100)]
    kept = truncate_conversation(msgs, 40)
    # 6 tokens each
    assert [m["content"] for m in kept] == [f"message {i:03d}" for i in range(94, 100)]
    assert TC.count_messages(kept) <= 40
    assert truncate_conversation(msgs, 0) == []


def test_truncate_memories_keeps_confident() -> None:
    mems = [memory(f"memory {i}" + "x" * 30, c) for i, c in enumerate([0.3, 0.95, 0.6, 0.8])]
    kept = truncate_memories(mems, 40, confidence=lambda m: m.confidence)
    assert [m.confidence for m in kept] == [0.95, 0.8]


def test_assembly_respects_total_budget(service: MemoryService) -> None:
    session = service.start_session("budget", project="p")
    for i in range(300):
        service.add_message(session.id, "user", f"turn {i} " + "words " * 30)
    for i in range(40):
        service.remember("p", f"fact number {i} about the budget " + "detail " * 20,
                         confidence=0.75 + (i % 5) / 20)
    for total in (500, 4_000, 32_000):
        ctx = service.builder.build(session.id, token_budget=total, query_hint="budget")
        assert ctx.token_counts.total <= total
        assert ctx.token_counts.conversation <= ctx.budget.conversation
        assert ctx.token_counts.long_term <= ctx.budget.long_term

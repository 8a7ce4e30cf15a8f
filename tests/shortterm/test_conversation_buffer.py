"""ConversationBuffer, seed 003's ShortTermMemory (seed 003 §1).

Mapping of seed 003 §1:
- 'append: adds a ContextEntry; getWindow() returns it' → test_append_then_window
- 'getWindow with lastN: last 3 of 10' → test_window_last_n
- 'getWindow default returns all entries' → test_window_default_returns_all
- 'tokenCount returns the correct sum' → test_token_count_is_the_sum
- 'capacity eviction: oldest evicted until within limit' → test_capacity_eviction_fifo
- 'clear: window [] and tokenCount 0' → test_clear
- 'snapshot / restore reconstructs the identical state' → test_snapshot_restore_identical
- 'immutability: getWindow returns a copy' → test_window_is_a_copy
Plus: default 128,000 tokens and 1,000 messages, message-count eviction, window(0), a message
bigger than the budget, and inconsistent snapshots.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from kg.shortterm import ConversationBuffer, InvalidSnapshotError, MessageTooLargeError
from kg.shortterm.conversation_buffer import Role


def test_defaults() -> None:
    buffer = ConversationBuffer()
    assert (buffer.max_tokens, buffer.max_messages, buffer.token_count()) == (128_000, 1_000, 0)


def test_append_then_window() -> None:
    buffer = ConversationBuffer(now=lambda: 9.0)
    assert buffer.append("user", "hello there") == []
    [message] = buffer.window()
    assert (message.role, message.content, message.timestamp, message.tokens) == (
        Role.USER,
        "hello there",
        9.0,
        2 + 4,
    )


def test_window_last_n() -> None:
    buffer = ConversationBuffer()
    for i in range(10):
        buffer.append("user", f"m{i}")
    assert [m.content for m in buffer.window(3)] == ["m7", "m8", "m9"]
    assert buffer.window(0) == []
    assert len(buffer.window(50)) == 10


def test_window_default_returns_all() -> None:
    buffer = ConversationBuffer()
    for i in range(10):
        buffer.append("assistant", f"m{i}")
    assert [m.content for m in buffer.window()] == [f"m{i}" for i in range(10)]


def test_token_count_is_the_sum() -> None:
    buffer = ConversationBuffer()
    buffer.append("user", "a" * 40, tokens=7)
    buffer.append("user", "a" * 40)  # 10 + 4
    assert buffer.token_count() == 7 + 14 == sum(m.tokens for m in buffer.window())


def test_capacity_eviction_fifo() -> None:
    buffer = ConversationBuffer(30)
    for i in range(3):
        buffer.append("user", f"m{i}", tokens=10)
    evicted = buffer.append("user", "m3", tokens=15)
    assert [m.content for m in evicted] == ["m0", "m1"]
    assert [m.content for m in buffer.window()] == ["m2", "m3"]
    assert buffer.token_count() == 25 <= buffer.max_tokens


def test_message_count_eviction() -> None:
    buffer = ConversationBuffer(max_messages=3)
    for i in range(5):
        buffer.append("user", f"m{i}")
    assert [m.content for m in buffer.window()] == ["m2", "m3", "m4"]


def test_message_bigger_than_budget_is_refused() -> None:
    buffer = ConversationBuffer(10)
    buffer.append("user", "keep", tokens=5)
    before = buffer.snapshot()
    with pytest.raises(MessageTooLargeError, match="11 tokens"):
        buffer.append("user", "x", tokens=11)
    assert buffer.snapshot() == before


def test_clear() -> None:
    buffer = ConversationBuffer()
    buffer.append("user", "hello")
    buffer.clear()
    assert (buffer.window(), buffer.token_count(), buffer.size()) == ([], 0, 0)


def test_snapshot_restore_identical() -> None:
    clock = iter(range(100))
    buffer = ConversationBuffer(100, max_messages=5, now=lambda: float(next(clock)))
    for i in range(7):
        buffer.append("user" if i % 2 else "assistant", f"message {i}")
    data = json.loads(json.dumps(buffer.snapshot()))
    other = ConversationBuffer()
    other.restore(data)
    assert other.window() == buffer.window() and other.snapshot() == buffer.snapshot()
    assert (other.max_tokens, other.max_messages) == (100, 5)


def test_restore_rejects_inconsistent_snapshot() -> None:
    buffer = ConversationBuffer()
    buffer.append("user", "hello")
    data = buffer.snapshot()
    data["total_tokens"] += 1
    other = ConversationBuffer()
    other.append("user", "mine")
    before = other.snapshot()
    with pytest.raises(InvalidSnapshotError, match="total_tokens"):
        other.restore(data)
    assert other.snapshot() == before


def test_window_is_a_copy() -> None:
    buffer = ConversationBuffer()
    buffer.append("user", "hello")
    window = buffer.window()
    window.clear()
    assert buffer.size() == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        buffer.window()[0].content = "changed"  # type: ignore[misc]

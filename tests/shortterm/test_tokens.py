"""kg.tokens.TokenCounter (seed 004 §5.4.3).

Mapping of seed 004 §5.4.3 (TokenCounter part; budget allocation belongs to ContextBuilder):
- 'estimate_tokens produces reasonable estimates' → test_estimate_tokens_is_chars_over_four
- 'estimate_tokens handles empty string' → test_estimate_tokens_empty_and_none
- 'count_message includes overhead' → test_count_message_includes_overhead
- 'count_memory includes metadata overhead' → test_count_memory_includes_overhead
- 'count_messages sums correctly' / 'count_memories sums correctly' → test_list_counts_sum
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kg.tokens import TOKEN_COUNTER, TokenCounter


@dataclass
class Memory:
    content: str | None


def test_estimate_tokens_is_chars_over_four() -> None:
    assert TOKEN_COUNTER.estimate_tokens("a" * 400) == 100
    assert TOKEN_COUNTER.estimate_tokens("abc") == 0
    assert TOKEN_COUNTER.estimate_tokens("abcdefg") == 1


def test_estimate_tokens_empty_and_none() -> None:
    assert TOKEN_COUNTER.estimate_tokens("") == 0
    assert TOKEN_COUNTER.estimate_tokens(None) == 0


def test_count_message_includes_overhead() -> None:
    assert TOKEN_COUNTER.count_message({"role": "user", "content": "a" * 40}) == 14
    assert TOKEN_COUNTER.count_message("") == 4


def test_count_memory_includes_overhead() -> None:
    assert TOKEN_COUNTER.count_memory(Memory("a" * 40)) == 20
    assert TOKEN_COUNTER.count_memory(Memory(None)) == 10


def test_list_counts_sum() -> None:
    messages = [{"content": "a" * 8}, {"content": "b" * 12}]
    assert TOKEN_COUNTER.count_messages(messages) == (2 + 4) + (3 + 4)
    assert TOKEN_COUNTER.count_memories([Memory("a" * 8), "b" * 12]) == (2 + 10) + (3 + 10)
    assert TOKEN_COUNTER.count_messages([]) == 0


def test_custom_counter_and_bad_content() -> None:
    assert TokenCounter(chars_per_token=2).estimate_tokens("abcd") == 2
    with pytest.raises(ValueError):
        TokenCounter(chars_per_token=0)
    with pytest.raises(TypeError):
        TOKEN_COUNTER.count_message({"content": 12})

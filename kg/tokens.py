"""Fast token estimation for budgets (seed 004 §5.4): 4 characters ≈ 1 token, not for billing.

The one estimate used everywhere a token budget is enforced: the working context's
max_tokens, the conversation buffer and, later, context assembly.

>>> counter = TokenCounter()
>>> counter.estimate_tokens("abcdefgh"), counter.estimate_tokens(None)
(2, 0)
>>> counter.count_message({"role": "user", "content": "abcdefgh"})
6
>>> counter.count_memories(["abcd", {"content": "abcdefgh"}])
23
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

__all__ = [
    "CHARS_PER_TOKEN",
    "MEMORY_OVERHEAD",
    "MESSAGE_OVERHEAD",
    "TOKEN_COUNTER",
    "HasContent",
    "TokenCounter",
]

CHARS_PER_TOKEN = 4
# Role and message framing in a chat transcript.
MESSAGE_OVERHEAD = 4
# Type, confidence and timestamp rendered beside a memory's content.
MEMORY_OVERHEAD = 10


@runtime_checkable
class HasContent(Protocol):
    """Anything with a textual `content` attribute (a message or a memory object)."""

    @property
    def content(self) -> str | None:
        """The text whose tokens are counted."""
        ...


Countable = str | Mapping[str, object] | HasContent | None


class TokenCounter:
    """Character-based token estimates with per-message and per-memory overheads."""

    __slots__ = ("chars_per_token", "memory_overhead", "message_overhead")

    def __init__(
        self,
        *,
        chars_per_token: int = CHARS_PER_TOKEN,
        message_overhead: int = MESSAGE_OVERHEAD,
        memory_overhead: int = MEMORY_OVERHEAD,
    ) -> None:
        if chars_per_token < 1 or message_overhead < 0 or memory_overhead < 0:
            raise ValueError("chars_per_token must be ≥ 1 and overheads ≥ 0")
        self.chars_per_token = chars_per_token
        self.message_overhead = message_overhead
        self.memory_overhead = memory_overhead

    def estimate_tokens(self, text: str | None) -> int:
        """Tokens in `text`: characters // 4; None counts 0."""
        if text is None:
            return 0
        return len(text) // self.chars_per_token

    def count_message(self, message: Countable) -> int:
        """Tokens of one chat message: its content plus 4 for role and framing."""
        return self.estimate_tokens(_content(message)) + self.message_overhead

    def count_memory(self, memory: Countable) -> int:
        """Tokens of one memory: its content plus 10 for type, confidence and timestamp."""
        return self.estimate_tokens(_content(memory)) + self.memory_overhead

    def count_messages(self, messages: Iterable[Countable]) -> int:
        """Sum of count_message over `messages`."""
        return sum(self.count_message(message) for message in messages)

    def count_memories(self, memories: Iterable[Countable]) -> int:
        """Sum of count_memory over `memories`."""
        return sum(self.count_memory(memory) for memory in memories)


def _content(item: Countable) -> str | None:
    if item is None or isinstance(item, str):
        return item
    value = item.get("content") if isinstance(item, Mapping) else item.content
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"content must be a string or None, got {type(value).__name__}")


# Immutable in practice (slots, no setters used anywhere), so sharing one instance is safe.
TOKEN_COUNTER = TokenCounter()

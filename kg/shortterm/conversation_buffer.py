"""The conversation buffer: a token-budget FIFO of chat messages (seeds 001 and 003).

This is seed 003's `ShortTermMemory` (and seed 001's `ConversationBuffer`); one name is kept.
Appending evicts the oldest messages until the new one fits within max_tokens (default 128,000)
and max_messages (default 1,000). A single message larger than the whole budget is refused with
MessageTooLargeError rather than emptying the buffer and still not fitting. The running token
total makes token_count() O(1); window() returns a new list of immutable messages, so callers
cannot change the buffer through it. snapshot()/restore() hand the buffer between processes.
A message may carry an exact JSON `item` beside its role and content (an OpenAI Agents SDK
session item, kg.integrations.openai_agents): the content is its text, counted in tokens.

>>> buffer = ConversationBuffer(max_tokens=10, now=lambda: 0.0)
>>> _ = buffer.append("user", "abcd")          # 1 + 4 overhead = 5 tokens
>>> _ = buffer.append("assistant", "efgh")
>>> [m.content for m in buffer.append("user", "ijkl")], buffer.token_count()
(['abcd'], 10)
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import islice
from typing import Any

from kg.errors import ValidationError
from kg.shortterm.errors import InvalidContentError, InvalidSnapshotError, MessageTooLargeError
from kg.terms import parse_term
from kg.tokens import TOKEN_COUNTER, TokenCounter

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_MAX_TOKENS",
    "MAX_ITEM_BYTES",
    "ConversationBuffer",
    "Message",
    "Role",
]

DEFAULT_MAX_TOKENS = 128_000
DEFAULT_MAX_MESSAGES = 1_000
MAX_ITEM_BYTES = 1_000_000


class Role(StrEnum):
    """Who spoke a message."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message with its token estimate (content + message overhead)."""

    role: Role
    content: str
    timestamp: float
    tokens: int
    item: dict[str, Any] | None = None  # the exact JSON item the message was given as


class ConversationBuffer:
    """FIFO of messages bounded by tokens and count, with an O(1) running token total."""

    __slots__ = ("_counter", "_messages", "_now", "_tokens", "max_messages", "max_tokens")

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        now: Callable[[], float] = time.time,
        counter: TokenCounter = TOKEN_COUNTER,
    ) -> None:
        for name, value in (("max_tokens", max_tokens), ("max_messages", max_messages)):
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.max_tokens = max_tokens
        self.max_messages = max_messages
        self._now = now
        self._counter = counter
        self._messages: deque[Message] = deque()
        self._tokens = 0

    def append(self, role: Role | str, content: str, *, tokens: int | None = None) -> list[Message]:
        """Add a message (tokens estimated unless given); return the messages evicted for it."""
        speaker = parse_term(Role, role)
        if not isinstance(content, str):
            raise InvalidContentError(
                f"message content must be a string, got {content!r}",
                details={"value": repr(content)},
            )
        if tokens is None:
            tokens = self._counter.count_message(content)
        elif type(tokens) is not int or tokens < 0:
            raise InvalidContentError(f"tokens must be a non-negative int, got {tokens!r}")
        if tokens > self.max_tokens:
            raise MessageTooLargeError(
                f"message of {tokens} tokens exceeds the buffer's max_tokens={self.max_tokens}",
                details={"tokens": tokens, "max_tokens": self.max_tokens},
            )
        evicted: list[Message] = []
        messages = self._messages
        while messages and (
            self._tokens + tokens > self.max_tokens or len(messages) >= self.max_messages
        ):
            old = messages.popleft()
            self._tokens -= old.tokens
            evicted.append(old)
        messages.append(Message(speaker, content, self._now(), tokens))
        self._tokens += tokens
        return evicted

    def attach_item(self, item: Mapping[str, Any]) -> Message:
        """Give the newest message its exact JSON item (a copy); return the message."""
        if not self._messages:
            raise InvalidContentError("the conversation has no message to attach an item to")
        copy = _json_copy(item)
        message = replace(self._messages.pop(), item=copy)
        self._messages.append(message)
        return message

    def pop(self) -> Message | None:
        """Remove and return the newest message (None if the buffer is empty)."""
        if not self._messages:
            return None
        message = self._messages.pop()
        self._tokens -= message.tokens
        return message

    def window(self, last_n: int | None = None) -> list[Message]:
        """A new list of the last `last_n` messages (all if None), oldest first."""
        if last_n is None:
            return list(self._messages)
        if type(last_n) is not int or last_n < 0:
            raise ValueError(f"last_n must be a non-negative int or None, got {last_n!r}")
        # Not messages[-last_n:]: with last_n == 0 that slice would return everything.
        newest = list(islice(reversed(self._messages), last_n))
        newest.reverse()
        return newest

    def token_count(self) -> int:
        """Sum of the held messages' token estimates, in O(1)."""
        return self._tokens

    def size(self) -> int:
        """Number of messages held."""
        return len(self._messages)

    def clear(self) -> None:
        """Drop every message."""
        self._messages.clear()
        self._tokens = 0

    def snapshot(self) -> dict[str, Any]:
        """The buffer as JSON-able data (seed 003's ShortTermSnapshot plus the limits)."""
        return {
            "max_tokens": self.max_tokens,
            "max_messages": self.max_messages,
            "total_tokens": self._tokens,
            "messages": [
                {
                    "role": m.role.value,
                    "content": m.content,
                    "timestamp": m.timestamp,
                    "tokens": m.tokens,
                    **({} if m.item is None else {"item": m.item}),
                }
                for m in self._messages
            ],
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the state with a snapshot's, checking it is consistent; else change nothing."""
        try:
            fresh = ConversationBuffer(
                data["max_tokens"], max_messages=data["max_messages"], counter=self._counter
            )
            for raw in data["messages"]:
                if fresh.append(raw["role"], raw["content"], tokens=raw["tokens"]):
                    raise ValueError("messages exceed the snapshot's own limits")
                # append() stamped it with the clock; put back the recorded time.
                last = fresh._messages.pop()
                fresh._messages.append(replace(last, timestamp=float(raw["timestamp"])))
                if raw.get("item") is not None:
                    fresh.attach_item(raw["item"])
            if fresh._tokens != data["total_tokens"]:
                raise ValueError(
                    f"total_tokens {data['total_tokens']!r} != sum of messages {fresh._tokens}"
                )
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise InvalidSnapshotError(f"invalid conversation-buffer snapshot: {e}") from e
        self.max_tokens, self.max_messages = fresh.max_tokens, fresh.max_messages
        self._messages, self._tokens = fresh._messages, fresh._tokens


def _json_copy(item: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a JSON object item (so callers cannot change the buffer through theirs)."""
    if not isinstance(item, Mapping):
        raise InvalidContentError(f"a message item must be a JSON object, got {item!r:.100}")
    try:
        text = json.dumps(dict(item), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidContentError(f"a message item must be JSON: {e}") from e
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_ITEM_BYTES:
        raise InvalidContentError(
            f"a message item is {size:,} bytes of JSON; the limit is {MAX_ITEM_BYTES:,}",
            details={"bytes": size, "limit": MAX_ITEM_BYTES},
        )
    copy = json.loads(text)
    assert isinstance(copy, dict)
    return copy

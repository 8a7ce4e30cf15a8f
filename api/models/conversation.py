"""Conversation bodies of the memory HTTP API: messages and captured LLM responses."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from api.models.base import InputModel, OutputModel, utc_datetime
from kg.shortterm import Message

__all__ = [
    "MessageIn",
    "MessageList",
    "MessageOut",
    "MessagePopped",
    "ResponseIn",
    "ResponseOut",
    "message_out",
]

_ITEM = ("The exact JSON item the message was given as (an OpenAI Agents SDK session item); "
         "content is its text.")


class MessageIn(InputModel):
    """A conversation message (also captured as an episode of the session)."""

    role: Literal["user", "assistant", "system", "tool"]
    content: Annotated[str, StringConstraints(max_length=100_000)]
    item: dict[str, Any] | None = Field(default=None, description=_ITEM)


class MessageOut(OutputModel):
    """A message in the conversation buffer."""

    role: str
    content: str
    timestamp: datetime
    tokens: int
    item: dict[str, Any] | None = Field(default=None, description=_ITEM)


class MessagePopped(OutputModel):
    """The message removed from the end of the conversation (null if it was empty)."""

    message: MessageOut | None


class MessageList(OutputModel):
    """The conversation buffer, oldest first."""

    messages: list[MessageOut]
    tokens: int


class ResponseIn(InputModel):
    """An LLM reply to capture and infer working context from."""

    content: Annotated[str, StringConstraints(max_length=100_000)]


class ResponseOut(OutputModel):
    """What the response processor inferred (stored as inferred, confidence 0.6)."""

    inferred: dict[str, str]


def message_out(message: Message) -> MessageOut:
    """MessageOut of a conversation message."""
    return MessageOut(
        role=message.role.value,
        content=message.content,
        timestamp=utc_datetime(message.timestamp),
        tokens=message.tokens,
        item=message.item,
    )

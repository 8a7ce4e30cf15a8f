"""JidoSession: an OpenAI Agents SDK `Session` in a jido-kg service session (extra `agents`).

The items of the conversation (messages, function calls, their outputs, anything JSON) are the
messages of the service session's conversation buffer, each kept exactly as given beside a
role and a text the service's context assembly reads: a message's text parts, a function call
as `name(arguments)`, a call's output. The session is started in `project` when it does not
exist (or was closed). The buffer's limits (1,000 messages, 128,000 tokens by default) evict the
oldest items of a very long history; see docs/agent-api.md, "OpenAI Agents SDK".

>>> from kg.client import AsyncMemoryClient
>>> session = JidoSession("chat-42", AsyncMemoryClient("http://127.0.0.1:7879"),
...                       project="shop")  # doctest: +SKIP
>>> result = await Runner.run(agent, "Where do orders ship from?",
...                           session=session)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from agents.items import TResponseInputItem
from agents.memory import SessionSettings

from kg.client import AsyncMemoryClient, MemoryClient
from kg.errors import ConflictError
from kg.shortterm import Message, Role, SessionNotFoundError
from kg.terms import validate_identifier, validate_session_id

__all__ = ["MAX_TEXT_CHARS", "JidoSession", "as_item", "item_role", "item_text"]

T = TypeVar("T")
MAX_TEXT_CHARS = 100_000  # a message's content at the HTTP API; the item itself is kept whole
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM,
          "developer": Role.SYSTEM, "tool": Role.TOOL}
_TOOL_OUTPUTS = ("function_call_output", "computer_call_output", "local_shell_call_output",
                 "custom_tool_call_output", "shell_call_output", "apply_patch_call_output",
                 "mcp_call_output")


class JidoSession:
    """The Agents SDK's Session protocol over one session of a jido-kg service."""

    def __init__(
        self, session_id: str, client: AsyncMemoryClient | MemoryClient, *,
        project: str = "default", agent: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = validate_session_id(session_id)
        self.client = client
        self.project = validate_identifier(project, name="project id")
        self.agent = agent
        self.session_settings = session_settings if session_settings is not None else (
            SessionSettings())
        self._started = False

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The conversation's items, oldest first; with `limit`, the newest `limit` of them."""
        messages, _ = await self._call("list_messages", self.session_id)
        items = [as_item(m) for m in messages]
        wanted = limit if limit is not None else self.session_settings.limit
        if wanted is None or wanted < 0:  # SQLiteSession: a negative limit is no limit
            return items
        return items[-wanted:] if wanted else []

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items, each kept exactly as given."""
        for item in items:
            raw = cast(Mapping[str, Any], item)
            await self._call("add_message", self.session_id, item_role(raw), item_text(raw),
                             item=raw)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (None if the session holds none)."""
        message = await self._call("pop_message", self.session_id)
        return None if message is None else as_item(message)

    async def clear_session(self) -> None:
        """Remove every item of the session."""
        await self._call("clear_messages", self.session_id)

    async def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A client call on the session, started first (again, if it was closed meanwhile)."""
        if not self._started:
            await self._start()
        try:
            return await self._send(method, *args, **kwargs)
        except SessionNotFoundError:
            await self._start()
            return await self._send(method, *args, **kwargs)

    async def _start(self) -> None:
        try:
            await self._send("session", self.session_id)
        except SessionNotFoundError:
            with contextlib.suppress(ConflictError):  # started by another process meanwhile
                await self._send("start_session", self.session_id, project=self.project,
                                 agent=self.agent)
        self._started = True

    async def _send(self, method: str, *args: Any, **kwargs: Any) -> Any:
        call = getattr(self.client, method)
        if isinstance(self.client, AsyncMemoryClient):
            return await cast(Callable[..., Awaitable[Any]], call)(*args, **kwargs)
        return await asyncio.to_thread(call, *args, **kwargs)


def as_item(message: Message) -> TResponseInputItem:
    """The item a message holds; a message added without one becomes an easy input message."""
    if message.item is not None:
        return cast(TResponseInputItem, message.item)
    role = "system" if message.role is Role.TOOL else message.role.value
    return cast(TResponseInputItem, {"role": role, "content": message.content})


def item_role(item: Mapping[str, Any]) -> Role:
    """Who an item speaks for: its message role, the tool for outputs, else the assistant."""
    kind = item.get("type")
    if kind in (None, "message") and isinstance(item.get("role"), str):
        return _ROLES.get(item["role"], Role.USER)
    if kind in _TOOL_OUTPUTS:
        return Role.TOOL
    return Role.ASSISTANT  # function calls, reasoning, …: the model's own turn


def item_text(item: Mapping[str, Any]) -> str:
    """The text of an item for context assembly (cut to MAX_TEXT_CHARS)."""
    kind = item.get("type")
    text: str | None = None
    if kind in (None, "message"):
        text = _content_text(item.get("content"))
    elif kind == "function_call":
        text = f"{item.get('name', '')}({item.get('arguments', '')})"
    elif kind in _TOOL_OUTPUTS:
        text = _content_text(item.get("output"))
    if text is None:
        text = json.dumps(item, ensure_ascii=False, sort_keys=True, default=str)
    return text[:MAX_TEXT_CHARS]


def _content_text(content: Any) -> str | None:
    """A message content's text: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part.get("text") or part.get("refusal") or part.get("transcript")
                 for part in content if isinstance(part, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None

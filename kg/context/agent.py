"""MemoryAgent: the seed's LLMAgent memory integration around any chat model (seed 004 §5.2).

The model is a plain callable `llm(system_prompt, messages, tools) -> Reply`; a reply carries
text and/or tool calls. With memory enabled (the default) the agent offers the memory tools,
routes their calls to the memory system, injects the assembled memory context into the system
prompt before every call, captures every message and tool result, and infers working context
from every reply. With memory disabled it is a plain chat loop. The memory system is anything
with the AgentMemory protocol's methods (MemoryService has them): nothing here knows the
service above it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kg.context.session_hooks import SessionHooks
from kg.context.token_budget import DEFAULT_TOTAL
from kg.errors import KgError

__all__ = ["MEMORY_TOOLS", "AgentMemory", "MemoryAgent", "Reply", "ToolCall", "is_memory_tool"]

log = logging.getLogger(__name__)
MEMORY_TOOLS = ("remember", "recall", "forget")
MAX_TOOL_ROUNDS = 5


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Reply:
    """One model reply: text, tool calls, or both."""

    text: str = ""
    tool_calls: Sequence[ToolCall] = field(default_factory=tuple)


Llm = Callable[[str, list[dict[str, str]], list[dict[str, Any]]], Reply]


class AgentMemory(Protocol):
    """What MemoryAgent needs of a memory system: its session hooks and its memory tools."""

    @property
    def hooks(self) -> SessionHooks:
        """The turn-level hooks of the memory system's sessions."""
        ...

    def tool_definitions(self) -> list[dict[str, Any]]:
        """The JSON-schema definitions of the memory tools."""
        ...

    def session_project(self, session_id: str) -> str | None:
        """The project of an open session."""
        ...

    def execute_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None, *, project: str,
        session_id: str | None = None, agent: str | None = None,
    ) -> dict[str, Any]:
        """Run a memory tool call; returns `{"ok": …}` and never raises for bad input."""
        ...


def is_memory_tool(name: str) -> bool:
    """True for remember, recall and forget."""
    return name in MEMORY_TOOLS


class MemoryAgent:
    """A chat agent whose prompts and tools come from a MemoryService session."""

    def __init__(
        self,
        llm: Llm,
        service: AgentMemory,
        *,
        session_id: str,
        base_prompt: str = "You are a helpful coding assistant.",
        base_tools: Sequence[Mapping[str, Any]] = (),
        tool_handlers: Mapping[str, Callable[[Mapping[str, Any]], str]] | None = None,
        memory_enabled: bool = True,
        token_budget: int = DEFAULT_TOTAL,
    ) -> None:
        self.llm = llm
        self.service = service
        self.session_id = session_id
        self.base_prompt = base_prompt
        self.base_tools = [dict(tool) for tool in base_tools]
        self.tool_handlers = dict(tool_handlers or {})
        self.memory_enabled = memory_enabled
        self.token_budget = token_budget
        shared = service.hooks
        # The agent's own view of the shared hooks, with its own budget: changing the shared
        # object's budget around each call would race with other agents of the service.
        self.hooks = SessionHooks(shared.sessions, shared.builder, processor=shared.processor,
                                  embed=shared.embed, token_budget=token_budget,
                                  memory_enabled=shared.memory_enabled)
        self.last_system_prompt = ""
        self.history: list[dict[str, str]] = []

    def available_tools(self) -> list[dict[str, Any]]:
        """The base tools, plus remember / recall / forget when memory is enabled."""
        if not self.memory_enabled:
            return list(self.base_tools)
        return [*self.base_tools, *self.service.tool_definitions()]

    def system_prompt(self, message: str) -> str:
        """The base prompt with the session's memory context (memory failures fall back)."""
        if not self.memory_enabled:
            return self.base_prompt
        turn = self.hooks.before_turn(self.session_id, message, base_prompt=self.base_prompt)
        return turn.system_prompt

    def execute_tool_call(self, call: ToolCall) -> str:
        """Run a tool call: memory tools through the executor, others through their handler."""
        if is_memory_tool(call.name) and self.memory_enabled:
            try:
                project = self.service.session_project(self.session_id) or "default"
            except KgError as e:
                return json.dumps({"ok": False, "error": {"code": e.code, "message": e.message}})
            result = self.service.execute_tool(
                call.name, call.arguments, project=project, session_id=self.session_id
            )
            return json.dumps(result, ensure_ascii=False)
        handler = self.tool_handlers.get(call.name)
        if handler is None:
            return json.dumps({"ok": False, "error": {"code": "unknown_tool",
                                                      "message": f"no tool {call.name!r}"}})
        return handler(call.arguments)

    def chat(self, message: str) -> str:
        """One user turn: inject memory, call the model (running its tool calls), return text."""
        prompt = self.system_prompt(message)
        self.last_system_prompt = prompt
        self.history.append({"role": "user", "content": message})
        reply = self.llm(prompt, list(self.history), self.available_tools())
        for _ in range(MAX_TOOL_ROUNDS):
            if not reply.tool_calls:
                break
            for call in reply.tool_calls:
                output = self.execute_tool_call(call)
                self.history.append({"role": "tool", "content": output})
                if self.memory_enabled:
                    self._safely(self.hooks.capture_tool_result, call.name, output)
            reply = self.llm(prompt, list(self.history), self.available_tools())
        self.history.append({"role": "assistant", "content": reply.text})
        if self.memory_enabled:
            self._safely(self.hooks.after_response, reply.text)
        return reply.text

    def _safely(self, hook: Callable[..., object], *args: Any) -> None:
        # Memory must never break the conversation (seed 004: graceful degradation).
        try:
            hook(self.session_id, *args)
        except KgError as e:
            log.warning("memory capture skipped for %r: %s", self.session_id, e.message)

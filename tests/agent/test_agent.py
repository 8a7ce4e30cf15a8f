"""Agent integration (seed 004 §5.2.4) and in-process integration (§5.5) with MemoryAgent.

§5.2.4: memory enabled by default → test_defaults; memory_enabled false → test_memory_disabled;
custom token_budget → test_custom_budget; tools include memory tools → test_tools_enabled;
exclude when disabled → test_memory_disabled; memory tool calls route to executor →
test_memory_tool_calls_route_to_executor; context assembly before LLM call and system prompt
includes memory → test_prompt_includes_memory; works with memory disabled → test_memory_disabled;
invalid session_id doesn't crash → test_invalid_session_falls_back.
§5.5.1 working context / long-term in context / budget / after tool execution / most recent
state → test_context_assembly_integration; §5.5.2 remember/recall/forget during chat, results
formatted, session state updated → test_memory_tools_during_chat; §5.5.3 response processing
extracts, appears next turn, async, accumulates → test_response_processing_integration (async:
test_response_processor.py::test_async_processing_does_not_block); §5.5.4 large conversations,
many memories, allocations, most important kept → test_token_budget_integration. The HTTP
counterparts are in test_http_api.py.
"""

from __future__ import annotations

import json
from typing import Any

from kg.context.agent import MemoryAgent, Reply, ToolCall
from kg.memory_service import MemoryService


class Script:
    """A scripted model: returns the queued replies and records every call."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, list[dict[str, str]], list[dict[str, Any]]]] = []

    def __call__(self, prompt: str, messages: list[dict[str, str]],
                 tools: list[dict[str, Any]]) -> Reply:
        self.calls.append((prompt, messages, tools))
        return self.replies.pop(0) if self.replies else Reply("ok")


def agent(service: MemoryService, llm: Script, **kw: Any) -> MemoryAgent:
    if "session_id" not in kw:
        kw["session_id"] = service.start_session(project="p").id
    return MemoryAgent(llm, service, **kw)


def test_defaults(service: MemoryService) -> None:
    a = agent(service, Script())
    assert a.memory_enabled is True and a.token_budget == 32_000


def test_custom_budget(service: MemoryService) -> None:
    llm = Script()
    a = agent(service, llm, token_budget=600)
    for i in range(100):
        service.add_message(a.session_id, "user", f"older message {i} " + "z" * 200)
    a.chat("hello")
    ctx = service.builder.build(a.session_id, token_budget=600)
    assert a.token_budget == 600 and ctx.token_counts.total <= 600
    assert len(llm.calls[0][0]) < 600 * 4


def test_tools_enabled(service: MemoryService) -> None:
    base = [{"name": "read_file", "description": "read", "input_schema": {"type": "object"}}]
    names = [t["name"] for t in agent(service, Script(), base_tools=base).available_tools()]
    assert names == ["read_file", "remember", "recall", "forget"]


def test_memory_disabled(service: MemoryService) -> None:
    service.remember("p", "The team deploys on Fridays", confidence=0.9)
    llm = Script(Reply("fine"))
    a = agent(service, llm, memory_enabled=False, base_prompt="BASE")
    assert a.chat("when do we deploy?") == "fine"
    prompt, _, tools = llm.calls[0]
    assert prompt == "BASE" and tools == []
    assert service.list_messages(a.session_id)[0] == []


def test_memory_tool_calls_route_to_executor(service: MemoryService) -> None:
    a = agent(service, Script())
    out = json.loads(a.execute_tool_call(ToolCall("remember", {"content": "Use ruff", "type":
                                                               "coding_standard"})))
    assert out["ok"] is True
    assert service.get_memory("p", out["result"]["memory_id"]).content == "Use ruff"
    unknown = json.loads(a.execute_tool_call(ToolCall("shell", {})))
    assert unknown["error"]["code"] == "unknown_tool"


def test_prompt_includes_memory(service: MemoryService) -> None:
    service.remember("p", "The team deploys on Fridays", confidence=0.9)
    llm = Script(Reply("Fridays."))
    a = agent(service, llm, base_prompt="BASE")
    a.chat("when does the team deploy?")
    prompt = llm.calls[0][0]
    assert prompt.startswith("BASE\n\n## Remembered Information\n")
    assert "- [fact] (high confidence) The team deploys on Fridays _(" in prompt


def test_invalid_session_falls_back(service: MemoryService) -> None:
    llm = Script(Reply("hi"))
    a = MemoryAgent(llm, service, session_id="no-such-session", base_prompt="BASE")
    assert a.chat("hello") == "hi"
    assert llm.calls[0][0] == "BASE"
    bad = MemoryAgent(Script(Reply("yo")), service, session_id="not a valid id!")
    assert bad.chat("hello") == "yo"


def test_context_assembly_integration(service: MemoryService) -> None:
    service.remember("p", "Database is PostgreSQL 16", confidence=0.95)
    llm = Script(Reply(tool_calls=[ToolCall("read_file", {"path": "app.py"})]), Reply("done"),
                 Reply("second"))
    a = agent(service, llm, tool_handlers={"read_file": lambda args: "from flask import Flask"})
    service.put_context_item(a.session_id, "active_file", "app.py", source="explicit",  # type: ignore[arg-type]
                             confidence=1.0)
    a.chat("which database do we use?")
    first = llm.calls[0][0]
    assert "- **Active file**: app.py" in first and "PostgreSQL 16" in first
    # After the tool ran, its result is in the session (conversation and episodes).
    contents = [m.content for m in service.list_messages(a.session_id)[0]]
    assert "read_file: from flask import Flask" in contents
    service.put_context_item(a.session_id, "active_file", "db.py", source="explicit",  # type: ignore[arg-type]
                             confidence=1.0)
    a.chat("and the database file?")
    assert "- **Active file**: db.py" in llm.calls[-1][0]


def test_memory_tools_during_chat(service: MemoryService) -> None:
    llm = Script(
        Reply(tool_calls=[ToolCall("remember", {"content": "CI runs on GitHub Actions",
                                                "type": "fact", "confidence": 0.9})]),
        Reply("noted"),
        Reply(tool_calls=[ToolCall("recall", {"query": "CI GitHub"})]),
        Reply("found it"),
    )
    a = agent(service, llm)
    a.chat("remember that CI runs on GitHub Actions")
    a.chat("where does CI run?")
    recalled = json.loads(a.history[-2]["content"])
    hit = recalled["result"]["memories"][0]
    assert hit["content"] == "CI runs on GitHub Actions" and hit["level"] == "high"
    llm.replies += [Reply(tool_calls=[ToolCall("forget", {"memory_id": hit["memory_id"],
                                                          "reason": "moved to GitLab"})]),
                    Reply("forgotten")]
    a.chat("forget that")
    assert service.recall("p", "CI GitHub") == []
    tool_msgs = [m.content for m in service.list_messages(a.session_id)[0] if m.role == "tool"]
    assert len(tool_msgs) == 3 and all(m.split(": ", 1)[0] in ("remember", "recall", "forget")
                                       for m in tool_msgs)


def test_response_processing_integration(service: MemoryService) -> None:
    llm = Script(Reply("This is a Python project built with Flask."),
                 Reply("I'm editing `app/views.py` and fixing the login redirect."), Reply("ok"))
    a = agent(service, llm)
    a.chat("what stack is this?")
    a.chat("go on")
    working = service.builder.get_working_context(a.session_id)
    assert working == {"framework": "Flask", "primary_language": "Python",
                       "active_file": "app/views.py", "current_task": "the login redirect"}
    a.chat("next")
    assert "- **Active file**: app/views.py" in llm.calls[-1][0]


def test_token_budget_integration(service: MemoryService) -> None:
    a = agent(service, Script())
    for i in range(500):
        service.add_message(a.session_id, "user", f"chatter {i} " + "blah " * 40)
    for i in range(60):
        service.remember("p", f"budget memory {i} " + "detail " * 30, confidence=0.5 + i / 200)
    for total in (1_000, 8_000, 32_000, 128_000):
        ctx = service.builder.build(a.session_id, token_budget=total, query_hint="budget memory")
        assert ctx.token_counts.total <= total
        assert ctx.conversation[-1].content.startswith("chatter 499")
        if ctx.long_term_memories:
            kept = [m.confidence for m in ctx.long_term_memories]
            assert kept == sorted(kept, reverse=True)

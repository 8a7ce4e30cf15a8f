"""The memory tools: definitions, execution, and structured errors that write nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kg.longterm import LongTermMemory
from kg.longterm.tools import TOOL_DEFINITIONS, MemoryToolExecutor, ToolContext, openai_tools
from kg.store import EmbeddedStore
from tests.longterm.conftest import ScanRecallEngine

CTX = ToolContext(project="p", session="s1", agent="coder",
                  source="https://example.org/toolcall/abc")


@pytest.fixture
def tools(ltm: LongTermMemory) -> MemoryToolExecutor:
    """An executor with a real (scanning) recall engine."""
    return MemoryToolExecutor(ltm, recall_engine=ScanRecallEngine(ltm))


def test_definitions_are_valid_tool_schemas() -> None:
    names = [t["name"] for t in TOOL_DEFINITIONS]
    assert names == ["remember", "recall", "forget"]
    for tool in TOOL_DEFINITIONS:
        schema = tool["input_schema"]
        assert schema["type"] == "object" and set(schema["required"]) <= set(schema["properties"])
        assert tool["description"]
    remember = TOOL_DEFINITIONS[0]["input_schema"]["properties"]
    assert len(remember["type"]["enum"]) == 22 and remember["type"]["default"] == "fact"
    assert openai_tools()[1]["function"]["parameters"]["properties"]["limit"]["maximum"] == 50
    # A memory's type is `type` in every schema; the `memory_type` alias is not advertised.
    assert "type" in TOOL_DEFINITIONS[1]["input_schema"]["properties"]
    assert "memory_type" not in json.dumps(TOOL_DEFINITIONS)


def test_remember_recall_forget_round_trip(tools: MemoryToolExecutor,
                                           ltm: LongTermMemory) -> None:
    r = tools.execute("remember", {"content": "The API uses Flask blueprints"}, context=CTX)
    assert r["ok"] and r["result"]["type"] == "fact" and r["result"]["confidence"] == 0.8
    mid = r["result"]["memory_id"]
    stored = ltm.get(mid)
    assert stored.evidence[0].source == CTX.source and stored.agent == "coder"
    clamped = tools.execute("remember", json.dumps({"content": "x", "confidence": 7}),
                            context=CTX)
    assert clamped["result"]["confidence"] == 1.0
    found = tools.execute("recall", {"query": "flask", "limit": 5, "mode": "text"}, context=CTX)
    assert found["ok"] and [m["memory_id"] for m in found["result"]["memories"]] == [mid]
    ltm.flush()
    assert ltm.get(mid).access_count == 1  # the engine counts the recall
    new = tools.execute("remember", {"content": "The API uses FastAPI", "type": "decision"},
                        context=CTX)["result"]["memory_id"]
    gone = tools.execute("forget", {"memory_id": mid, "reason": "rewritten",
                                    "replacement_id": new}, context=CTX)
    assert gone == {"ok": True, "result": {"memory_id": mid, "forgotten": True,
                                           "replacement_id": new}}
    after = tools.execute("recall", {"query": "flask"}, context=CTX)
    assert after["result"]["memories"] == []


BAD: list[tuple[str, Any, str | None, str]] = [
    ("remember", {"content": ""}, "content", "content must not be empty"),
    ("remember", {"content": "   "}, "content", "content must not be empty"),
    ("remember", {"content": "é" * 1000 + "x" * 345}, "content",
     "content is 2,345 bytes; the limit is 2,000"),
    ("remember", {"content": "x", "type": "facts"}, "type",
     "invalid memory type 'facts'; expected one of: fact, assumption, hypothesis"),
    ("remember", {"content": 42}, "content", "content must be a string, got number"),
    ("remember", {"content": ["a"]}, "content", "content must be a string, got array"),
    ("remember", {"content": "x", "confidence": "high"}, "confidence",
     "confidence must be a number, got 'high'"),
    ("remember", {"content": "x", "confidence": True}, "confidence",
     "confidence must be a number, got True"),
    ("remember", {"content": "x", "rationale": "r" * 2001}, "rationale",
     "rationale is 2,001 bytes; the limit is 2,000"),
    ("remember", {}, "content", "content is required"),
    ("remember", {"content": "x", "colour": "red"}, "colour", "unexpected argument 'colour'"),
    ("remember", {"content": "x", "memory_type": "facts"}, "memory_type",
     "invalid memory type 'facts'; expected one of: fact, assumption, hypothesis"),
    ("remember", {"content": "x", "type": "fact", "memory_type": "fact"}, "type",
     "send either 'type' or its alias 'memory_type', not both"),
    ("remember", {"content": "x", "type": "fact", "memory_type": "decision"}, "type",
     "send either 'type' or its alias 'memory_type', not both"),
    ("recall", {"query": "q", "type": "fact", "memory_type": "fact"}, "type",
     "send either 'type' or its alias 'memory_type', not both"),
    ("recall", {"query": "q", "memory_type": "facts"}, "memory_type",
     "invalid memory type 'facts'; expected one of: fact, assumption, hypothesis"),
    ("recall", {"query": "q", "limit": 51}, "limit", "limit must be between 1 and 50, got 51"),
    ("recall", {"query": "q", "limit": 0}, "limit", "limit must be between 1 and 50, got 0"),
    ("recall", {"query": "q" * 1001}, "query", "query is 1,001 bytes; the limit is 1,000"),
    ("recall", {"query": ""}, "query", "query must not be empty"),
    ("recall", {"query": "q", "mode": "fuzzy"}, "mode",
     "invalid mode 'fuzzy'; expected one of: text, semantic, hybrid"),
    ("recall", {"query": "q", "min_confidence": 2}, "min_confidence",
     "min_confidence must be between 0 and 1, got 2"),
    ("forget", {"memory_id": "abc", "reason": "r"}, "memory_id",
     "memory 'abc' not found in project 'p'"),
    ("forget", {"memory_id": "KNOWN", "reason": "r" * 612}, "reason",
     "reason is 612 bytes; the limit is 500"),
    ("forget", {"memory_id": "KNOWN", "reason": "r", "replacement_id": "x"}, "replacement_id",
     "replacement memory 'x' not found"),
    ("forget", {"memory_id": "KNOWN"}, "reason", "reason is required"),
    ("remember", "{not json", None, "arguments are not valid JSON"),
    ("remember", [1, 2], None, "arguments must be a JSON object"),
    ("dance", {}, "name", "unknown tool 'dance'; expected one of: remember, recall, forget"),
]


@pytest.mark.parametrize(("tool", "args", "field", "message"), BAD,
                         ids=[m[:40] for *_, m in BAD])
def test_bad_input_is_a_structured_error_and_writes_nothing(
    tools: MemoryToolExecutor, ltm: LongTermMemory, store: EmbeddedStore,
    tool: str, args: Any, field: str | None, message: str,
) -> None:
    known = ltm.remember("a known memory", project="p", session="s1").memory.id
    if isinstance(args, dict) and args.get("memory_id") == "KNOWN":
        args = {**args, "memory_id": known}
    ltm.flush()
    before = sorted(str(q) for q in store.quads())
    result = tools.execute(tool, args, context=CTX)
    assert result["ok"] is False
    error = result["error"]
    assert set(error) == {"code", "message", "field"}
    assert error["message"].startswith(message), error
    assert error["field"] == field
    assert error["code"] in {"invalid_argument", "memory_not_found", "unknown_tool"}
    ltm.flush()
    assert sorted(str(q) for q in store.quads()) == before


def test_forget_twice_and_no_engine(ltm: LongTermMemory) -> None:
    tools = MemoryToolExecutor(ltm)
    mid = tools.execute("remember", {"content": "x"}, context=CTX)["result"]["memory_id"]
    assert tools.execute("forget", {"memory_id": mid, "reason": "r"}, context=CTX)["ok"]
    again = tools.execute("forget", {"memory_id": mid, "reason": "r"}, context=CTX)
    assert again["error"]["code"] == "memory_retired"
    assert "already forgotten" in again["error"]["message"]
    no_engine = tools.execute("recall", {"query": "x"}, context=CTX)
    assert no_engine["error"]["code"] == "recall_unavailable"


@pytest.mark.parametrize("spelling", ["type", "memory_type"])
def test_type_or_its_alias_memory_type(tools: MemoryToolExecutor, ltm: LongTermMemory,
                                       spelling: str) -> None:
    made = tools.execute("remember", {"content": "Orders are sharded by region",
                                      spelling: "architectural_decision"}, context=CTX)
    assert made["ok"], made
    assert made["result"]["type"] == "architectural_decision"
    assert "memory_type" not in made["result"]
    assert ltm.get(made["result"]["memory_id"]).type.value == "architectural_decision"
    tools.execute("remember", {"content": "Orders are sharded weekly"}, context=CTX)
    found = tools.execute("recall", {"query": "orders sharded", "mode": "text",
                                     spelling: "architectural_decision"}, context=CTX)
    assert [m["memory_id"] for m in found["result"]["memories"]] == [made["result"]["memory_id"]]
    assert all("memory_type" not in m for m in found["result"]["memories"])

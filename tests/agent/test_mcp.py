"""The MCP server through the `mcp` SDK's own stdio client: `jido-kg mcp` as a subprocess."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT, jido_kg_command


def server(tmp_path: Path) -> StdioServerParameters:
    """`jido-kg mcp` on a fresh store in `tmp_path`."""
    command, *args = jido_kg_command()
    return StdioServerParameters(
        command=command,
        args=[*args, "mcp", "--store", str(tmp_path / "store"), "--project", "mcp-demo"],
        cwd=str(ROOT),
    )


def run(scenario: Callable[[StdioServerParameters], Awaitable[None]],
        params: StdioServerParameters) -> None:
    async def main() -> None:
        with anyio.fail_after(60):
            await scenario(params)

    anyio.run(main)


def test_stdio_lists_tools_and_round_trips(tmp_path: Path) -> None:
    run(session, server(tmp_path))


def test_type_or_its_alias_memory_type(tmp_path: Path) -> None:
    run(spellings, server(tmp_path))


async def session(params: StdioServerParameters) -> None:
    """List the tools, then remember → recall → assemble → forget → recall again."""
    async with Client(params) as client:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == {"remember", "recall", "forget", "assemble_context"}
        assert tools["remember"].input_schema["required"] == ["content"]
        for name in ("remember", "recall"):  # the published schemas name one spelling
            assert "type" in tools[name].input_schema["properties"]
            assert "memory_type" not in json.dumps(tools[name].input_schema)
        saved = await client.call_tool("remember", {
            "content": "The billing service is written in Kotlin", "type": "fact",
            "confidence": 0.9})
        assert saved.is_error is False
        memory_id = saved.structured_content["result"]["memory_id"]
        found = await client.call_tool("recall", {"query": "billing Kotlin"})
        hits = found.structured_content["result"]["memories"]
        assert [h["memory_id"] for h in hits] == [memory_id]
        prompt = await client.call_tool("assemble_context", {"query_hint": "billing"})
        assert "(high confidence) The billing service is written in Kotlin" in (
            prompt.structured_content["result"]["prompt"])
        bad = await client.call_tool("forget", {"memory_id": "nope", "reason": "x"})
        assert bad.is_error is True
        assert bad.structured_content["error"]["code"] == "memory_not_found"
        gone = await client.call_tool("forget", {"memory_id": memory_id, "reason": "moved"})
        assert gone.is_error is False
        again = await client.call_tool("recall", {"query": "billing Kotlin"})
        assert again.structured_content["result"]["memories"] == []


async def spellings(params: StdioServerParameters) -> None:
    """remember and recall take `type` or `memory_type`; both in one call is an error."""
    async with Client(params) as client:
        made = {}
        for spelling, kind in (("type", "decision"), ("memory_type", "risk")):
            saved = await client.call_tool("remember", {
                "content": f"Payments go through Stripe ({spelling})", spelling: kind})
            assert saved.is_error is False, saved.structured_content
            result = saved.structured_content["result"]
            assert result["type"] == kind and "memory_type" not in result
            made[kind] = result["memory_id"]
        for spelling in ("type", "memory_type"):
            found = await client.call_tool("recall", {"query": "Payments Stripe",
                                                      spelling: "risk"})
            hits = found.structured_content["result"]["memories"]
            assert [(h["memory_id"], h["type"]) for h in hits] == [(made["risk"], "risk")]
            assert all("memory_type" not in h for h in hits)
        for tool, args in (("remember", {"content": "Payments go through Stripe (both)"}),
                           ("recall", {"query": "Payments"})):
            both = await client.call_tool(tool, {**args, "type": "fact", "memory_type": "fact"})
            assert both.is_error is True
            error = both.structured_content["error"]
            assert error["code"] == "invalid_argument" and error["field"] == "type"
            assert "'type'" in error["message"] and "'memory_type'" in error["message"]
        everything = await client.call_tool("recall", {"query": "Payments Stripe"})
        assert len(everything.structured_content["result"]["memories"]) == 2  # nothing added

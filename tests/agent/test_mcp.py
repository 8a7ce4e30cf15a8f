"""The MCP server through the `mcp` SDK's own stdio client: `jido-kg mcp` as a subprocess."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT, jido_kg_command


def test_stdio_lists_tools_and_round_trips(tmp_path: Path) -> None:
    command, *args = jido_kg_command()
    params = StdioServerParameters(
        command=command,
        args=[*args, "mcp", "--store", str(tmp_path / "store"), "--project", "mcp-demo"],
        cwd=str(ROOT),
    )

    async def scenario() -> None:
        with anyio.fail_after(60):
            await session(params)

    anyio.run(scenario)


async def session(params: StdioServerParameters) -> None:
    """List the tools, then remember → recall → assemble → forget → recall again."""
    async with Client(params) as client:
        listed = await client.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == {"remember", "recall", "forget", "assemble_context"}
        assert tools["remember"].input_schema["required"] == ["content"]
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

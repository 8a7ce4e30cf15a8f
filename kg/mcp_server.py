"""The MCP server: remember / recall / forget and context assembly as Model Context Protocol tools.

Built on the `mcp` SDK's low-level Server so the tools publish exactly the JSON schemas of
kg.longterm.tools (the ones offered to LLM APIs directly), plus `assemble_context`. Every call
goes through the same MemoryService the HTTP API uses. Run it over stdio with
`jido-kg mcp --store DIR --project NAME`; the client (Claude Desktop, an IDE…) starts the process.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from kg.errors import KgError
from kg.memory_service import MemoryService

__all__ = ["ASSEMBLE_TOOL", "build_server", "run_stdio"]

ASSEMBLE_TOOL: dict[str, Any] = {
    "name": "assemble_context",
    "description": (
        "Assemble the memory context for the next reply: the working context of this MCP "
        "session and the project's long-term memories relevant to `query_hint`, within a token "
        "budget, as markdown ready for a system prompt (remembered text is sanitised)."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "query_hint": {"type": "string", "maxLength": 10000,
                           "description": "What the next reply is about (usually the user's "
                                          "message); omit for the most confident memories."},
            "token_budget": {"type": "integer", "minimum": 0, "maximum": 10000000,
                             "default": 32000},
        },
        "additionalProperties": False,
    },
}


def _text(payload: Any, *, error: bool = False) -> types.CallToolResult:
    body = json.dumps(payload, ensure_ascii=False)
    structured = payload if isinstance(payload, dict) else {"result": payload}
    return types.CallToolResult(
        content=[types.TextContent(text=body)], structured_content=structured, is_error=error
    )


def build_server(service: MemoryService, *, project: str, agent: str | None = None) -> Server[Any]:
    """An MCP server over `service`, writing into `project` from one session of its own."""
    session = service.start_session(f"mcp-{uuid.uuid4().hex[:12]}", project=project, agent=agent)
    definitions = [*service.tool_definitions(), ASSEMBLE_TOOL]
    tools = [
        types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
        for d in definitions
    ]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == ASSEMBLE_TOOL["name"]:
            return _assemble(service, session.id, args)
        result = service.execute_tool(
            params.name, args, project=project, session_id=session.id, agent=agent
        )
        return _text(result, error=not result.get("ok", False))

    return Server(
        "jido-kg",
        version="0.1.0",
        instructions=(
            f"Long-term memory of project {project!r}: call recall before answering questions "
            "about the project, remember durable facts and decisions, forget what became wrong."
        ),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _assemble(
    service: MemoryService, session_id: str, args: dict[str, Any]
) -> types.CallToolResult:
    unknown = set(args) - {"query_hint", "token_budget"}
    hint = args.get("query_hint")
    budget = args.get("token_budget", 32_000)
    if unknown or (hint is not None and not isinstance(hint, str)) or type(budget) is not int:
        return _text({"ok": False, "error": {"code": "invalid_argument",
                                             "message": "expected query_hint (string) and "
                                                        "token_budget (integer) only"}},
                     error=True)
    try:
        turn = service.assemble_context(session_id, query_hint=hint, token_budget=budget)
    except KgError as e:
        return _text({"ok": False, "error": {"code": e.code, "message": e.message}}, error=True)
    counts = turn.context.token_counts if turn.context is not None else None
    return _text({"ok": True, "result": {
        "prompt": turn.system_prompt,
        "tokens": counts.total if counts is not None else 0,
    }})


def run_stdio(service: MemoryService, *, project: str, agent: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client disconnects."""
    server = build_server(service, project=project, agent=agent)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)

"""The MCP server: remember / recall / forget and context assembly as Model Context Protocol tools.

Built on the `mcp` SDK's low-level Server so the tools publish exactly the JSON schemas of
kg.longterm.tools (the ones offered to LLM APIs directly), plus `assemble_context`. Every call
goes through the same MemoryService the HTTP API uses. One server definition serves two
transports: stdio (`jido-kg mcp --store DIR --project NAME`, the client starts the process) and
Streamable HTTP inside `jido-kg serve` (api/mcp.py, `/mcp/<project>`), which differ only in the
`ToolScope` each call runs in.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server

from kg.context.context_builder import format_for_prompt
from kg.context.token_budget import allocate_budget
from kg.errors import KgError
from kg.memory_service import MemoryService

__all__ = [
    "ASSEMBLE_TOOL", "READ_TOOLS", "RunBlocking", "ScopeOf", "ToolScope", "build_server",
    "call_tool", "in_worker_thread", "run_stdio",
]

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
# The tools that only read; every other tool name is treated as a write (an unknown name too,
# so a tool added later is guarded until someone decides otherwise).
READ_TOOLS: frozenset[str] = frozenset({"recall", ASSEMBLE_TOOL["name"]})


@dataclass(frozen=True, slots=True)
class ToolScope:
    """Where a tool call runs: its project, memory session (None: none), agent and rights."""

    project: str
    session_id: str | None = None
    agent: str | None = None
    may_write: bool = True


# How a server finds the scope of one call (HTTP: from the request; stdio: always the same).
ScopeOf = Callable[[ServerRequestContext[Any, Any]], ToolScope]
# How a server's event loop runs one blocking tool call (by default: in a worker thread).
RunBlocking = Callable[[Callable[[], types.CallToolResult]], Awaitable[types.CallToolResult]]


async def in_worker_thread(call: Callable[[], types.CallToolResult]) -> types.CallToolResult:
    """Run a blocking call in a worker thread, keeping the event loop free for other requests."""
    return await anyio.to_thread.run_sync(call)


def _text(payload: Any, *, error: bool = False) -> types.CallToolResult:
    body = json.dumps(payload, ensure_ascii=False)
    structured = payload if isinstance(payload, dict) else {"result": payload}
    return types.CallToolResult(
        content=[types.TextContent(text=body)], structured_content=structured, is_error=error
    )


def _failure(code: str, message: str) -> types.CallToolResult:
    return _text({"ok": False, "error": {"code": code, "message": message}}, error=True)


def call_tool(
    service: MemoryService, name: str, args: dict[str, Any], *, scope: ToolScope
) -> types.CallToolResult:
    """Run one MCP tool call in `scope` (blocking); failures are tool results, never raised."""
    if name not in READ_TOOLS and not scope.may_write:
        # The HTTP endpoint refuses such a call with 401/403 before it gets here; this is the
        # second line, should a request ever reach the tools without that check.
        return _failure("permission_denied", f"{name} needs write access to this project")
    if name == ASSEMBLE_TOOL["name"]:
        return _assemble(service, scope, args)
    result = service.execute_tool(
        name, args, project=scope.project, session_id=scope.session_id, agent=scope.agent
    )
    return _text(result, error=not result.get("ok", False))


def build_server(
    service: MemoryService, *, scope: ToolScope | ScopeOf, instructions: str,
    run_blocking: RunBlocking = in_worker_thread,
) -> Server[Any]:
    """An MCP server over `service` whose calls run in `scope` (fixed, or found per request)."""
    definitions = [*service.tool_definitions(), ASSEMBLE_TOOL]
    tools = [
        types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"])
        for d in definitions
    ]
    schemas = {d["name"]: d["input_schema"] for d in definitions}

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        where = scope if isinstance(scope, ToolScope) else scope(ctx)
        run = partial(call_tool, service, params.name, params.arguments or {}, scope=where)
        # Store and recall work block: a loop that carries other requests (stdio's, the HTTP
        # endpoint's shared one) hands it to a worker thread, so a slow recall holds up no one.
        return await run_blocking(run)

    return Server(
        "jido-kg",
        version="0.1.0",
        instructions=instructions,
        # Without this lookup the SDK runs a whole tools/list through its dispatcher on every
        # tools/call over HTTP, only to find the tool's schema (for Mcp-Param-* headers).
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=on_call_tool,
    )


def _assemble(
    service: MemoryService, scope: ToolScope, args: dict[str, Any]
) -> types.CallToolResult:
    unknown = set(args) - {"query_hint", "token_budget"}
    hint = args.get("query_hint")
    budget = args.get("token_budget", 32_000)
    if unknown or (hint is not None and not isinstance(hint, str)) or type(budget) is not int:
        return _failure("invalid_argument",
                        "expected query_hint (string) and token_budget (integer) only")
    try:
        if scope.session_id is not None:
            turn = service.assemble_context(scope.session_id, query_hint=hint,
                                            token_budget=budget)
            prompt, context = turn.system_prompt, turn.context
        else:
            # Stateless HTTP has no MCP session, hence no working context or conversation:
            # the context is the project's relevant long-term memories, cut to the budget.
            builder = service.builder
            context = builder.assemble(
                "", scope.project, [], [], builder.get_relevant_memories(scope.project, hint),
                allocate_budget(budget),
            )
            prompt = format_for_prompt(context)
    except KgError as e:
        return _failure(e.code, e.message)
    tokens = context.token_counts.total if context is not None else 0
    return _text({"ok": True, "result": {"prompt": prompt, "tokens": tokens}})


def run_stdio(service: MemoryService, *, project: str, agent: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client disconnects (one memory session)."""
    session = service.start_session(f"mcp-{uuid.uuid4().hex[:12]}", project=project, agent=agent)
    server = build_server(
        service,
        scope=ToolScope(project=project, session_id=session.id, agent=agent),
        instructions=(
            f"Long-term memory of project {project!r}: call recall before answering questions "
            "about the project, remember durable facts and decisions, forget what became wrong."
        ),
    )

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)

"""The stdio bridge: `jido-kg mcp --url URL` serves MCP on stdin/stdout by forwarding to a service.

For MCP clients that only start processes (Claude Desktop, say) while `jido-kg serve` holds
the store: the bridge opens no store, it proxies `tools/list` and `tools/call` to the running
service's `/mcp/<project>` with the SDK's Streamable HTTP client and a bearer token. Tools,
arguments and results are the service's own; a call the service refuses (401, 403 …) comes back
as an MCP error naming the HTTP status and the service's message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from kg.errors import KgError
from kg.terms import validate_identifier

__all__ = ["BridgeError", "endpoint_url", "run_bridge"]

# The SDK client's own defaults: a response may take long (a recall over a big store).
_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class BridgeError(KgError):
    """The service at --url could not be reached or refused the connection."""

    code = "mcp_bridge_failed"


def endpoint_url(base: str, *, project: str, agent: str | None = None) -> str:
    """The MCP endpoint of `project` on the service at `base` (e.g. http://127.0.0.1:7879)."""
    validate_identifier(project, name="project id")
    url = f"{base.rstrip('/')}/mcp/{quote(project)}"
    if agent is not None:
        url += "?" + urlencode({"agent": validate_identifier(agent, name="agent id")})
    return url


class _ServiceErrors(httpx2.AsyncBaseTransport):
    """Rewrites the service's JSON error answers as JSON-RPC errors, which the SDK reports.

    The SDK client reads a non-2xx answer only if it is a JSON-RPC error; anything else becomes
    "Server returned an error response", and the service's reason (bad token, wrong project)
    would never reach the person looking at the MCP client.
    """

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send `request`; an error in the service's JSON shape returns as a JSON-RPC error."""
        response = await self._inner.handle_async_request(request)
        if response.status_code < 400:
            return response
        body = await response.aread()
        try:
            error = json.loads(body)["error"]
            message = f"HTTP {error['status']} {error['code']}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            # Not the service's shape (the SDK's own JSON-RPC error, say): pass it on as is.
            rewritten = body
        else:
            rewritten = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                "code": types.INVALID_REQUEST, "message": message, "data": error}}).encode()
        headers = {"content-type": response.headers.get("content-type", "application/json")}
        return httpx2.Response(response.status_code, headers=headers, content=rewritten,
                               request=request)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._inner.aclose()


def run_bridge(url: str, *, token: str | None) -> None:
    """Serve MCP over stdin/stdout, forwarding every call to the MCP endpoint `url`."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> None:
        http = httpx2.AsyncClient(headers=headers, timeout=_TIMEOUT, transport=_ServiceErrors())
        async with http:
            # One connection now, so a wrong URL or token fails at start with its reason.
            async with Client(streamable_http_client(url, http_client=http)) as first:
                remote = _Remote(url, http, mode=first.protocol_version,
                                 instructions=first.instructions)
            server = remote.server()
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())

    try:
        anyio.run(main)
    except Exception as exc:
        cause = _leaf(exc)
        if isinstance(cause, MCPError):
            raise BridgeError(f"the jido-kg service at {url} refused the MCP connection: "
                              f"{cause.message}") from None
        if isinstance(cause, httpx2.TransportError):
            raise BridgeError(f"cannot reach the jido-kg service at {url}: {cause}") from None
        raise


def _leaf(exc: BaseException) -> BaseException:
    """The first error inside the exception groups the SDK's task groups wrap errors in."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


class _Remote:
    """The service's endpoint, met with a fresh client per call.

    The protocol is stateless per request (2026-07-28), so nothing is lost by that, and a call
    made while the service restarts fails alone instead of taking the bridge down with it.
    """

    def __init__(self, url: str, http: httpx2.AsyncClient, *, mode: str,
                 instructions: str | None) -> None:
        self.url, self.http, self.instructions = url, http, instructions
        # A modern version is adopted as is (no discover probe per call); an older one means
        # the initialize handshake every time.
        self.mode = mode if mode in MODERN_PROTOCOL_VERSIONS else "legacy"

    @asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        """A client for one call; its errors leave as the MCP error the caller should see."""
        try:
            async with Client(streamable_http_client(self.url, http_client=self.http),
                              mode=self.mode) as client:
                yield client
        except Exception as exc:
            cause = _leaf(exc)
            if isinstance(cause, MCPError):
                raise cause from None
            if isinstance(cause, httpx2.TransportError):
                raise MCPError(types.INTERNAL_ERROR, f"cannot reach the jido-kg service at "
                                                     f"{self.url}: {cause}") from None
            raise

    async def list_tools(self, cursor: str | None) -> types.ListToolsResult:
        """The endpoint's tools."""
        async with self.client() as client:
            listed = await client.list_tools(cursor=cursor)
        return types.ListToolsResult(tools=listed.tools, next_cursor=listed.next_cursor)

    async def call_tool(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """One tool call, forwarded."""
        async with self.client() as client:
            return await client.call_tool(name, arguments)

    def server(self) -> Server[Any]:
        """A local MCP server whose tools are the endpoint's."""

        async def list_tools(
            ctx: Any, params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return await self.list_tools(params.cursor if params else None)

        async def call_tool(
            ctx: Any, params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            return await self.call_tool(params.name, params.arguments)

        return Server("jido-kg", version="0.1.0", instructions=self.instructions,
                      on_list_tools=list_tools, on_call_tool=call_tool)

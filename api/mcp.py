"""MCP over Streamable HTTP at `/mcp/<project>`: the stdio server's tools inside the service.

How it is mounted, and why:
- The SDK's server side is ASGI; this service is a WSGI app behind our own HTTP/1.1 server,
  which gathers a response whole before sending it (api/bridge.py `collect`): it cannot stream.
  So the SDK's session manager runs **stateless with JSON responses**: every POST carries one
  JSON-RPC message and gets one `application/json` answer; no SSE stream, no `Mcp-Session-Id`,
  nothing held between requests (the 2026-07-28 protocol revision is per-request anyway).
  `GET` (the optional server-to-client SSE stream) gets 405, as the MCP spec allows; in the SDK
  it would hold a connection thread open for good.
- Requests of the per-request protocol revision (2026-07-28, what the SDK's own client speaks)
  need nothing that outlives them: each is answered on an event loop of its own in its request
  thread, the tool call inline (api/asgi.py `LoopPool`), with no hand-off between threads, in
  parallel like every other route. Older revisions' stateless requests run the session
  manager's per-request server in the task group of its `run()`, on one long-lived event loop:
  an anyio blocking portal started on the first MCP request (apps that never see one start no
  thread), which they are handed over to once (api/asgi.py `call_on`); their tool calls go on
  to a worker thread, so that a slow recall holds up no other request on that loop.
- The Flask view in front of it, rather than werkzeug's DispatcherMiddleware, keeps auth, the
  body cap, CORS and the one JSON error shape exactly those of every other route. A plain POST
  that the view would pass on unchanged (an allowed caller, no CORS, a body within the cap)
  takes a route around Flask's per-request machinery instead (api/mcp_route.py); every other
  request, and every refusal, is the view's.

Auth (api/auth.py, decided rule): the endpoint as a whole needs read access to the project
(anonymous under `KG_ANONYMOUS_READ`); a POST that calls a tool other than `recall` or
`assemble_context` also needs write access to it. Both are checked before the SDK sees the
request (by the route, which leaves every refusal to the view, or by the view), so a refused
call is an HTTP 401 (no or a bad token) or 403 (a token without the right, or scoped to another
project) in the JSON error shape, never a tool result.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

import mcp_types as types
from anyio.from_thread import start_blocking_portal
from flask import Flask, Response, current_app, request
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from api.asgi import Answer, LoopPool, answered_here, call_on, http_scope
from api.auth import require
from api.fast_path import QueryFastPath
from api.mcp_route import McpRoute, calls_a_write
from kg.errors import AuthenticationError, PermissionDeniedError, StoreUnavailableError
from kg.mcp_server import ToolScope, build_server, in_worker_thread
from kg.memory_service import MemoryService
from kg.settings import Settings
from kg.terms import validate_identifier

__all__ = ["McpEndpoint", "install"]

_KEY = "jido_kg_mcp"
# Where a request's ToolScope travels to the tools: the ASGI scope's extensions, which only this
# module writes (the SDK hands the tool handler that request, and nothing else of ours).
_TOOL_SCOPE = "jido_kg.tool_scope"
# The protocol version header in a WSGI environ (api/asgi.py `http_scope` passes it on as is).
_VERSION_KEY = "HTTP_" + MCP_PROTOCOL_VERSION_HEADER.upper().replace("-", "_")
# The SDK's own default (no DNS rebinding check: auth is ours), built once rather than per request.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpEndpoint:
    """The SDK's stateless Streamable HTTP manager, its event loop thread started on first use."""

    def __init__(self, service: MemoryService, *, max_body_bytes: int) -> None:
        server = build_server(
            service,
            scope=_scope_of,
            instructions=(
                "Long-term memory of the project named in this endpoint's URL: call recall "
                "before answering questions about the project, remember durable facts and "
                "decisions, forget what became wrong."
            ),
            run_blocking=_run_blocking,
        )
        self.manager = StreamableHTTPSessionManager(
            server, json_response=True, stateless=True, security_settings=_SECURITY,
            max_request_body_size=max_body_bytes,
        )
        self._lock = threading.Lock()
        self._stack = ExitStack()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loops = LoopPool()
        self._closed = False

    def loop(self) -> asyncio.AbstractEventLoop:
        """The manager's event loop, where its `run()` is entered; the first call starts it."""
        with self._lock:
            if self._closed:  # a request late in shutdown must not start a new loop
                raise StoreUnavailableError("the service is shutting down")
            if self._loop is None:
                portal = self._stack.enter_context(start_blocking_portal(name="kg-mcp"))
                self._stack.enter_context(portal.wrap_async_context_manager(self.manager.run()))
                self._loop = portal.call(_running_loop)
            return self._loop

    def call(self, environ: Mapping[str, Any], *, project: str, agent: str | None,
             may_write: bool, body: bytes) -> Answer:
        """Answer one POST of a caller allowed to read `project` (and to write, if `may_write`)
        whose body was read whole; blocks until it is answered."""
        where = ToolScope(project=project, agent=agent, may_write=may_write)
        scope = http_scope(environ, path=f"/mcp/{project}", root_path="/mcp", body=body,
                           extensions={_TOOL_SCOPE: where})
        shared = self.loop()  # also what refuses a request during shutdown
        if _per_request(environ.get(_VERSION_KEY)):
            return self._loops.call(self.manager.handle_request, scope, body)
        return call_on(shared, self.manager.handle_request, scope, body)

    def close(self) -> None:
        """Leave the manager's run() and stop the event loop thread (if it ever started)."""
        with self._lock:
            self._closed = True
            self._stack.close()
            self._loop = None
            self._loops.close()


def _per_request(version: str | None) -> bool:
    """Whether the SDK answers a request of this protocol version header (as the scope carries
    it) without the state of its `run()`: as it decides, one naming no revision of the
    initialize handshake (an unknown one gets its rejection the same way)."""
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


async def _run_blocking(
    call: Callable[[], types.CallToolResult],
) -> types.CallToolResult:
    # On a request's own loop nothing else waits: the call runs inline, in the request thread.
    return call() if answered_here() else await in_worker_thread(call)


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def install(app: Flask, service: MemoryService, settings: Settings) -> McpEndpoint:
    """Serve MCP at POST /mcp/<project> (the view, and the route around Flask in front of it);
    the caller closes the endpoint with the app."""
    endpoint = McpEndpoint(service, max_body_bytes=settings.max_body_bytes)
    app.extensions[_KEY] = endpoint
    app.add_url_rule("/mcp/<project>", "mcp", _mcp, methods=["POST"])
    chain = app.wsgi_app
    if isinstance(chain, QueryFastPath):  # the server expects the query fast path outermost
        chain.inner = McpRoute(app, chain.inner, endpoint, max_body_bytes=settings.max_body_bytes)
    else:
        app.wsgi_app = McpRoute(  # type: ignore[method-assign]
            app, chain, endpoint, max_body_bytes=settings.max_body_bytes)
    return endpoint


def _mcp(project: str) -> Response:
    """One MCP message (JSON-RPC over POST) for the project's memory tools."""
    validate_identifier(project, name="project id")
    require("read", project=project)
    agent = request.args.get("agent")
    if agent is not None:
        validate_identifier(agent, name="agent id")
    body = request.get_data()  # within MAX_CONTENT_LENGTH, else 413
    may_write = _may_write(project)
    if not may_write and calls_a_write(body):
        require("write", project=project)  # raises the 401 or 403
    endpoint = current_app.extensions[_KEY]
    assert isinstance(endpoint, McpEndpoint)
    status, headers, answer = endpoint.call(request.environ, project=project, agent=agent,
                                            may_write=may_write, body=body)
    return Response(answer, status, [(k.decode("latin-1"), v.decode("latin-1"))
                                     for k, v in headers])


def _may_write(project: str) -> bool:
    try:
        require("write", project=project)
    except (AuthenticationError, PermissionDeniedError):
        return False
    return True


def _scope_of(ctx: ServerRequestContext[Any, Any]) -> ToolScope:
    """The scope of one HTTP call, as `McpEndpoint.call` put it in the request's ASGI scope."""
    assert ctx.request is not None  # the SDK's (Starlette) request of this POST
    where = ctx.request.scope["extensions"][_TOOL_SCOPE]
    assert isinstance(where, ToolScope)
    return where

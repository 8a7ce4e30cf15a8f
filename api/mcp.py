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
  body cap, CORS and the one JSON error shape exactly those of every other route.

Auth (api/auth.py, decided rule): the endpoint as a whole needs read access to the project
(anonymous under `KG_ANONYMOUS_READ`); a POST that calls a tool other than `recall` or
`assemble_context` also needs write access to it. Both are checked here, before the SDK sees
the request, so a refused call is an HTTP 401 (no or a bad token) or 403 (a token without the
right, or scoped to another project) in the JSON error shape, never a tool result.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any
from urllib.parse import parse_qs, urlencode

import mcp_types as types
from anyio.from_thread import start_blocking_portal
from flask import Flask, Response, current_app, request
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from api.asgi import Answer, LoopPool, answered_here, call_on
from api.auth import require
from kg.errors import AuthenticationError, PermissionDeniedError, StoreUnavailableError
from kg.mcp_server import READ_TOOLS, ToolScope, build_server, in_worker_thread
from kg.memory_service import MemoryService
from kg.settings import Settings
from kg.terms import validate_identifier

__all__ = ["McpEndpoint", "install"]

_KEY = "jido_kg_mcp"


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
            server, json_response=True, stateless=True, max_request_body_size=max_body_bytes
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

    def answer(self, scope: dict[str, Any], body: bytes) -> Answer:
        """Run one request through the manager and return its answer (blocking)."""
        shared = self.loop()  # also what refuses a request during shutdown
        if _per_request(scope):
            return self._loops.call(self.manager.handle_request, scope, body)
        return call_on(shared, self.manager.handle_request, scope, body)

    def close(self) -> None:
        """Leave the manager's run() and stop the event loop thread (if it ever started)."""
        with self._lock:
            self._closed = True
            self._stack.close()
            self._loop = None
            self._loops.close()


def _per_request(scope: dict[str, Any]) -> bool:
    """Whether the SDK answers this request without the state of its `run()`: as it decides,
    a protocol version header naming no revision of the initialize handshake (an unknown one
    gets its rejection the same way)."""
    header = MCP_PROTOCOL_VERSION_HEADER.encode("ascii")
    version = next((v.decode("latin-1") for k, v in scope["headers"] if k == header), None)
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


async def _run_blocking(
    call: Callable[[], types.CallToolResult],
) -> types.CallToolResult:
    # On a request's own loop nothing else waits: the call runs inline, in the request thread.
    return call() if answered_here() else await in_worker_thread(call)


async def _running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


def install(app: Flask, service: MemoryService, settings: Settings) -> McpEndpoint:
    """Serve MCP at POST /mcp/<project>; the caller closes the endpoint with the app."""
    endpoint = McpEndpoint(service, max_body_bytes=settings.max_body_bytes)
    app.extensions[_KEY] = endpoint
    app.add_url_rule("/mcp/<project>", "mcp", _mcp, methods=["POST"])
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
    if not may_write and _calls_a_write(body):
        require("write", project=project)  # raises the 401 or 403
    # What the tools need travels in the path and query string the view itself builds (never
    # the client's): the SDK hands the handler this request, and nothing else.
    query = {"access": "write" if may_write else "read", **({"agent": agent} if agent else {})}
    endpoint = current_app.extensions[_KEY]
    assert isinstance(endpoint, McpEndpoint)
    status, headers, answer = endpoint.answer(_asgi_scope(project, urlencode(query), body), body)
    return Response(answer, status, [(k.decode("latin-1"), v.decode("latin-1"))
                                     for k, v in headers])


def _asgi_scope(project: str, query: str, body: bytes) -> dict[str, Any]:
    """The ASGI scope of this request, as the SDK reads it (with the view's own query string)."""
    environ = request.environ
    headers = [(name.lower().encode("latin-1"), value.encode("latin-1"))
               for name, value in request.headers.items() if name.lower() != "content-length"]
    headers.append((b"content-length", str(len(body)).encode("ascii")))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.5"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").partition("/")[2] or "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "root_path": "/mcp",
        "path": f"/mcp/{project}",
        "raw_path": f"/mcp/{project}".encode("ascii"),
        "query_string": query.encode("ascii"),
        "headers": headers,
        "server": (environ.get("SERVER_NAME", "127.0.0.1"), int(environ.get("SERVER_PORT", 0))),
        "extensions": {},
    }
    if request.remote_addr:
        scope["client"] = (request.remote_addr, int(environ.get("REMOTE_PORT") or 0))
    return scope


def _may_write(project: str) -> bool:
    try:
        require("write", project=project)
    except (AuthenticationError, PermissionDeniedError):
        return False
    return True


def _calls_a_write(body: bytes) -> bool:
    """Tell whether a JSON-RPC body calls any tool but the read-only ones."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return False  # not JSON: the SDK answers its parse error, and no tool runs
    messages = decoded if isinstance(decoded, list) else [decoded]
    for message in messages:
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            continue
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str) or name not in READ_TOOLS:
            return True
    return False


def _scope_of(ctx: ServerRequestContext[Any, Any]) -> ToolScope:
    """The scope of one HTTP call, from the path and query string `_mcp` forwarded."""
    assert ctx.request is not None  # the SDK's (Starlette) request of this POST
    scope = ctx.request.scope
    query = parse_qs(scope["query_string"].decode("ascii"))
    agent = query.get("agent", [None])[0]
    return ToolScope(project=scope["path"].rsplit("/", 1)[-1], agent=agent,
                     may_write=query.get("access") == ["write"])

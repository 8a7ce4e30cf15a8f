"""MCP over Streamable HTTP at `/mcp/<project>`: the stdio server's tools inside the service.

How it is mounted, and why:
- The SDK's server side is ASGI; this service is a WSGI app behind our own HTTP/1.1 server,
  which gathers a response whole before sending it (api/bridge.py `collect`): it cannot stream.
  So the SDK's session manager runs **stateless with JSON responses**: every POST carries one
  JSON-RPC message and gets one `application/json` answer; no SSE stream, no `Mcp-Session-Id`,
  nothing held between requests (the 2026-07-28 protocol revision is per-request anyway).
  `GET` (the optional server-to-client SSE stream) gets 405, as the MCP spec allows; in the SDK
  it would hold a connection thread open for good.
- a2wsgi's `ASGIMiddleware` calls the ASGI app from the WSGI thread; its event loop is an anyio
  blocking portal started on the first MCP request (apps that never see one start no thread),
  where the session manager's `run()` stays entered until the app closes.
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
import io
import json
import threading
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlencode

from a2wsgi import ASGIMiddleware
from anyio.from_thread import start_blocking_portal
from flask import Flask, Response, current_app, request
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from api.auth import require
from kg.errors import AuthenticationError, PermissionDeniedError, StoreUnavailableError
from kg.mcp_server import READ_TOOLS, ToolScope, build_server
from kg.memory_service import MemoryService
from kg.settings import Settings
from kg.terms import validate_identifier

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

__all__ = ["McpEndpoint", "install"]

_KEY = "jido_kg_mcp"
# After the answer went out, how long a2wsgi waits for the SDK's request task to wind down
# before cancelling it (the stateless transport terminates itself; this only bounds a bug).
_WIND_DOWN_SECONDS = 10.0


class McpEndpoint:
    """The SDK's stateless Streamable HTTP manager as a WSGI app, started on first use."""

    def __init__(self, service: MemoryService, *, max_body_bytes: int) -> None:
        server = build_server(
            service,
            scope=_scope_of,
            instructions=(
                "Long-term memory of the project named in this endpoint's URL: call recall "
                "before answering questions about the project, remember durable facts and "
                "decisions, forget what became wrong."
            ),
        )
        self.manager = StreamableHTTPSessionManager(
            server, json_response=True, stateless=True, max_request_body_size=max_body_bytes
        )
        self._lock = threading.Lock()
        self._stack = ExitStack()
        self._wsgi: WSGIApplication | None = None
        self._closed = False

    def wsgi(self) -> WSGIApplication:
        """The WSGI face of the manager; the first call starts its event loop thread."""
        with self._lock:
            if self._closed:  # a request late in shutdown must not start a new loop
                raise StoreUnavailableError("the service is shutting down")
            if self._wsgi is None:
                portal = self._stack.enter_context(start_blocking_portal(name="kg-mcp"))
                self._stack.enter_context(portal.wrap_async_context_manager(self.manager.run()))
                loop = portal.call(_running_loop)
                middleware = ASGIMiddleware(cast(Any, self.manager.handle_request),
                                            wait_time=_WIND_DOWN_SECONDS, loop=loop)
                self._wsgi = cast("WSGIApplication", middleware)
            return self._wsgi

    def close(self) -> None:
        """Leave the manager's run() and stop the event loop thread (if it ever started)."""
        with self._lock:
            self._closed = True
            self._stack.close()
            self._wsgi = None


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
    environ = {
        **request.environ,
        "SCRIPT_NAME": "/mcp",
        "PATH_INFO": f"/{project}",
        "QUERY_STRING": urlencode(query),
        "wsgi.input": io.BytesIO(body),
        "CONTENT_LENGTH": str(len(body)),
    }
    endpoint = current_app.extensions[_KEY]
    assert isinstance(endpoint, McpEndpoint)
    answer = current_app.response_class.from_app(endpoint.wsgi(), environ, buffered=True)
    return cast(Response, answer)  # from_app builds the class it is called on


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

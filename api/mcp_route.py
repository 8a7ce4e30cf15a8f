"""The MCP endpoint's route around Flask: a plain, allowed POST /mcp/<project> straight to the SDK.

Flask's per-request machinery (request context, URL matching, the view's own request object,
after-request hooks) costs about as much CPU per call as the rest of the service's share of
an MCP call (docs/benchmarks/agent-reach.md). This WSGI middleware, in front of Flask, answers
the requests whose answer the view (api/mcp.py `_mcp`) would give unchanged: a POST without an
Origin header (CORS headers come from Flask's hooks), valid project and agent ids, a body of
declared length within the cap, a caller who may read the project, and may write it too if the
body calls a tool that writes. It hands them to the same `McpEndpoint.call` as the view; the
SDK answers them as always. Any other request goes to Flask untouched, so every refusal is the
view's (401, 403, 400, 413 in the one JSON error shape); an error of the call itself, and an
answer big enough to gzip, are finished by Flask's error handlers and after-request hooks, as
the query fast path does (api/fast_path.py).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import parse_qsl

from flask import Flask, Response

from api.auth import principal_for
from api.transport import GZIP_MIN_BYTES, finish_in_flask
from kg.errors import KgError
from kg.mcp_server import READ_TOOLS
from kg.terms import validate_identifier

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from api.mcp import McpEndpoint

__all__ = ["McpRoute", "calls_a_write"]

_PREFIX = "/mcp/"
_STATUS_LINES = {s.value: f"{s.value} {s.phrase}" for s in HTTPStatus}
# An answer as WSGI headers carry it: status, headers, the whole body.
_Answer = tuple[int, list[tuple[str, str]], bytes]


class _Call(NamedTuple):
    """A request the route answers: whose, for whom, and its body."""

    project: str
    agent: str | None
    may_write: bool
    body: bytes


class McpRoute:
    """WSGI middleware that answers plain, allowed MCP POSTs without Flask (module docstring)."""

    def __init__(self, app: Flask, inner: WSGIApplication, endpoint: McpEndpoint, *,
                 max_body_bytes: int) -> None:
        self.app, self.inner, self.endpoint = app, inner, endpoint
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        call = self.checked(environ)
        if call is None:
            return self.inner(environ, start_response)
        try:
            status, raw, body = self.endpoint.call(environ, project=call.project,
                                                   agent=call.agent, may_write=call.may_write,
                                                   body=call.body)
        except Exception as exc:  # answered exactly as the view's error would be
            return self._finish(environ, start_response, error=exc)
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]
        if len(body) >= GZIP_MIN_BYTES:  # Flask's after-request hook gzips it
            return self._finish(environ, start_response, answer=(status, headers, body))
        start_response(_STATUS_LINES.get(status) or _status_line(status), headers)
        return [body]

    def checked(self, environ: WSGIEnvironment) -> _Call | None:
        """The call a request makes if this route may answer it; None: Flask answers it."""
        path: str = environ.get("PATH_INFO", "")
        if (not path.startswith(_PREFIX) or environ.get("REQUEST_METHOD") != "POST"
                or environ.get("SCRIPT_NAME") or "HTTP_ORIGIN" in environ):
            return None
        project = path[len(_PREFIX):]
        try:
            validate_identifier(project, name="project id")
            length = int(environ.get("CONTENT_LENGTH") or -1)
            agent = _agent(environ.get("QUERY_STRING", ""))
            principal = principal_for(self.app, environ.get("HTTP_AUTHORIZATION", ""))
        except (KgError, ValueError):
            return None
        if (not 0 <= length <= self.max_body_bytes or not principal.can_read
                or not principal.may_access(project)):
            return None
        body: bytes = environ["wsgi.input"].read(length)
        may_write = principal.can_write  # may_access(project) above: also a write@project token
        if len(body) != length or (not may_write and calls_a_write(body)):
            environ["wsgi.input"] = io.BytesIO(body)  # for the view, which reads it again
            return None
        return _Call(project, agent, may_write, body)

    def _finish(self, environ: WSGIEnvironment, start_response: StartResponse, *,
                error: Exception | None = None,
                answer: _Answer | None = None) -> Iterable[bytes]:
        """Finish a response the way Flask's dispatch would (handlers, after-request hooks)."""
        if answer is None:
            return finish_in_flask(self.app, environ, start_response, error=error)
        return finish_in_flask(self.app, environ, start_response,
                               make=lambda: Response(answer[2], answer[0], answer[1]))


def calls_a_write(body: bytes) -> bool:
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


def _agent(query: str) -> str | None:
    """The `agent` of a query string, checked (raises on a bad one), as the view reads it."""
    if "agent" not in query:
        return None
    agent = next((v for k, v in parse_qsl(query, keep_blank_values=True) if k == "agent"), None)
    return None if agent is None else validate_identifier(agent, name="agent id")


def _status_line(status: int) -> str:
    return f"{status} Unknown"

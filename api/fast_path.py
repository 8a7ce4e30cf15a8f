"""The SPARQL fast path: a plain GET query answered without Flask's per-request machinery.

Flask costs more per request than a small query does. A GET to /sparql or /query that passes
every check (caller, nesting, SERVICE/LOAD, dataset, Accept) runs here through the same
planning the view uses (api.query_plan): as WSGI middleware, or (`answer_here`) straight in the
server's connection thread, with no hand-off to a query worker at all. Anything else, and every
refusal before a query runs, goes to Flask untouched and is answered as always; an error before
the first byte, and a whole body big enough to gzip, are finished by Flask's own error handlers
and after-request hooks. A large result streams (api.stream) as it is serialised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from flask import Flask
from werkzeug.wsgi import get_host

from api.auth import principal_for
from api.bridge import (
    SENT,
    Answer,
    BrokenStreamError,
    Exchange,
    Ready,
    Request,
    TakenOverError,
    collect,
)
from api.budget import BudgetGate, address_caller, token_caller
from api.protocol_request import read_query_string
from api.query_plan import QueryPlan, current_url, media_type, plan_query, query_options
from api.stream import FastStream, accepts_gzip, gzip_chunks, result_response, stream_headers
from api.transport import GZIP_MIN_BYTES, finish_in_flask
from kg.errors import QueryTimeoutError
from kg.settings import Settings
from kg.sparql.recall_service import mentions_recall
from kg.store.execution import CALLER, QueryExecutor, QueryOutput
from kg.store.guard import check_nesting

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["QueryFastPath", "fast_path"]

# The GET paths the fast path answers, with the only operation each takes (None: either).
_FAST_PATHS: dict[str, str | None] = {"/sparql": None, "/query": "query"}
# How many plans the fast path keeps, and the longest query string it keeps one for.
_PLAN_CACHE_SIZE = 1024
_PLAN_CACHE_QUERY_BYTES = 4096


class _Prepared:
    """A fast-path request's plan and what answering it needs, made once per request key.

    A plain slotted class: a frozen dataclass takes 0.8 µs to make, this 0.2, once per new query.
    """

    __slots__ = ("_heads", "caller", "gzip", "media_type", "options", "plan")

    def __init__(self, plan: QueryPlan, options: dict[str, Any], caller: str | None,
                 gzip: bool, media_type: Callable[[QueryOutput], str]) -> None:
        self.plan = plan
        self.options = options  # query_options(plan, settings)
        self.caller = caller  # who a runaway is charged to: its token's id (None: the address)
        self.gzip = gzip  # the client takes gzip (for a streamed result)
        self.media_type = media_type
        self._heads: dict[str, bytes] = {}

    def headers(self, output: QueryOutput) -> bytes:
        """The header lines of a whole answer with this output (encoded once per kind)."""
        try:
            return self._heads[output.kind]
        except KeyError:
            head = (f"Content-Type: {self.media_type(output)}; charset=utf-8\r\n"
                    "Vary: Accept\r\n").encode("latin-1")
            self._heads[output.kind] = head
            return head


class QueryFastPath:
    """WSGI middleware around the app that answers plain GET queries itself (module docstring)."""

    def __init__(self, app: Flask, inner: WSGIApplication, *, settings: Settings,
                 runner: QueryExecutor) -> None:
        self.app, self.inner, self.settings, self.runner = app, inner, settings, runner
        self._plans: dict[tuple[str, ...], QueryPlan | None] = {}
        self._prepared: dict[tuple[bytes | tuple[bytes, bytes], ...], _Prepared | None] = {}

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        plan = self.plan(environ)
        if plan is None:
            return self.inner(environ, start_response)
        try:
            output = self.runner.query(plan.operation.text, **query_options(plan, self.settings))
        except Exception as exc:  # answered exactly as the view's error would be
            return self._finish(environ, start_response, error=exc)
        if output.chunks is not None and "HTTP_ORIGIN" not in environ:
            gzip = accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", ""))
            start_response("200 OK", stream_headers(media_type(plan, output), gzip=gzip))
            return gzip_chunks(output.chunks) if gzip else output.chunks
        if output.chunks is not None or self._needs_flask(environ, output.body):
            return self._finish(environ, start_response, output=(output, media_type(plan, output)))
        start_response("200 OK", [("Content-Type", f"{media_type(plan, output)}; charset=utf-8"),
                                  ("Content-Length", str(len(output.body))), ("Vary", "Accept")])
        return [output.body]

    def answer_here(self, request: Request, line: Exchange, *,
                    gate: BudgetGate | None = None) -> Answer | Ready | None:
        """Answer a fast-path GET in the calling thread (the server's connection thread).

        None: Flask must take the request. `gate` refuses (429) a caller over its runaway
        budget. Past the query's deadline the watchdog answers 504 through `line.overrun`
        while the query goes on (TakenOverError then says so when it ends), or cuts a result
        already streaming. A large result streams through `line.begin` (SENT).
        """
        # Keyed on the request as it came: a client repeating a query skips its environ and
        # planning; a request that differs only in headers the plan ignores is planned by
        # `plan`'s own cache.
        key: tuple[bytes | tuple[bytes, bytes], ...] = (request.url, *request.headers)
        try:
            prepared = self._prepared[key]
        except KeyError:
            prepared = self._prepare(request, line)
            if len(self._prepared) >= _PLAN_CACHE_SIZE:
                self._prepared.clear()
            self._prepared[key] = prepared
        if prepared is None:  # Flask answers it (CORS, a refusal, not a plain query)
            return None
        caller = prepared.caller or address_caller(line.address)
        if gate is None:
            return self._answer(prepared, request, line)
        refused = gate.refusal_of(caller)
        if refused is not None:
            return refused
        token = CALLER.set(caller)
        try:
            return self._answer(prepared, request, line)
        finally:
            CALLER.reset(token)

    def _prepare(self, request: Request, line: Exchange) -> _Prepared | None:
        """What answering a request takes that depends only on the request (once per key);
        None: Flask answers it."""
        environ = line.environ(request)
        if "HTTP_ORIGIN" in environ:  # CORS headers come from Flask's hooks
            return None
        plan = self.plan(environ)
        if plan is None:
            return None
        return _Prepared(plan, query_options(plan, self.settings), token_caller(environ),
                         accepts_gzip(environ.get("HTTP_ACCEPT_ENCODING", "")),
                         partial(media_type, plan))

    def _answer(self, prepared: _Prepared, request: Request, line: Exchange) -> Answer | Ready:
        plan = prepared.plan
        stream = FastStream(line.begin, prepared.media_type, gzip=prepared.gzip)
        overruns: list[QueryTimeoutError] = []

        def late(error: QueryTimeoutError) -> None:
            overruns.append(error)
            if not stream.overrun(error):
                line.overrun(collect(partial(self._finish, error=error), line.environ(request)))

        try:
            output = self.runner.query_here(plan.operation.text, on_overrun=late,
                                            spill=stream.spill, **prepared.options)
        except Exception as exc:
            if stream.started:  # the 200 went out: end the body with the reason, unfinished
                stream.fail(exc)
                raise BrokenStreamError from None
            return collect(partial(self._finish, error=exc), line.environ(request))
        if output is None:  # past its deadline, and answered (or cut) for that already
            if stream.started:
                stream.fail(overruns[0])
                raise BrokenStreamError
            raise TakenOverError
        if output.streamed:
            stream.finish()
            return SENT
        body = output.body
        if len(body) >= GZIP_MIN_BYTES:  # Flask's after-request hook gzips it when asked
            return collect(partial(self._finish, output=(output, prepared.media_type(output))),
                           line.environ(request))
        return Ready(prepared.headers(output), body)

    @staticmethod
    def _needs_flask(environ: WSGIEnvironment, body: bytes) -> bool:
        return len(body) >= GZIP_MIN_BYTES or "HTTP_ORIGIN" in environ

    def plan(self, environ: WSGIEnvironment) -> QueryPlan | None:
        """The checked plan of a fast-path GET, or None when Flask must take the request."""
        path = environ.get("PATH_INFO", "")
        if (path not in _FAST_PATHS or environ.get("REQUEST_METHOD") != "GET"
                or environ.get("SCRIPT_NAME")):
            return None
        # A plan depends only on these request parts and on settings and tokens fixed for the
        # app's life, so the same request is planned once (parsing and checking a small query
        # costs about as much as running it).
        query = environ.get("QUERY_STRING", "")
        key = (path, query, environ.get("HTTP_AUTHORIZATION", ""),
               environ.get("HTTP_ACCEPT", ""), environ.get("HTTP_HOST", ""),
               environ.get("wsgi.url_scheme", ""))
        try:
            return self._plans[key]
        except KeyError:
            pass
        plan = self._plan(environ, path)
        if len(query) <= _PLAN_CACHE_QUERY_BYTES:
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.clear()  # simple and bounded; a busy client re-plans once
            self._plans[key] = plan
        return plan

    def _plan(self, environ: WSGIEnvironment, path: str) -> QueryPlan | None:
        try:
            operation = read_query_string(environ.get("QUERY_STRING", ""), self.settings,
                                          only=_FAST_PATHS[path])
            if operation is None or mentions_recall(operation.text):
                return None  # a recall SERVICE runs recall per request: the view does that
            check_nesting(operation.text)
            principal = principal_for(self.app, environ.get("HTTP_AUTHORIZATION", ""))
            if principal.role is None:
                return None
            return plan_query(operation, principal, self._endpoint(environ, path),
                              self.settings, accept=environ.get("HTTP_ACCEPT", ""))
        except Exception:  # refused or odd: Flask runs the same checks and answers it
            return None

    def _endpoint(self, environ: WSGIEnvironment, path: str) -> str:
        base = self.settings.base_url.rstrip("/")
        if base:
            return f"{base}{path}"
        host = get_host(environ, trusted_hosts=self.app.config.get("TRUSTED_HOSTS"))
        return current_url(environ["wsgi.url_scheme"], host, "", path)

    def _finish(self, environ: WSGIEnvironment, start_response: StartResponse, *,
                error: Exception | None = None,
                output: tuple[QueryOutput, str] | None = None) -> Iterable[bytes]:
        """Finish a response the way Flask's dispatch would (handlers, after-request hooks)."""
        if output is None:
            return finish_in_flask(self.app, environ, start_response, error=error)
        chunks = output[0].chunks
        return finish_in_flask(
            self.app, environ, start_response,
            make=lambda: result_response(*output, accept_encoding=environ.get(
                "HTTP_ACCEPT_ENCODING", "")),
            on_failure=chunks.close if chunks is not None else None)  # stops the worker


def fast_path(app: Flask) -> QueryFastPath:
    """The app's query fast path (installed around its WSGI app by api.sparql.install)."""
    found = app.wsgi_app
    assert isinstance(found, QueryFastPath)
    return found


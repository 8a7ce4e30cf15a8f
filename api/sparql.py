"""The SPARQL 1.1 Protocol endpoint: /sparql (query and update), /query and /update aliases.

Every query runs *and is serialised* in a worker of `kg.store.execution.QueryExecutor`, so the
status (200, 400, 406, 504, 503 ...) is known before the first byte leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from flask import Blueprint, Flask, Response, current_app, request
from pyoxigraph import NamedNode, QueryResultsFormat, RdfFormat
from werkzeug.sansio.utils import get_current_url
from werkzeug.wsgi import get_host

from api import service_description
from api.auth import Principal, principal_for, require
from api.bridge import Answer, collect
from api.connection import TakenOverError
from api.media_types import GRAPH_TYPES, RESULT_TYPES, negotiate_graph, negotiate_results
from api.protocol_request import Operation, read_operation, read_query_string
from api.services import services
from api.transport import GZIP_MIN_BYTES
from kg.errors import PermissionDeniedError, QueryTimeoutError
from kg.graphs import project_graphs
from kg.settings import Settings
from kg.store import Store
from kg.store.execution import QueryExecutor, QueryOutput, ResultFormats
from kg.store.guard import check_nesting
from kg.store.lexer import dataset_clauses, mentions_keyword, query_form, with_using
from kg.store.remote_access import check_remote_access

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = ["QueryFastPath", "blueprint", "endpoint_iri", "executor", "fast_path", "install"]

blueprint = Blueprint("sparql", __name__)
_KEY = "jido_kg_query_executor"
_METHODS = ["GET", "POST"]


def install(app: Flask, *, settings: Settings, store: Store) -> None:
    """Create the query executor for this app and register the endpoint routes."""
    app.extensions[_KEY] = QueryExecutor(
        store, workers=settings.threads, max_runaway=settings.max_runaway_queries
    )
    app.register_blueprint(blueprint)
    app.wsgi_app = QueryFastPath(  # type: ignore[method-assign]
        app, app.wsgi_app, settings=settings, runner=app.extensions[_KEY]
    )


def executor() -> QueryExecutor:
    """Return the query executor of the current app."""
    found = current_app.extensions[_KEY]
    assert isinstance(found, QueryExecutor)
    return found


def endpoint_iri() -> str:
    """The IRI of the endpoint being called (the configured public base URL wins)."""
    base = services().settings.base_url.rstrip("/")
    if base:
        return f"{base}{request.path}"
    return _current_url(request.scheme, request.host, request.root_path, request.path)


# request.base_url rebuilds and IRI-decodes the URL on every request; the same few endpoint
# URLs come back all the time, so remember them (bounded: the Host header is the client's).
_current_url = lru_cache(maxsize=64)(get_current_url)


@blueprint.route("/sparql", methods=_METHODS, strict_slashes=False)
def sparql() -> Response:
    """Run a SPARQL query or update; a bare GET returns the service description."""
    return _handle(only=None)


@blueprint.route("/query", methods=_METHODS, strict_slashes=False)
def query() -> Response:
    """Run a SPARQL query (the Oxigraph-style alias); a bare GET describes the service."""
    return _handle(only="query")


@blueprint.route("/update", methods=_METHODS, strict_slashes=False)
def update() -> Response:
    """Run a SPARQL update (POST only); a bare GET describes the service."""
    return _handle(only="update")


def _handle(*, only: str | None) -> Response:
    settings = services().settings
    operation = read_operation(settings, only=only)
    if operation is None:
        require("read")
        return service_description.response(endpoint_iri())
    # The nesting cap runs before anything else reads the text (the lexer included).
    check_nesting(operation.text)
    if operation.kind == "query":
        return _run_query(operation, settings)
    return _run_update(operation, settings)


def _run_query(operation: Operation, settings: Settings) -> Response:
    plan = _plan_query(operation, require("read"), endpoint_iri(), settings,
                       accept=request.headers.get("Accept", ""))
    body, media_type = _execute(plan, executor(), settings)
    response = Response(body, content_type=f"{media_type}; charset=utf-8")
    response.headers["Vary"] = "Accept"
    return response


@dataclass(frozen=True, slots=True)
class _QueryPlan:
    """A query that passed every check, with its dataset and negotiated formats."""

    operation: Operation
    base: str
    default_graph: Sequence[NamedNode] | None
    named_graphs: Sequence[NamedNode] | None
    results: tuple[str, QueryResultsFormat] | None
    graph: tuple[str, RdfFormat] | None


def _plan_query(operation: Operation, principal: Principal, base: str, settings: Settings, *,
                accept: str) -> _QueryPlan:
    """Check a query (SERVICE/LOAD, dataset, Accept) without running it; raise if refused."""
    if not principal.is_admin and mentions_keyword(operation.text, "SERVICE", "LOAD"):
        check_remote_access(operation.text, allowed=settings.fetch_allowlist, base=base)
    default_graph, named_graphs = _dataset(operation, principal, base)
    form = query_form(operation.text)
    results = negotiate_results(required=form in ("SELECT", "ASK"), accept=accept)
    graph = negotiate_graph(accept=accept) if form in ("CONSTRUCT", "DESCRIBE") else None
    if form is None:  # malformed: let the parser say why, in the results format if any
        graph = None
    return _QueryPlan(operation, base, default_graph, named_graphs, results, graph)


def _execute(plan: _QueryPlan, runner: QueryExecutor, settings: Settings) -> tuple[bytes, str]:
    """Run a planned query in the executor; return the body and its media type."""
    output = runner.query(plan.operation.text, **_query_options(plan, settings))
    return output.body, _media_type(plan, output)


def _query_options(plan: _QueryPlan, settings: Settings) -> dict[str, Any]:
    results, graph = plan.results, plan.graph
    return {
        "formats": ResultFormats(results[1] if results else None, graph[1] if graph else None),
        "timeout": plan.operation.timeout,
        "max_rows": settings.max_result_rows,
        "default_graph": plan.default_graph,
        "named_graphs": plan.named_graphs,
        "base_iri": plan.base,
    }


def _media_type(plan: _QueryPlan, output: QueryOutput) -> str:
    results, graph = plan.results, plan.graph
    return (results[0] if output.kind != "graph" and results
            else graph[0] if graph else _media_type_of(output.format))


def _run_update(operation: Operation, settings: Settings) -> Response:
    principal = require("write")
    base = endpoint_iri()
    if not principal.is_admin:
        check_remote_access(operation.text, allowed=settings.fetch_allowlist, base=base)
    text = with_using(
        operation.text,
        default=[g.value for g in operation.default_graphs],
        named=[g.value for g in operation.named_graphs],
    )
    executor().update(text, timeout=operation.timeout, base_iri=base)
    return Response(status=204)


def _dataset(
    operation: Operation, principal: Principal, base: str
) -> tuple[Sequence[NamedNode] | None, Sequence[NamedNode] | None]:
    """The dataset to query: the protocol's, or for a scoped token only its projects' graphs."""
    default, named = operation.default_graphs, operation.named_graphs
    if principal.projects is None:
        return (default, named) if default or named else (None, None)
    allowed = sorted({g for p in principal.projects for g in project_graphs(p)},
                     key=lambda g: g.value)
    if not default and not named:
        from_default, from_named = dataset_clauses(operation.text, base=base)
        if not from_default and not from_named:
            return allowed, allowed
        default, named = [_node(i) for i in from_default], [_node(i) for i in from_named]
    outside = sorted({g.value for g in [*default, *named]} - {g.value for g in allowed})
    if outside:
        raise PermissionDeniedError(
            "this token may query only its project's graphs",
            details={"graphs_refused": outside[:20]},
        )
    return default, named


def _node(iri: str) -> NamedNode:
    try:
        return NamedNode(iri)
    except ValueError:
        raise PermissionDeniedError(f"cannot tell which graph {iri[:200]!r} names") from None


def _media_type_of(fmt: object) -> str:
    for table in (RESULT_TYPES, GRAPH_TYPES):
        for media_type, candidate in table.items():
            if candidate == fmt:
                return media_type
    return "application/octet-stream"


# The GET paths the fast path answers, with the only operation each takes (None: either).
_FAST_PATHS: dict[str, str | None] = {"/sparql": None, "/query": "query"}


# How many plans the fast path keeps, and the longest query string it keeps one for.
_PLAN_CACHE_SIZE = 1024
_PLAN_CACHE_QUERY_BYTES = 4096


class QueryFastPath:
    """A plain GET query answered without Flask's per-request machinery.

    Flask costs more per request than a small query does. A GET to /sparql or /query that
    passes every check (caller, nesting, SERVICE/LOAD, dataset, Accept) runs here through the
    same functions the view uses: as WSGI middleware, or (`answer_here`) straight in the
    server's connection thread, with no hand-off to a query worker at all. Anything
    else, and every refusal before a query runs, goes to Flask untouched and is answered as
    always; an error while running, and a body big enough to gzip, are finished by Flask's own
    error handlers and after-request hooks.
    """

    def __init__(self, app: Flask, inner: WSGIApplication, *, settings: Settings,
                 runner: QueryExecutor) -> None:
        self.app, self.inner, self.settings, self.runner = app, inner, settings, runner
        self._plans: dict[tuple[str, ...], _QueryPlan | None] = {}

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        plan = self.plan(environ)
        if plan is None:
            return self.inner(environ, start_response)
        try:
            body, media_type = _execute(plan, self.runner, self.settings)
        except Exception as exc:  # answered exactly as the view's error would be
            return self._finish(environ, start_response, error=exc)
        if self._needs_flask(environ, body):
            return self._finish(environ, start_response, body=(body, media_type))
        start_response("200 OK", [("Content-Type", f"{media_type}; charset=utf-8"),
                                  ("Content-Length", str(len(body))), ("Vary", "Accept")])
        return [body]

    def answer_here(self, environ: WSGIEnvironment,
                    overrun: Callable[[Answer], None]) -> Answer | None:
        """Answer a fast-path GET in the calling thread (the server's connection thread).

        None: Flask must take the request. Past the query's deadline the watchdog answers 504
        through `overrun` while the query goes on; TakenOverError then says so when it ends.
        """
        if "HTTP_ORIGIN" in environ:  # CORS headers come from Flask's hooks
            return None
        plan = self.plan(environ)
        if plan is None:
            return None

        def late(error: QueryTimeoutError) -> None:
            overrun(collect(partial(self._finish, error=error), environ))

        try:
            output = self.runner.query_here(plan.operation.text, on_overrun=late,
                                            **_query_options(plan, self.settings))
        except Exception as exc:
            return collect(partial(self._finish, error=exc), environ)
        if output is None:
            raise TakenOverError
        body, media_type = output.body, _media_type(plan, output)
        if self._needs_flask(environ, body):
            return collect(partial(self._finish, body=(body, media_type)), environ)
        return 200, [("Content-Type", f"{media_type}; charset=utf-8"),
                     ("Content-Length", str(len(body))), ("Vary", "Accept")], body

    @staticmethod
    def _needs_flask(environ: WSGIEnvironment, body: bytes) -> bool:
        return len(body) >= GZIP_MIN_BYTES or "HTTP_ORIGIN" in environ

    def plan(self, environ: WSGIEnvironment) -> _QueryPlan | None:
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

    def _plan(self, environ: WSGIEnvironment, path: str) -> _QueryPlan | None:
        try:
            operation = read_query_string(environ.get("QUERY_STRING", ""), self.settings,
                                          only=_FAST_PATHS[path])
            if operation is None:
                return None
            check_nesting(operation.text)
            principal = principal_for(self.app, environ.get("HTTP_AUTHORIZATION", ""))
            if principal.role is None:
                return None
            return _plan_query(operation, principal, self._endpoint(environ, path),
                               self.settings, accept=environ.get("HTTP_ACCEPT", ""))
        except Exception:  # refused or odd: Flask runs the same checks and answers it
            return None

    def _endpoint(self, environ: WSGIEnvironment, path: str) -> str:
        base = self.settings.base_url.rstrip("/")
        if base:
            return f"{base}{path}"
        host = get_host(environ, trusted_hosts=self.app.config.get("TRUSTED_HOSTS"))
        return _current_url(environ["wsgi.url_scheme"], host, "", path)

    def _finish(self, environ: WSGIEnvironment, start_response: StartResponse, *,
                error: Exception | None = None,
                body: tuple[bytes, str] = (b"", "")) -> Iterable[bytes]:
        """Finish a response the way Flask's dispatch would (handlers, after-request hooks)."""
        app = self.app
        with app.request_context(environ):
            try:
                if error is not None:
                    rv: Response = app.handle_user_exception(error)  # type: ignore[assignment]
                else:
                    rv = Response(body[0], content_type=f"{body[1]}; charset=utf-8")
                    rv.headers["Vary"] = "Accept"
                response = app.finalize_request(rv)
            except Exception as exc:
                response = app.handle_exception(exc)
            return response(environ, start_response)


def fast_path(app: Flask) -> QueryFastPath:
    """The app's query fast path (installed around its WSGI app by `install`)."""
    found = app.wsgi_app
    assert isinstance(found, QueryFastPath)
    return found

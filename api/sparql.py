"""The SPARQL 1.1 Protocol endpoint: /sparql (query and update), /query and /update aliases.

Every query runs *and is serialised* in a worker of `kg.store.execution.QueryExecutor`, so the
status (200, 400, 406, 504, 503 ...) is known before the first byte leaves.
"""

from __future__ import annotations

from collections.abc import Sequence

from flask import Blueprint, Flask, Response, current_app, request
from pyoxigraph import NamedNode

from api import service_description
from api.auth import Principal, require
from api.media_types import GRAPH_TYPES, RESULT_TYPES, negotiate_graph, negotiate_results
from api.protocol_request import Operation, read_operation
from api.services import services
from kg.errors import PermissionDeniedError
from kg.graphs import project_graphs
from kg.settings import Settings
from kg.store import Store
from kg.store.execution import QueryExecutor, ResultFormats
from kg.store.guard import check_nesting
from kg.store.lexer import dataset_clauses, query_form, with_using
from kg.store.remote_access import check_remote_access

__all__ = ["blueprint", "endpoint_iri", "executor", "install"]

blueprint = Blueprint("sparql", __name__)
_KEY = "jido_kg_query_executor"
_METHODS = ["GET", "POST"]


def install(app: Flask, *, settings: Settings, store: Store) -> None:
    """Create the query executor for this app and register the endpoint routes."""
    app.extensions[_KEY] = QueryExecutor(
        store, workers=settings.threads, max_runaway=settings.max_runaway_queries
    )
    app.register_blueprint(blueprint)


def executor() -> QueryExecutor:
    """Return the query executor of the current app."""
    found = current_app.extensions[_KEY]
    assert isinstance(found, QueryExecutor)
    return found


def endpoint_iri() -> str:
    """The IRI of the endpoint being called (the configured public base URL wins)."""
    base = services().settings.base_url.rstrip("/")
    return f"{base}{request.path}" if base else request.base_url


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
    principal = require("read")
    base = endpoint_iri()
    if not principal.is_admin:
        check_remote_access(operation.text, allowed=settings.fetch_allowlist, base=base)
    default_graph, named_graphs = _dataset(operation, principal, base)
    form = query_form(operation.text)
    results = negotiate_results(required=form in ("SELECT", "ASK"))
    graph = negotiate_graph() if form in ("CONSTRUCT", "DESCRIBE") else None
    if form is None:  # malformed: let the parser say why, in the results format if any
        graph = None
    output = executor().query(
        operation.text,
        formats=ResultFormats(results[1] if results else None, graph[1] if graph else None),
        timeout=operation.timeout,
        max_rows=settings.max_result_rows,
        default_graph=default_graph,
        named_graphs=named_graphs,
        base_iri=base,
    )
    media_type = (results[0] if output.kind != "graph" and results
                  else graph[0] if graph else _media_type_of(output.format))
    response = Response(output.body, content_type=f"{media_type}; charset=utf-8")
    response.headers["Vary"] = "Accept"
    return response


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

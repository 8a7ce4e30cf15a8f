"""The SPARQL 1.1 Protocol endpoint: /sparql (query and update), /query and /update aliases.

Every query runs *and is serialised* in a worker of `kg.store.execution.QueryExecutor`. A small
result is answered whole, so its status (200, 400, 406, 502, 504, 503 ...) is known before the
first byte leaves; a large one streams from the worker as it is serialised (docs/sparql.md,
"Large results"). Plain GET queries mostly take the fast path (api.fast_path) instead.
"""

from __future__ import annotations

from flask import Blueprint, Flask, Response, current_app, request

from api import recall_service, service_description
from api.auth import require
from api.fast_path import QueryFastPath
from api.protocol_request import Operation, read_operation
from api.query_plan import current_url, media_type, plan_query, query_options
from api.recall_service import expand_recall
from api.services import services
from api.stream import result_response
from kg.settings import Settings
from kg.sparql.recall_service import SERVICE_IRI
from kg.store import Store
from kg.store.execution import QueryExecutor
from kg.store.guard import check_nesting
from kg.store.lexer import with_using
from kg.store.remote_access import check_remote_access

__all__ = ["blueprint", "endpoint_iri", "executor", "install"]

blueprint = Blueprint("sparql", __name__)
_KEY = "jido_kg_query_executor"
_METHODS = ["GET", "POST"]


def install(app: Flask, *, settings: Settings, store: Store) -> None:
    """Create the query executor for this app, register the routes and the fast path."""
    app.extensions[_KEY] = QueryExecutor(
        store, workers=settings.threads, max_runaway=settings.max_runaway_queries
    )
    app.register_blueprint(blueprint)
    app.register_blueprint(recall_service.blueprint)  # GET /recall: the recall: vocabulary
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
    return current_url(request.scheme, request.host, request.root_path, request.path)


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
    plan = plan_query(operation, principal, endpoint_iri(), settings,
                      accept=request.headers.get("Accept", ""))
    text = expand_recall(plan.operation.text, principal, base=plan.base)
    output = executor().query(text, **query_options(plan, settings))
    return result_response(output, media_type(plan, output),
                           accept_encoding=request.headers.get("Accept-Encoding", ""))


def _run_update(operation: Operation, settings: Settings) -> Response:
    principal = require("write")
    base = endpoint_iri()
    if not principal.is_admin:
        check_remote_access(operation.text, allowed=settings.fetch_allowlist, base=base,
                            local=(SERVICE_IRI,))
    text = with_using(
        expand_recall(operation.text, principal, base=base),
        default=[g.value for g in operation.default_graphs],
        named=[g.value for g in operation.named_graphs],
    )
    executor().update(text, timeout=operation.timeout, base_iri=base)
    return Response(status=204)

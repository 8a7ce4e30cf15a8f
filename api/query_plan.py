"""A SPARQL query checked and ready to run: its dataset, its formats and its run options.

The endpoint's view (api.sparql) and its fast path (api.fast_path) plan a query with the same
function here, so both refuse, scope and negotiate it alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pyoxigraph import NamedNode, QueryResultsFormat, RdfFormat
from werkzeug.sansio.utils import get_current_url

from api.auth import Principal
from api.media_types import GRAPH_TYPES, RESULT_TYPES, negotiate_graph, negotiate_results
from api.protocol_request import Operation
from kg.errors import PermissionDeniedError
from kg.graphs import project_graphs
from kg.settings import Settings
from kg.sparql.entailment import entail
from kg.sparql.recall_service import SERVICE_IRI
from kg.store.execution import QueryOutput, ResultFormats
from kg.store.lexer import dataset_clauses, mentions_keyword, query_form
from kg.store.remote_access import check_remote_access

__all__ = ["QueryPlan", "current_url", "media_type", "plan_query", "query_options"]

# request.base_url rebuilds and IRI-decodes the URL on every request; the same few endpoint
# URLs come back all the time, so remember them (bounded: the Host header is the client's).
current_url = lru_cache(maxsize=64)(get_current_url)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """A query that passed every check, with its dataset and negotiated formats."""

    operation: Operation
    base: str
    default_graph: Sequence[NamedNode] | None
    named_graphs: Sequence[NamedNode] | None
    results: tuple[str, QueryResultsFormat] | None
    graph: tuple[str, RdfFormat] | None


def plan_query(operation: Operation, principal: Principal, base: str, settings: Settings, *,
               accept: str) -> QueryPlan:
    """Check a query (SERVICE/LOAD, dataset, Accept) without running it; raise if refused.

    With `entailment=rdfs` the plan holds the query rewritten for it (kg.sparql.entailment);
    recall SERVICE blocks are left for the view to run (api.recall_service).
    """
    if not principal.is_admin and mentions_keyword(operation.text, "SERVICE", "LOAD"):
        check_remote_access(operation.text, allowed=settings.fetch_allowlist, base=base,
                            local=(SERVICE_IRI,))
    default_graph, named_graphs = _dataset(operation, principal, base)
    form = query_form(operation.text)
    results = negotiate_results(required=form in ("SELECT", "ASK"), accept=accept)
    graph = negotiate_graph(accept=accept) if form in ("CONSTRUCT", "DESCRIBE") else None
    if form is None:  # malformed: let the parser say why, in the results format if any
        graph = None
    if operation.entailment is not None:
        operation = replace(operation, text=entail(operation.text, base=base))
    return QueryPlan(operation, base, default_graph, named_graphs, results, graph)


def query_options(plan: QueryPlan, settings: Settings) -> dict[str, Any]:
    """The keyword arguments of `QueryExecutor.query` (or `query_here`) for a plan."""
    results, graph = plan.results, plan.graph
    return {
        "formats": ResultFormats(results[1] if results else None, graph[1] if graph else None),
        "timeout": plan.operation.timeout,
        "max_rows": settings.max_result_rows,
        "default_graph": plan.default_graph,
        "named_graphs": plan.named_graphs,
        "base_iri": plan.base,
    }


def media_type(plan: QueryPlan, output: QueryOutput) -> str:
    """The media type of a planned query's output (as negotiated, when it was)."""
    results, graph = plan.results, plan.graph
    return (results[0] if output.kind != "graph" and results
            else graph[0] if graph else _media_type_of(output.format))


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

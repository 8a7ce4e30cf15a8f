"""A SPARQL server's answers read back as genuine pyoxigraph results (with Virtuoso's quirks)."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping

import pyoxigraph
from pyoxigraph import QueryBoolean, QueryResultsFormat, QuerySolutions, QueryTriples, RdfFormat

from kg.errors import StoreError
from kg.store.base import Term
from kg.store.sparql_client import HttpAnswer
from kg.store.sparql_terms import term_json

__all__ = [
    "GRAPH_ACCEPT",
    "JSON_TYPES",
    "SOLUTIONS_ACCEPT",
    "boolean_result",
    "parse_solutions",
    "parse_triples",
    "virtuoso_solutions",
]

SOLUTIONS_ACCEPT = "application/sparql-results+json, application/sparql-results+xml;q=0.9"
GRAPH_ACCEPT = "application/n-triples, text/turtle;q=0.9, application/rdf+xml;q=0.5"
JSON_TYPES = frozenset({"application/sparql-results+json", "application/json"})
_RESULT_FORMATS = {
    "application/sparql-results+json": QueryResultsFormat.JSON,
    "application/json": QueryResultsFormat.JSON,
    "application/sparql-results+xml": QueryResultsFormat.XML,
    "application/xml": QueryResultsFormat.XML,
    "text/tab-separated-values": QueryResultsFormat.TSV,
}
_XSD_BOOLEAN = "http://www.w3.org/2001/XMLSchema#boolean"


def virtuoso_solutions(body: bytes, form: str, bound: Mapping[str, Term]
                       ) -> QuerySolutions | QueryBoolean:
    """Read Virtuoso's JSON results as pyoxigraph does: ASK as a boolean, exact terms.

    Virtuoso answers ASK with a one-cell table, prints stored booleans as 1/0, returns a
    substituted `true` as the integer 1, and labels blank nodes `nodeID://b1`.
    """
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise StoreError(f"the SPARQL server sent results that do not parse: {exc}") from None
    if not isinstance(data, dict):
        raise StoreError("the SPARQL server sent results that are not a JSON object")
    rows = data.get("results", {}).get("bindings", [])
    if form == "ASK" and "boolean" not in data:
        cells = [str(v.get("value", "")) for v in rows[0].values()] if rows else []
        return boolean_result(bool(cells) and cells[0].lower() in ("1", "true"))
    exact = {name: term_json(term) for name, term in bound.items()}
    head = data.get("head", {})
    head["vars"] = [v for v in head.get("vars", []) if not v.startswith("__kg_")]
    for i, row in enumerate(rows):
        rows[i] = {name: exact.get(name) or _virtuoso_term(value)
                   for name, value in row.items() if not name.startswith("__kg_")}
    return parse_solutions(HttpAnswer(200, "application/sparql-results+json",
                                      json.dumps(data).encode("utf-8")))


def _virtuoso_term(value: dict[str, object]) -> dict[str, object]:
    kind, text = value.get("type"), str(value.get("value", ""))
    if kind == "bnode":
        label = text.removeprefix("nodeID://")
        return {"type": "bnode", "value": "".join(c if c.isalnum() else "_" for c in label)}
    if value.get("datatype") == _XSD_BOOLEAN and text in ("0", "1"):
        return {**value, "value": "true" if text == "1" else "false"}
    return value


def parse_solutions(answer: HttpAnswer) -> QuerySolutions | QueryBoolean:
    """Parse a solutions or boolean answer in whichever results format the server chose."""
    fmt = _RESULT_FORMATS.get(answer.media_type, QueryResultsFormat.JSON)
    try:
        return pyoxigraph.parse_query_results(answer.body, format=fmt)
    except SyntaxError as exc:
        raise StoreError(f"the SPARQL server sent results that do not parse: {exc.msg}") from None


def boolean_result(value: bool) -> QueryBoolean:
    """A genuine pyoxigraph QueryBoolean holding `value`."""
    text = '{"head":{},"boolean":' + ("true" if value else "false") + "}"
    result = pyoxigraph.parse_query_results(text, format=QueryResultsFormat.JSON)
    assert isinstance(result, QueryBoolean)
    return result


def parse_triples(answer: HttpAnswer) -> QueryTriples:
    """Turn an RDF graph answer into a real pyoxigraph QueryTriples."""
    fmt = RdfFormat.from_media_type(answer.media_type) or RdfFormat.N_TRIPLES
    if answer.media_type == "text/plain":
        fmt = RdfFormat.N_TRIPLES  # Virtuoso labels N-Triples as text/plain
    # QueryTriples cannot be built from Python; a scratch in-memory store (0.03 ms) yields a
    # genuine one, so callers' isinstance checks and .serialize() work as on the embedded store.
    scratch = pyoxigraph.Store()
    try:
        scratch.load(io.BytesIO(answer.body), format=fmt)
    except SyntaxError as exc:
        raise StoreError(f"the SPARQL server sent RDF that does not parse: {exc.msg}") from None
    result = scratch.query("CONSTRUCT WHERE { ?s ?p ?o }")
    assert isinstance(result, QueryTriples)
    return result

"""The SPARQL 1.1 Service Description served by a bare GET on the endpoint."""

from __future__ import annotations

from flask import Response, redirect, url_for
from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple, serialize

from api.media_types import GRAPH_TYPES, RESULT_TYPES, best_offer, negotiate_graph
from kg.sparql.entailment import REGIMES
from kg.sparql.recall_service import SERVICE_IRI

__all__ = ["SD", "description", "response"]

SD = "http://www.w3.org/ns/sparql-service-description#"
_RDF_TYPE = NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
_FORMATS = "http://www.w3.org/ns/formats/"
# W3C format IRIs of what the endpoint produces.
_RESULT_FORMATS = ["SPARQL_Results_JSON", "SPARQL_Results_XML", "SPARQL_Results_CSV",
                   "SPARQL_Results_TSV", "Turtle", "N-Triples", "N-Quads", "TriG", "JSON-LD",
                   "RDF_XML"]


def _sd(name: str) -> NamedNode:
    return NamedNode(SD + name)


def description(endpoint: str) -> list[Triple]:
    """Return the service description of the endpoint at `endpoint` as triples."""
    service = NamedNode(endpoint)
    dataset, default_graph = BlankNode(), BlankNode()
    triples: list[tuple[NamedNode | BlankNode, NamedNode, NamedNode | BlankNode | Literal]] = [
        (service, _RDF_TYPE, _sd("Service")),
        (service, _sd("endpoint"), service),
        (service, _sd("supportedLanguage"), _sd("SPARQL11Query")),
        (service, _sd("supportedLanguage"), _sd("SPARQL11Update")),
        (service, _sd("defaultDataset"), dataset),
        (dataset, _RDF_TYPE, _sd("Dataset")),
        (dataset, _sd("defaultGraph"), default_graph),
        (default_graph, _RDF_TYPE, _sd("Graph")),
        (service, NamedNode("http://www.w3.org/2000/01/rdf-schema#comment"),
         Literal("jido-kg: knowledge-graph memory for LLM agents (SPARQL 1.1 over pyoxigraph). "
                 "SERVICE and LOAD reach only allow-listed targets.")),
    ]
    # entailment=rdfs (docs/sparql.md) and the recall SERVICE, answered in-process.
    triples += [(service, _sd("supportedEntailmentRegime"), NamedNode(r))
                for r in REGIMES.values()]
    recall = NamedNode(SERVICE_IRI)
    triples += [
        (service, _sd("feature"), recall),
        (recall, _RDF_TYPE, _sd("Feature")),
        (recall, NamedNode("http://www.w3.org/2000/01/rdf-schema#label"),
         Literal("recall SERVICE")),
        (recall, NamedNode("http://www.w3.org/2000/01/rdf-schema#comment"),
         Literal("SERVICE <https://jido.ai/recall> { [] recall:query \"…\" ; recall:project "
                 "\"…\" ; recall:hit ?m ; recall:score ?s } joins the memory service's own "
                 "recall with the query (terms: <https://jido.ai/recall#>, served at /recall).")),
    ]
    triples += [(service, _sd("resultFormat"), NamedNode(_FORMATS + f)) for f in _RESULT_FORMATS]
    triples += [(service, _sd("inputFormat"), NamedNode(_FORMATS + f))
                for f in ("Turtle", "N-Triples", "N-Quads", "TriG", "JSON-LD", "RDF_XML")]
    return [Triple(s, p, o) for s, p, o in triples]


def response(endpoint: str) -> Response:
    """Serve the description in the negotiated RDF format; browsers go to the query page."""
    if best_offer(["text/html", *GRAPH_TYPES, *RESULT_TYPES]) == "text/html":
        return redirect(url_for("ui.index"), code=303)  # type: ignore[return-value]
    media_type, fmt = negotiate_graph()
    triples = description(endpoint)
    data: list[Triple] | list[Quad] = triples
    if fmt.supports_datasets:
        data = [Quad(t.subject, t.predicate, t.object) for t in triples]
    body = serialize(data, format=fmt, prefixes={"sd": SD, "formats": _FORMATS})
    result = Response(body, content_type=f"{media_type}; charset=utf-8")
    result.headers["Vary"] = "Accept"
    return result

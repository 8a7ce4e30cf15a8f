"""The SPARQL 1.1 Graph Store HTTP Protocol at /store (direct and indirect graph identification)."""

from __future__ import annotations

import uuid

import pyoxigraph
from flask import Blueprint, Response, request
from pyoxigraph import DefaultGraph, NamedNode, Quad, RdfFormat

from api.auth import Principal, require
from api.media_types import GRAPH_TYPES, best_offer, negotiate_graph, rdf_format_of
from api.services import services
from api.sparql import executor
from api.stream import result_response
from kg.errors import NotFoundError, PermissionDeniedError, QuerySyntaxError, ValidationError
from kg.graphs import project_of_graph
from kg.store.base import GraphName
from kg.store.guard import check_rdf_nesting

__all__ = ["blueprint"]

blueprint = Blueprint("graph_store", __name__)
_METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE"]
# Graph GET offers one-graph formats; the whole dataset is offered as quads.
_GRAPH_OFFERS = [m for m, f in GRAPH_TYPES.items() if f not in (RdfFormat.N_QUADS, RdfFormat.TRIG)]
# Prefixes a Turtle body may use undeclared (the W3C multipart test relies on foaf:).
_WELL_KNOWN = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "foaf": "http://xmlns.com/foaf/0.1/",
    "dc": "http://purl.org/dc/elements/1.1/",
    "dcterms": "http://purl.org/dc/terms/",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "v": "http://www.w3.org/2006/vcard/ns#",
    "prov": "http://www.w3.org/ns/prov#",
    "jido": "https://jido.ai/ontology#",
}


@blueprint.route("/store", methods=_METHODS, strict_slashes=False)
@blueprint.route("/store/<path:_>", methods=_METHODS)
def graph_store(_: str | None = None) -> Response:
    """Read, replace, add to or delete one graph (or read the whole dataset)."""
    graph = _target()
    if request.method in ("GET", "HEAD"):
        return _read(graph, require("read"))
    require("write")
    if request.method == "PUT":
        return _put(_required(graph))
    if request.method == "POST":
        return _post(graph)
    return _delete(_required(graph))


def _target() -> GraphName | None:
    """The graph the request names: ?default, ?graph=IRI, a path under /store, or none."""
    args = request.args
    direct = request.path.rstrip("/") != "/store"
    named = args.getlist("graph")
    if sum([direct, bool(named), "default" in args]) > 1 or len(named) > 1:
        raise ValidationError("name one graph: a path under /store, ?graph=IRI or ?default")
    if "default" in args:
        return DefaultGraph()
    if direct:
        base = services().settings.base_url.rstrip("/")
        return NamedNode(f"{base}{request.path}" if base else request.base_url)
    if named:
        try:
            return NamedNode(named[0])
        except ValueError as exc:
            raise ValidationError(f"graph is not a valid IRI: {named[0][:200]!r} ({exc})") from None
    return None


def _required(graph: GraphName | None) -> GraphName:
    if graph is None:
        raise ValidationError(f"{request.method} needs a graph: ?graph=IRI or ?default")
    return graph


def _read(graph: GraphName | None, principal: Principal) -> Response:
    store = executor().store
    if principal.projects is not None and (
        not isinstance(graph, NamedNode) or not principal.may_access(project_of_graph(graph))
    ):
        raise PermissionDeniedError("this token may read only its project's graphs")
    if graph is None:
        media_type, fmt = negotiate_graph()
        if not fmt.supports_datasets:
            media_type, fmt = "application/n-quads", RdfFormat.N_QUADS
    else:
        media_type, fmt = _negotiate_one_graph()
        if isinstance(graph, NamedNode) and not store.contains_graph(graph):
            raise NotFoundError(f"no graph {graph.value}", details={"graph": graph.value})
    timeout = services().settings.query_timeout
    output = executor().dump(graph, format=fmt, timeout=timeout)
    return result_response(output, media_type,
                           accept_encoding=request.headers.get("Accept-Encoding", ""))


def _negotiate_one_graph() -> tuple[str, RdfFormat]:
    best = best_offer(_GRAPH_OFFERS)
    if best is None:
        return negotiate_graph(triples_only=True)
    return best, GRAPH_TYPES[best]


def _put(graph: GraphName) -> Response:
    quads = _body_quads(graph)
    store = executor().store
    existed = not isinstance(graph, NamedNode) or store.contains_graph(graph)

    def replace() -> None:
        if isinstance(graph, NamedNode):
            store.replace_graph(graph, quads)
        else:
            store.remove(list(store.quads(graph=graph)))
            store.add(quads)

    executor().call(replace, timeout=services().settings.query_timeout)
    return Response(status=204 if existed else 201)


def _post(graph: GraphName | None) -> Response:
    created = graph is None
    if graph is None:
        graph = NamedNode(f"{_endpoint()}/{uuid.uuid4().hex}")
    quads = _body_quads(graph)
    store = executor().store
    existed = not isinstance(graph, NamedNode) or store.contains_graph(graph)
    executor().call(lambda: store.add(quads), timeout=services().settings.query_timeout)
    if created:
        response = Response(status=201)
        response.headers["Location"] = graph.value  # type: ignore[union-attr]
        return response
    return Response(status=204 if existed else 201)


def _delete(graph: GraphName) -> Response:
    store = executor().store
    if isinstance(graph, NamedNode):
        if not store.contains_graph(graph):
            raise NotFoundError(f"no graph {graph.value}", details={"graph": graph.value})
        executor().call(lambda: store.drop_graph(graph), timeout=services().settings.query_timeout)
    else:
        executor().call(lambda: store.remove(list(store.quads(graph=graph))),
                        timeout=services().settings.query_timeout)
    return Response(status=204)


def _endpoint() -> str:
    base = services().settings.base_url.rstrip("/")
    return f"{base}/store" if base else request.host_url.rstrip("/") + "/store"


def _body_quads(graph: GraphName) -> list[Quad]:
    """Parse the body (or every multipart part) into quads of `graph`; all parts or nothing."""
    base = graph.value if isinstance(graph, NamedNode) else _endpoint()
    if request.mimetype == "multipart/form-data":
        parts = [(f.mimetype, f.read()) for f in request.files.values()]
        if not parts:
            raise ValidationError("a multipart/form-data POST needs at least one RDF file part")
    else:
        charset = request.mimetype_params.get("charset", "utf-8").lower()
        if charset not in ("utf-8", "utf8"):
            raise ValidationError(f"RDF bodies must be UTF-8, not charset={charset}")
        parts = [(request.mimetype, request.get_data())]
    quads: list[Quad] = []
    for media_type, data in parts:
        fmt = rdf_format_of(media_type)
        quads += executor().call(lambda d=data, f=fmt: _parse(d, f, base, graph),  # type: ignore[misc]
                                 timeout=services().settings.query_timeout)
    return quads


def _parse(data: bytes, fmt: RdfFormat, base: str, graph: GraphName) -> list[Quad]:
    if fmt != RdfFormat.RDF_XML:
        # Nested triple terms `<<( <<( ...` in the Turtle family (1,000,000 levels segfault on a
        # 256 MiB stack) and deep JSON-LD objects make pyoxigraph recurse once per level.
        check_rdf_nesting(data.decode("utf-8", errors="replace"))
    try:
        return _parsed(data, fmt, base, graph)
    except SyntaxError as exc:
        if fmt in (RdfFormat.TURTLE, RdfFormat.TRIG, RdfFormat.N3) and "prefix" in str(exc):
            prelude = "".join(f"@prefix {p}: <{iri}> .\n" for p, iri in _WELL_KNOWN.items())
            try:
                return _parsed(prelude.encode() + data, fmt, base, graph)
            except SyntaxError:
                pass
        raise QuerySyntaxError(f"the {fmt.name} body does not parse: {exc.msg}") from None


def _parsed(data: bytes, fmt: RdfFormat, base: str, graph: GraphName) -> list[Quad]:
    return [
        q if not isinstance(q.graph_name, DefaultGraph) else Quad(q.subject, q.predicate,
                                                                  q.object, graph)
        for q in pyoxigraph.parse(data, format=fmt, base_iri=base)
    ]

"""Copy a whole dataset between stores (embedded ↔ remote), graph by graph, in batches."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pyoxigraph import BlankNode, DefaultGraph, NamedNode, Quad, QuerySolutions, Triple
from tqdm import tqdm

from kg.store.base import GraphName, Store
from kg.store.remote import RemoteStore

__all__ = ["CopyReport", "copy_store"]

_COUNT_DEFAULT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
_COUNT_GRAPH = "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g"


@dataclass
class CopyReport:
    """What a copy moved: quads per graph (the default graph is keyed by '')."""

    quads: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """All quads copied."""
        return sum(self.quads.values())


def copy_store(source: Store, target: Store, *, batch_size: int = 5_000,
               progress: bool = True) -> CopyReport:
    """Copy every graph of `source` into `target`; each batch is one write on the target."""
    counts = _graph_sizes(source)
    report = CopyReport()
    bar = tqdm(total=sum(counts.values()), unit="quad", unit_scale=True, desc="copying",
               disable=None if progress else True, file=sys.stderr)
    try:
        for graph in _graphs(source, counts):
            key = "" if isinstance(graph, DefaultGraph) else graph.value
            bar.set_postfix_str(key or "default graph", refresh=False)
            plain: list[Quad] = []
            linked: list[Quad] = []
            copied = 0
            for quad in _read_graph(source, graph):
                # Blank-node labels are scoped to one request on most servers: every quad
                # that mentions a blank node travels in the graph's last batch, together.
                (linked if _has_blank(quad) else plain).append(quad)
                if len(plain) >= batch_size:
                    _write(target, graph, plain)
                    copied += len(plain)
                    bar.update(len(plain))
                    plain = []
            for batch in (plain, linked):
                if batch:
                    _write(target, graph, batch)
                    copied += len(batch)
                    bar.update(len(batch))
            report.quads[key] = copied
    finally:
        bar.close()
    return report


def _graph_sizes(store: Store) -> dict[str, int]:
    sizes: dict[str, int] = {}
    rows = store.query(_COUNT_GRAPH)
    assert isinstance(rows, QuerySolutions)
    for row in rows:
        graph, n = row["g"], row["n"]
        if isinstance(graph, NamedNode) and n is not None:
            sizes[graph.value] = int(n.value)
    if isinstance(store, RemoteStore) and not store.has_default_graph:
        return sizes
    default = store.query(_COUNT_DEFAULT)
    assert isinstance(default, QuerySolutions)
    for row in default:
        n = row["n"]
        if n is not None and int(n.value):
            sizes[""] = int(n.value)
    return sizes


def _graphs(store: Store, counts: dict[str, int]) -> Iterator[GraphName]:
    if counts.get(""):
        yield DefaultGraph()
    for graph in store.named_graphs():
        if isinstance(graph, NamedNode):
            yield graph


def _read_graph(store: Store, graph: GraphName) -> Iterable[Quad]:
    if isinstance(store, RemoteStore):
        return (Quad(t.subject, t.predicate, t.object, graph) for t in store.graph_triples(graph))
    return store.quads(graph=graph)


def _write(target: Store, graph: GraphName, quads: list[Quad]) -> None:
    if isinstance(target, RemoteStore):
        target.append_graph(graph, quads)
    else:
        target.add(quads)


def _has_blank(quad: Quad) -> bool:
    return any(_blank_in(t) for t in (quad.subject, quad.object))


def _blank_in(term: object) -> bool:
    if isinstance(term, BlankNode):
        return True
    if isinstance(term, Triple):
        return _blank_in(term.subject) or _blank_in(term.object)
    return False

"""The remote backend: an external SPARQL 1.1 server (Query, Update, Graph Store protocols)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import IO
from urllib.parse import quote

import pyoxigraph
from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    RdfFormat,
    Triple,
)

from kg.errors import QuerySyntaxError, StoreError, ValidationError
from kg.settings import Settings
from kg.store.base import GraphName, Term
from kg.store.sparql_client import SparqlClient
from kg.store.sparql_endpoint import Dialect, SparqlEndpoint
from kg.store.sparql_results import GRAPH_ACCEPT, parse_triples
from kg.store.sparql_terms import data_update, graph_text

__all__ = ["Dialect", "RemoteStore"]

_QUADS = "SELECT ?s ?p ?o ?g WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
_TRIPLES = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
_GRAPH_TRIPLES = "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }"


class RemoteStore(SparqlEndpoint):
    """A SPARQL 1.1 server behind the `kg.store.Store` interface (one write = one request)."""

    def __init__(
        self,
        query_url: str,
        *,
        update_url: str | None = None,
        graph_store_url: str | None = None,
        dialect: Dialect = "generic",
        default_graph_iri: str | None = None,
        client: SparqlClient | None = None,
        batch_size: int = 5_000,
        system_graphs: Sequence[str] = (),
    ) -> None:
        super().__init__(query_url, update_url=update_url, dialect=dialect,
                         default_graph_iri=default_graph_iri, client=client,
                         system_graphs=system_graphs)
        self.graph_store_url = graph_store_url or None
        self.batch_size = batch_size

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteStore:
        """Build a remote store from the `KG_REMOTE_*` settings."""
        if not settings.remote_query_url:
            raise ValidationError("backend 'remote' needs KG_REMOTE_QUERY_URL")
        secret = settings.remote_password
        token = settings.remote_token
        client = SparqlClient(
            timeout=settings.remote_timeout, connect_timeout=settings.remote_connect_timeout,
            retries=settings.remote_retries, backoff=settings.remote_backoff,
            username=settings.remote_username or None,
            password=secret.get_secret_value() if secret else None,
            token=token.get_secret_value() if token else None,
            pool_size=max(4, settings.threads * 2),
        )
        return cls(settings.remote_query_url, update_url=settings.remote_update_url or None,
                   graph_store_url=settings.remote_graph_store_url or None,
                   dialect=settings.remote_dialect,
                   default_graph_iri=settings.remote_default_graph or None, client=client)

    def __repr__(self) -> str:
        return f"RemoteStore({self.query_url}, dialect={self.dialect})"

    def add(self, quads: Iterable[Quad]) -> None:
        """Add quads in one transaction (one INSERT DATA request)."""
        batch = list(quads)
        if not batch:
            return
        if self.dialect == "virtuoso" and any(
                isinstance(t, BlankNode) for q in batch for t in (q.subject, q.object)):
            # Virtuoso refuses blank nodes in INSERT DATA; a template over one empty solution
            # inserts the same triples, one fresh node per label, in one request. (`WHERE { }`
            # inserts, then fails with SR002 when a node spans graphs; a sub-select does not.)
            text = data_update("INSERT", batch, default_graph=self.default_graph_iri)
            self.update(text + " WHERE { SELECT * { } }")
            return
        self.update(data_update("INSERT DATA", batch, default_graph=self.default_graph_iri))

    def remove(self, quads: Iterable[Quad]) -> None:
        """Remove quads in one transaction (one DELETE DATA request)."""
        batch = list(quads)
        if not batch:
            return
        if any(isinstance(t, BlankNode) for q in batch
               for t in (q.subject, q.object, q.graph_name)):
            raise ValidationError("a remote SPARQL server cannot address stored blank nodes; "
                                  "remove them with an update (DELETE WHERE) instead")
        self.update(data_update("DELETE DATA", batch, default_graph=self.default_graph_iri))

    def quads(
        self,
        subject: NamedNode | BlankNode | Triple | None = None,
        predicate: NamedNode | None = None,
        object: Term | None = None,
        graph: GraphName | None = None,
    ) -> Iterator[Quad]:
        """Iterate the quads matching a pattern (None matches anything)."""
        bound: dict[str, Term] = {
            k: v for k, v in (("s", subject), ("p", predicate), ("o", object)) if v is not None
        }
        if graph is None and not self.has_default_graph:
            rows = self.query(_GRAPH_TRIPLES, substitutions=bound)
        elif graph is None:
            rows = self.query(_QUADS, substitutions=bound)
        elif isinstance(graph, DefaultGraph):
            rows = self.query(_TRIPLES, substitutions=bound)
        else:
            rows = self.query(_GRAPH_TRIPLES, substitutions={**bound, "g": graph})
        assert isinstance(rows, QuerySolutions)
        hidden = self.default_graph_iri
        for row in rows:
            name = graph if graph is not None else row["g"]
            if hidden is not None and name == hidden:
                if graph is None:
                    continue  # listed once already, as a default-graph quad
                name = DefaultGraph()
            yield Quad(row["s"], row["p"], row["o"], name or DefaultGraph())

    def load(
        self,
        *,
        data: bytes | str | None = None,
        path: Path | None = None,
        format: RdfFormat,
        to_graph: GraphName | None = None,
        base_iri: str | None = None,
    ) -> None:
        """Parse RDF here and add it in one request (nothing is added if parsing fails)."""
        if (data is None) == (path is None):
            raise ValidationError("load needs exactly one of data or path")
        try:
            parsed = list(pyoxigraph.parse(data, format=format, path=str(path) if path else None,
                                           base_iri=base_iri))
        except SyntaxError as exc:
            where = f"{path}: " if path else ""
            raise QuerySyntaxError(f"{where}{exc.msg}",
                                   details={"line": exc.lineno, "column": exc.offset}) from None
        self.add(_retarget(parsed, to_graph))

    def bulk_load(
        self, *, path: Path, format: RdfFormat, to_graph: GraphName | None = None
    ) -> None:
        """Load a large file in batches, without a transaction."""
        try:
            self.add_batches(_retarget(pyoxigraph.parse(path=str(path), format=format),
                                       to_graph))
        except SyntaxError as exc:
            raise QuerySyntaxError(f"{path}: {exc.msg}",
                                   details={"line": exc.lineno, "column": exc.offset}) from None

    def add_batches(self, quads: Iterable[Quad], *, batch_size: int | None = None) -> int:
        """Add quads in requests of `batch_size`, without a transaction; return how many."""
        size = batch_size or self.batch_size
        iterator = iter(quads)
        total = 0
        while batch := list(islice(iterator, size)):
            self.add(batch)
            total += len(batch)
        return total

    def append_graph(self, graph: GraphName, quads: Iterable[Quad]) -> None:
        """Add triples to one graph in one request (graph store POST if configured)."""
        if self.graph_store_url is None:
            self.add(Quad(q.subject, q.predicate, q.object, graph) for q in quads)
            return
        body = pyoxigraph.serialize((Triple(q.subject, q.predicate, q.object) for q in quads),
                                    format=RdfFormat.N_TRIPLES)
        assert body is not None
        self.client.send("POST", self._graph_url(graph), body=body, idempotent=False,
                         headers={"Content-Type": "application/n-triples"})

    def _graph_url(self, graph: GraphName) -> str:
        assert self.graph_store_url is not None
        if isinstance(graph, DefaultGraph) and self.default_graph_iri is not None:
            graph = self.default_graph_iri
        query = "default" if isinstance(graph, DefaultGraph) else \
            "graph=" + quote(graph_text(graph)[1:-1], safe="")
        return self.graph_store_url + ("&" if "?" in self.graph_store_url else "?") + query

    def dump(
        self, output: IO[bytes], *, format: RdfFormat, from_graph: GraphName | None = None
    ) -> None:
        """Serialise the whole dataset (or one graph) to a binary stream."""
        if from_graph is not None:
            pyoxigraph.serialize(self.graph_triples(from_graph), output, format=format)
            return
        graphs: list[GraphName] = [DefaultGraph(), *self.named_graphs()]
        quads = (Quad(t.subject, t.predicate, t.object, g)
                 for g in graphs for t in self.graph_triples(g))
        pyoxigraph.serialize(quads, output, format=format)

    def graph_triples(self, graph: GraphName) -> Iterator[Triple]:
        """Fetch one graph whole (graph store GET if configured, else CONSTRUCT)."""
        if self.graph_store_url is not None:
            answer = self.client.send("GET", self._graph_url(graph), idempotent=True,
                                      headers={"Accept": GRAPH_ACCEPT})
            return iter(parse_triples(answer))
        if isinstance(graph, DefaultGraph):
            text = "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }"
        else:
            text = f"CONSTRUCT {{ ?s ?p ?o }} WHERE {{ GRAPH {graph_text(graph)} {{ ?s ?p ?o }} }}"
        result = self.query(text)
        assert not isinstance(result, QuerySolutions | QueryBoolean)
        return iter(result)

    def contains_graph(self, graph: NamedNode | BlankNode) -> bool:
        """Tell whether a named graph exists."""
        if self.dialect == "virtuoso" and graph in self._hidden_graphs():
            return False  # Virtuoso's own graphs and the default-graph stand-in are not named
        pattern = "{ ?s ?p ?o }" if self.dialect == "virtuoso" else "{ }"
        result = self.query(f"ASK {{ GRAPH {graph_text(graph)} {pattern} }}")
        return bool(result)

    def replace_graph(self, graph: NamedNode, quads: Iterable[Quad]) -> None:
        """Make `graph` hold exactly `quads`, in one update request (one transaction)."""
        fresh = [Quad(q.subject, q.predicate, q.object, graph) for q in quads]
        text = f"DROP SILENT GRAPH {graph_text(graph)}"
        if fresh:
            text += " ;\n" + data_update("INSERT DATA", fresh)
        self.update(text)

    def drop_graph(self, graph: NamedNode | BlankNode) -> None:
        """Remove a named graph and its triples."""
        self.update(f"DROP SILENT GRAPH {graph_text(graph)}")

    def backup(self, target: Path) -> None:
        """Copy the dataset into a new embedded store directory at `target`."""
        from kg.store.embedded import EmbeddedStore
        from kg.store.migration import copy_store

        if target.exists():
            raise StoreError(f"backup target {target} already exists")
        local = EmbeddedStore(target)
        try:
            copy_store(self, local, progress=False)
        finally:
            local.close()

    def flush(self) -> None:
        """Nothing to do: the server acknowledges a write once it is durable."""


def _retarget(quads: Iterable[Quad], graph: GraphName | None) -> Iterator[Quad]:
    for q in quads:
        if graph is not None and isinstance(q.graph_name, DefaultGraph):
            yield Quad(q.subject, q.predicate, q.object, graph)
        else:
            yield q

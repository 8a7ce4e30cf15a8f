"""The embedded backend: a pyoxigraph store on disk (or in memory for tests)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

import pyoxigraph
from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    NamedNode,
    Quad,
    RdfFormat,
    Triple,
    Variable,
)

from kg.errors import QuerySyntaxError, StoreError, StoreLockedError, ValidationError
from kg.store.base import GraphName, QueryResult, Term
from kg.store.guard import check_nesting

__all__ = ["EmbeddedStore"]


class EmbeddedStore:
    """A pyoxigraph `Store` behind the `kg.store.Store` interface."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        try:
            self._store = pyoxigraph.Store(str(path)) if path is not None else pyoxigraph.Store()
        except OSError as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"the store directory {path} is already open in another process "
                    "(is another jido-kg server or command using it?)",
                    details={"store": str(path)},
                ) from None
            raise StoreError(f"cannot open the store at {path}: {exc}") from None

    def __repr__(self) -> str:
        return f"EmbeddedStore({str(self.path) if self.path else ':memory:'})"

    def query(
        self,
        sparql: str,
        *,
        substitutions: Mapping[str, Term] | None = None,
        default_graph: Sequence[GraphName] | None = None,
        named_graphs: Sequence[NamedNode | BlankNode] | None = None,
        use_default_graph_as_union: bool = False,
        base_iri: str | None = None,
    ) -> QueryResult:
        """Run a SPARQL query; values enter only through `substitutions`."""
        check_nesting(sparql)
        bound = {Variable(k): v for k, v in substitutions.items()} if substitutions else None
        try:
            return self._store.query(
                sparql,
                substitutions=bound,
                default_graph=list(default_graph) if default_graph is not None else None,
                named_graphs=list(named_graphs) if named_graphs is not None else None,
                use_default_graph_as_union=use_default_graph_as_union,
                base_iri=base_iri,
            )
        except SyntaxError as exc:
            raise QuerySyntaxError(f"malformed SPARQL query: {exc.msg}") from None
        except RuntimeError as exc:
            # pyoxigraph reports misuse such as a substituted variable that is not projected.
            raise ValidationError(f"the query cannot be evaluated: {exc}") from None
        except OSError as exc:
            raise StoreError(f"the store failed while querying: {exc}") from None

    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update as one transaction."""
        check_nesting(sparql)
        try:
            self._store.update(sparql, base_iri=base_iri)
        except SyntaxError as exc:
            raise QuerySyntaxError(f"malformed SPARQL update: {exc.msg}") from None
        except OSError as exc:
            raise StoreError(f"the store failed while updating: {exc}") from None

    def add(self, quads: Iterable[Quad]) -> None:
        """Add quads in one transaction."""
        try:
            self._store.extend(quads)
        except OSError as exc:
            raise StoreError(f"the store failed while adding quads: {exc}") from None

    def remove(self, quads: Iterable[Quad]) -> None:
        """Remove quads in one transaction."""
        quads = list(quads)
        if not quads:
            return
        if any(_has_blank(q) for q in quads):
            # DELETE DATA cannot name blank nodes; removing them one by one is the only way.
            for quad in quads:
                self._store.remove(quad)
            return
        # The text is built only from pyoxigraph's own term serialisation, never from user
        # strings, so it is as safe as the typed API and gives one atomic transaction.
        self.update("DELETE DATA { " + " ".join(_quad_pattern(q) for q in quads) + " }")

    def quads(
        self,
        subject: NamedNode | BlankNode | Triple | None = None,
        predicate: NamedNode | None = None,
        object: Term | None = None,
        graph: GraphName | None = None,
    ) -> Iterator[Quad]:
        """Iterate the quads matching a pattern (None matches anything)."""
        return iter(self._store.quads_for_pattern(subject, predicate, object, graph))

    def load(
        self,
        *,
        data: bytes | str | None = None,
        path: Path | None = None,
        format: RdfFormat,
        to_graph: GraphName | None = None,
        base_iri: str | None = None,
    ) -> None:
        """Parse RDF and add it in one transaction (nothing is added if parsing fails)."""
        if (data is None) == (path is None):
            raise ValidationError("load needs exactly one of data or path")
        try:
            self._store.load(
                data, format=format, path=str(path) if path else None,
                to_graph=to_graph, base_iri=base_iri,
            )
        except SyntaxError as exc:
            where = f"{path}: " if path else ""
            raise QuerySyntaxError(f"{where}{exc.msg}", details=_position(exc)) from None
        except OSError as exc:
            raise StoreError(f"the store failed while loading: {exc}") from None

    def bulk_load(
        self, *, path: Path, format: RdfFormat, to_graph: GraphName | None = None
    ) -> None:
        """Load a large file fast, without a transaction."""
        try:
            self._store.bulk_load(path=str(path), format=format, to_graph=to_graph)
        except SyntaxError as exc:
            raise QuerySyntaxError(f"{path}: {exc.msg}", details=_position(exc)) from None

    def dump(
        self, output: IO[bytes], *, format: RdfFormat, from_graph: GraphName | None = None
    ) -> None:
        """Serialise the whole dataset (or one graph) to a binary stream."""
        self._store.dump(output, format=format, from_graph=from_graph)

    def named_graphs(self) -> list[NamedNode | BlankNode]:
        """List the named graphs."""
        return list(self._store.named_graphs())

    def contains_graph(self, graph: NamedNode | BlankNode) -> bool:
        """Tell whether a named graph exists."""
        return bool(self._store.contains_named_graph(graph))

    def replace_graph(self, graph: NamedNode, quads: Iterable[Quad]) -> None:
        """Make `graph` hold exactly `quads` (graph names in the quads are overridden)."""
        fresh = [Quad(q.subject, q.predicate, q.object, graph) for q in quads]
        # Two transactions: a crash between them leaves the graph empty, never half-old,
        # and the caller (ontology loading) notices the difference and reloads.
        self._store.remove_graph(graph)
        self._store.extend(fresh)

    def drop_graph(self, graph: NamedNode | BlankNode) -> None:
        """Remove a named graph and its triples."""
        self._store.remove_graph(graph)

    def backup(self, target: Path) -> None:
        """Write a consistent copy of the store to a new directory."""
        if self.path is None:
            raise StoreError("an in-memory store cannot be backed up")
        try:
            self._store.backup(str(target))
        except OSError as exc:
            raise StoreError(f"backup to {target} failed: {exc}") from None

    def flush(self) -> None:
        """Make every acknowledged write durable on disk."""
        self._store.flush()

    def close(self) -> None:
        """Release the store (and its lock)."""
        self._store.flush()
        # pyoxigraph has no close(); dropping the last reference releases the RocksDB lock.
        del self._store

    def __len__(self) -> int:
        return len(self._store)


def _has_blank(quad: Quad) -> bool:
    return any(isinstance(t, BlankNode) for t in (quad.subject, quad.object, quad.graph_name))


def _quad_pattern(quad: Quad) -> str:
    triple = f"{quad.subject} {quad.predicate} {quad.object} ."
    if isinstance(quad.graph_name, DefaultGraph):
        return triple
    return f"GRAPH {quad.graph_name} {{ {triple} }}"


def _position(exc: SyntaxError) -> dict[str, object]:
    return {"line": exc.lineno, "column": exc.offset}

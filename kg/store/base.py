"""The store interface every backend implements (embedded pyoxigraph today, remote SPARQL later)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol, TypeAlias, runtime_checkable

from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Triple,
)

__all__ = ["GraphName", "QueryResult", "Store", "Term"]

Term: TypeAlias = NamedNode | BlankNode | Literal | Triple
GraphName: TypeAlias = NamedNode | BlankNode | DefaultGraph
QueryResult: TypeAlias = QuerySolutions | QueryBoolean | QueryTriples


@runtime_checkable
class Store(Protocol):
    """An RDF dataset with SPARQL 1.1; nothing above this interface knows which backend runs."""

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
        ...

    def update(self, sparql: str, *, base_iri: str | None = None) -> None:
        """Run a SPARQL update as one transaction."""
        ...

    def add(self, quads: Iterable[Quad]) -> None:
        """Add quads in one transaction."""
        ...

    def remove(self, quads: Iterable[Quad]) -> None:
        """Remove quads in one transaction."""
        ...

    def quads(
        self,
        subject: NamedNode | BlankNode | Triple | None = None,
        predicate: NamedNode | None = None,
        object: Term | None = None,
        graph: GraphName | None = None,
    ) -> Iterator[Quad]:
        """Iterate the quads matching a pattern (None matches anything)."""
        ...

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
        ...

    def bulk_load(
        self, *, path: Path, format: RdfFormat, to_graph: GraphName | None = None
    ) -> None:
        """Load a large file fast, without a transaction."""
        ...

    def dump(
        self, output: IO[bytes], *, format: RdfFormat, from_graph: GraphName | None = None
    ) -> None:
        """Serialise the whole dataset (or one graph) to a binary stream."""
        ...

    def named_graphs(self) -> list[NamedNode | BlankNode]:
        """List the named graphs."""
        ...

    def contains_graph(self, graph: NamedNode | BlankNode) -> bool:
        """Tell whether a named graph exists."""
        ...

    def replace_graph(self, graph: NamedNode, quads: Iterable[Quad]) -> None:
        """Make `graph` hold exactly `quads` (graph names in the quads are overridden)."""
        ...

    def drop_graph(self, graph: NamedNode | BlankNode) -> None:
        """Remove a named graph and its triples."""
        ...

    def backup(self, target: Path) -> None:
        """Write a consistent copy of the store to a new directory."""
        ...

    def flush(self) -> None:
        """Make every acknowledged write durable on disk."""
        ...

    def close(self) -> None:
        """Release the store (and its lock)."""
        ...

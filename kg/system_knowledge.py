"""Keeps the ontology in the system-knowledge graph, loading it only when it changed."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph
from pyoxigraph import CanonicalizationAlgorithm, Dataset, Quad, RdfFormat

from kg.graphs import SYSTEM_KNOWLEDGE
from kg.resources import ontology_path, query_text
from kg.store.base import Store

__all__ = ["ensure_ontology", "ontology_quads"]


def ontology_quads(path: Path | None = None) -> list[Quad]:
    """Parse the ontology into quads of the system-knowledge graph."""
    source = path or ontology_path()
    return [
        Quad(q.subject, q.predicate, q.object, SYSTEM_KNOWLEDGE)
        for q in pyoxigraph.parse(path=str(source), format=RdfFormat.TURTLE)
    ]


def _canonical(quads: list[Quad]) -> Dataset:
    # The store rewrites some literals to canonical lexical forms ("0.0"^^xsd:double → "0"),
    # so pass both sides through a store before comparing them.
    scratch = pyoxigraph.Store()
    scratch.extend(quads)
    dataset = Dataset(scratch)
    # Blank nodes (OWL lists, restrictions) get new ids on every parse: compare canonical forms.
    dataset.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def ensure_ontology(store: Store, *, path: Path | None = None) -> bool:
    """Load the ontology into its graph unless the same version is there; True if it changed."""
    wanted = ontology_quads(path)
    current = list(store.quads(graph=SYSTEM_KNOWLEDGE))
    if len(current) == len(wanted) and _canonical(current) == _canonical(wanted):
        return False
    store.replace_graph(SYSTEM_KNOWLEDGE, wanted)
    return True


__all__ += ["ONTOLOGY_MEDIA_TYPES", "OntologyDocument", "OntologyTerm"]

# The RDF representations the ontology is served in, Protégé's first choice (RDF/XML) included.
ONTOLOGY_MEDIA_TYPES: dict[str, RdfFormat] = {
    "text/turtle": RdfFormat.TURTLE,
    "application/rdf+xml": RdfFormat.RDF_XML,
    "application/ld+json": RdfFormat.JSON_LD,
    "application/n-triples": RdfFormat.N_TRIPLES,
}

_PREFIXES = {
    "jido": "https://jido.ai/ontology#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "prov": "http://www.w3.org/ns/prov#",
    "dcterms": "http://purl.org/dc/terms/",
    "vann": "http://purl.org/vocab/vann/",
}


@dataclass(frozen=True, slots=True)
class OntologyTerm:
    """One named term of the ontology, as listed on its HTML page."""

    iri: str
    kind: str
    label: str
    comment: str


class OntologyDocument:
    """The ontology file, parsed once, with its serialisations cached per format."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or ontology_path()
        self._triples = [q.triple for q in pyoxigraph.parse(path=str(self.path))]
        self._cache: dict[RdfFormat, bytes] = {}
        self._lock = threading.Lock()
        self._header: dict[str, str] | None = None

    def __len__(self) -> int:
        return len(self._triples)

    def serialize(self, media_type: str) -> bytes:
        """Return the ontology in one of ONTOLOGY_MEDIA_TYPES."""
        fmt = ONTOLOGY_MEDIA_TYPES[media_type]
        with self._lock:
            if fmt not in self._cache:
                prefixes = _PREFIXES if fmt in (RdfFormat.TURTLE, RdfFormat.RDF_XML) else None
                data = pyoxigraph.serialize(self._triples, format=fmt, prefixes=prefixes)
                self._cache[fmt] = data or b""
            return self._cache[fmt]

    def header(self) -> dict[str, str]:
        """Return the owl:Ontology header fields (title, version, description, license)."""
        if self._header is None:
            self._header = self._read_header()
        return dict(self._header)

    def _read_header(self) -> dict[str, str]:
        store = pyoxigraph.Store()
        store.extend(Quad(t.subject, t.predicate, t.object) for t in self._triples)
        rows = store.query(query_text("ontology_header"))
        assert isinstance(rows, pyoxigraph.QuerySolutions)
        for row in rows:
            return {
                str(v.value): (row[v].value if row[v] is not None else "")
                for v in rows.variables
            }
        return {}

    def terms(self) -> list[OntologyTerm]:
        """Return every named class, property and individual with its label and comment."""
        store = pyoxigraph.Store()
        store.extend(Quad(t.subject, t.predicate, t.object) for t in self._triples)
        rows = store.query(query_text("ontology_terms"))
        assert isinstance(rows, pyoxigraph.QuerySolutions)
        return [
            OntologyTerm(
                iri=_text(row["term"]),
                kind=_text(row["kind"]).rsplit("#", 1)[-1],
                label=_text(row["label"]),
                comment=_text(row["comment"]),
            )
            for row in rows
        ]


def _text(term: object) -> str:
    return str(getattr(term, "value", "")) if term is not None else ""

"""IRIs of the vocabularies jido-kg uses, as plain strings and NamedNode factories."""

from __future__ import annotations

from pyoxigraph import NamedNode

__all__ = [
    "DATA",
    "GRAPH",
    "JIDO",
    "OWL",
    "PROV",
    "RDF",
    "RDFS",
    "SH",
    "XSD",
    "Namespace",
]


class Namespace(str):
    """An IRI prefix; `ns.term("x")` or `ns["x"]` gives the NamedNode of a term in it."""

    __slots__ = ()

    def term(self, name: str) -> NamedNode:
        """Return the NamedNode for `name` inside this namespace."""
        return NamedNode(str(self) + name)

    def __getitem__(self, name: str) -> NamedNode:  # type: ignore[override]
        return self.term(name)


JIDO = Namespace("https://jido.ai/ontology#")
# Data is minted outside the ontology namespace (MISSION §1).
DATA = Namespace("https://jido.ai/data/")
GRAPH = Namespace("https://jido.ai/graph/")
PROV = Namespace("http://www.w3.org/ns/prov#")
RDF = Namespace("http://www.w3.org/1999/02/22-rdf-syntax-ns#")
RDFS = Namespace("http://www.w3.org/2000/01/rdf-schema#")
OWL = Namespace("http://www.w3.org/2002/07/owl#")
XSD = Namespace("http://www.w3.org/2001/XMLSchema#")
SH = Namespace("http://www.w3.org/ns/shacl#")

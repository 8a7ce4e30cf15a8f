"""Consistency: every enum in kg.terms names a term that ontology/jido.ttl declares as such.

Checks: each MemoryType class exists and is rdfs:subClassOf* jido:MemoryItem, and the classes
carrying a jido:memoryType annotation are exactly the 22 with matching names; each
ConfidenceLevel / SourceType / SessionStatus individual exists with that rdf:type.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, RDFS

from kg.terms import ConfidenceLevel, MemoryType, SessionStatus, SourceType

ONTOLOGY = Path(__file__).resolve().parents[2] / "ontology" / "jido.ttl"
JIDO = "https://jido.ai/ontology#"


@pytest.fixture(scope="module")
def graph() -> Graph:
    if not ONTOLOGY.exists():
        pytest.skip(f"{ONTOLOGY} has not been written yet")
    return Graph().parse(ONTOLOGY, format="turtle")


def _types(graph: Graph, node: URIRef) -> set[URIRef]:
    """rdf:type of `node` closed under rdfs:subClassOf."""
    found: set[URIRef] = set()
    for cls in graph.objects(node, RDF.type):
        found.update(graph.transitive_objects(cls, RDFS.subClassOf))  # type: ignore[arg-type]
    return found


@pytest.mark.parametrize("member", list(MemoryType), ids=str)
def test_memory_type_class(graph: Graph, member: MemoryType) -> None:
    iri = URIRef(member.iri.value)
    assert (iri, RDF.type, OWL.Class) in graph, f"{iri} is not declared as an owl:Class"
    ancestors = set(graph.transitive_objects(iri, RDFS.subClassOf))
    assert URIRef(JIDO + "MemoryItem") in ancestors, f"{iri} is not a jido:MemoryItem"


def test_memory_type_annotations_match_the_enum(graph: Graph) -> None:
    annotated = {(str(s), str(o)) for s, o in graph.subject_objects(URIRef(JIDO + "memoryType"))}
    if not annotated:
        pytest.skip("the ontology does not annotate classes with jido:memoryType")
    assert annotated == {(m.iri.value, m.value) for m in MemoryType}


@pytest.mark.parametrize(
    ("member", "cls"),
    [
        *((m, "ConfidenceLevel") for m in ConfidenceLevel),
        *((m, "SourceType") for m in SourceType),
        *((m, "SessionStatus") for m in SessionStatus),
    ],
    ids=str,
)
def test_individual(graph: Graph, member: ConfidenceLevel, cls: str) -> None:
    iri = URIRef(member.iri.value)
    assert URIRef(JIDO + cls) in _types(graph, iri), f"{iri} is not a jido:{cls}"


def test_confidence_thresholds_agree(graph: Graph) -> None:
    threshold = URIRef(JIDO + "confidenceThreshold")
    for level, expected in ((ConfidenceLevel.HIGH, 0.8), (ConfidenceLevel.MEDIUM, 0.5)):
        values = list(graph.objects(URIRef(level.iri.value), threshold))
        if values:
            assert isinstance(values[0], Literal)
            assert float(values[0]) == expected

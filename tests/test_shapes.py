"""The SHACL shapes accept what the service writes and reject what it must never write.

pySHACL finds a memory typed jido:ArchitecturalDecision under `sh:targetClass jido:MemoryItem`
only through the ontology's rdfs:subClassOf triples, so the ontology is always passed as
`ont_graph` (pySHACL mixes it into the data graph); the last test shows what happens without it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyshacl import validate
from rdflib import Graph, URIRef
from rdflib.namespace import SH

from kg.resources import ontology_path, shapes_path

SAMPLE = Path(__file__).resolve().parent / "data" / "ontology" / "sample_memory.ttl"
MEMORY = "https://jido.ai/data/memory/0b6f1c1e-8a4e-4d5e-9a55-3f1f6f0e2a10"
SESSION = "https://jido.ai/data/session/sess_01"


@pytest.fixture(scope="module")
def ontology() -> Graph:
    """The Jido ontology."""
    return Graph().parse(ontology_path(), format="turtle")


@pytest.fixture(scope="module")
def shapes() -> Graph:
    """The SHACL shapes."""
    return Graph().parse(shapes_path(), format="turtle")


@pytest.fixture(scope="module")
def sample_text() -> str:
    """A conforming memory with its session, agent, project and evidence, as Turtle."""
    return SAMPLE.read_text(encoding="utf-8")


def run(
    text: str, shapes: Graph, ontology: Graph | None, *, inference: str = "none"
) -> tuple[bool, Graph]:
    """Validate Turtle text; return (conforms, results graph)."""
    data = Graph().parse(data=text, format="turtle")
    conforms, results, _ = validate(
        data,
        shacl_graph=shapes,
        ont_graph=ontology,
        inference=inference,
        abort_on_first=False,
        allow_warnings=False,
    )
    assert isinstance(results, Graph)
    return bool(conforms), results


def violations(results: Graph) -> set[tuple[str, str]]:
    """(focus node, result path) of every violation."""
    found = set()
    for result in results.subjects(SH.resultSeverity, SH.Violation):
        focus = results.value(result, SH.focusNode)
        path = results.value(result, SH.resultPath)
        found.add((str(focus), str(path) if path is not None else ""))
    return found


def replace(text: str, old: str, new: str) -> str:
    """Replace exactly one occurrence of old in text (so a typo in a test cannot pass silently)."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


@pytest.mark.parametrize("inference", ["none", "rdfs"])
def test_conforming_sample_passes(
    sample_text: str, shapes: Graph, ontology: Graph, inference: str
) -> None:
    conforms, results = run(sample_text, shapes, ontology, inference=inference)
    assert conforms, results.serialize(format="turtle")


def test_missing_content_is_rejected(sample_text: str, shapes: Graph, ontology: Graph) -> None:
    text = replace(
        sample_text,
        '    jido:content "Use pyoxigraph named graphs, one long-term graph per project." ;\n',
        "",
    )
    conforms, results = run(text, shapes, ontology)
    assert not conforms
    assert (MEMORY, "https://jido.ai/ontology#content") in violations(results)


def test_confidence_out_of_range_is_rejected(
    sample_text: str, shapes: Graph, ontology: Graph
) -> None:
    text = replace(sample_text, '"0.9"^^xsd:double', '"1.5"^^xsd:double')
    conforms, results = run(text, shapes, ontology)
    assert not conforms
    assert (MEMORY, "https://jido.ai/ontology#confidenceScore") in violations(results)


def test_unknown_confidence_level_is_rejected(
    sample_text: str, shapes: Graph, ontology: Graph
) -> None:
    text = replace(sample_text, "jido:hasConfidence jido:High", "jido:hasConfidence jido:VeryHigh")
    conforms, results = run(text, shapes, ontology)
    assert not conforms
    assert (MEMORY, "https://jido.ai/ontology#hasConfidence") in violations(results)


def test_session_id_with_a_space_is_rejected(
    sample_text: str, shapes: Graph, ontology: Graph
) -> None:
    text = replace(sample_text, 'jido:sessionId "sess_01"', 'jido:sessionId "sess 01"')
    conforms, results = run(text, shapes, ontology)
    assert not conforms
    assert (SESSION, "https://jido.ai/ontology#sessionId") in violations(results)


def test_session_status_must_be_a_session_status(
    sample_text: str, shapes: Graph, ontology: Graph
) -> None:
    text = replace(sample_text, "jido:SessionActive", "jido:TaskPending")
    conforms, results = run(text, shapes, ontology)
    assert not conforms
    assert (SESSION, "https://jido.ai/ontology#hasStatus") in violations(results)


def test_several_faults_are_all_reported(sample_text: str, shapes: Graph, ontology: Graph) -> None:
    text = replace(sample_text, '"0.9"^^xsd:double', '"1.5"^^xsd:double')
    text = replace(text, "jido:hasSourceType jido:AgentSource ;\n", "")
    text = replace(text, "jido:accessCount 3", "jido:accessCount -1")
    conforms, results = run(text, shapes, ontology)
    assert not conforms
    paths = {p for focus, p in violations(results) if focus == MEMORY}
    jido = "https://jido.ai/ontology#"
    assert {jido + "confidenceScore", jido + "hasSourceType", jido + "accessCount"} <= paths


def test_without_ont_graph_nothing_is_targeted(
    sample_text: str, shapes: Graph, ontology: Graph
) -> None:
    # The broken memory is typed jido:ArchitecturalDecision; only the ontology says that is a
    # jido:MemoryItem. Without ont_graph the shape targets nothing and the check "passes":
    # this is why every validation in jido-kg passes the ontology as ont_graph.
    text = replace(sample_text, '"0.9"^^xsd:double', '"1.5"^^xsd:double')
    conforms_without, _ = run(text, shapes, None)
    conforms_with, _ = run(text, shapes, ontology)
    assert conforms_without is True
    assert conforms_with is False


def test_shapes_target_only_declared_classes(shapes: Graph, ontology: Graph) -> None:
    targets = set(shapes.objects(None, SH.targetClass))
    assert targets
    owl_class = URIRef("http://www.w3.org/2002/07/owl#Class")
    rdf_type = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    for target in targets:
        assert (target, rdf_type, owl_class) in ontology, target


def test_shape_paths_are_declared_properties(shapes: Graph, ontology: Graph) -> None:
    rdf_type = URIRef("http://www.w3.org/1999/02/22-rdf-syntax-ns#type")
    owl = "http://www.w3.org/2002/07/owl#"
    kinds = {URIRef(owl + k) for k in ("ObjectProperty", "DatatypeProperty", "AnnotationProperty")}
    rdfs_label = URIRef("http://www.w3.org/2000/01/rdf-schema#label")
    for path in set(shapes.objects(None, SH.path)):
        if path == rdfs_label:
            continue
        assert {k for k in kinds if (path, rdf_type, k) in ontology}, path

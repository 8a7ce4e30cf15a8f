"""The Jido ontology passes the Protégé-grade check, and the check really catches what it claims.

These run the real OWL API + HermiT (tools/owlcheck/OwlCheck.java). If Java or the jars are
missing they fail with the reason (`make owl-jars` fetches the jars); they are never skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.namespace import OWL, RDF, RDFS

from kg.errors import OntologyCheckError
from kg.owl_check import OwlCheckReport, check_ontology
from kg.resources import ontology_path

JIDO = "https://jido.ai/ontology#"
SAMPLE = Path(__file__).resolve().parent / "data" / "ontology" / "sample_memory.ttl"

MEMORY_CLASSES = [
    "Fact",
    "Assumption",
    "Hypothesis",
    "Discovery",
    "Risk",
    "Unknown",
    "Decision",
    "ArchitecturalDecision",
    "ImplementationDecision",
    "Alternative",
    "TradeOff",
    "Convention",
    "CodingStandard",
    "ArchitecturalConvention",
    "AgentRule",
    "ProcessConvention",
    "Error",
    "Bug",
    "Failure",
    "Incident",
    "RootCause",
    "LessonLearned",
]
MEMORY_TYPES = [
    "fact",
    "assumption",
    "hypothesis",
    "discovery",
    "risk",
    "unknown",
    "decision",
    "architectural_decision",
    "implementation_decision",
    "alternative",
    "trade_off",
    "convention",
    "coding_standard",
    "architectural_convention",
    "agent_rule",
    "process_convention",
    "error",
    "bug",
    "failure",
    "incident",
    "root_cause",
    "lesson_learned",
]
VALUE_CLASSES = [
    "ConfidenceLevel",
    "SourceType",
    "EvidenceStrength",
    "ConventionScope",
    "EnforcementLevel",
    "ErrorStatus",
    "SessionStatus",
    "SessionPhase",
    "AgentRole",
    "Capability",
    "TaskStatus",
]
DECLARING_TYPES = (
    OWL.Class,
    OWL.ObjectProperty,
    OWL.DatatypeProperty,
    OWL.AnnotationProperty,
    OWL.NamedIndividual,
)


def j(name: str) -> URIRef:
    """The IRI of a term in the Jido namespace."""
    return URIRef(JIDO + name)


@pytest.fixture(scope="module")
def ontology_text() -> str:
    """The Turtle text of the real ontology."""
    return ontology_path().read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def graph() -> Graph:
    """The real ontology as an rdflib graph."""
    return Graph().parse(ontology_path(), format="turtle")


@pytest.fixture(scope="module")
def report() -> OwlCheckReport:
    """The OWL API + HermiT report on the real ontology (one JVM run for the module)."""
    return check_ontology([ontology_path()])


def broken_copy(tmp_path: Path, text: str, extra: str = "") -> Path:
    """Write a variant of the ontology (text plus extra Turtle) into tmp_path."""
    path = tmp_path / "broken.ttl"
    path.write_text(text + "\n" + extra + "\n", encoding="utf-8")
    return path


# --- the real ontology -----------------------------------------------------------------


def test_real_ontology_is_clean(report: OwlCheckReport) -> None:
    assert report.parse_issues == ()
    assert report.dl_violations == ()
    assert report.reasoner_errors == ()
    assert report.consistent is True
    assert report.unsatisfiable == ()
    assert report.ok, report.summary()


def test_report_counts_the_signature(report: OwlCheckReport) -> None:
    assert report.classes >= 22 + len(VALUE_CLASSES)
    assert report.individuals >= 40
    assert report.object_properties >= 30
    assert report.data_properties >= 20


def test_sample_data_merged_into_the_ontology_is_clean() -> None:
    merged = check_ontology([ontology_path(), SAMPLE])
    assert merged.ok, merged.summary()
    assert merged.individuals > check_ontology([ontology_path()]).individuals


# --- the check catches what it claims to catch --------------------------------------------


def test_malformed_turtle_is_a_parse_issue(tmp_path: Path, ontology_text: str) -> None:
    broken = broken_copy(tmp_path, ontology_text, "jido:Fact rdfs:label this is garbage")
    result = check_ontology([broken])
    assert not result.ok
    assert result.parse_issues
    assert "line" in result.parse_issues[0]


def test_missing_final_dot_is_a_parse_issue(tmp_path: Path, ontology_text: str) -> None:
    without_dot = re.sub(r"\)\s*\.\s*$", ")", ontology_text)
    assert without_dot != ontology_text
    result = check_ontology([broken_copy(tmp_path, without_dot)])
    assert result.parse_issues
    assert result.consistent is None


def test_rdf_xml_is_not_silently_accepted(tmp_path: Path, graph: Graph) -> None:
    # The OWL API would happily read RDF/XML; the check allows only its Turtle parser.
    rdfxml = tmp_path / "jido.ttl"
    rdfxml.write_text(graph.serialize(format="xml"), encoding="utf-8")
    result = check_ontology([rdfxml])
    assert result.parse_issues
    assert result.axioms == 0


def test_individual_in_two_disjoint_classes_is_inconsistent(
    tmp_path: Path, ontology_text: str
) -> None:
    extra = "<https://jido.ai/data/memory/x> a jido:Fact , jido:Decision ."
    result = check_ontology([broken_copy(tmp_path, ontology_text, extra)])
    assert result.consistent is False
    assert not result.ok


def test_class_under_two_disjoint_classes_is_unsatisfiable(
    tmp_path: Path, ontology_text: str
) -> None:
    extra = "jido:FactualDecision a owl:Class ; rdfs:subClassOf jido:Fact , jido:Decision ."
    result = check_ontology([broken_copy(tmp_path, ontology_text, extra)])
    assert result.consistent is True
    assert result.unsatisfiable == (JIDO + "FactualDecision",)


def test_undeclared_term_is_a_dl_violation(tmp_path: Path, ontology_text: str) -> None:
    extra = """
jido:Fact rdfs:subClassOf jido:neverDeclared .
jido:High jido:neverDeclared2 jido:Low .
"""
    result = check_ontology([broken_copy(tmp_path, ontology_text, extra)])
    assert any("undeclared class" in v and "neverDeclared>" in v for v in result.dl_violations)
    assert any("neverDeclared2" in v for v in result.dl_violations)


def test_data_with_a_wrong_status_is_inconsistent(tmp_path: Path) -> None:
    # hasStatus on a WorkSession only takes SessionStatus values; TaskPending is a TaskStatus.
    data = tmp_path / "data.ttl"
    text = SAMPLE.read_text(encoding="utf-8")
    data.write_text(text.replace("jido:SessionActive", "jido:TaskPending"), encoding="utf-8")
    result = check_ontology([ontology_path(), data])
    assert result.consistent is False


def test_missing_jars_say_how_to_get_them(tmp_path: Path) -> None:
    with pytest.raises(OntologyCheckError, match="make owl-jars"):
        check_ontology([ontology_path()], jar_dir=tmp_path / "nothing-here")


def test_missing_java_is_reported(tmp_path: Path) -> None:
    with pytest.raises(OntologyCheckError, match="Java"):
        check_ontology([ontology_path()], java="no-such-java-binary")


def test_missing_input_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(OntologyCheckError, match="no such file"):
        check_ontology([tmp_path / "absent.ttl"])


# --- content of the ontology (rdflib) ------------------------------------------------------


def test_header(graph: Graph) -> None:
    onto = URIRef("https://jido.ai/ontology")
    dcterms = "http://purl.org/dc/terms/"
    vann = "http://purl.org/vocab/vann/"
    assert (onto, RDF.type, OWL.Ontology) in graph
    assert graph.value(onto, OWL.versionIRI) == URIRef("https://jido.ai/ontology/1.0.0")
    assert graph.value(onto, OWL.versionInfo) == Literal("1.0.0")
    for prop in ("title", "description", "license"):
        assert graph.value(onto, URIRef(dcterms + prop)) is not None, prop
    assert str(graph.value(onto, URIRef(vann + "preferredNamespacePrefix"))) == "jido"
    assert str(graph.value(onto, URIRef(vann + "preferredNamespaceUri"))) == JIDO


def test_every_term_has_an_english_label_and_comment(graph: Graph) -> None:
    terms = {
        s for t in DECLARING_TYPES for s in graph.subjects(RDF.type, t) if isinstance(s, URIRef)
    }
    jido_terms = {t for t in terms if isinstance(t, URIRef) and str(t).startswith(JIDO)}
    assert len(jido_terms) > 150
    missing = []
    for term in sorted(terms):
        for prop in (RDFS.label, RDFS.comment):
            values = [v for v in graph.objects(term, prop) if isinstance(v, Literal)]
            if not any(v.language == "en" for v in values):
                missing.append(f"{term} {prop}")
    assert missing == []


def test_every_jido_iri_used_is_declared(graph: Graph) -> None:
    declared = {s for t in DECLARING_TYPES for s in graph.subjects(RDF.type, t)}
    used = {
        node
        for triple in graph
        for node in triple
        if isinstance(node, URIRef) and str(node).startswith(JIDO)
    }
    assert used - declared == set()


def test_no_punning_between_kinds_of_term(graph: Graph) -> None:
    kinds: dict[URIRef, set[URIRef]] = {}
    for kind in DECLARING_TYPES:
        for s in graph.subjects(RDF.type, kind):
            if isinstance(s, URIRef) and str(s).startswith(JIDO):
                kinds.setdefault(s, set()).add(kind)
    assert {s: k for s, k in kinds.items() if len(k) > 1} == {}


def test_the_22_memory_classes_are_memory_items(graph: Graph) -> None:
    assert len(MEMORY_CLASSES) == len(MEMORY_TYPES) == 22
    for name, snake in zip(MEMORY_CLASSES, MEMORY_TYPES, strict=True):
        assert re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower() == snake
        cls = j(name)
        assert (cls, RDF.type, OWL.Class) in graph, name
        assert j("MemoryItem") in set(graph.transitive_objects(cls, RDFS.subClassOf)), name
        assert graph.value(cls, j("memoryType")) == Literal(snake), name


def test_memory_type_annotation_only_on_the_22(graph: Graph) -> None:
    annotated = {str(s)[len(JIDO) :] for s in graph.subjects(j("memoryType"), None)}
    assert annotated == set(MEMORY_CLASSES)


def test_sub_kinds_sit_under_their_parent(graph: Graph) -> None:
    parents = {
        "ArchitecturalDecision": "Decision",
        "ImplementationDecision": "Decision",
        "CodingStandard": "Convention",
        "ArchitecturalConvention": "Convention",
        "AgentRule": "Convention",
        "ProcessConvention": "Convention",
        "Bug": "Error",
        "Failure": "Error",
        "Incident": "Error",
    }
    for child, parent in parents.items():
        assert (j(child), RDFS.subClassOf, j(parent)) in graph


def test_no_individual_in_two_value_classes(graph: Graph) -> None:
    membership: dict[URIRef, list[str]] = {}
    for name in VALUE_CLASSES:
        for ind in graph.subjects(RDF.type, j(name)):
            assert isinstance(ind, URIRef)
            membership.setdefault(ind, []).append(name)
    assert {i: c for i, c in membership.items() if len(c) > 1} == {}
    statuses = {"SessionStatus": 3, "TaskStatus": 5, "ErrorStatus": 4}
    for name, count in statuses.items():
        assert len(list(graph.subjects(RDF.type, j(name)))) == count, name


def test_named_individuals(graph: Graph) -> None:
    expected = {
        "ConfidenceLevel": {"High", "Medium", "Low"},
        "SourceType": {"UserSource", "AgentSource", "ToolSource", "ExternalDocumentSource"},
        "SessionStatus": {"SessionActive", "SessionPaused", "SessionClosed"},
        "TaskStatus": {
            "TaskPending",
            "TaskInProgress",
            "TaskCompleted",
            "TaskBlocked",
            "TaskCancelled",
        },
        "ErrorStatus": {"ErrorOpen", "ErrorInvestigating", "ErrorResolved", "ErrorWontFix"},
    }
    for cls, names in expected.items():
        found = {str(s)[len(JIDO) :] for s in graph.subjects(RDF.type, j(cls))}
        assert found == names, cls
        for name in names:
            assert (j(name), RDF.type, OWL.NamedIndividual) in graph


def test_terms_the_service_writes_are_declared(graph: Graph) -> None:
    datatype = {
        "content": "string",
        "summary": "string",
        "rationale": "string",
        "confidenceScore": "double",
        "hasTimestamp": "dateTime",
        "validFrom": "dateTime",
        "validUntil": "dateTime",
        "recordedAt": "dateTime",
        "retiredAt": "dateTime",
        "retirementReason": "string",
        "accessCount": "integer",
        "lastAccessed": "dateTime",
        "contentKey": "string",
        "sessionId": "string",
        "projectId": "string",
        "agentId": "string",
        "startedAt": "dateTime",
        "endedAt": "dateTime",
        "evidenceText": "string",
    }
    xsd = "http://www.w3.org/2001/XMLSchema#"
    for name, range_ in datatype.items():
        assert (j(name), RDF.type, OWL.DatatypeProperty) in graph, name
        assert graph.value(j(name), RDFS.range) == URIRef(xsd + range_), name
    for name in (
        "assertedBy",
        "assertedIn",
        "appliesToProject",
        "derivedFrom",
        "supersededBy",
        "hasConfidence",
        "hasSourceType",
        "hasStatus",
    ):
        assert (j(name), RDF.type, OWL.ObjectProperty) in graph, name
    prov = "http://www.w3.org/ns/prov#"
    assert (j("derivedFrom"), RDFS.subPropertyOf, URIRef(prov + "wasDerivedFrom")) in graph
    assert (j("DeletedMarker"), None, None) not in graph

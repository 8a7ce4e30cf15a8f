"""The RDFS rewrite on an in-memory store: the patterns users write, and what it refuses."""

from __future__ import annotations

import pyoxigraph
import pytest
from pyoxigraph import QueryBoolean, QuerySolutions, QueryTriples

from kg.sparql.entailment import EntailmentError, entail

J = "https://jido.ai/ontology#"
D = "https://jido.ai/data/memory/"
G = "https://jido.ai/graph/x"
P = f"PREFIX jido: <{J}> PREFIX d: <{D}> PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> "
DATA = f"""@prefix jido: <{J}> . @prefix d: <{D}> .
d:arch a jido:ArchitecturalDecision ; jido:content "arch" ; jido:selectedAlternative d:alt ;
    jido:rationale "because" .
d:impl a jido:ImplementationDecision ; jido:content "impl" .
d:dec a jido:Decision ; jido:content "dec" .
d:fact a jido:Fact ; jido:content "fact" .
d:both a jido:ArchitecturalDecision, jido:ImplementationDecision ; jido:content "both" .
"""


@pytest.fixture(scope="module")
def store() -> pyoxigraph.Store:
    """Decisions of three classes (one with two), a fact, in one named graph."""
    found = pyoxigraph.Store()
    found.load(DATA, format=pyoxigraph.RdfFormat.TURTLE, to_graph=pyoxigraph.NamedNode(G))
    return found


def run(store: pyoxigraph.Store, query: str) -> object:
    result = store.query(entail(P + query))
    if isinstance(result, QuerySolutions):
        return sorted(tuple(str(t.value) if t is not None else None for t in row)
                      for row in result)
    if isinstance(result, QueryBoolean):
        return bool(result)
    assert isinstance(result, QueryTriples)
    return sorted(str(t) for t in result)


def names(*local: str) -> list[tuple[str, ...]]:
    return sorted((D + n,) for n in local)


DECISIONS = ("arch", "impl", "dec", "both")


@pytest.mark.parametrize("query", [
    "SELECT ?m WHERE { GRAPH ?g { ?m a jido:Decision } }",
    f"SELECT ?m WHERE {{ GRAPH <{G}> {{ ?m rdf:type <{J}Decision> }} }}",
    "SELECT ?m WHERE { GRAPH ?g { ?m jido:content ?c ; a jido:Decision . } }",
    "SELECT ?m WHERE { GRAPH ?g { ?m a jido:Decision OPTIONAL { ?m jido:rationale ?r } } }",
    "SELECT ?m WHERE { { GRAPH ?g { ?m a jido:Decision } } UNION { GRAPH ?g { ?m a jido:Risk } } }",
    "SELECT ?m WHERE { GRAPH ?g { ?m jido:content ?c FILTER EXISTS { ?m a jido:Decision } } }",
    "SELECT ?m WHERE { { SELECT ?m WHERE { GRAPH ?g { ?m a jido:Decision } } } }",
])
def test_decisions_are_found_once_each(store: pyoxigraph.Store, query: str) -> None:
    assert run(store, query) == names(*DECISIONS)


def test_the_pattern_keeps_its_place_among_optional_parts(store: pyoxigraph.Store) -> None:
    # OPTIONAL first: only memories with a rationale can match, as in the entailed graph.
    query = "SELECT ?m WHERE { GRAPH ?g { OPTIONAL { ?m jido:rationale ?r } ?m a jido:Decision } }"
    assert run(store, query) == names("arch")


def test_without_entailment_the_query_is_unchanged() -> None:
    query = "SELECT ?m WHERE { GRAPH ?g { ?m jido:content ?c ; a jido:Fact } }"
    assert entail(query) == query


def test_object_lists_variable_classes_and_predicates(store: pyoxigraph.Store) -> None:
    assert run(store, "SELECT ?m WHERE { GRAPH ?g { ?m a jido:Decision, jido:ArchitecturalDecision "
                      "} }") == names("arch", "both")
    classes = run(store, "SELECT ?c WHERE { GRAPH ?g { d:both a ?c } }")
    assert isinstance(classes, list) and len(classes) == 6  # each class once
    assert {c for (c,) in classes} == {J + "ArchitecturalDecision", J + "ImplementationDecision",
                                       J + "Decision", J + "MemoryItem", J + "Entity",
                                       "http://www.w3.org/ns/prov#Entity"}
    assert run(store, "SELECT ?m ?x WHERE { GRAPH ?g { ?m jido:hasAlternative ?x } }") == [
        (D + "arch", D + "alt")]
    triples = run(store, "SELECT ?p ?o WHERE { GRAPH ?g { d:arch ?p ?o } }")
    assert (J + "hasAlternative", D + "alt") in triples  # type: ignore[operator]
    assert ("http://www.w3.org/1999/02/22-rdf-syntax-ns#type", J + "MemoryItem") in triples  # type: ignore[operator]


def test_ask_and_construct(store: pyoxigraph.Store) -> None:
    assert run(store, "ASK { GRAPH ?g { d:impl a jido:MemoryItem } }") is True
    assert run(store, "ASK { GRAPH ?g { d:fact a jido:Decision } }") is False
    built = run(store, f"CONSTRUCT FROM <{G}> WHERE {{ ?m a jido:Decision }}")
    assert len(built) == 4  # type: ignore[arg-type]


@pytest.mark.parametrize("query", [
    "SELECT * WHERE { ?m a/jido:content ?c }",
    "SELECT * WHERE { ?m !jido:content ?c }",
    "SELECT * WHERE { ?m (jido:hasAlternative)+ ?c }",
    "SELECT * WHERE { _:b a jido:Decision }",
    "SELECT * WHERE { ?m jido:hasAlternative [ a jido:Decision ] }",
    "SELECT * WHERE { ?m jido:hasAlternative [] }",
    "SELECT * WHERE { ?p ?p ?o }",
])
def test_what_cannot_be_rewritten_faithfully_is_refused(query: str) -> None:
    with pytest.raises(EntailmentError):
        entail(P + query)


def test_paths_without_entailed_steps_and_service_groups_stay_as_written() -> None:
    query = (P + "SELECT * WHERE { ?m jido:supersededBy+ ?n "
             "SERVICE <https://jido.ai/recall> { [] <https://jido.ai/recall#query> 'a' } "
             "VALUES ?x { jido:Decision } }")
    assert entail(query) == query

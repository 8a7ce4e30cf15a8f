"""entailment=rdfs over HTTP: subclass members found with the parameter, never without it."""

from __future__ import annotations

import pytest

from api.service_description import SD
from kg.graphs import long_term
from kg.memory import memory_iri
from kg.sparql.entailment import REGIMES
from kg.terms import MemoryType
from tests.sparql.http import call
from tests.sparql_beyond.conftest import SCOPED, Service

RDFS = "&entailment=rdfs"
GRAPH = long_term("kinds").value
# How many of the 22 memory types each class covers: itself and its subclasses.
COVERS = {MemoryType.DECISION: 3, MemoryType.CONVENTION: 5, MemoryType.ERROR: 4}


@pytest.fixture(scope="module")
def kinds(service: Service) -> Service:
    """Project kinds with one memory of each of the 22 types."""
    for kind in MemoryType:
        service.remember("kinds", f"a memory of type {kind.value}", kind=kind.value)
    return service


def _members(service: Service, query: str, **kwargs: object) -> set[str]:
    return {r["m"] for r in service.rows(query, **kwargs)}  # type: ignore[arg-type]


def _iri(service: Service, kind: MemoryType) -> str:
    (memory,) = [m for m in service.written["kinds"] if m["type"] == kind.value]
    return memory_iri(memory["id"]).value


@pytest.mark.parametrize("method", ["GET", "FORM", "DIRECT"])
def test_subclass_members_found_with_the_parameter_not_without(kinds: Service,
                                                               method: str) -> None:
    query = f"SELECT ?m WHERE {{ GRAPH <{GRAPH}> {{ ?m a jido:Decision }} }}"
    assert _members(kinds, query, method=method) == {_iri(kinds, MemoryType.DECISION)}
    assert _members(kinds, query, method=method, extra=RDFS) == {
        _iri(kinds, k) for k in (MemoryType.DECISION, MemoryType.ARCHITECTURAL_DECISION,
                                 MemoryType.IMPLEMENTATION_DECISION)}


def test_counts_match_the_memories_written_for_all_22_types(kinds: Service) -> None:
    classes = " ".join(f"jido:{k.class_name}" for k in MemoryType)
    query = (f"SELECT ?t (COUNT(?m) AS ?n) WHERE {{ VALUES ?t {{ {classes} }} "
             f"GRAPH <{GRAPH}> {{ ?m <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> ?t }} }} "
             "GROUP BY ?t")
    counts = {r["t"]: int(r["n"]) for r in kinds.rows(query, extra=RDFS)}
    assert counts == {k.iri.value: COVERS.get(k, 1) for k in MemoryType}
    plain = {r["t"]: int(r["n"]) for r in kinds.rows(query)}
    assert plain == {k.iri.value: 1 for k in MemoryType}


def test_memory_item_finds_all_22(kinds: Service) -> None:
    query = "SELECT ?m WHERE { GRAPH ?g { ?m a jido:MemoryItem } }"
    every = {_iri(kinds, k) for k in MemoryType}
    assert _members(kinds, query, extra=RDFS) >= every
    assert not _members(kinds, query) & every
    ask = f"ASK {{ <{_iri(kinds, MemoryType.BUG)}> a jido:MemoryItem, jido:Error }}"
    assert kinds.query(ask, extra=RDFS + f"&default-graph-uri={GRAPH}").json()["boolean"]
    assert not kinds.query(ask, extra=f"&default-graph-uri={GRAPH}").json()["boolean"]


def test_construct_and_a_scoped_token(kinds: Service) -> None:
    query = ("CONSTRUCT { ?m a <https://jido.ai/ontology#Convention> } WHERE { GRAPH ?g { "
             "?m a <https://jido.ai/ontology#Convention> ; jido:content ?c } }")
    answer = kinds.query(query, extra=RDFS, accept="application/n-triples")
    assert answer.status == 200, answer.body
    assert len(answer.body.decode().strip().splitlines()) == 5
    # A scoped token's dataset stays its project's graphs: kinds' memories are not entailed in.
    scoped = _members(kinds, "SELECT ?m WHERE { ?m a jido:MemoryItem }", token=SCOPED,
                      extra=RDFS)
    assert not scoped & {_iri(kinds, k) for k in MemoryType}


@pytest.mark.parametrize(("extra", "query", "code"), [
    ("&entailment=owl", "SELECT * WHERE { ?s ?p ?o } LIMIT 1", "entailment_unsupported"),
    (RDFS, "SELECT * WHERE { ?m a/jido:content ?c }", "entailment_unsupported"),
    (RDFS, "SELECT * WHERE { [] a jido:Decision }", "entailment_unsupported"),
])
def test_what_cannot_be_entailed_is_a_400(kinds: Service, extra: str, query: str,
                                          code: str) -> None:
    answer = kinds.query(query, extra=extra)
    assert (answer.status, answer.error_code) == (400, code), answer.body


def test_entailment_on_an_update_is_a_400(kinds: Service) -> None:
    answer = kinds.post("/sparql?entailment=rdfs", b"INSERT DATA { <x:a> <x:b> <x:c> }",
                        "application/sparql-update", "admin-token")
    assert (answer.status, answer.error_code) == (400, "invalid_input")


def test_service_description_names_the_regime_and_the_recall_service(kinds: Service) -> None:
    answer = call(f"{kinds.server.url}/sparql", headers={"Accept": "application/n-triples"})
    triples = set(answer.body.decode().splitlines())
    endpoint = f"<{kinds.server.url}/sparql>"
    assert f"{endpoint} <{SD}supportedEntailmentRegime> <{REGIMES['rdfs']}> ." in triples
    assert f"{endpoint} <{SD}feature> <https://jido.ai/recall> ." in triples

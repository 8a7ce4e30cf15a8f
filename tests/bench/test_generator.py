"""The seeded generator writes what the long-term writer writes, and the store it builds loads."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph
import pyshacl
import rdflib
from pyoxigraph import RdfFormat

from bench.generator import build_store, generate, memories, memory_quads
from bench.reliability.dataset import inspect_store
from kg.longterm.memories import LongTermMemory
from kg.resources import ontology_path, shapes_path
from kg.store import EmbeddedStore


def test_same_seed_same_data_and_streamed_count(tmp_path: Path) -> None:
    a = generate(tmp_path / "a.nq", 300, seed=3, progress=False)
    b = generate(tmp_path / "b.nq", 300, seed=3, progress=False)
    assert (tmp_path / "a.nq").read_bytes() == (tmp_path / "b.nq").read_bytes()
    assert a.quads == b.quads == sum(1 for _ in pyoxigraph.parse(
        path=str(tmp_path / "a.nq"), format=RdfFormat.N_QUADS))


def test_memories_read_back_through_the_long_term_reader(tmp_path: Path) -> None:
    data = build_store(tmp_path / "store", 120, seed=1, projects=3, sessions=6, progress=False)
    assert data.memories == 120
    found = inspect_store(tmp_path / "store")
    assert found.opened and len(found.memories) == 120 and not found.incomplete
    store = EmbeddedStore(tmp_path / "store")
    try:
        read = list(LongTermMemory(store).iter_memories("proj-0001"))
    finally:
        store.close()
    expected = {m.id: m.content for m in memories(120, projects=3, sessions=6, seed=1)
                if m.project == "proj-0001"}
    assert {m.id: m.content for m in read} == expected


def test_generated_data_conforms_to_the_shapes(tmp_path: Path) -> None:
    generate(tmp_path / "d.nq", 60, projects=2, sessions=4, progress=False)
    data = rdflib.Dataset()
    data.parse(tmp_path / "d.nq", format="nquads")
    graph = rdflib.Graph()
    for s, p, o, _ in data.quads():
        graph.add((s, p, o))
    ok, _, text = pyshacl.validate(
        graph, shacl_graph=rdflib.Graph().parse(shapes_path()),
        ont_graph=rdflib.Graph().parse(ontology_path()), inference="rdfs")
    assert ok, text


def test_memory_quads_are_the_writers_own() -> None:
    memory = next(memories(1, seed=9))
    quads = memory_quads(memory)
    assert {q.predicate.value.rsplit("#", 1)[-1] for q in quads} >= {
        "content", "confidenceScore", "hasConfidence", "contentKey", "assertedIn"}

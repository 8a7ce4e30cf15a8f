"""Everything long-term memory writes conforms to the SHACL shapes and to the OWL ontology.

The OWL check is the Protégé-grade one (OWL API parse, OWL 2 DL profile, HermiT consistency)
run on the ontology with the written data merged in, exported as Turtle.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from kg.longterm import LongTermMemory, make_evidence
from kg.longterm.promotion import PromotionEngine
from kg.longterm.scheduler import PromotionScheduler
from kg.longterm.tools import MemoryToolExecutor, ToolContext
from kg.owl_check import check_ontology
from kg.resources import ontology_path
from kg.shortterm import SessionManager
from kg.store import EmbeddedStore
from kg.terms import MemoryType
from tests.longterm.conftest import Clock, export_turtle, shacl_report, utc


@pytest.fixture
def written(store: EmbeddedStore) -> EmbeddedStore:
    """A store after every kind of long-term write."""
    clock = Clock(utc(2025, 3, 1, 9))
    ltm = LongTermMemory(store, clock=clock)
    scheduler = PromotionScheduler(PromotionEngine(ltm))
    manager = SessionManager(on_pause=scheduler.on_pause, on_close=scheduler.on_close)
    scheduler.bind(manager)
    s = scheduler.start_session("s1", project="shop", agent="coder")
    s.working_context.put("framework", "Flask", source="tool")
    s.pending_memories.add_agent_decision(
        "Use Postgres", memory_type="architectural_decision", rationale="JSONB",
        evidence=["https://example.org/chat/1/msg/3", "user said so"],
    )
    for i, kind in enumerate(MemoryType):
        s.pending_memories.add_implicit(f"{kind.value} number {i}", importance_score=0.9,
                                        memory_type=kind, confidence=i / 21)
    manager.pause("s1")
    scheduler.resume_session("s1")
    manager.close("s1")
    clock.now += timedelta(hours=1)
    scheduler.start_session("s2", project="shop")  # no agent
    old = ltm.remember("Port is 8000", project="shop", session="s2",
                       valid_from=utc(2025, 1, 1), valid_until=utc(2026, 1, 1)).memory
    new = ltm.remember("Port is 8080", project="shop", session="s2",
                       evidence=[make_evidence(text="config diff")]).memory
    ltm.remember("use postgres", project="shop", session="s2", type="architectural_decision",
                 evidence=[make_evidence(source="https://example.org/tool/7")])  # merge
    ltm.forget(old.id, project="shop", reason="changed", replacement_id=new.id)
    ltm.note_recalled([new.id, new.id])
    ltm.flush()
    tools = MemoryToolExecutor(ltm)
    ctx = ToolContext(project="blog", session="b1", agent="writer",
                      source="https://example.org/toolcall/9")
    assert tools.execute("remember", {"content": "Posts are Markdown", "type": "convention",
                                      "rationale": "simple"}, context=ctx)["ok"]
    gone = ltm.remember("temporary", project="blog", session="b2").memory
    ltm.purge_memory(gone.id, project="blog")
    ltm.purge_session("b2", project="blog")
    ltm.close()
    assert len(list(ltm.iter_memories())) == 22 + 1 + 1 + 2 + 1
    return store


def test_written_data_conforms_to_the_shapes(written: EmbeddedStore) -> None:
    conforms, report = shacl_report(written)
    assert conforms, report


def test_written_data_is_consistent_with_the_ontology(written: EmbeddedStore,
                                                      tmp_path: Path) -> None:
    data = export_turtle(written, tmp_path / "data.ttl")
    report = check_ontology([ontology_path(), data])
    assert report.ok, report.summary()
    assert report.individuals > check_ontology([ontology_path()]).individuals


def test_the_shapes_do_catch_a_broken_memory(written: EmbeddedStore) -> None:
    from pyoxigraph import Literal, Quad

    from kg.graphs import long_term
    from kg.namespaces import JIDO

    memory = next(iter(LongTermMemory(written).iter_memories("shop")))
    written.add([Quad(memory.iri, JIDO["confidenceScore"], Literal(1.5), long_term("shop"))])
    conforms, report = shacl_report(written)
    assert not conforms and "confidenceScore" in report

"""LongTermMemory on a real store: triples, dedup, forget/as_of, purge, listeners, recall counts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest
from pyoxigraph import Literal, NamedNode

from kg.graphs import long_term, sessions
from kg.longterm import LongTermMemory, MemoryNotFoundError, MemoryRetiredError, make_evidence
from kg.longterm.errors import InvalidMemoryError
from kg.memory import Memory, evidence_iri, memory_iri, session_iri
from kg.namespaces import JIDO, PROV, RDF
from kg.resources import query_text
from kg.store import EmbeddedStore
from kg.terms import MemoryType, SessionStatus
from tests.longterm.conftest import Clock, data_quads, utc

MESSAGE = "https://example.org/chat/42/message/7"


def objects(store: EmbeddedStore, subject: NamedNode, name: str, graph: NamedNode) -> list[str]:
    """The values of one property of a subject in a graph."""
    pred = RDF["type"] if name == "type" else (PROV[name[5:]] if name.startswith("prov:")
                                               else JIDO[name])
    return [q.object.value for q in store.quads(subject, pred, None, graph)]  # type: ignore[union-attr]


def test_remember_writes_typed_triples_with_provenance(ltm: LongTermMemory,
                                                       store: EmbeddedStore) -> None:
    out = ltm.remember(
        "Use pyoxigraph named graphs", project="p1", session="s1", type="architectural_decision",
        confidence=0.9, agent="coder", rationale="memories carry across sessions",
        evidence=[make_evidence(text="let's use named graphs", source=MESSAGE)],
    )
    assert out.created
    g, m = long_term("p1"), memory_iri(out.memory.id)
    assert objects(store, m, "type", g) == [JIDO["ArchitecturalDecision"].value]
    assert objects(store, m, "content", g) == ["Use pyoxigraph named graphs"]
    assert objects(store, m, "confidenceScore", g) == ["0.9"]
    assert objects(store, m, "hasConfidence", g) == [JIDO["High"].value]
    assert objects(store, m, "hasSourceType", g) == [JIDO["AgentSource"].value]
    assert objects(store, m, "assertedIn", g) == [session_iri("s1").value]
    assert objects(store, m, "assertedBy", g) == ["https://jido.ai/data/agent/coder"]
    assert objects(store, m, "appliesToProject", g) == ["https://jido.ai/data/project/p1"]
    assert objects(store, m, "rationale", g) == ["memories carry across sessions"]
    assert objects(store, m, "accessCount", g) == ["0"]
    assert len(objects(store, m, "recordedAt", g)) == 1
    assert len(objects(store, m, "hasTimestamp", g)) == 1
    assert objects(store, m, "contentKey", g)[0].startswith("sha256:")
    (e,) = objects(store, m, "derivedFrom", g)
    ev = NamedNode(e)
    assert objects(store, ev, "type", g) == [JIDO["Evidence"].value]
    assert objects(store, ev, "prov:wasDerivedFrom", g) == [MESSAGE]
    assert objects(store, ev, "evidenceText", g) == ["let's use named graphs"]
    # the session record, agent and project nodes exist in the sessions graph
    sg = sessions("p1")
    assert objects(store, session_iri("s1"), "hasStatus", sg) == [JIDO["SessionActive"].value]
    assert ltm.get(out.memory.id) == out.memory


def test_one_transaction_per_remember(store: EmbeddedStore) -> None:
    calls: list[int] = []
    original = store.add

    def counting_add(quads: object) -> None:
        calls.append(1)
        original(quads)  # type: ignore[arg-type]

    store.add = counting_add  # type: ignore[method-assign]
    memory = LongTermMemory(store)
    memory.remember("a", project="p", session="s", agent="x")
    memory.remember("b", project="p", session="s", agent="x")
    assert len(calls) == 2


def test_dedup_merges_equivalent_content_in_the_same_project(ltm: LongTermMemory,
                                                             store: EmbeddedStore) -> None:
    first = ltm.remember("Tests  use pytest", project="p", session="s1", confidence=0.6)
    again = ltm.remember("tests use PYTEST ", project="p", session="s2", confidence=0.9,
                         evidence=[make_evidence(source=MESSAGE)])
    assert not again.created and again.memory.id == first.memory.id
    stored = ltm.get(first.memory.id, project="p")
    assert stored.access_count == 1 and stored.confidence == 0.9
    assert stored.last_accessed is not None and len(stored.evidence) == 1
    g = long_term("p")
    assert objects(store, stored.iri, "hasConfidence", g) == [JIDO["High"].value]
    assert len(list(store.quads(None, JIDO["content"], None, g))) == 1
    # another type or another project is a different memory
    assert ltm.remember("tests use pytest", project="p", session="s1", type="convention").created
    assert ltm.remember("tests use pytest", project="q", session="s1").created
    # a lower confidence does not lower the stored one
    ltm.remember("tests use pytest", project="p", session="s3", confidence=0.1)
    assert ltm.get(first.memory.id).confidence == 0.9


def test_forget_supersedes_and_as_of_reads_the_past(store: EmbeddedStore) -> None:
    clock = Clock(utc(2025, 1, 1, 12))
    ltm = LongTermMemory(store, clock=clock)
    old = ltm.remember("DB is MySQL", project="p", session="s").memory
    clock.now += timedelta(hours=1)
    new = ltm.remember("DB is Postgres", project="p", session="s").memory
    clock.now += timedelta(hours=1)
    retired = ltm.forget(old.id, project="p", reason="migrated", replacement_id=new.id)
    assert retired.retired_at == clock.now and retired.superseded_by == new.id
    clock.now += timedelta(minutes=1)
    with pytest.raises(MemoryNotFoundError):
        ltm.get(old.id, project="p")
    assert [m.id for m in ltm.memories("p")] == [new.id]
    before = utc(2025, 1, 1, 13, 30)
    assert ltm.get(old.id, project="p", as_of=before).content == "DB is MySQL"
    assert {m.id for m in ltm.memories("p", as_of=before)} == {old.id, new.id}
    assert [m.id for m in ltm.memories("p", as_of=utc(2025, 1, 1, 12, 30))] == [old.id]
    # still in SPARQL, with reason and replacement
    rows = list(store.query(  # type: ignore[arg-type]
        "PREFIX jido: <https://jido.ai/ontology#> SELECT ?r ?by WHERE { GRAPH ?g { "
        "?m jido:retirementReason ?r ; jido:supersededBy ?by } }"
    ))
    assert [(r["r"].value, r["by"].value) for r in rows] == [("migrated", memory_iri(new.id).value)]
    with pytest.raises(MemoryRetiredError):
        ltm.forget(old.id, project="p", reason="again")
    # remembering the forgotten content again makes a new memory
    assert ltm.remember("db is mysql", project="p", session="s").created


def test_forget_errors(ltm: LongTermMemory) -> None:
    m = ltm.remember("x", project="p", session="s").memory
    with pytest.raises(MemoryNotFoundError, match="memory 'nope' not found in project 'p'"):
        ltm.forget("nope", project="p", reason="r")
    with pytest.raises(MemoryNotFoundError, match="replacement memory 'zz' not found"):
        ltm.forget(m.id, project="p", reason="r", replacement_id="zz")
    with pytest.raises(MemoryNotFoundError):  # other projects are invisible
        ltm.forget(m.id, project="other", reason="r")
    with pytest.raises(InvalidMemoryError, match="reason is 501 bytes; the limit is 500"):
        ltm.forget(m.id, project="p", reason="x" * 501)
    assert ltm.get(m.id).retired_at is None


def test_validity_time(store: EmbeddedStore) -> None:
    clock = Clock(utc(2025, 6, 1))
    ltm = LongTermMemory(store, clock=clock)
    m = ltm.remember("freeze in effect", project="p", session="s",
                     valid_from=utc(2025, 6, 1), valid_until=utc(2025, 6, 10)).memory
    assert ltm.get(m.id).valid_until == utc(2025, 6, 10)
    clock.now = utc(2025, 6, 11)
    assert ltm.memories("p") == []
    assert ltm.get(m.id, as_of=utc(2025, 6, 5)).id == m.id
    with pytest.raises(InvalidMemoryError):
        ltm.remember("bad", project="p", session="s", valid_from=utc(2025, 2, 1),
                     valid_until=utc(2025, 1, 1))


def _mentions(store: EmbeddedStore, iris: set[str]) -> list[str]:
    """Every quad of the whole store (all graphs) that names one of the IRIs."""
    found = []
    for q in store.quads():
        terms = (q.subject, q.object, q.graph_name)
        if any(getattr(t, "value", None) in iris for t in terms):
            found.append(str(q))
    return found


def test_purge_memory_session_and_project_leave_no_triple(ltm: LongTermMemory,
                                                          store: EmbeddedStore) -> None:
    a = ltm.remember("alpha", project="p", session="s1", agent="x",
                     evidence=[make_evidence(text="e1", source=MESSAGE)]).memory
    b = ltm.remember("beta", project="p", session="s1").memory
    c = ltm.remember("gamma", project="p", session="s2").memory
    # s2 adds evidence to s1's memory a, and c supersedes b
    ltm.remember("ALPHA", project="p", session="s2", evidence=[make_evidence(text="e2")])
    ltm.forget(b.id, project="p", reason="r", replacement_id=c.id)
    keep = ltm.remember("other project", project="q", session="s1").memory

    ltm.purge_memory(c.id, project="p")
    assert _mentions(store, {memory_iri(c.id).value}) == []
    with pytest.raises(MemoryNotFoundError):
        ltm.purge_memory(c.id, project="p")

    evidence_ids = {e.id for e in ltm.get(a.id).evidence}
    purged = ltm.purge_session("s1", project="p")
    assert set(purged) == {a.id, b.id}
    gone = {memory_iri(a.id).value, memory_iri(b.id).value, session_iri("s1").value} | {
        evidence_iri(e).value for e in evidence_ids
    }
    # s1 of project q is another session record, in another graph: only p's graphs are checked
    assert [m for m in _mentions(store, gone) if "/project/q/" not in m] == []
    assert ltm.get(keep.id).content == "other project"
    assert list(store.quads(session_iri("s1"), None, None, sessions("q")))

    ltm.remember("delta", project="p", session="s3")
    ltm.purge_project("p")
    assert [q for q in data_quads(store) if "/project/p/" in str(q)] == []
    assert list(ltm.iter_memories("p")) == []
    assert [m.id for m in ltm.iter_memories()] == [keep.id]


class Recorder:
    """A MemoryListener that records what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def memory_written(self, memory: Memory) -> None:
        self.events.append(("written", memory.id))

    def memory_retired(self, memory: Memory) -> None:
        self.events.append(("retired", memory.id))

    def memories_purged(self, project: str, memory_ids: Sequence[str] | None) -> None:
        self.events.append(("purged", (project, None if memory_ids is None else list(memory_ids))))


class Broken(Recorder):
    """A listener that fails; writes must still succeed."""

    def memory_written(self, memory: Memory) -> None:
        raise RuntimeError("index down")


def test_listeners_hear_committed_changes(store: EmbeddedStore) -> None:
    rec = Recorder()
    ltm = LongTermMemory(store, listeners=[Broken(), rec], flush_every=1000)
    a = ltm.remember("a", project="p", session="s").memory
    ltm.remember("A", project="p", session="s")
    ltm.forget(a.id, project="p", reason="r")
    b = ltm.remember("b", project="p", session="s").memory
    ltm.note_recalled([b.id], project="p")
    ltm.flush()
    ltm.purge_memory(b.id, project="p")
    ltm.purge_project("p")
    assert rec.events == [
        ("written", a.id), ("written", a.id), ("retired", a.id), ("written", b.id),
        ("written", b.id), ("purged", ("p", [b.id])), ("purged", ("p", None)),
    ]


def test_recall_counts_are_batched(store: EmbeddedStore) -> None:
    ltm = LongTermMemory(store, flush_every=5, flush_interval=60)
    m = ltm.remember("x", project="p", session="s").memory
    updates: list[str] = []
    original = store.update

    def counting_update(sparql: str, **kw: object) -> None:
        updates.append(sparql)
        original(sparql, **kw)  # type: ignore[arg-type]

    store.update = counting_update  # type: ignore[method-assign]
    for _ in range(4):
        ltm.note_recalled([m.id])
    assert updates == []  # nothing written yet
    assert ltm.get(m.id).access_count == 4  # but visible
    ltm.note_recalled([m.id])
    assert len(updates) == 1  # fifth recall: one transaction
    g = long_term("p")
    assert [q.object for q in store.quads(m.iri, JIDO["accessCount"], None, g)] == [Literal(5)]
    assert len(list(store.quads(m.iri, JIDO["lastAccessed"], None, g))) == 1
    ltm.note_recalled([m.id, m.id])
    ltm.close()
    assert len(updates) == 2 and ltm.get(m.id).access_count == 7


def test_recall_counts_flush_after_the_interval(store: EmbeddedStore) -> None:
    import time

    ltm = LongTermMemory(store, flush_every=1000, flush_interval=0.05)
    m = ltm.remember("x", project="p", session="s").memory
    ltm.note_recalled([m.id])
    deadline = time.monotonic() + 5
    g = long_term("p")
    while time.monotonic() < deadline:
        if [q.object for q in store.quads(m.iri, JIDO["accessCount"], None, g)] == [Literal(1)]:
            break
        time.sleep(0.01)
    else:
        pytest.fail("the timed flush did not write the recall count")


def test_session_records_follow_the_life_cycle(ltm: LongTermMemory, store: EmbeddedStore) -> None:
    rec = ltm.records
    rec.started("s9", project="p", agent="bot", at=utc(2025, 1, 1))
    assert rec.status("s9", project="p") is SessionStatus.ACTIVE
    rec.paused("s9", project="p", agent="bot")
    assert rec.status("s9", project="p") is SessionStatus.PAUSED
    rec.closed("s9", project="p", agent="bot", at=utc(2025, 1, 2))
    g, s = sessions("p"), session_iri("s9")
    assert objects(store, s, "hasStatus", g) == [JIDO["SessionClosed"].value]
    assert objects(store, s, "startedAt", g) == ["2025-01-01T00:00:00Z"]
    assert objects(store, s, "endedAt", g) == ["2025-01-02T00:00:00Z"]
    assert objects(store, s, "prov:wasAssociatedWith", g) == ["https://jido.ai/data/agent/bot"]


def test_query_files_have_headers() -> None:
    for name in ("memory_by_content_key", "memory_graph", "session_memories", "session_evidence"):
        text = query_text(name)
        assert text.startswith("# Purpose:") and "# Bound variables:" in text


def test_iter_memories_reads_everything_back(ltm: LongTermMemory) -> None:
    written = {ltm.remember(f"m{i}", project=p, session="s", type=t).memory.id
               for i, (p, t) in enumerate([("a", "fact"), ("b", "risk"), ("a", "bug")])}
    assert {m.id for m in ltm.iter_memories()} == written
    assert {m.type for m in ltm.iter_memories("a")} == {MemoryType.FACT, MemoryType.BUG}

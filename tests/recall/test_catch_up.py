"""IndexCatchUp: instance B's recall index learns what instance A wrote to the one shared store.

Both instances are real LongTermMemory/KeywordIndex pairs over ONE store object; only A's index
hears A's writes, as with two processes on one SPARQL server. B catches up with `catch_up()`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from kg.longterm import LongTermMemory
from kg.recall import KeywordIndex, RecallEngine
from kg.recall.catch_up import BULK_LOAD, OVERLAP, IndexCatchUp
from kg.store import Store


@dataclass
class Instance:
    """One service instance's long-term memory, recall index and engine."""

    memory: LongTermMemory
    index: KeywordIndex
    engine: RecallEngine
    catch_up: IndexCatchUp

    def recalled(self, query: str, project: str = "p1") -> list[str]:
        return [h.memory.content for h in self.engine.recall(project, query, mode="text")]


def make_instance(store: Store, **memory_options: object) -> Instance:
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index], flush_every=1,
                            **memory_options)  # type: ignore[arg-type]
    engine = RecallEngine(store, memory, index=index, record_access=False)
    return Instance(memory, index, engine, IndexCatchUp(store, memory, index, interval=0.05))


@pytest.fixture
def pair(store: Store) -> Iterator[tuple[Instance, Instance]]:
    a, b = make_instance(store), make_instance(store)
    yield a, b
    for instance in (a, b):
        instance.catch_up.stop()
        instance.memory.close()
        instance.index.close()


def test_remembered_on_a_is_recalled_on_b_after_catch_up(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    b.catch_up.catch_up()
    a.memory.remember("Deploys run through GitHub Actions", project="p1", session="s1")
    assert b.recalled("github actions") == []
    report = b.catch_up.catch_up()
    assert (report.changed, report.loaded, report.purged) == (1, 1, 0)
    assert b.recalled("github actions") == ["Deploys run through GitHub Actions"]
    again = b.catch_up.catch_up()  # still inside the overlap: compared, not reloaded
    assert (again.changed, again.loaded) == (1, 0)


def test_forgotten_on_a_disappears_from_b(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    kept = a.memory.remember("The cache is Redis", project="p1", session="s1").memory
    b.catch_up.catch_up()
    assert b.recalled("redis cache") == ["The cache is Redis"]
    a.memory.forget(kept.id, project="p1", reason="moved to memcached")
    assert b.catch_up.catch_up().loaded == 1
    assert b.recalled("redis cache") == []
    assert b.index.fingerprint().retired == 1


def test_purged_on_a_is_dropped_from_b(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    rust = a.memory.remember("Parser written in Rust", project="p1", session="s1").memory
    a.memory.remember("Parser tests use proptest", project="p1", session="s2")
    a.memory.remember("Parser benchmarks use criterion", project="p2", session="s3")
    b.catch_up.catch_up()
    assert b.index.project_counts() == {"p1": 2, "p2": 1}
    a.memory.purge_memory(rust.id, project="p1")
    assert b.catch_up.catch_up().purged == 1
    assert b.recalled("parser") == ["Parser tests use proptest"]
    a.memory.purge_session("s2", project="p1")
    a.memory.purge_project("p2")
    assert b.catch_up.catch_up().purged == 2
    assert b.index.project_counts() == {}
    assert b.recalled("parser") == [] and b.recalled("parser", project="p2") == []


def test_purge_and_remember_in_one_interval(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    old = a.memory.remember("Queue is RabbitMQ", project="p1", session="s1").memory
    b.catch_up.catch_up()
    a.memory.purge_memory(old.id, project="p1")
    a.memory.remember("Queue is NATS", project="p1", session="s1")  # the count stays at one
    report = b.catch_up.catch_up()
    assert (report.loaded, report.purged) == (1, 1)
    assert b.recalled("queue") == ["Queue is NATS"]


def test_access_counts_and_merges_on_a_reach_b(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    made = a.memory.remember("Logs go to Loki", project="p1", session="s1").memory
    b.catch_up.catch_up()
    a.memory.note_recalled([made.id, made.id], project="p1")
    a.memory.flush()
    a.memory.remember("logs go to LOKI", project="p1", session="s2", rationale="one place")
    expected = a.memory.get(made.id, project="p1")
    assert expected.access_count == 3
    assert b.catch_up.catch_up().loaded == 1
    [hit] = b.engine.recall("p1", "loki", mode="text")
    assert hit.memory.access_count == 3 and hit.memory.rationale == "one place"


def test_start_up_with_only_access_counts_behind_does_not_rebuild(
    pair: tuple[Instance, Instance],
) -> None:
    a, b = pair
    made = a.memory.remember("Metrics go to Prometheus", project="p1", session="s1").memory
    assert b.engine.ensure_index(progress=False) is True  # B starts on an empty index
    b.catch_up.catch_up()
    a.memory.note_recalled([made.id], project="p1")
    a.memory.flush()
    assert b.index.fingerprint().access_total != b.engine.store_fingerprint().access_total
    assert b.engine.is_index_current() and b.engine.ensure_index(progress=False) is False
    restarted = IndexCatchUp(b.engine.store, b.memory, b.index)  # B restarts: saved watermark
    assert restarted.catch_up().since == b.catch_up.watermark - OVERLAP  # type: ignore[operator]
    assert b.memory.get(made.id).access_count == 1
    assert b.engine.recall("p1", "prometheus", mode="text")[0].memory.access_count == 1


def test_clock_skew_beyond_the_overlap_is_caught_by_the_counts(store: Store) -> None:
    a = make_instance(store, clock=lambda: datetime.now(UTC) - timedelta(hours=1))
    b = make_instance(store)
    b.catch_up.catch_up()
    a.memory.remember("Search runs on OpenSearch", project="p1", session="s1")
    report = b.catch_up.catch_up()
    assert (report.changed, report.loaded) == (0, 1)  # too old for the watermark; counted
    assert b.recalled("opensearch") == ["Search runs on OpenSearch"]
    for instance in (a, b):
        instance.memory.close()
        instance.index.close()


def test_many_changes_of_a_project_are_read_in_one_go(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    b.catch_up.catch_up()
    for i in range(BULK_LOAD + 5):
        a.memory.remember(f"Service number {i} listens on port {8000 + i}", project="p1",
                          session=f"s{i % 7}")
    report = b.catch_up.catch_up()
    assert (report.changed, report.loaded) == (BULK_LOAD + 5, BULK_LOAD + 5)
    assert b.index.project_counts() == {"p1": BULK_LOAD + 5}
    assert b.recalled("8004")[0] == "Service number 4 listens on port 8004"


def test_the_thread_catches_up_by_itself(pair: tuple[Instance, Instance]) -> None:
    a, b = pair
    b.catch_up.start()
    assert b.catch_up.running
    a.memory.remember("Backups go to S3 nightly", project="p1", session="s1")
    deadline = time.monotonic() + 10
    while b.recalled("backups nightly") == [] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert b.recalled("backups nightly") == ["Backups go to S3 nightly"]
    b.catch_up.stop()
    assert not b.catch_up.running
    assert b.catch_up.failures == 0 and b.index.catch_up_watermark() == b.catch_up.watermark


def test_a_disabled_interval_starts_no_thread(store: Store) -> None:
    index = KeywordIndex(None)
    catch_up = IndexCatchUp(store, LongTermMemory(store), index, interval=0)
    catch_up.start()
    assert not catch_up.running
    catch_up.stop()
    index.close()

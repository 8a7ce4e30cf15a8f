"""The index stays in step with the store: write, forget, purge, rebuild."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from kg.longterm import LongTermMemory
from kg.memory_service import MemoryService
from kg.recall import KeywordIndex, RecallEngine, index_location
from kg.recall.index_schema import fingerprint_sql
from kg.resources import query_text
from kg.settings import Settings
from kg.store import EmbeddedStore
from tests.recall.conftest import Recall


def contents(recall: Recall, query: str, **options: object) -> list[str]:
    return [h.memory.content for h in recall.engine.recall("p1", query, **options)]  # type: ignore[arg-type]


def test_written_memory_is_found(recall: Recall) -> None:
    recall.memory.remember("Deploys run through GitHub Actions", project="p1", session="s1")
    assert contents(recall, "github actions") == ["Deploys run through GitHub Actions"]
    assert contents(recall, "deploy") == ["Deploys run through GitHub Actions"]  # stemming


def test_forget_hides_by_default_but_as_of_before_finds_it(recall: Recall) -> None:
    m = recall.memory.remember("The cache is Redis", project="p1", session="s1").memory
    before = recall.clock.tick()
    recall.clock.tick()
    recall.memory.forget(m.id, project="p1", reason="moved to memcached")
    assert contents(recall, "redis cache") == []
    assert contents(recall, "redis cache", as_of=before) == ["The cache is Redis"]
    assert contents(recall, "redis cache", as_of=m.recorded_at - timedelta(seconds=1)) == []


def test_purge_removes_from_index(recall: Recall) -> None:
    a = recall.memory.remember("Parser written in Rust", project="p1", session="s1").memory
    recall.memory.remember("Parser tests use proptest", project="p1", session="s2")
    recall.memory.purge_memory(a.id, project="p1")
    assert contents(recall, "parser rust") == ["Parser tests use proptest"]
    recall.memory.purge_session("s2", project="p1")
    assert contents(recall, "parser") == []
    recall.memory.remember("Parser again", project="p1", session="s3")
    recall.memory.purge_project("p1")
    assert contents(recall, "parser") == [] and recall.index.fingerprint().count == 0


def test_access_counts_reach_the_index(recall: Recall) -> None:
    recall.memory.remember("Logs go to Loki", project="p1", session="s1")
    recall.engine.recall("p1", "loki")
    recall.memory.flush()
    hit = recall.engine.recall("p1", "loki")[0]
    assert hit.memory.access_count >= 1 and hit.frequency > 0


def test_rebuild_after_losing_the_index_file_gives_identical_results(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"))
    path = index_location(settings)
    assert path == tmp_path / "store.recall.sqlite"
    store = EmbeddedStore(settings.store_path)
    index = KeywordIndex(path)
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    engine = RecallEngine(store, memory, index=index, record_access=False)
    for i, text in enumerate(["Flask app factory", "Flask blueprints per area",
                              "Waitress serves WSGI", "Tests run with pytest and Flask client"]):
        memory.remember(text, project="p1", session=f"s{i % 2}")
    gone = memory.remember("Old flask note", project="p1", session="s0").memory
    memory.forget(gone.id, project="p1", reason="obsolete")
    assert engine.is_index_current()
    before = [(h.memory.id, round(h.score, 4)) for h in engine.recall("p1", "flask tests")]
    index.close()
    path.unlink()
    fresh = KeywordIndex(path)
    engine = RecallEngine(store, memory, index=fresh, record_access=False)
    assert not engine.is_index_current()
    assert engine.ensure_index(progress=False) is True
    assert engine.ensure_index(progress=False) is False
    after = [(h.memory.id, round(h.score, 4)) for h in engine.recall("p1", "flask tests")]
    # Same memories in the same order. Scores may differ: BM25 statistics count replaced
    # documents until tantivy merges their segments, and a rebuilt index has none.
    assert [i for i, _ in after] == [i for i, _ in before] and len(before) == 4
    memory.close()


def test_out_of_date_index_is_rebuilt(recall: Recall) -> None:
    recall.memory.remember("Kept in step", project="p1", session="s1")
    assert recall.engine.is_index_current()
    recall.index.memories_purged("p1", None)  # the index lost a write the store has
    assert not recall.engine.is_index_current()
    assert recall.engine.ensure_index(progress=False)
    assert contents(recall, "step") == ["Kept in step"]


def test_neighbouring_turns_give_context(recall: Recall) -> None:
    recall.memory.remember("We picked a new database last week", project="p1", session="s1")
    recall.memory.remember("It is PostgreSQL 16", project="p1", session="s1")
    recall.memory.remember("PostgreSQL is also used elsewhere", project="p1", session="s9")
    hits = contents(recall, "which database did we pick")
    assert hits[0] == "We picked a new database last week"
    assert "It is PostgreSQL 16" in hits  # found through its neighbour's words


def test_the_fingerprint_reads_a_covering_index_not_the_rows(recall: Recall) -> None:
    """The start-up check must not read every row (at 1M: 1.2 GB of mapped pages in RSS)."""
    recall.memory.remember("Grafana dashboards live in ops/", project="p1", session="s1")
    plan = recall.index.db.execute("EXPLAIN QUERY PLAN " + fingerprint_sql()).fetchall()
    assert any("COVERING INDEX memory_fingerprint" in str(row[-1]) for row in plan), plan
    assert recall.index.fingerprint().count == 1


def test_a_lost_tail_of_writes_is_caught_up_without_a_rebuild(recall: Recall) -> None:
    """Writes that reached the store but not the index (a crash between the two), and a
    forget the index missed, are applied from the store; the index is not rebuilt."""
    kept = recall.memory.remember("Builds run on Buildkite", project="p1", session="s1").memory
    recall.clock.tick()
    blind = LongTermMemory(recall.store, clock=recall.clock)  # writes the index never sees
    lost = blind.remember("Artifacts go to S3", project="p1", session="s2").memory
    blind.remember("Releases are tagged on main", project="p2", session="s1")
    blind.forget(kept.id, project="p1", reason="moved to GitHub Actions")
    blind.close()
    assert not recall.engine.is_index_current()
    assert recall.engine.ensure_index(progress=False) is False  # caught up, not rebuilt
    assert recall.engine.is_index_current()
    assert contents(recall, "artifacts s3") == ["Artifacts go to S3"]
    assert contents(recall, "buildkite") == []
    assert [h.memory.id for h in recall.engine.recall("p1", "s3")] == [lost.id]
    assert [h.memory.content for h in recall.engine.recall("p2", "releases")] == [
        "Releases are tagged on main"]


class _SlowMarkerStore:
    """The real store, whose fingerprint scan (queries/index_marker.rq) waits to be released."""

    def __init__(self, store: EmbeddedStore) -> None:
        self._store = store
        self.scanning = threading.Event()
        self.release = threading.Event()

    def query(self, query: str, *args: Any, **kwargs: Any) -> Any:
        if query == query_text("index_marker") and not self.release.is_set():
            self.scanning.set()
            self.release.wait(30)
        return self._store.query(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_recall_and_writes_go_on_while_the_start_up_check_scans_the_store(
        tmp_path: Path) -> None:
    """The background check scans the store (~26 s at 1M) without the index's lock."""
    settings = Settings(store=str(tmp_path / "store"), embedder="none")
    service = MemoryService.open(settings)
    service.remember("p1", "Alerts page the on-call engineer")
    service.close()
    slow = _SlowMarkerStore(EmbeddedStore(settings.store_path))
    service = MemoryService.open(settings, store=slow)  # type: ignore[arg-type]
    try:
        assert slow.scanning.wait(10)  # the check is in the middle of its store scan
        done = threading.Event()

        def work() -> None:
            service.remember("p1", "Dashboards are in Grafana")
            hits = service.recall("p1", "alerts")
            assert hits[0].memory.content == "Alerts page the on-call engineer"
            done.set()

        worker = threading.Thread(target=work)
        worker.start()
        assert done.wait(10), "recall or remember waited for the store scan"
    finally:
        slow.release.set()
        worker.join(30)
        service.close()
        slow.close()

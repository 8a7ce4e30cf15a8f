"""The recall index's queued writes: read your writes, batches, order, bound, close, crash."""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest

from kg.longterm import LongTermMemory
from kg.memory import Memory
from kg.memory_service import MemoryService
from kg.recall import KeywordIndex, RecallEngine, index_location, wordllama_embedder
from kg.recall.index_search import Filters, IndexSearch
from kg.recall.matrix_file import MatrixFiles
from kg.settings import Settings
from kg.store import EmbeddedStore
from tests.processes import wait_for

ROOT = Path(__file__).resolve().parents[2]
T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def wired(store: EmbeddedStore) -> Iterator[tuple[KeywordIndex, LongTermMemory]]:
    """An in-memory index listening to long-term memory on the test store."""
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    yield index, memory
    memory.close()
    index.close()


# --- every read applies what is queued first -------------------------------------------------
_Call = Callable[[KeywordIndex], object]


def _enter(index: KeywordIndex) -> None:
    with index.reading():
        pass


_INDEX_READS: dict[str, _Call] = {
    "reading": _enter,
    "drain": lambda ix: ix.drain(),
    "built_with": lambda ix: ix.built_with(),
    "is_compatible": lambda ix: ix.is_compatible(),
    "fingerprint": lambda ix: ix.fingerprint(),
    "search_text": lambda ix: ix.search_text("p1", ["note"], limit=5),
    "commit_text": lambda ix: ix.commit_text(),
    "rebuild_text": lambda ix: ix.rebuild_text(),
    "rebuild": lambda ix: list(ix.rebuild([])),
    "memories_accessed": lambda ix: ix.memories_accessed([]),
    "memories_purged": lambda ix: ix.memories_purged("p9", []),
    "project_counts": lambda ix: ix.project_counts(),
    "project_ids": lambda ix: ix.project_ids("p1"),
    "memory_states": lambda ix: ix.memory_states(["x"]),
    "latest_change": lambda ix: ix.latest_change(),
    "catch_up_watermark": lambda ix: ix.catch_up_watermark(),
    "set_catch_up_watermark": lambda ix: ix.set_catch_up_watermark(1.0),
    "close": lambda ix: ix.close(),
}
_INDEX_QUEUES = {"memory_written", "memory_retired"}  # the writes that are queued
_FILTERS = Filters(project="p1", at=T0.timestamp() + 1e9)
_SEARCH_READS: dict[str, Callable[[IndexSearch], object]] = {
    "keyword": lambda s: s.keyword(_FILTERS, ["note"], limit=5),
    "matching": lambda s: s.matching(_FILTERS, [1]),
    "vectors": lambda s: s.vectors([1], project="p1"),
    "records": lambda s: s.records([1]),
    "records_by_id": lambda s: s.records_by_id(["x"]),
    "ordered": lambda s: s.ordered(_FILTERS, "newest", limit=5),
    "project_size": lambda s: s.project_size("p1"),
}
_MATRIX_READS: dict[str, Callable[[MatrixFiles], object]] = {
    "stamp": lambda m: m.stamp("p1"),
    "read": lambda m: m.read("p1"),
    "is_current": lambda m: m.is_current("p1"),
    "from_rows": lambda m: m.from_rows("p1"),
    "repair": lambda m: m.repair(),
}
# MatrixFiles methods that write (inside a write, or of a snapshot) or name a path.
_MATRIX_OTHERS = {"path", "load_versions", "stage", "commit", "snapshot", "reset",
                  "remove_except"}


def _public(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")}


def test_every_read_method_is_listed_here() -> None:
    """A new public method must join a table above: a read drains first, or it queues."""
    assert _public(KeywordIndex) == set(_INDEX_READS) | _INDEX_QUEUES
    assert _public(IndexSearch) == set(_SEARCH_READS)
    assert _public(MatrixFiles) == set(_MATRIX_READS) | _MATRIX_OTHERS


@pytest.mark.parametrize("name", sorted(_INDEX_READS))
def test_each_index_read_applies_queued_writes_first(name: str, store: EmbeddedStore) -> None:
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    with index.writer.hold():  # the thread applies nothing: only the read can
        memory.remember("A queued note", project="p1", session="s1")
        assert index.writer.pending == 1
        _INDEX_READS[name](index)
        assert index.writer.pending == 0
    memory.close()
    index.close()


def test_each_search_and_matrix_read_applies_queued_writes_first(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")  # on disk, with embeddings: matrix files too
    index = KeywordIndex(tmp_path / "store.recall.sqlite", embedder=wordllama_embedder())
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    search = IndexSearch(index)
    reads: list[tuple[str, Callable[[], object]]] = [
        *((name, partial(call, search)) for name, call in _SEARCH_READS.items()),
        *((name, partial(call, index.matrices)) for name, call in _MATRIX_READS.items()),
    ]
    with index.writer.hold():
        for i, (name, read) in enumerate(reads):
            memory.remember(f"Queued note number {i}", project="p1", session="s1")
            assert index.writer.pending == 1
            read()
            assert index.writer.pending == 0, f"{name} read before applying queued writes"
    memory.close()
    index.close()
    store.close()


def test_a_recall_right_after_a_remember_finds_it(store: EmbeddedStore) -> None:
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    engine = RecallEngine(store, memory, index=index, record_access=False)
    with index.writer.hold():
        memory.remember("Invoices are generated by the billing worker", project="p1",
                        session="s1")
        assert [h.memory.content for h in engine.recall("p1", "invoices billing")] == [
            "Invoices are generated by the billing worker"]
    memory.close()
    index.close()


def test_the_thread_applies_writes_with_no_reader(
        wired: tuple[KeywordIndex, LongTermMemory]) -> None:
    index, memory = wired
    memory.remember("Written in the background", project="p1", session="s1")
    wait_for(lambda: index.writer.pending == 0, timeout=30, what="the writer thread")
    assert index.fingerprint().count == 1


# --- order and batches --------------------------------------------------------------------
def test_purge_forget_and_access_counts_follow_the_writes_queued_before_them(
        wired: tuple[KeywordIndex, LongTermMemory]) -> None:
    index, memory = wired
    with index.writer.hold():
        purged = memory.remember("Purged right away", project="p1", session="s1").memory
        memory.purge_memory(purged.id, project="p1")
        forgotten = memory.remember("Forgotten right away", project="p1", session="s1").memory
        memory.forget(forgotten.id, project="p1", reason="wrong")
        counted = memory.remember("Counted right away", project="p1", session="s1").memory
        # The purge applied what came before it; the forget took its memory's place.
        assert index.writer.pending == 2
        index.memories_accessed([(counted.id, 5, T0)])
        assert index.project_ids("p1") == {forgotten.id, counted.id}
        states = index.memory_states([forgotten.id, counted.id])
        assert states == {forgotten.id: (True, None), counted.id: (False, T0.isoformat())}


def _memories(store: EmbeddedStore) -> list[Memory]:
    """Memories of two sessions whose timestamps come out of order (each write moves the
    neighbours of those before it)."""
    writer = LongTermMemory(store)  # no index: the memories are fed to the indexes below
    words = {"s1": ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon"],
             "s2": ["olive", "peach", "plum"]}
    order = {"s1": [0, 3, 6, 1, 4, 2, 5], "s2": [2, 0, 1]}
    found = [writer.remember(f"Note on {words[s][i]}", project="p1", session=s,
                             timestamp=T0 + timedelta(minutes=i)).memory
             for s in ("s1", "s2") for i in order[s]]
    writer.close()
    return found


def _neighbourhoods(index: KeywordIndex, words: list[str]) -> dict[str, set[str]]:
    """Per word: the contents of the memories found by it (its own and its neighbours')."""
    records = IndexSearch(index).records
    return {w: {m.content for m in records(
        [seq for seq, _ in index.search_text("p1", [w], limit=20)]).values()} for w in words}


def test_one_batch_indexes_text_as_one_write_at_a_time_does(store: EmbeddedStore) -> None:
    memories = _memories(store)
    banana = next(m for m in memories if m.content == "Note on banana")
    moved = replace(banana, session="s2")  # it moves to the other session in the same batch
    writes = [*memories, moved]
    batched, single = KeywordIndex(None), KeywordIndex(None)
    with batched.writer.hold():
        for memory in writes:
            batched.memory_written(memory)
        assert batched.drain() == len(memories)  # one write per memory: its last version
    with single.writer.hold():
        for memory in writes:
            single.memory_written(memory)
            assert single.drain() == 1
    words = ["apple", "banana", "cherry", "grape", "lemon", "mango", "melon", "olive", "peach",
             "plum"]
    found = _neighbourhoods(batched, words)
    assert found == _neighbourhoods(single, words)
    # s1 by time: apple cherry grape lemon mango melon; s2: olive banana peach plum.
    assert found["apple"] == {"Note on apple", "Note on cherry", "Note on grape"}
    assert found["lemon"] == {f"Note on {w}" for w in ("cherry", "grape", "lemon", "mango",
                                                        "melon")}
    assert found["banana"] == {f"Note on {w}" for w in ("olive", "peach", "banana", "plum")}
    assert batched.fingerprint() == single.fingerprint()
    assert sorted(batched.project_ids("p1")) == sorted(single.project_ids("p1"))
    assert ({m.id: s for s, m in IndexSearch(batched).records(range(1, 11)).items()}
            == {m.id: s for s, m in IndexSearch(single).records(range(1, 11)).items()})
    batched.close()
    single.close()


def test_a_full_queue_is_applied_by_the_writer_that_fills_it(
        wired: tuple[KeywordIndex, LongTermMemory]) -> None:
    index, memory = wired
    index.writer.limit = 4
    with index.writer.hold():
        for i in range(10):
            memory.remember(f"Bounded note {i}", project="p1", session="s1")
            assert index.writer.pending < 4
        assert index.writer.pending == 2  # 4 + 4 applied by the remembers that filled it
    assert index.fingerprint().count == 10


# --- close and crash -----------------------------------------------------------------------
def test_close_applies_what_is_queued_and_a_second_close_is_harmless(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    path = tmp_path / "store.recall.sqlite"
    index = KeywordIndex(path)
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    with index.writer.hold():
        for i in range(3):
            memory.remember(f"Closing note {i}", project="p1", session="s1")
        index.close()
    index.close()
    assert not index.writer.running
    memory.close()
    reopened = KeywordIndex(path)
    assert reopened.fingerprint().count == 3 and not reopened.text_stale
    assert len(reopened.search_text("p1", ["closing"], limit=5)) == 3
    reopened.close()


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
         "sierra", "tango"]
CHILD = """
import sys
from kg.memory_service import MemoryService
from kg.settings import Settings

words = sys.argv[2].split(",")
service = MemoryService.open(Settings(store=sys.argv[1], embedder="none"))
index = service.recall_engine.index
for word in words[:10]:
    service.remember("p1", f"Applied note on {word}")
index.drain()
with index.writer.hold():  # from here on the writes stay queued until the kill
    for word in words[10:]:
        service.remember("p1", f"Queued note on {word}")
    print(index.writer.pending, flush=True)
    sys.stdin.readline()
"""


def test_writes_queued_at_a_kill_are_restored_by_the_start_up_check(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"), embedder="none", index_check="startup")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(settings.store_path), ",".join(WORDS)], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    line = child.stdout.readline()
    child.send_signal(signal.SIGKILL)
    _, err = child.communicate(timeout=60)
    assert line.strip() == b"10", err.decode()[-2000:]
    assert child.returncode == -signal.SIGKILL
    location = index_location(settings)
    assert location is not None
    index = KeywordIndex(location)
    assert index.fingerprint().count == 10  # the queued writes died with the process
    index.close()
    service = MemoryService.open(settings)  # the start-up check compares and catches up
    try:
        for i, word in enumerate(WORDS):
            hits = service.recall("p1", word, limit=3)
            assert hits[0].memory.content == f"{'Applied' if i < 10 else 'Queued'} note on {word}"
        assert service.recall_engine is not None
        assert service.recall_engine.index.fingerprint().count == 20
    finally:
        service.close()

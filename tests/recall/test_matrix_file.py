"""Per-project embedding files: kept in step with writes, checked on read, rebuilt when wrong."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from kg.longterm import LongTermMemory
from kg.recall import KeywordIndex, RecallEngine, matrix_cache, wordllama_embedder
from kg.recall.matrix_cache import MatrixCache
from kg.recall.matrix_file import matrix_location
from kg.recall.matrix_layout import Matrix
from kg.store import EmbeddedStore

TEXTS = ["The kitten sleeps on the sofa", "Quarterly revenue grew by ten percent",
         "Deploys run through GitHub Actions", "The parser is written in Rust"]


@dataclass
class Disk:
    """An on-disk store and recall index with the offline embedder, reopenable."""

    store: EmbeddedStore
    path: Path
    index: KeywordIndex
    memory: LongTermMemory
    engine: RecallEngine

    def close(self) -> None:
        self.memory.close()
        self.index.close()

    def open(self) -> None:
        self.index = KeywordIndex(self.path, embedder=wordllama_embedder())
        self.memory = LongTermMemory(self.store, listeners=[self.index], flush_every=1)
        self.engine = RecallEngine(self.store, self.memory, index=self.index)

    def reopen(self) -> None:
        self.close()
        self.open()

    def file(self, project: str = "p1") -> Path:
        path = self.index.matrices.path(project)
        assert path is not None
        return path

    def rows(self, project: str = "p1") -> dict[int, bytes]:
        """The int8 embeddings SQLite holds for the project (the truth the files follow)."""
        db = sqlite3.connect(self.path)
        try:
            return dict(db.execute(
                "SELECT seq, embedding FROM memory WHERE project = ?", (project,)).fetchall())
        finally:
            db.close()


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    store = EmbeddedStore(tmp_path / "store")
    path = tmp_path / "store.recall.sqlite"
    index = KeywordIndex(path, embedder=wordllama_embedder())
    memory = LongTermMemory(store, listeners=[index], flush_every=1)
    disk = Disk(store, path, index, memory, RecallEngine(store, memory, index=index))
    for i, text in enumerate(TEXTS):
        memory.remember(text, project="p1", session=f"s{i % 2}")
    memory.remember("Another project's note", project="p2", session="s1")
    assert disk.engine.ensure_index(progress=False) is False  # files came with the writes
    yield disk
    disk.close()


def overwrite(path: Path, data: bytes) -> None:
    """Put `data` in place of the file the way the index does: written beside, renamed over."""
    temporary = path.with_suffix(".damaged")
    temporary.write_bytes(data)
    temporary.replace(path)


def same_as_sqlite(disk: Disk, matrix: Matrix | None, project: str = "p1") -> bool:
    rows = disk.rows(project)
    assert matrix is not None
    return (sorted(rows) == matrix.seqs.tolist()
            and all(rows[s] == bytes(c) for s, c in zip(matrix.seqs.tolist(), matrix.codes,
                                                         strict=True)))


def test_files_sit_beside_the_index_and_survive_a_reopen(disk: Disk) -> None:
    folder = matrix_location(disk.path)
    assert folder == disk.path.parent / "store.recall.vectors"
    assert sorted(p.name[:2] for p in folder.iterdir()) == ["p1", "p2"]
    disk.reopen()
    matrix = disk.index.matrices.read("p1", count=len(TEXTS))
    assert same_as_sqlite(disk, matrix) and len(TEXTS) == len(disk.rows())
    assert disk.engine.repair_matrices() == 0  # nothing to rewrite


def test_writes_append_and_stay_in_step(disk: Disk) -> None:
    disk.memory.remember("Logs go to Loki", project="p1", session="s1")
    # A merge that adds a rationale changes the memory's text, so its embedding: same seq.
    disk.memory.remember(TEXTS[3], project="p1", session="s0", rationale="memory safety")
    matrix = disk.index.matrices.read("p1")
    assert same_as_sqlite(disk, matrix) and matrix is not None
    assert matrix.records == len(TEXTS) + 2  # one appended record per change
    disk.reopen()
    assert same_as_sqlite(disk, disk.index.matrices.read("p1"))


def test_forget_keeps_the_row_and_purges_delete_it(disk: Disk) -> None:
    kitten = disk.engine.recall("p1", "kitten sofa", mode="text")[0].memory
    revenue = disk.engine.recall("p1", "revenue", mode="text")[0].memory
    disk.memory.forget(revenue.id, project="p1", reason="outdated")
    assert same_as_sqlite(disk, disk.index.matrices.read("p1")) and len(disk.rows()) == 4
    disk.memory.purge_memory(kitten.id, project="p1")
    matrix = disk.index.matrices.read("p1")
    assert same_as_sqlite(disk, matrix) and matrix is not None and len(matrix.seqs) == 3
    disk.memory.purge_project("p1")
    empty = disk.index.matrices.read("p1")
    assert empty is not None and len(empty.seqs) == 0 and empty.records == 0
    disk.memory.remember("A fresh start", project="p1", session="s1")
    assert same_as_sqlite(disk, disk.index.matrices.read("p1"))
    assert same_as_sqlite(disk, disk.index.matrices.read("p2"), "p2")  # untouched


def test_a_file_that_missed_a_write_is_stale_and_rebuilt(disk: Disk) -> None:
    before = disk.file().read_bytes()
    disk.memory.remember("Logs go to Loki", project="p1", session="s1")
    disk.index.drain()  # the queued write committed to SQLite and appended
    overwrite(disk.file(), before)  # as if the process died between commit and append
    disk.reopen()
    assert disk.index.matrices.read("p1") is None
    assert disk.engine.ensure_index(progress=False) is False  # SQLite is in step: files only
    assert same_as_sqlite(disk, disk.index.matrices.read("p1"))


def test_a_file_ahead_of_sqlite_is_stale(disk: Disk) -> None:
    disk.memory.remember("Logs go to Loki", project="p1", session="s1")
    # As if SQLite lost its last commit (power cut) while the appended record reached disk.
    with disk.index.lock:
        disk.index.db.execute("UPDATE matrix_version SET version = version - 1")
    disk.index.matrices.load_versions()
    assert disk.index.matrices.read("p1") is None
    assert not disk.index.matrices.is_current("p1")


def test_a_later_append_never_hides_a_lost_one(disk: Disk) -> None:
    before = disk.file().read_bytes()
    disk.memory.remember("Logs go to Loki", project="p1", session="s1")
    disk.index.drain()
    overwrite(disk.file(), before)  # the first append is lost …
    disk.memory.remember("Metrics go to Prometheus", project="p1", session="s1")
    assert disk.index.matrices.read("p1") is None  # … so the next one is not applied on top
    assert same_as_sqlite(disk, MatrixCache(disk.index.matrices).exact("p1"))
    assert same_as_sqlite(disk, disk.index.matrices.read("p1"))  # rewritten from SQLite


@pytest.mark.parametrize("damage", ["torn", "header", "garbage", "empty", "count"])
def test_a_corrupt_file_is_never_used(disk: Disk, damage: str) -> None:
    data = disk.file().read_bytes()
    count = len(TEXTS)
    if damage == "torn":  # a crash in the middle of an append
        overwrite(disk.file(), data[:-100])
    elif damage == "header":
        overwrite(disk.file(), data[:20] + b"X" + data[21:])
    elif damage == "garbage":  # records overwritten with zeros (lost pages after a crash)
        overwrite(disk.file(), data[:512] + bytes(len(data) - 512))
    elif damage == "empty":
        overwrite(disk.file(), b"")
    else:  # well formed, but not the number of rows SQLite holds
        count += 1
    assert disk.index.matrices.read("p1", count=count) is None
    if damage == "count":  # hybrid recall then goes without semantic candidates
        assert MatrixCache(disk.index.matrices).current("p1", count=count) is None
    else:
        assert disk.engine.repair_matrices() == 1
        assert same_as_sqlite(disk, disk.index.matrices.read("p1", count=count))


def test_files_of_an_earlier_index_are_not_used_after_a_rebuild(disk: Disk) -> None:
    old = disk.file().read_bytes()
    disk.engine.rebuild_index(progress=False)
    assert disk.file().read_bytes() != old  # a new epoch
    overwrite(disk.file(), old)
    assert disk.index.matrices.read("p1") is None
    disk.engine.repair_matrices()
    assert same_as_sqlite(disk, disk.index.matrices.read("p1"))


def test_a_deleted_folder_is_rebuilt_from_sqlite(disk: Disk) -> None:
    folder = matrix_location(disk.path)
    assert folder is not None
    for entry in folder.iterdir():
        entry.unlink()
    disk.reopen()
    assert disk.index.matrices.read("p1") is None
    assert disk.engine.ensure_index(progress=False) is False
    assert same_as_sqlite(disk, disk.index.matrices.read("p1"))
    assert same_as_sqlite(disk, disk.index.matrices.read("p2"), "p2")


def test_files_with_many_replaced_rows_are_compacted(disk: Disk,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matrix_cache, "COMPACT_SLACK", 0)
    kitten = disk.engine.recall("p1", "kitten", mode="text")[0].memory
    for i in range(6):  # the same memory's text changes again and again
        disk.index.memory_written(replace(kitten, content=f"The kitten sleeps, take {i}"))
        disk.index.drain()  # each change its own write (a batch would keep the last only)
    assert disk.index.matrices.read("p1") is not None
    cache = MatrixCache(disk.index.matrices)
    matrix = cache.exact("p1")
    assert matrix.records == len(TEXTS) + 6
    for _ in range(100):  # compaction runs on a thread
        compacted = disk.index.matrices.read("p1")
        if compacted is not None and compacted.records == len(TEXTS):
            break
        time.sleep(0.05)
    assert compacted is not None and compacted.records == len(TEXTS)
    assert same_as_sqlite(disk, compacted)


def test_semantic_candidates_come_from_the_file_on_a_cold_start(disk: Disk) -> None:
    disk.reopen()
    hits = disk.engine.recall("p1", "a cat is napping", mode="hybrid", limit=2)
    assert hits and hits[0].memory.content == TEXTS[0]  # no keyword in common: embeddings only
    assert np.isclose(hits[0].semantic, disk.engine.recall(
        "p1", "a cat is napping", mode="semantic", limit=1)[0].semantic)


def test_a_new_project_gets_its_file_with_its_first_memory(disk: Disk) -> None:
    disk.memory.remember("First note of the third project", project="p3", session="s1")
    assert same_as_sqlite(disk, disk.index.matrices.read("p3", count=1), "p3")


def test_an_index_from_before_the_files_gets_them_without_a_rebuild(disk: Disk) -> None:
    disk.close()
    db = sqlite3.connect(disk.path)
    db.executescript("DROP TABLE matrix_version; DELETE FROM meta WHERE key = 'matrix_epoch';")
    db.close()
    folder = matrix_location(disk.path)
    assert folder is not None
    for entry in folder.iterdir():
        entry.unlink()
    folder.rmdir()
    disk.open()
    assert disk.engine.ensure_index(progress=False) is False  # no rebuild from the store
    assert same_as_sqlite(disk, disk.index.matrices.read("p1", count=len(TEXTS)))


def test_candidate_vectors_from_a_current_matrix_equal_sqlites(disk: Disk) -> None:
    search = disk.engine.search
    seqs = sorted(disk.rows())
    from_sqlite = search.vectors([*seqs, 999])
    search.matrices.exact("p1")  # now kept and current
    from_matrix = search.vectors([*seqs, 999], project="p1")
    assert from_sqlite[0] == from_matrix[0] == seqs
    assert np.array_equal(from_sqlite[1], from_matrix[1])


def test_kept_matrices_are_bounded_in_number(disk: Disk, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matrix_cache, "MATRIX_CACHE_ENTRIES", 1)
    cache = MatrixCache(disk.index.matrices)
    first = cache.current("p1")
    assert first is not None and cache.kept("p1") is first
    assert cache.current("p2") is not None
    assert cache.kept("p1") is None and cache.kept("p2") is not None  # p1 left, mapped anew
    again = cache.current("p1")
    assert again is not None and again.seqs.tolist() == first.seqs.tolist()

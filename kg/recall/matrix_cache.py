"""Project embedding matrices for semantic scans, kept in memory (LRU) in front of their files."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from kg.recall.matrix_file import MatrixFiles
from kg.recall.matrix_layout import Matrix

__all__ = ["MATRIX_CACHE_BYTES", "MATRIX_CACHE_ENTRIES", "MatrixCache"]

MATRIX_CACHE_BYTES = 1 << 30  # int8 project matrices (mapped or in memory) kept (LRU)
MATRIX_CACHE_ENTRIES = 256  # … and at most this many (a mapped file holds a descriptor)
COMPACT_SLACK = 1000  # a file is rewritten when it holds this many more than twice the live rows


class MatrixCache:
    """Each project's current matrix: kept, else mapped from its file (~0.5 ms per 10,000
    rows), else built from the SQLite rows (30-40 ms per 10,000: on a thread in hybrid recall)
    and written to the file for next time."""

    def __init__(self, files: MatrixFiles, *, budget: int = MATRIX_CACHE_BYTES) -> None:
        self.files = files
        self.budget = budget
        self._kept: OrderedDict[str, Matrix] = OrderedDict()
        self._lock = threading.Lock()
        self._busy: set[str] = set()  # projects a thread is building or compacting

    def current(self, project: str, *, count: int | None = None) -> Matrix | None:
        """The project's matrix without reading SQLite; a stale kept one (or None) while a
        thread rebuilds it when the file is missing, stale or corrupt (an in-memory index has
        no files to wait for: its matrix is built from the rows now).

        A stale matrix misses only the newest memories (keyword search still finds them) and
        may name purged ones (the filters drop them); hits are scored from SQLite's vectors."""
        kept = self._kept.get(project)
        if kept is not None and kept.stamp == self.files.stamp(project):
            self._touch(project)
            return kept
        found = self._read(project, count)
        if found is not None:
            return found
        if self.files.folder is None:  # an in-memory index: no file to wait for, build now
            return self._build(project)
        self._soon(project, self._build)
        return kept

    def exact(self, project: str, *, count: int | None = None) -> Matrix:
        """The project's current matrix, built from the SQLite rows now if need be."""
        kept = self._kept.get(project)
        if kept is not None and kept.stamp == self.files.stamp(project):
            self._touch(project)
            return kept
        return self._read(project, count) or self._build(project)

    def mapped(self, project: str, *, count: int | None = None) -> Matrix | None:
        """The project's matrix if kept or mapped from a current file; nothing is built (a
        large project's rows from SQLite would hold the index's lock for 100s of ms)."""
        kept = self.kept(project)
        return kept if kept is not None else self._read(project, count)

    def kept(self, project: str) -> Matrix | None:
        """The project's matrix if one is kept and current (nothing is read)."""
        kept = self._kept.get(project)
        return kept if kept is not None and kept.stamp == self.files.stamp(project) else None

    def _read(self, project: str, count: int | None) -> Matrix | None:
        found = self.files.read(project, count=count)
        if found is None:
            return None
        if found.records > 2 * len(found.seqs) + COMPACT_SLACK:  # mostly replaced rows
            self._soon(project, lambda p: self.files.snapshot(p, found))
        return self._keep(project, found)

    def _build(self, project: str) -> Matrix:
        matrix = self.files.from_rows(project)
        self.files.snapshot(project, matrix)
        return self._keep(project, matrix)

    def _soon(self, project: str, job: Callable[[str], object]) -> None:
        """Run `job(project)` on a thread, one at a time per project."""
        with self._lock:
            if project in self._busy:
                return
            self._busy.add(project)

        def run() -> None:
            try:
                job(project)
            finally:
                with self._lock:
                    self._busy.discard(project)

        threading.Thread(target=run, name="recall-matrix", daemon=True).start()

    def _touch(self, project: str) -> None:
        with self._lock:
            if project in self._kept:
                self._kept.move_to_end(project)

    def _keep(self, project: str, matrix: Matrix) -> Matrix:
        # No float32 copy is made: 10 MB of fresh pages per 10,000 rows cost 2-12 ms here
        # (page faults), more than the int8 product loses to a float32 one (~0.6 ms).
        with self._lock:
            kept = self._kept.get(project)
            current = self.files.stamp(project)
            if kept is not None and kept.stamp == current != matrix.stamp:
                return matrix  # a slower thread's older matrix: not kept
            self._kept[project] = matrix
            self._kept.move_to_end(project)
            total = sum(m.nbytes for m in self._kept.values())
            while len(self._kept) > 1 and (total > self.budget
                                           or len(self._kept) > MATRIX_CACHE_ENTRIES):
                _, dropped = self._kept.popitem(last=False)
                total -= dropped.nbytes
        return matrix

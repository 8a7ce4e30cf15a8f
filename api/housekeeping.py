"""Memory housekeeping of a serving process: allocator limits at start-up, then store flushes.

Measured under the reliability soak (docs/benchmarks/reliability.md, "Memory under soak"):
pyoxigraph opens RocksDB with 128 MiB write buffers per column family and never flushes them
on its own before one fills, so every write since the server started stayed resident; glibc
kept tens of MB of freed memory in its arenas (many arenas, and a mmap threshold that slides up
to 32 MiB, so the big blocks tantivy allocates on every commit stayed in the heap); and the
recall index's SQLite page cache (128 MiB per connection) kept every page the index ever wrote.
`limit_process_memory` caps the arenas, fixes the mmap threshold and caps SQLite's heap before
any thread starts. A daemon thread then flushes the store once its write-ahead log has grown by
`flush_bytes`, or `interval` seconds after the last flush, and returns free heap pages to the
kernel. Not more often: every second flush makes RocksDB rewrite each written column family
(level-0 compaction trigger 2), and the blocks of the replaced files stay in the block caches
until evicted (128 MiB for the string dictionary), so frequent flushes kept RSS growing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kg.settings import Settings
from kg.store import EmbeddedStore, Store

__all__ = ["Housekeeper", "limit_process_memory"]

log = logging.getLogger("jido_kg.housekeeping")

_M_ARENA_MAX = -8  # glibc <malloc.h>
_M_MMAP_THRESHOLD = -3
_DEFAULTS = Settings.model_fields  # the server passes its settings; these are theirs
FLUSH_BYTES = int(_DEFAULTS["store_flush_mb"].default) * 1024 * 1024
MMAP_THRESHOLD_KB = int(_DEFAULTS["malloc_mmap_threshold_kb"].default)
CHECK_SECONDS = 1.0  # how often the thread looks at the write-ahead log


class Housekeeper:
    """A daemon thread that flushes a store when enough was written, or after `interval` s."""

    def __init__(self, store: Store, *, interval: float, flush_bytes: int = FLUSH_BYTES,
                 check: float = CHECK_SECONDS) -> None:
        self.store = store
        self.interval = interval
        self.flush_bytes = flush_bytes
        self.check = min(check, interval) if interval > 0 else check
        self.flushes = 0
        self._wal = store.path if isinstance(store, EmbeddedStore) else None
        self._wal_after_flush = self.wal_bytes()
        self._stop = threading.Event()
        self._trim = _malloc_trim()
        self._thread = threading.Thread(target=self._run, name="kg-housekeeping", daemon=True)

    def start(self) -> Housekeeper:
        """Start the thread (not when interval ≤ 0); returns self."""
        if self.interval > 0:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and wait for a flush in progress to end."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def wal_bytes(self) -> int | None:
        """Bytes in the store's write-ahead log files (None for a store without a directory)."""
        if self._wal is None:
            return None
        return sum(_size(f) for f in Path(self._wal).glob("*.log"))

    def due(self, since_flush: float) -> bool:
        """True if `since_flush` seconds or the log's growth since the last flush call for one."""
        if since_flush >= self.interval:
            return True
        wal = self.wal_bytes()
        return (self.flush_bytes > 0 and wal is not None and self._wal_after_flush is not None
                and wal - self._wal_after_flush >= self.flush_bytes)

    def run_once(self) -> None:
        """Flush the store's write buffers to disk, then give free heap pages back."""
        self.store.flush()
        self.flushes += 1
        self._wal_after_flush = self.wal_bytes()
        if self._trim is not None:
            self._trim(0)

    def _run(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(self.check):
            try:
                if self.due(time.monotonic() - last):
                    self.run_once()
                    last = time.monotonic()
            except Exception:  # a closed or failing store: the next request will say so
                log.exception("store housekeeping failed; stopping it")
                return


def limit_process_memory(*, malloc_arenas: int, sqlite_heap_mb: int,
                         mmap_threshold_kb: int = MMAP_THRESHOLD_KB) -> dict[str, int]:
    """Cap glibc's arenas and mmap threshold and SQLite's soft heap (0 leaves one alone)."""
    applied: dict[str, int] = {}
    # An explicit MALLOC_ARENA_MAX / MALLOC_MMAP_THRESHOLD_ (read by glibc) wins over a setting.
    if malloc_arenas > 0 and "MALLOC_ARENA_MAX" not in os.environ:
        mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])
        if mallopt is not None and mallopt(_M_ARENA_MAX, malloc_arenas) == 1:
            applied["malloc_arenas"] = malloc_arenas
    if mmap_threshold_kb > 0 and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        # A fixed threshold also stops glibc from raising it each time a mapped block is freed.
        mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])
        if mallopt is not None and mallopt(_M_MMAP_THRESHOLD, mmap_threshold_kb * 1024) == 1:
            applied["mmap_threshold_kb"] = mmap_threshold_kb
    if sqlite_heap_mb > 0:
        # Process-wide: every connection's page cache reuses its pages past the limit instead of
        # growing (reads of the memory-mapped recall index do not need the cache).
        db = sqlite3.connect(":memory:")
        try:
            db.execute(f"PRAGMA soft_heap_limit = {int(sqlite_heap_mb) * 1024 * 1024}")
        finally:
            db.close()
        applied["sqlite_heap_mb"] = sqlite_heap_mb
    return applied


def _size(path: Path) -> int:
    """A file's size, 0 if RocksDB deleted it meanwhile."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None elsewhere (musl, macOS)."""
    return _libc_function("malloc_trim", [ctypes.c_size_t])


def _libc_function(name: str, argtypes: list[type]) -> Callable[..., int] | None:
    """A glibc function returning int, or None where the C library has no such function."""
    path = ctypes.util.find_library("c")
    try:
        function = getattr(ctypes.CDLL(path), name) if path else None
    except (OSError, AttributeError):
        return None
    if function is None:
        return None
    function.argtypes, function.restype = argtypes, ctypes.c_int
    return function  # type: ignore[no-any-return]

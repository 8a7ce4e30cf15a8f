"""Memory housekeeping of a serving process: allocator limits at start-up, then periodic flushes.

Measured under the reliability soak (docs/benchmarks/reliability.md, "Memory under soak"):
pyoxigraph opens RocksDB with 128 MiB write buffers per column family and never flushes them
on its own before one fills, so every write since the server started stayed resident; glibc
gave each of the ~28 threads' allocations one of up to 8 × cores malloc arenas and kept tens of
MB of freed memory in them; and the recall index's SQLite page cache (128 MiB per connection)
kept every page the index ever wrote. `limit_process_memory` caps the arenas and SQLite's heap
before any thread starts; a daemon thread then flushes the store every `interval` seconds
(cheap when nothing was written) and, on glibc, returns free heap pages to the kernel.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sqlite3
import threading
from collections.abc import Callable

from kg.store import Store

__all__ = ["Housekeeper", "limit_process_memory"]

log = logging.getLogger("jido_kg.housekeeping")

_M_ARENA_MAX = -8  # glibc <malloc.h>


class Housekeeper:
    """A daemon thread that flushes a store and trims the C heap every `interval` seconds."""

    def __init__(self, store: Store, *, interval: float) -> None:
        self.store = store
        self.interval = interval
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

    def run_once(self) -> None:
        """Flush the store's write buffers to disk, then give free heap pages back."""
        self.store.flush()
        if self._trim is not None:
            self._trim(0)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.run_once()
            except Exception:  # a closed or failing store: the next request will say so
                log.exception("store housekeeping failed; stopping it")
                return


def limit_process_memory(*, malloc_arenas: int, sqlite_heap_mb: int) -> dict[str, int]:
    """Cap glibc's malloc arenas and SQLite's soft heap (0 leaves one alone); say what was set."""
    applied: dict[str, int] = {}
    # An explicit MALLOC_ARENA_MAX (read by glibc at start-up) wins over the setting.
    if malloc_arenas > 0 and "MALLOC_ARENA_MAX" not in os.environ:
        mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])
        if mallopt is not None and mallopt(_M_ARENA_MAX, malloc_arenas) == 1:
            applied["malloc_arenas"] = malloc_arenas
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

"""Periodic memory housekeeping of a serving process: flush the store's write buffers, trim malloc.

Measured under the reliability soak (docs/benchmarks/reliability.md, "Memory under soak"):
pyoxigraph opens RocksDB with 128 MiB write buffers per column family and never flushes them
on its own before one fills, so every write since the server started stayed resident (130 MB
of WAL, ~170 MB of live native heap after 4 minutes); and glibc kept tens of MB of freed heap
in its per-thread arenas. A daemon thread flushes the store every `interval` seconds (cheap
when nothing was written) and, on glibc, returns free heap pages to the kernel.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Callable

from kg.store import Store

__all__ = ["Housekeeper"]

log = logging.getLogger("jido_kg.housekeeping")


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


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None elsewhere (musl, macOS)."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None
    if trim is None:
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim

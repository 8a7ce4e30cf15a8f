"""IndexWriter: the recall index's memory writes, queued by the listener and applied in batches.

A remember commits to the store first and then tells the index (kg/longterm/memories.py); the
index only queues the memory here (a few microseconds) and a thread applies everything queued
in one SQLite transaction, re-indexing the text of each affected memory once per batch (a burst
of N memories in one session re-indexes each neighbour once, not N times). A memory queued
twice is written once, with its last version, in the place of its first.

Every read of the index drains the queue first, in the reader's thread and under the index's
lock (`KeywordIndex.reading`): a recall right after a remember sees it. The lock is held from
taking a batch to its commit, so a reader never sees a batch half applied.

A crash loses what is queued, never anything acknowledged: the store committed each memory
before it was queued, and the next start compares the index's fingerprint with the store's
(`RecallEngine.ensure_index`, KG_INDEX_CHECK) and loads what the index lacks
(kg/recall/catch_up.py). Until that check the index may miss the last ≤ QUEUE_LIMIT writes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kg.memory import Memory

__all__ = ["BATCH", "LINGER", "QUEUE_LIMIT", "IndexWriter"]

QUEUE_LIMIT = 10_000  # memories queued at most: a writer that finds it full drains it itself
BATCH = 256  # the thread applies a batch once this many are queued …
LINGER = 0.02  # … or this many seconds after the first of them came
log = logging.getLogger(__name__)


class IndexWriter:
    """A bounded queue of memories to write and the thread that applies them with `apply`.

    `lock` is the index's lock: a batch is taken and applied under it. Call `close()` without
    holding it (the thread may be waiting for it)."""

    def __init__(self, apply: Callable[[list[Memory]], None], lock: threading.RLock, *,
                 limit: int = QUEUE_LIMIT) -> None:
        self.apply = apply
        self.lock = lock
        self.limit = limit
        self._queue: dict[str, Memory] = {}  # by id: the last version, at its first place
        self._ready = threading.Condition(threading.Lock())
        self._held = 0  # hold() nesting: the thread applies nothing meanwhile
        self._stopped = False
        self._draining = False  # under `lock`: a drain inside `apply` is a no-op
        self._thread = threading.Thread(target=self._run, name="recall-index-writer",
                                        daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        """How many memories are queued (not yet applied)."""
        return len(self._queue)

    @property
    def running(self) -> bool:
        """True until `close()` has stopped the thread."""
        return self._thread.is_alive()

    def put(self, memory: Memory) -> None:
        """Queue one memory and wake the thread; drain here if the queue is full (or closed)."""
        with self._ready:
            stopped = self._stopped
            if not stopped:
                self._queue[memory.id] = memory
                if len(self._queue) in (1, BATCH):  # the thread waits for these two
                    self._ready.notify()
            full = len(self._queue) >= self.limit
        if stopped:  # after close: applied now, failing as a closed index does
            with self.lock:
                self.apply([memory])
        elif full:
            self.drain()

    def drain(self) -> int:
        """Apply everything queued now, in the caller's thread; returns how many memories."""
        return self._drain(background=False)

    def _drain(self, *, background: bool) -> int:
        with self.lock:
            if self._draining:
                return 0
            with self._ready:
                if background and self._held:  # held since the thread woke: not now
                    return 0
                batch, self._queue = list(self._queue.values()), {}
            if not batch:
                return 0
            self._draining = True
            try:
                self._apply(batch)
            finally:
                self._draining = False
            return len(batch)

    def _apply(self, batch: list[Memory]) -> None:
        """One transaction; if it fails, one per memory, so one bad memory costs only itself."""
        try:
            self.apply(batch)
            return
        except Exception:
            if len(batch) == 1:
                log.exception("recall index: writing memory %s failed", batch[0].id)
                return
        for memory in batch:
            try:
                self.apply([memory])
            except Exception:  # the store has it: the next check of the index loads it
                log.exception("recall index: writing memory %s failed", memory.id)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """While held, the thread applies nothing (readers and a full queue still drain)."""
        with self._ready:
            self._held += 1
        try:
            yield
        finally:
            with self._ready:
                self._held -= 1
                self._ready.notify()

    def close(self) -> None:
        """Stop the thread and apply what is queued; a second call does nothing more."""
        with self._ready:
            self._stopped = True
            self._ready.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.drain()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._stopped and (not self._queue or self._held):
                    self._ready.wait()
                # Let a burst gather: one batch re-indexes a neighbour once for all of it.
                deadline = time.monotonic() + LINGER
                while not self._stopped and len(self._queue) < BATCH and (
                        left := deadline - time.monotonic()) > 0:
                    self._ready.wait(left)
                if self._stopped:
                    return
            self._drain(background=True)

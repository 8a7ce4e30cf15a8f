"""Batched access tracking: recalls are counted in memory and written in one transaction per flush.

A recall must not become a write storm, so `AccessTracker.note` only adds to an in-process
table. The table is handed to the flush callback when it holds `flush_every` recalls, when
`flush_interval` seconds have passed since the first unflushed recall (a one-shot timer), or on
`flush()`/`close()`. `note(..., background=True)` (ranked recall) hands a full batch to a daemon
thread instead, so the caller never waits for the write. A failed flush puts its batch back,
so no recall is lost.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

__all__ = ["AccessDelta", "AccessTracker"]

_log = logging.getLogger(__name__)


@dataclass(slots=True)
class AccessDelta:
    """Recalls of one memory not yet written: how many, the latest time, and its project."""

    count: int
    last: datetime
    project: str | None


FlushCallback = Callable[[dict[str, AccessDelta]], None]


class AccessTracker:
    """Accumulates recalls per memory id and flushes them in batches."""

    def __init__(
        self,
        flush: FlushCallback,
        *,
        flush_every: int = 1000,
        flush_interval: float = 5.0,
    ) -> None:
        if flush_every < 1 or flush_interval <= 0:
            raise ValueError("flush_every must be ≥ 1 and flush_interval > 0")
        self._flush = flush
        self.flush_every = flush_every
        self.flush_interval = flush_interval
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._pending: dict[str, AccessDelta] = {}
        self._noted = 0
        self._timer: threading.Timer | None = None
        self._worker: threading.Thread | None = None
        self._closed = False

    def note(self, memory_ids: Iterable[str], *, at: datetime, project: str | None,
             background: bool = False) -> None:
        """Count one recall of each id; flush if the batch is full (on a thread if background)."""
        full = False
        with self._lock:
            for memory_id in memory_ids:
                delta = self._pending.get(memory_id)
                if delta is None:
                    self._pending[memory_id] = AccessDelta(1, at, project)
                else:
                    delta.count += 1
                    delta.last = max(delta.last, at)
                    delta.project = delta.project or project
                self._noted += 1
            full = self._noted >= self.flush_every
            if not full and self._pending and self._timer is None and not self._closed:
                self._timer = threading.Timer(self.flush_interval, self._timed_flush)
                self._timer.daemon = True
                self._timer.start()
        if full and background:
            self._flush_soon()
        elif full:
            self.flush()

    def _flush_soon(self) -> None:
        """Flush on a daemon thread, so the caller (a recall) does not wait for the write."""
        with self._lock:
            if self._worker is not None and self._worker.is_alive():
                return  # the running flush picks up this batch too (it loops while full)
            self._worker = threading.Thread(target=self._background_flush, daemon=True,
                                            name="access-flush")
            self._worker.start()

    def _background_flush(self) -> None:
        try:
            while True:
                self.flush()
                with self._lock:
                    if self._noted < self.flush_every:
                        return
        except Exception:  # no caller to tell; the batch is kept for the next flush
            _log.exception("flushing recall counts failed; they stay pending")

    def peek(self, memory_id: str) -> AccessDelta | None:
        """The unflushed recalls of one memory, if any."""
        with self._lock:
            return self._pending.get(memory_id)

    def discard(
        self, memory_ids: Iterable[str] | None = None, *, project: str | None = None
    ) -> None:
        """Drop unflushed recalls of purged memories (by id, or every one of a project)."""
        with self._lock:
            if memory_ids is not None:
                for memory_id in memory_ids:
                    self._pending.pop(memory_id, None)
            if project is not None:
                # Ids noted without a project are checked at flush time (a purged one is skipped).
                self._pending = {k: v for k, v in self._pending.items() if v.project != project}

    def flush(self) -> int:
        """Write the unflushed recalls now (one transaction); return how many memories."""
        with self._flush_lock:
            with self._lock:
                batch, self._pending, self._noted = self._pending, {}, 0
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            if not batch:
                return 0
            try:
                self._flush(batch)
            except BaseException:
                with self._lock:
                    for memory_id, delta in batch.items():
                        newer = self._pending.get(memory_id)
                        if newer is not None:
                            delta.count += newer.count
                            delta.last = max(delta.last, newer.last)
                        self._pending[memory_id] = delta
                raise
            return len(batch)

    def close(self) -> None:
        """Flush what is left and stop the timer."""
        with self._lock:
            self._closed = True
            worker = self._worker
        if worker is not None:
            worker.join()
        self.flush()

    def _timed_flush(self) -> None:
        with self._lock:
            self._timer = None
        try:
            self.flush()
        except Exception:  # a background flush has no caller to tell; the batch is kept
            _log.exception("flushing recall counts failed; they stay pending")

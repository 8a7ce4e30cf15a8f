"""The fast lane: one connection thread at a time answers a plain GET query, for a bounded wait.

It serves connections that have threads of their own (those that once asked the app for
something; the parked ones are answered by the poller alone, api/poller.py). A small query's
answer is mostly Python: the threads of eight busy keep-alive clients spend more time handing
the interpreter lock to each other than running (12 context switches per query, and 309 µs of
server CPU per query where one client alone costs 175; docs/benchmarks/sparql.md). Taking turns
on one lock first, the others sleep on it instead of waking for every release of the
interpreter lock: 208 µs per query, 27 % more queries per second to 8 client processes.

A turn is never a wait without end: a query that runs long (or a client slow to read a large
answer) keeps its turn, and whoever finds the lane held for longer than `patience` goes on
without it, at once; a request waits at most `patience` for its turn.
"""

from __future__ import annotations

import threading
import time

__all__ = ["PATIENCE_SECONDS", "Lane"]

# A small query holds the lane ~0.2 ms; eight of them queued take ~1.6 ms.
PATIENCE_SECONDS = 0.002


class Lane:
    """A lock whose waiters give up once its holder has held it longer than `patience`."""

    def __init__(self, *, patience: float = PATIENCE_SECONDS) -> None:
        self.patience = patience
        self._lock = threading.Lock()
        self._since = 0.0  # when the current holder took its turn (time.monotonic)

    def enter(self) -> bool:
        """Take a turn: True once it is ours, False to go on without one (release only if True)."""
        if not self._lock.acquire(blocking=False):
            wait = self._since + self.patience - time.monotonic()
            if wait <= 0 or not self._lock.acquire(timeout=wait):
                return False
        self._since = time.monotonic()
        return True

    def leave(self) -> None:
        """End a turn taken by `enter`."""
        self._lock.release()

"""A watchdog thread that acts for work still running at its deadline (it cannot stop it)."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["POLL_SECONDS", "Watchdog"]

log = logging.getLogger("jido_kg.watchdog")

# How late past a deadline the watchdog may act. It polls rather than being woken, because
# waking a thread on every watched query costs more under the GIL than the query itself.
POLL_SECONDS = 0.05


class Watchdog:
    """Calls `on_expiry` of each watched piece of work whose deadline passes before it ends."""

    def __init__(self, *, poll: float = POLL_SECONDS) -> None:
        self._poll = poll
        # Single dict operations are atomic under the GIL: `watch` and `release` take no lock,
        # and whoever pops an entry first (release, or the watchdog at expiry) owns it.
        self._active: dict[int, tuple[float, Callable[[], object]]] = {}
        self._ids = itertools.count()
        self._started = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: float, on_expiry: Callable[[], object]) -> int:
        """Watch until `deadline` (time.monotonic); returns the ticket to `release`."""
        ticket = next(self._ids)
        self._active[ticket] = (deadline, on_expiry)
        if self._thread is None:
            with self._started:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="kg-watchdog",
                                                    daemon=True)
                    self._thread.start()
        return ticket

    def release(self, ticket: int) -> None:
        """The work ended: stop watching it (a no-op once its expiry has been acted on)."""
        self._active.pop(ticket, None)

    def _run(self) -> None:
        while True:
            time.sleep(self._poll)
            if not self._active:
                continue
            now = time.monotonic()
            for ticket, (deadline, _) in list(self._active.items()):
                if deadline > now:
                    continue
                entry = self._active.pop(ticket, None)
                if entry is None:  # released meanwhile
                    continue
                try:
                    entry[1]()
                except Exception:  # one failing callback must not stop the others' deadlines
                    log.exception("a deadline callback failed")

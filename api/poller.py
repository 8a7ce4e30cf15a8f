"""The poller: one thread answers the plain GET queries of every idle keep-alive connection.

A thread per connection pays for its waits in context switches: under eight busy keep-alive
clients the connection threads made ~4.6 switches per small query, even taking turns in the
lane (api/lane.py), where Oxigraph's server makes one, and each costs the interpreter lock's
hand-over too (docs/benchmarks/sparql.md). So a connection waiting for its next request is
*parked* in one selector instead, and a single polling thread answers what arrives, one request
after another, in itself: no thread wakes for a request but the one already awake.

Only what is quick stays in it. A request that is not a GET, one that Flask must answer, and a
refusal that must read on are *handed off*: from then on the connection has a thread of its own
(api/connection.py), as every connection had before. And a query that runs long must not hold
up the rest: a monitor looks every `patience` seconds, and a poller busy with one request for
longer than that is replaced by a new polling thread at once. The old one finishes its request
(a runaway's caller had its 504 from the watchdog already), parks its connection and ends.

Having answered a request, the poller *spins* for `spin` seconds (KG_POLL_SPIN_US) before it
sleeps: it asks epoll without waiting, yielding the core to any other runnable process between
looks. A client that sends its next request within that time has it read at once; a thread
that sleeps instead takes ~50–100 µs to wake on this machine's virtual cores, with its caches
cold (docs/benchmarks/sparql.md, "Spinning before sleeping"). It spins only while `quiet()`
says no connection has a thread of its own: those threads need the interpreter lock, which a
spinning poller would keep from them for up to its switch interval.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from api.lane import PATIENCE_SECONDS

if TYPE_CHECKING:
    from api.connection import Connection

__all__ = ["Poller", "polling_available"]

log = logging.getLogger("jido_kg.server")

# How often at most the idle connections are looked at for their keep-alive timeout.
_SWEEP_SECONDS = 0.5
# epoll itself, not the selectors module: a one-shot registration hands each readable socket to
# one poller only (even to an old one and its replacement at once) and is re-armed with a
# single call, where selectors costs a registration and a removal in Python per request.
_EPOLL = getattr(select, "epoll", None)
_ARMED = getattr(select, "EPOLLIN", 0) | getattr(select, "EPOLLONESHOT", 0)


def polling_available() -> bool:
    """Whether this platform has epoll (Linux); elsewhere every connection has a thread."""
    return _EPOLL is not None


class Poller:
    """Parks idle connections and answers their GET queries from one thread (module docstring).

    `hand_off(connection, then)` gives a connection a thread of its own, which runs `then()`
    (True: go on serving it) first; `forget(connection)` is told of every connection closed here.
    """

    def __init__(self, *, idle_seconds: float,
                 hand_off: Callable[[Connection, Callable[[], bool]], None],
                 forget: Callable[[Connection], None],
                 patience: float = PATIENCE_SECONDS, spin: float = 0.0,
                 quiet: Callable[[], bool] = lambda: True) -> None:
        self._idle, self._hand_off, self._forget = idle_seconds, hand_off, forget
        self._patience = patience
        self._spin, self._quiet = spin, quiet
        self.caught = 0  # requests found while spinning (tests/test_poller_unit.py)
        self._sweep_every = min(_SWEEP_SECONDS, idle_seconds / 4)
        assert _EPOLL is not None, "the poller needs epoll (polling_available())"
        self._epoll = _EPOLL()
        self._registered: dict[int, Connection] = {}  # fd -> connection, armed or not
        # Whoever pops a connection from here first serves it: one polling thread only.
        self._parked: dict[Connection, float] = {}  # -> when it was parked (time.monotonic)
        self._lock = threading.Lock()
        self._owner: threading.Thread | None = None  # the thread polling now
        self._pollers: set[threading.Thread] = set()  # every polling thread still running
        self._busy_since = 0.0  # when the owner began its request (0: it is waiting)
        self._monitoring = threading.Event()  # set while there is something to watch
        self._closing_at: float | None = None  # after this, parked connections are closed
        self._wake, self._wake_in = socket.socketpair()
        self._wake_in.setblocking(False)
        self._epoll.register(self._wake_in.fileno(), select.EPOLLIN)

    @property
    def threads(self) -> frozenset[threading.Thread]:
        """The polling threads still running (the old ones finishing a long request too)."""
        return frozenset(self._pollers)

    def park(self, connection: Connection) -> None:
        """Wait for `connection`'s next request here (it is answered by the polling thread)."""
        if self._closing_at is not None and time.monotonic() >= self._closing_at:
            self._close(connection)
            return
        self._parked[connection] = time.monotonic()
        fd = connection.fd
        try:
            if fd in self._registered:
                self._epoll.modify(fd, _ARMED)
            else:
                self._registered[fd] = connection
                self._epoll.register(fd, _ARMED)
        except (OSError, ValueError):  # closed meanwhile
            if self._parked.pop(connection, None) is not None:
                self._close(connection)
            return
        if self._owner is None:
            with self._lock:
                if self._owner is None:
                    self._start_poller()
                    threading.Thread(target=self._monitor, name="kg-poller-monitor",
                                     daemon=True).start()
        if not self._monitoring.is_set():
            self._monitoring.set()

    def close_at(self, when: float) -> None:
        """Stop waiting at `when` (time.monotonic): close every connection parked then."""
        self._closing_at = when
        self._monitoring.set()  # the monitor ends once the pollers have
        with contextlib.suppress(OSError):
            self._wake.send(b"x")

    # -- the polling threads --------------------------------------------------------------------

    def _start_poller(self) -> None:
        """Make a new thread the poller (under `_lock`); the old one, if any, ends after its
        request."""
        thread = threading.Thread(target=self._poll, name="kg-poller", daemon=True)
        self._owner, self._busy_since = thread, 0.0
        self._pollers.add(thread)
        thread.start()

    def _poll(self) -> None:
        me = threading.current_thread()
        wake = self._wake_in.fileno()
        next_sweep = time.monotonic() + self._sweep_every
        poll = self._epoll.poll
        served = False
        try:
            while self._owner is me:
                events = self._spun() if served and self._spin > 0 else None
                served = False
                # One at a time: a socket taken from the kernel in a batch would wait, disarmed,
                # behind a long request of this thread, even after a new poller took over.
                for fd, _ in events or poll(self._sweep_every, 1):
                    if self._owner is not me:  # replaced meanwhile: re-arm it for the new one
                        self._rearm(fd)
                    elif fd == wake:
                        self._drain_wake()
                    elif (connection := self._registered.get(fd)) is not None and \
                            self._parked.pop(connection, None) is not None:
                        self._serve(connection, me)
                        served = True
                now = time.monotonic()
                if now >= next_sweep or (self._closing_at is not None
                                         and now >= self._closing_at):
                    next_sweep = now + self._sweep_every
                    if self._sweep(now) and self._owner is me:
                        return
        finally:
            self._pollers.discard(me)

    def _spun(self) -> list[tuple[int, int]] | None:
        """Look for the next event without sleeping for up to `spin` s (module docstring)."""
        if not self._quiet():
            return None
        poll, clock, pause = self._epoll.poll, time.perf_counter, os.sched_yield
        until = clock() + self._spin
        while clock() < until:
            events: list[tuple[int, int]] = poll(0, 1)
            if events:
                self.caught += 1
                return events
            pause()
        return None

    def _rearm(self, fd: int) -> None:
        connection = self._registered.get(fd)
        if connection is not None and connection in self._parked:
            with contextlib.suppress(OSError):
                self._epoll.modify(fd, _ARMED)

    def _serve(self, connection: Connection, me: threading.Thread) -> None:
        self._busy_since = time.monotonic()
        try:
            outcome = connection.serve_polled()
        except Exception:
            outcome = False
            log.exception("a connection failed")
        finally:
            if self._owner is me:
                self._busy_since = 0.0
        if outcome is True:
            self.park(connection)
        elif outcome is False:
            self._close(connection)
        else:
            self._unregister(connection)
            self._hand_off(connection, outcome)

    def _sweep(self, now: float) -> bool:
        """Close connections idle past their timeout (all of them once closing); True when
        closing and none is left."""
        closing = self._closing_at is not None and now >= self._closing_at
        for connection, since in list(self._parked.items()):
            if (closing or now - since > self._idle) and \
                    self._parked.pop(connection, None) is not None:
                self._close(connection)
        return closing and not self._parked

    def _unregister(self, connection: Connection) -> None:
        if self._registered.pop(connection.fd, None) is not None:
            with contextlib.suppress(OSError, ValueError):
                self._epoll.unregister(connection.fd)

    def _close(self, connection: Connection) -> None:
        self._unregister(connection)
        connection.close()
        self._forget(connection)

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_in.recv(4096)

    # -- the monitor ----------------------------------------------------------------------------

    def _monitor(self) -> None:
        """Replace a poller busy with one request for longer than `patience`."""
        while True:
            self._monitoring.wait()
            time.sleep(self._patience)
            since = self._busy_since
            if since and time.monotonic() - since > self._patience:
                with self._lock:
                    if self._busy_since == since:  # the same request still
                        self._start_poller()
            if self._closing_at is not None:  # watch on until the pollers have ended
                if not self._pollers:
                    return
                continue
            self._monitoring.clear()  # then looked at again: a park in between sets it anew
            if self._parked or self._busy_since:
                self._monitoring.set()

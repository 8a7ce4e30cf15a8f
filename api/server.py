"""The HTTP server of a worker process: a polling thread for queries, a thread per busy connection.

An accepted connection is parked in the poller (api/poller.py), whose one thread answers the
plain GET queries of every parked connection in itself: a small query costs no hand-off between
threads at all, which is what decides throughput under the GIL (see docs/benchmarks/sparql.md).
Any other request moves its connection to a thread of its own (api/connection.py). Connections
beyond `KG_MAX_CONNECTIONS` get a JSON 503 and close. `jido-kg serve` runs this in a worker
process under a supervisor that owns the socket (api/supervisor.py, api/worker.py); `serve`
runs it in the calling process instead."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Collection
from functools import partial
from http import HTTPStatus
from typing import TYPE_CHECKING

from flask import Flask

from api.bridge import Shortcut, refusal
from api.budget import BudgetGate
from api.connection import Connection, Limits
from api.fast_path import fast_path
from api.lane import Lane
from api.poller import Poller, polling_available
from kg.settings import Settings

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

__all__ = ["MAX_HEAD_BYTES", "WORKER_STACK_BYTES", "HttpServer", "bind", "serve"]

log = logging.getLogger("jido_kg.server")

# pyoxigraph parses recursively on the calling thread's stack; a large reserved stack (virtual
# memory, not resident) keeps deep but legal queries from overflowing it. The nesting guard in
# kg.store.guard rejects the pathological ones before they reach the parser.
WORKER_STACK_BYTES = 256 * 1024 * 1024
# A long GET query must reach the app (for its JSON 400), so the request line and headers may
# be long; 2 MiB still bounds what one request head can hold in memory.
MAX_HEAD_BYTES = 2 * 1024 * 1024
# Connections the kernel queues for the worker to accept: while a worker is being replaced,
# clients wait here (the supervisor holds the socket open).
BACKLOG = 2048
_TICK_SECONDS = 0.5  # how long the accept loop sleeps before it looks at `stopping` again
# How long a draining server still answers a request arriving on a kept-alive connection
# before it closes the connections that stayed idle (docs/sparql.md, "Processes").
IDLE_LINGER = 0.5


class HttpServer:
    """Accepts connections on a bound socket and serves each in a thread of its own."""

    def __init__(self, settings: Settings, listener: socket.socket, *, app: Flask,
                 gate: BudgetGate | None = None) -> None:
        self.listener = listener
        self.app = app
        self.max_connections = settings.max_connections
        self.limits = Limits(max_head_bytes=MAX_HEAD_BYTES,
                             max_body_bytes=settings.max_body_bytes,
                             idle_seconds=settings.keep_alive_timeout)
        self.stopping = threading.Event()
        # Every open connection, with its own thread once it has one (None: parked in the
        # poller, which answers its queries).
        self._connections: dict[Connection, threading.Thread | None] = {}
        self._threaded = 0  # how many of them have a thread
        self._lock = threading.Lock()
        # The runaway budget (api/budget.py) sees every request first.
        self._shortcut: Shortcut = partial(fast_path(app).answer_here, gate=gate)
        self._wsgi: WSGIApplication = app.wsgi_app
        if gate is not None:
            self._wsgi = gate.wrap_app(self._wsgi)
        self._app_slots = threading.BoundedSemaphore(settings.threads)
        self._lane = Lane()
        self._poller = Poller(idle_seconds=settings.keep_alive_timeout, hand_off=self._hand_off,
                              forget=self._forget, spin=settings.poll_spin_us / 1e6,
                              quiet=self._quiet) if polling_available() else None

    @property
    def address(self) -> tuple[str, int]:
        """The host and port the server listens on."""
        host, port = self.listener.getsockname()[:2]
        return str(host), int(port)

    def serve_forever(self, *, tick: Callable[[], object] | None = None) -> None:
        """Accept until `stop` is called; `tick` runs between accepts (every 0.5 s at most)."""
        self.listener.listen(BACKLOG)
        while not self.stopping.is_set():
            if tick is not None:
                tick()
            try:
                readable, _, _ = select.select([self.listener], [], [], _TICK_SECONDS)
            except InterruptedError:
                continue
            if not readable or self.stopping.is_set():
                continue
            try:
                sock, address = self.listener.accept()
            except OSError:
                continue
            self._start(sock, address)

    def _start(self, sock: socket.socket, address: tuple[str, int]) -> None:
        with self._lock:
            full = len(self._connections) >= self.max_connections
        if full:
            _refuse(sock, self.max_connections)
            return
        connection = Connection(sock, address, app=self._wsgi,
                                shortcut=self._shortcut, limits=self.limits,
                                server=self.address, stopping=self.stopping,
                                app_slots=self._app_slots, lane=self._lane)
        try:
            connection.prepare()
        except OSError:  # the client is gone already
            connection.close()
            return
        if self._poller is None:
            self._hand_off(connection, lambda: True)
            return
        with self._lock:
            self._connections[connection] = None
        self._poller.park(connection)  # its requests are read by the poller (api/poller.py)

    def _hand_off(self, connection: Connection, then: Callable[[], bool]) -> None:
        """Serve `connection` in a thread of its own from now on, starting with `then`."""
        thread = threading.Thread(target=self._serve, args=(connection, then), name="kg-http",
                                  daemon=True)
        with self._lock:
            if self._connections.get(connection) is None:
                self._threaded += 1
            self._connections[connection] = thread
        thread.start()

    def _serve(self, connection: Connection, then: Callable[[], bool]) -> None:
        try:
            connection.run(then)
        except Exception:
            log.exception("a connection failed")
        finally:
            self._forget(connection)

    def _forget(self, connection: Connection) -> None:
        with self._lock:
            if self._connections.pop(connection, None) is not None:
                self._threaded -= 1

    @property
    def threaded(self) -> int:
        """How many connections have a thread of their own (the poller spins while none has)."""
        return self._threaded

    def _quiet(self) -> bool:
        """No connection has a thread of its own (the poller may spin, api/poller.py)."""
        return self._threaded == 0

    def stop(self) -> None:
        """Stop accepting; tell every connection to close after its request in flight."""
        self.stopping.set()

    def drain(self, timeout: float, *, skip: Collection[int] = ()) -> int:
        """After `stop`: let requests in flight finish within `timeout` s; close the rest.

        A kept-alive connection that sends its next request within the first `IDLE_LINGER`
        seconds has it answered (with `Connection: close`); one still idle then is closed, so
        only a request sent at that instant meets a closed connection (unanswered, and not
        done). Connections served by a thread in `skip` (idents of threads running a runaway
        query, whose caller has had its 504) are not waited for. Returns how many were still
        busy at the end.
        """
        started = time.monotonic()
        deadline = started + timeout
        with contextlib.suppress(OSError):
            self.listener.close()
        linger = min(started + IDLE_LINGER, deadline)
        if self._poller is not None:  # it answers what comes until then, and closes the rest
            self._poller.close_at(linger)
        with self._lock:
            connections = {c: t for c, t in self._connections.items()
                           if t is not None and t.ident not in skip}
        for thread in connections.values():
            thread.join(timeout=max(linger - time.monotonic(), 0.0))
        for connection, thread in connections.items():
            if thread.is_alive() and not connection.busy and not _readable(connection.sock):
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RD)
        pollers = self._poller.threads if self._poller is not None else frozenset()
        threads = [*connections.values(), *(t for t in pollers if t.ident not in skip)]
        busy = 0
        for thread in threads:
            thread.join(timeout=max(deadline - time.monotonic(), 0.0))
            busy += thread.is_alive()
        return busy


def _readable(sock: socket.socket) -> bool:
    """True if bytes (or the client's close) wait on the socket."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(readable)


def _refuse(sock: socket.socket, limit: int) -> None:
    """Answer a connection over the limit with a JSON 503 and close it."""
    status, headers, body = refusal(503, "too_many_connections",
                                    f"the server holds {limit} connections already; retry later")
    assert isinstance(body, bytes)
    head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            f"Content-Type: {headers[0][1]}\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n")
    try:
        sock.settimeout(1.0)
        sock.sendall(head.encode() + body)
    except OSError:
        pass
    finally:
        sock.close()


def serve(settings: Settings, *, listener: socket.socket | None = None,
          ready: threading.Event | None = None) -> None:
    """Serve in this process until SIGINT/SIGTERM (no supervisor: a runaway stops it, drained).

    `jido-kg serve` runs the same server in a worker process under a supervisor instead.
    """
    from api.worker import Worker

    # The socket first: a port in use must fail before the store directory, the recall index
    # or anything else exists on disk.
    if listener is None:
        listener = bind(settings.host, settings.port)
    try:
        Worker(settings, listener).run_here(ready=ready)
    finally:
        listener.close()


def bind(host: str, port: int) -> socket.socket:
    """Return a socket bound to host:port (not yet listening); OSError if it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError:
        listener.close()
        raise
    return listener

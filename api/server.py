"""Runs the app: one process (the store has one writer) and one thread per client connection.

A thread per connection answers each request where it was read: a small GET query costs no
hand-off between threads at all, which is what decides throughput under the GIL (see
docs/benchmarks/sparql.md). Connections beyond `KG_MAX_CONNECTIONS` get a JSON 503 and close.
"""

from __future__ import annotations

import contextlib
import logging
import select
import signal
import socket
import sys
import threading
from types import FrameType

from flask import Flask

from api.app import create_app
from api.bridge import refusal
from api.connection import Connection, Limits
from api.housekeeping import Housekeeper, limit_process_memory
from api.services import close_app
from api.sparql import fast_path
from kg.settings import Settings
from kg.store import Store, open_store

__all__ = ["MAX_HEAD_BYTES", "WORKER_STACK_BYTES", "HttpServer", "bind", "serve"]

log = logging.getLogger("jido_kg.server")

# pyoxigraph parses recursively on the calling thread's stack; a large reserved stack (virtual
# memory, not resident) keeps deep but legal queries from overflowing it. The nesting guard in
# kg.store.guard rejects the pathological ones before they reach the parser.
WORKER_STACK_BYTES = 256 * 1024 * 1024
# A long GET query must reach the app (for its JSON 400), so the request line and headers may
# be long; 2 MiB still bounds what one request head can hold in memory.
MAX_HEAD_BYTES = 2 * 1024 * 1024
# Requests in flight when SIGTERM comes get this long to finish.
_GRACE_SECONDS = 10.0


class HttpServer:
    """Accepts connections on a bound socket and serves each in a thread of its own."""

    def __init__(self, settings: Settings, listener: socket.socket, *, app: Flask) -> None:
        self.listener = listener
        self.app = app
        self.max_connections = settings.max_connections
        self.limits = Limits(max_head_bytes=MAX_HEAD_BYTES,
                             max_body_bytes=settings.max_body_bytes,
                             idle_seconds=settings.keep_alive_timeout)
        self.stopping = threading.Event()
        self._connections: dict[Connection, threading.Thread] = {}
        self._lock = threading.Lock()
        self._shortcut = fast_path(app).answer_here
        self._app_slots = threading.BoundedSemaphore(settings.threads)

    @property
    def address(self) -> tuple[str, int]:
        """The host and port the server listens on."""
        host, port = self.listener.getsockname()[:2]
        return str(host), int(port)

    def serve_forever(self) -> None:
        """Accept until `stop` is called (from a signal handler or another thread)."""
        self.listener.listen(2048)
        while not self.stopping.is_set():
            try:
                readable, _, _ = select.select([self.listener], [], [], 0.5)
            except InterruptedError:
                continue
            if not readable:
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
        connection = Connection(sock, address, app=self.app.wsgi_app,
                                shortcut=self._shortcut, limits=self.limits,
                                server=self.address, stopping=self.stopping,
                                app_slots=self._app_slots)
        thread = threading.Thread(target=self._serve, args=(connection,), name="kg-http",
                                  daemon=True)
        with self._lock:
            self._connections[connection] = thread
        thread.start()

    def _serve(self, connection: Connection) -> None:
        try:
            connection.run()
        except Exception:
            log.exception("a connection failed")
        finally:
            with self._lock:
                self._connections.pop(connection, None)

    def stop(self) -> None:
        """Stop accepting; tell every connection to close after its request in flight."""
        self.stopping.set()

    def drain(self, grace: float = _GRACE_SECONDS) -> None:
        """After `stop`: wake idle connections so they close, and wait for busy ones."""
        self.listener.close()
        with self._lock:
            connections = dict(self._connections)
        for connection in connections:
            if not connection.busy:
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RD)
        for thread in connections.values():
            thread.join(timeout=grace)


def _refuse(sock: socket.socket, limit: int) -> None:
    """Answer a connection over the limit with a JSON 503 and close it."""
    status, headers, body = refusal(503, "too_many_connections",
                                    f"the server holds {limit} connections already; retry later")
    head = (f"HTTP/1.1 {status} Service Unavailable\r\nContent-Type: {headers[0][1]}\r\n"
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
    """Bind (unless given a bound `listener`), open the store, serve until SIGINT/SIGTERM."""
    # The socket first: a port in use must fail before the store directory, the recall index
    # or anything else exists on disk (a supervisor owning the socket passes it in).
    if listener is None:
        listener = bind(settings.host, settings.port)
    try:
        _serve(settings, listener, ready=ready)
    finally:
        listener.close()


def _serve(settings: Settings, listener: socket.socket, *,
           ready: threading.Event | None) -> None:
    threading.stack_size(WORKER_STACK_BYTES)
    # Before the store's and the server's threads exist (docs/benchmarks/reliability.md).
    limit_process_memory(malloc_arenas=settings.malloc_arena_max,
                         sqlite_heap_mb=settings.sqlite_heap_limit_mb,
                         mmap_threshold_kb=settings.malloc_mmap_threshold_kb)
    store: Store = open_store(settings)
    try:
        app = create_app(settings, store=store)
        server = HttpServer(settings, listener, app=app)

        def _stop(signum: int, frame: FrameType | None) -> None:
            server.stop()

        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _stop)
            signal.signal(signal.SIGINT, _stop)
        host, port = server.address
        where = settings.store if settings.in_memory else str(settings.store_path)
        print(f"jido-kg serving http://{host}:{port}/ (store: {where})", file=sys.stderr)
        sys.stderr.flush()
        if ready is not None:
            ready.set()
        # Bounds resident memory under writes (docs/benchmarks/reliability.md, memory under soak).
        housekeeper = Housekeeper(store, interval=settings.store_flush_interval,
                                  flush_bytes=settings.store_flush_mb * 1024 * 1024).start()
        try:
            server.serve_forever()
        finally:
            server.stop()
            server.drain()
            housekeeper.stop()
            close_app(app)
    finally:
        store.close()


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

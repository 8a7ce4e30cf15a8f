"""A TCP proxy on loopback in front of a real server, dropping the first connections it gets.

A dropped connection has its request head read, then is closed without an answer: what a
client sees when a service dies mid-request. Every request head the proxy reads is kept, so a
test can count what reached the network and read the headers a client sent.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

__all__ = ["FlakyProxy"]


class FlakyProxy:
    """Forwards 127.0.0.1:<port> to a server's port after dropping `drop` connections."""

    def __init__(self, upstream_port: int, *, drop: int) -> None:
        self.upstream_port = upstream_port
        self.heads: list[bytes] = []  # the first request head of every connection
        self._drop = drop
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def targets(self) -> list[str]:
        """`METHOD /path` of every request head read so far."""
        with self._lock:
            return [" ".join(h.split(b"\r\n", 1)[0].decode().split(" ")[:2]) for h in self.heads]

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # closed
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            received = b""
            while b"\r\n\r\n" not in received:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                received += chunk
            with self._lock:
                self.heads.append(received.split(b"\r\n\r\n", 1)[0])
                drop = self._drop > 0
                if drop:
                    self._drop -= 1
            if drop:
                return
            with socket.create_connection(("127.0.0.1", self.upstream_port)) as upstream:
                upstream.sendall(received)
                back = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
                back.start()
                _pipe(conn, upstream)
                back.join()

    def close(self) -> None:
        """Stop accepting; connections being forwarded end with their client."""
        with contextlib.suppress(OSError):  # shutdown wakes the thread blocked in accept()
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._accepting.join()

    def __enter__(self) -> FlakyProxy:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes until `source` ends, then end `target`'s writing side."""
    with contextlib.suppress(OSError):  # the other side may close first
        while chunk := source.recv(65536):
            target.sendall(chunk)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)

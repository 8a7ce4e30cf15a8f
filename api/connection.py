"""One client connection of the HTTP server, served start to end by one thread.

httptools (C) parses the requests; each is answered in this same thread: a plain GET query
runs here without any hand-off (the fast path), anything else through the WSGI app. A body is
read whole before the app runs (spooled to disk past 1 MiB); one larger than the app's cap is
refused from its Content-Length without being read. At a query's deadline the watchdog answers
504 for it on this socket, and this thread closes the connection once the query ends.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

import httptools

from api.bridge import Answer, Request, Shortcut, collect, environ_of, refusal

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

__all__ = ["Connection", "Limits", "TakenOverError"]

_SPOOL_BYTES = 1024 * 1024
# After refusing a body by its size, read (and drop) at most this many times the cap of what
# the client still sends, for at most this long: enough for it to finish and read the refusal.
_LINGER_FACTOR = 4
_LINGER_SECONDS = 30.0
_READ_BYTES = 256 * 1024
_REASONS = {100: "Continue", 200: "OK", 201: "Created", 204: "No Content",
            400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
            413: "Content Too Large", 415: "Unsupported Media Type",
            431: "Request Header Fields Too Large", 500: "Internal Server Error",
            503: "Service Unavailable", 504: "Gateway Timeout"}


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may hold: its head, its body, and how long a connection may idle."""

    max_head_bytes: int
    max_body_bytes: int
    idle_seconds: float


class TakenOverError(Exception):
    """Raised by a shortcut whose request was answered by the watchdog (at its deadline)."""


class _Stop(Exception):
    """Raised from a parser callback: answer what was parsed so far, then close."""

    def __init__(self, answer: Answer | None = None, request: Request | None = None, *,
                 unread: int = 0) -> None:
        super().__init__()
        self.answer, self.request, self.unread = answer, request, unread


class Connection:
    """Reads requests from one socket and answers each in this thread, in order."""

    def __init__(self, sock: socket.socket, address: tuple[Any, ...], *, app: WSGIApplication,
                 shortcut: Shortcut | None, limits: Limits, server: tuple[str, int],
                 stopping: threading.Event, app_slots: threading.BoundedSemaphore) -> None:
        self.sock, self.address, self.app, self.shortcut = sock, address, app, shortcut
        self.limits, self.server, self.stopping = limits, server, stopping
        self.app_slots = app_slots
        self.busy = False
        self._parser = httptools.HttpRequestParser(self)
        self._request = Request()
        self._ready: deque[Request] = deque()
        self._write = threading.Lock()
        self._taken = False  # the watchdog answered for a request: nothing more goes out
        self._answered = threading.Event()
        self._head = 0

    # -- the thread's loop ---------------------------------------------------------------------

    def run(self) -> None:
        """Serve the connection until the client closes it, it idles out or the server stops."""
        try:
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            # The kernel's own timeouts on a blocking socket: Python's settimeout() would poll()
            # before every recv and send, two more syscalls (and GIL hand-overs) per request.
            seconds = int(self.limits.idle_seconds)
            micros = int((self.limits.idle_seconds - seconds) * 1e6)
            timeval = struct.pack("ll", seconds, micros)
            self.sock.settimeout(None)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
            while not self.stopping.is_set() and self._serve_once():
                pass
        finally:
            self.close()

    def _serve_once(self) -> bool:
        try:
            data = self.sock.recv(_READ_BYTES)
        except OSError:
            return False
        if not data:
            return False
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._answer_ready()  # upgrades are not offered: answer what came, then close
            return False
        except httptools.HttpParserCallbackError as exc:
            stop = exc.__context__
            if not isinstance(stop, _Stop):
                raise
            self._answer_ready()
            if stop.request is not None:
                self._respond(stop.request, keep_alive=False)
            elif stop.answer is not None:
                self._send(stop.answer, head_only=False, keep_alive=False)
            if stop.unread:
                self._linger(stop.unread)
            return False
        except httptools.HttpParserError as exc:
            self._answer_ready()
            self._send(refusal(400, "bad_http_request",
                               f"not a valid HTTP/1.1 request: {exc}"), head_only=False,
                       keep_alive=False)
            return False
        return self._answer_ready()

    def _answer_ready(self) -> bool:
        """Answer every fully read request; False once the connection must close."""
        while self._ready:
            request = self._ready.popleft()
            keep = request.keep_alive and not self.stopping.is_set()
            if not self._respond(request, keep_alive=keep) or not keep:
                return False
        return True

    def _linger(self, budget: int) -> None:
        """Read and drop what the client still sends after an early answer, then let it go.

        A client that is still sending its refused body would otherwise meet a reset and lose
        the answer already sent; this reads at most `budget` bytes, pausing 2 s at most.
        """
        deadline = time.monotonic() + _LINGER_SECONDS
        with contextlib.suppress(OSError):
            self.sock.settimeout(2.0)
            while budget > 0 and time.monotonic() < deadline:
                chunk = self.sock.recv(_READ_BYTES)
                if not chunk:
                    return
                budget -= len(chunk)

    def close(self) -> None:
        """Close the socket (once any answer being written is out)."""
        with self._write, contextlib.suppress(OSError):
            self.sock.close()

    # -- parser callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._request = Request()
        self._head = 0

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        self._request.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value))
        self._request.headers.append((name.lower(), value))

    def _count(self, size: int) -> None:
        self._head += size
        if self._head > self.limits.max_head_bytes:
            raise _Stop(refusal(431, "request_head_too_large",
                                f"the request line and headers exceed "
                                f"{self.limits.max_head_bytes} bytes; send a long query in a "
                                "POST body"))

    def on_headers_complete(self) -> None:
        request, parser = self._request, self._parser
        request.method = parser.get_method().decode("latin-1")
        request.version = parser.get_http_version()
        request.keep_alive = parser.should_keep_alive()
        length = _content_length(request.headers)
        if length is not None and length > self.limits.max_body_bytes:
            # The app refuses it from CONTENT_LENGTH (a JSON 413) without reading the body.
            raise _Stop(request=request,
                        unread=min(length, _LINGER_FACTOR * self.limits.max_body_bytes))
        if (b"expect", b"100-continue") in request.headers:
            self._send_raw(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        request = self._request
        request.size += len(body)
        if request.size > self.limits.max_body_bytes:
            raise _Stop(refusal(413, "request_entity_too_large",
                                f"the request body exceeds {self.limits.max_body_bytes} bytes"),
                        unread=_LINGER_FACTOR * self.limits.max_body_bytes)
        if request.body is None:
            request.body = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115
        request.body.write(body)

    def on_message_complete(self) -> None:
        self._ready.append(self._request)

    # -- answering -----------------------------------------------------------------------------

    def _respond(self, request: Request, *, keep_alive: bool) -> bool:
        """Answer one request; False if the watchdog took the connection over meanwhile."""
        environ = environ_of(request, server=self.server, client=self.address)
        self.busy = True
        try:
            answer = None
            if self.shortcut is not None and request.method == "GET":
                answer = self.shortcut(environ, self._overrun)
            if answer is None:
                # At most KG_THREADS requests are inside the app at once: more threads in
                # Python-heavy work (recall, remember) only lengthen each other's GIL waits.
                with self.app_slots:
                    answer = collect(self.app, environ)
        except TakenOverError:
            # Let the watchdog's answer go out before the socket closes.
            self._answered.wait(timeout=10)
            return False
        finally:
            self.busy = False
            environ["wsgi.input"].close()
        return self._send(answer, head_only=request.method == "HEAD", keep_alive=keep_alive)

    def _overrun(self, answer: Answer) -> None:
        """Answer for a request whose query is still running (watchdog thread), then close."""
        try:
            self._send(answer, head_only=False, keep_alive=False)
            with self._write:
                self._taken = True
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)
        finally:
            self._answered.set()

    def _send(self, answer: Answer, *, head_only: bool, keep_alive: bool) -> bool:
        status, headers, body = answer
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
                 f"Date: {_http_date()}", "Server: jido-kg"]
        has_length = False
        for name, value in headers:
            if name.lower() == "content-length":
                has_length = True
            lines.append(f"{name}: {value}")
        if not has_length and status not in (204, 304) and status >= 200:
            lines.append(f"Content-Length: {len(body)}")
        if not keep_alive:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        return self._send_raw(head if head_only else head + body)

    def _send_raw(self, data: bytes) -> bool:
        with self._write:
            if self._taken:
                return False
            try:
                self.sock.sendall(data)
            except OSError:
                return False
        return True

# The Date header changes once a second; formatting it per response costs more than a query.
_date: list[Any] = [0, ""]


def _http_date() -> str:
    now = int(time.time())
    if _date[0] != now:
        _date[:] = [now, formatdate(now, usegmt=True)]
    return str(_date[1])


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None

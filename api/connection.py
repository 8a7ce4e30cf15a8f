"""One client connection of the HTTP server: read by the poller, or by a thread of its own.

httptools (C) parses the requests. A parked connection's plain GET queries are answered by the
poller's thread (`serve_polled`, api/poller.py); any other request, and everything after it,
by a thread of its own (`run`): a plain GET query there too without any hand-off (the fast
path), anything else through the WSGI app, in order. A body is
read whole before the app runs (spooled to disk past 1 MiB); one larger than the app's cap is
refused from its Content-Length without being read. At a query's deadline the watchdog answers
504 for it on this socket, and this thread closes the connection once the query ends.

A response of unknown length (a large query result) goes out as it is produced: chunked to an
HTTP/1.1 client, delimited by closing the connection for HTTP/1.0. One that fails after its
head is cut: the connection closes without the last chunk, which every HTTP/1.1 client reports
as an incomplete body.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import httptools

from api.bridge import (
    SENT,
    Answer,
    BrokenStreamError,
    Ready,
    Request,
    Shortcut,
    StreamWriter,
    TakenOverError,
    environ_of,
    refusal,
    respond,
)
from api.lane import Lane
from api.wire import Wire
from kg.errors import KgError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from _typeshed.wsgi import WSGIApplication, WSGIEnvironment

__all__ = ["Connection", "Limits"]

log = logging.getLogger("jido_kg.server")

_SPOOL_BYTES = 1024 * 1024
# After refusing a body by its size, read (and drop) at most this many times the cap of what
# the client still sends, for at most this long: enough for it to finish and read the refusal.
_LINGER_FACTOR = 4
_LINGER_SECONDS = 30.0
_READ_BYTES = 256 * 1024
_DONT_WAIT = getattr(socket, "MSG_DONTWAIT", 0)
# recv() into a buffer the connection keeps: a fresh 256 KiB bytes per recv() cost an mmap and
# an mremap each, about 11 % of a small query's server CPU (py-spy, docs/benchmarks/sparql.md).


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may hold: its head, its body, and how long a connection may idle."""

    max_head_bytes: int
    max_body_bytes: int
    idle_seconds: float


class _HandOffError(Exception):
    """Raised while serving for the poller: the rest must run in a thread of its own."""

    def __init__(self, then: Callable[[], bool]) -> None:
        super().__init__()
        self.then = then


class _Stop(Exception):
    """Raised from a parser callback: answer what was parsed so far, then close."""

    def __init__(self, answer: Answer | None = None, request: Request | None = None, *,
                 unread: int = 0) -> None:
        super().__init__()
        self.answer, self.request, self.unread = answer, request, unread


class Connection:
    """Reads requests from one socket and answers each in this thread, in order.

    It is the shortcut's `Exchange` (api.bridge) for the request being answered.
    """

    def __init__(self, sock: socket.socket, address: tuple[Any, ...], *, app: WSGIApplication,
                 shortcut: Shortcut | None, limits: Limits, server: tuple[str, int],
                 stopping: threading.Event, app_slots: threading.BoundedSemaphore,
                 lane: Lane) -> None:
        self.sock, self.address, self.app, self.shortcut = sock, address, app, shortcut
        self.fd = sock.fileno()  # kept: a closed socket's fileno() is -1
        self.limits, self.server, self.stopping = limits, server, stopping
        self.app_slots, self.lane = app_slots, lane
        self._turn = False
        self.busy = False
        self._polled = False  # serving for the poller: nothing may block for long
        self._in_request = False  # a request is partly read
        self._parser = httptools.HttpRequestParser(self)
        self._request = Request()
        self._ready: deque[Request] = deque()
        self.wire = Wire(sock)
        self._head = 0
        self._buffer = bytearray(_READ_BYTES)
        # The request being answered: its environ once made, and how a streamed answer goes.
        self._environ: WSGIEnvironment | None = None
        self._version, self._keep_alive = "1.1", True

    # -- the thread's loop ---------------------------------------------------------------------

    def prepare(self) -> None:
        """Set the socket up for serving (once, before the first request is read)."""
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The kernel's own timeouts on a blocking socket: Python's settimeout() would poll()
        # before every recv and send, two more syscalls (and GIL hand-overs) per request.
        seconds = int(self.limits.idle_seconds)
        micros = int((self.limits.idle_seconds - seconds) * 1e6)
        timeval = struct.pack("ll", seconds, micros)
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)

    def run(self, then: Callable[[], bool] | None = None) -> None:
        """Serve the connection in this thread until the client closes it, it idles out or the
        server stops; `then` first (what the poller handed over), unless it says to close."""
        try:
            if then is not None and not then():
                return
            # At a stop, answers say "Connection: close" and idle sockets are shut: a request
            # already on its way still gets its answer rather than a dropped connection.
            while self._serve_once():
                pass
        finally:
            self.close()

    def serve_polled(self) -> bool | Callable[[], bool]:
        """Read what came (the poller saw the socket readable) and answer it in this thread.

        True: park the connection again; False: close it; a callable: hand the connection to a
        thread of its own, which calls it first (api/poller.py).
        """
        try:
            size = self.sock.recv_into(self._buffer, 0, _DONT_WAIT)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not size:
            return False
        data = memoryview(self._buffer)[:size]
        if not self._in_request and not self._buffer.startswith(b"GET "):
            # Not a query: it may read a body, or take long in the app. Its thread parses it.
            return partial(self._take, bytes(data))
        self._polled = True
        try:
            return self._take(data)
        except _HandOffError as hand_off:
            return hand_off.then
        finally:
            self._polled = False

    def _serve_once(self) -> bool:
        try:
            size = self.sock.recv_into(self._buffer)
        except OSError:
            return False
        if not size:
            return False
        data = memoryview(self._buffer)[:size]  # the parser copies what it passes on
        # A GET (most likely a plain query) takes its turn in the lane (api/lane.py) from its
        # parsing to the end of its answer; a request for the app gives it up on the way there.
        self._turn = self._buffer.startswith(b"GET ") and self.lane.enter()
        try:
            return self._take(data)
        finally:
            self._leave_lane()

    def _take(self, data: memoryview | bytes) -> bool:
        """Parse what came and answer every request it completes; False: close."""
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            return self._after(self._upgrade_refused)
        except httptools.HttpParserCallbackError as exc:
            stop = exc.__context__
            if not isinstance(stop, _Stop):
                raise
            return self._after(partial(self._stopped, stop))
        except httptools.HttpParserError as exc:
            return self._after(partial(self._malformed, str(exc)))
        return self._answer_ready()

    def _after(self, then: Callable[[], bool]) -> bool:
        """Run `then` (the end of a connection that went wrong) here, or in a thread of its
        own when serving for the poller: it may answer through the app, or read on."""
        if self._polled:
            raise _HandOffError(then)
        return then()

    def _upgrade_refused(self) -> bool:
        self._answer_ready()  # upgrades are not offered: answer what came, then close
        return False

    def _malformed(self, reason: str) -> bool:
        self._answer_ready()
        self.wire.send_answer(refusal(400, "bad_http_request",
                                      f"not a valid HTTP/1.1 request: {reason}"),
                              head_only=False, keep_alive=False)
        return False

    def _stopped(self, stop: _Stop) -> bool:
        """Answer what was parsed before a stop, and the stop's own answer; always False."""
        self._answer_ready()
        if stop.request is not None:
            self._respond(stop.request, keep_alive=False)
        elif stop.answer is not None:
            self.wire.send_answer(stop.answer, head_only=False, keep_alive=False)
        if stop.unread:
            self._leave_lane()
            self._linger(stop.unread)
        return False

    def _answer_ready(self) -> bool:
        """Answer every fully read request; False once the connection must close."""
        while self._ready:
            request = self._ready.popleft()
            keep = request.keep_alive and not self.stopping.is_set()
            if not self._respond(request, keep_alive=keep) or not keep:
                return False
        return True

    def _respond_rest(self, request: Request, keep_alive: bool) -> bool:
        """Answer a request handed over by the poller, then the ones read after it."""
        return self._respond(request, keep_alive=keep_alive) and keep_alive and \
            self._answer_ready()

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
        self.wire.close()

    # -- parser callbacks ----------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._request = Request()
        self._head = 0
        self._in_request = True

    def on_url(self, url: bytes) -> None:
        self._head += len(url)
        if self._head > self.limits.max_head_bytes:
            self._head_too_large()
        self._request.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head += len(name) + len(value)
        if self._head > self.limits.max_head_bytes:
            self._head_too_large()
        self._request.headers.append((name.lower(), value))

    def _head_too_large(self) -> None:
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
            self.wire.send(b"HTTP/1.1 100 Continue\r\n\r\n")

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
        self._in_request = False
        self._ready.append(self._request)

    # -- answering -----------------------------------------------------------------------------

    def _respond(self, request: Request, *, keep_alive: bool) -> bool:
        """Answer one request; False once the connection must close (or was taken over)."""
        head_only = request.method == "HEAD"
        handing_off = False
        self.busy = True
        self.wire.stream = None
        self._version, self._keep_alive = request.version, keep_alive
        try:
            answer = None
            if self.shortcut is not None and request.method == "GET":
                answer = self.shortcut(request, self)
            if answer is None:
                if self._polled:  # the app may take long: the connection gets its thread
                    handing_off = True
                    raise _HandOffError(partial(self._respond_rest, request, keep_alive))
                self._leave_lane()
                environ = self.environ(request)
                # At most KG_THREADS requests are inside the app at once: more threads in
                # Python-heavy work (recall, remember) only lengthen each other's GIL waits.
                with self.app_slots:
                    answer = respond(self.app, environ)
            elif isinstance(answer, Ready):
                return self.wire.send_ready(answer, head_only=head_only, keep_alive=keep_alive)
            if answer is SENT and self.wire.stream is not None:
                return self.wire.stream.finish()
            status, headers, body = answer
            if isinstance(body, bytes):
                return self.wire.send_answer(answer, head_only=head_only, keep_alive=keep_alive)
            return self._send_stream(status, headers, body, version=request.version,
                                     head_only=head_only, keep_alive=keep_alive)
        except TakenOverError:
            self._leave_lane()
            # Let the watchdog's answer go out before the socket closes.
            self.wire.answered.wait(timeout=10)
            return False
        except BrokenStreamError:
            return False
        finally:
            self.busy = False
            if self._environ is not None and not handing_off:
                self._environ["wsgi.input"].close()
                self._environ = None

    # -- the shortcut's Exchange (api.bridge) ----------------------------------------------------

    def environ(self, request: Request) -> WSGIEnvironment:
        """The WSGI environ of the request being answered (made once)."""
        if self._environ is None:
            self._environ = environ_of(request, server=self.server, client=self.address)
        return self._environ

    def overrun(self, answer: Answer) -> None:
        """Answer for a request whose query is still running (watchdog thread), then close."""
        self.wire.take_over(answer)

    def begin(self, status: int, headers: list[tuple[str, str]]) -> StreamWriter:
        """Send the head of a streamed answer to the request being answered."""
        return self.wire.begin(status, headers, version=self._version, head_only=False,
                               keep_alive=self._keep_alive)

    def _leave_lane(self) -> None:
        """End this thread's turn in the lane, if it has one."""
        if self._turn:
            self._turn = False
            self.lane.leave()

    def _send_stream(self, status: int, headers: list[tuple[str, str]], body: Iterable[bytes],
                     *, version: str, head_only: bool, keep_alive: bool) -> bool:
        """Send a body of unknown length as it comes; an error after the head cuts it."""
        try:
            writer = self.wire.begin(status, headers, version=version, head_only=head_only,
                                     keep_alive=keep_alive)
            if not head_only:
                for chunk in body:
                    writer.write(chunk)
            return writer.finish()
        except OSError:  # the client is gone
            return False
        except KgError:  # the body ends in its cut marker: the app said why
            return False
        except Exception:
            log.exception("a streamed response failed after its head")
            return False
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()


def _content_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None

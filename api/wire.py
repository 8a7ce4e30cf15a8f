"""The sending side of one client connection: whole answers, streamed bodies, a takeover.

One thread writes at a time (a lock per connection). The watchdog may answer for a request
whose query runs past its deadline (`take_over`): from then on nothing else goes out. A body
of unknown length goes out chunked (HTTP/1.1) or up to the close (HTTP/1.0); cut short, it ends
without its terminating chunk, which clients report as an incomplete body.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

from api.bridge import Answer, Ready

__all__ = ["BodyWriter", "Wire"]

_REASONS = {status.value: status.phrase for status in HTTPStatus}
# The head of a Ready answer: Date, its header lines, its length, and Connection if closing.
_READY_HEAD = b"HTTP/1.1 200 OK\r\nDate: %b\r\nServer: jido-kg\r\n%bContent-Length: %d\r\n%b\r\n"
# Sending never waits for a full socket buffer where this exists (everywhere but Windows).
_DONT_WAIT = getattr(socket, "MSG_DONTWAIT", 0)


class Wire:
    """The sending side of a socket (see the module docstring)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.taken = False  # the watchdog answered for a request: nothing more goes out
        self.answered = threading.Event()
        self.stream: BodyWriter | None = None  # the streamed answer under way, if any

    def send(self, data: bytes) -> bool:
        """Send bytes; False if the connection was taken over or the client is gone."""
        with self.lock:
            if self.taken:
                return False
            try:
                self.sock.sendall(data)
            except OSError:
                return False
        return True

    def send_answer(self, answer: Answer, *, head_only: bool, keep_alive: bool) -> bool:
        """Send a whole answer (its body is bytes)."""
        return self.send(_encode(answer, head_only=head_only, keep_alive=keep_alive))

    def send_ready(self, ready: Ready, *, head_only: bool, keep_alive: bool) -> bool:
        """Send a whole 200 whose header lines came encoded (the fast path's small results)."""
        head = _READY_HEAD % (_http_date_bytes(), ready.headers, len(ready.body),
                              b"" if keep_alive else b"Connection: close\r\n")
        return self.send(head if head_only else head + ready.body)

    def begin(self, status: int, headers: list[tuple[str, str]], *, version: str,
              head_only: bool, keep_alive: bool) -> BodyWriter:
        """Send the head of a streamed answer; its body follows through the returned writer."""
        chunked = version != "1.0"  # an HTTP/1.0 client reads to the end of the connection
        keep_alive = keep_alive and chunked
        extra = [("Transfer-Encoding", "chunked")] if chunked else []
        head = _head(status, [*headers, *extra], keep_alive=keep_alive, length=None)
        writer = BodyWriter(self, chunked=chunked and not head_only, keep_alive=keep_alive,
                            head_only=head_only)
        with self.lock:
            if self.taken:
                raise BrokenPipeError("the connection was taken over")
            self.stream = writer
            self.sock.sendall(head)
        return writer

    def take_over(self, answer: Answer) -> None:
        """Answer for a request from another thread (the watchdog), then close.

        A streamed answer whose head went out cannot get another status: it is cut instead.
        """
        try:
            if self.stream is not None:
                self.stream.cut(b"")
                return
            data = _encode(answer, head_only=False, keep_alive=False)
            with self.lock:
                if not self.taken and self.stream is None:
                    with contextlib.suppress(OSError):
                        self.sock.sendall(data)
                self.taken = True
                with contextlib.suppress(OSError):
                    self.sock.shutdown(socket.SHUT_RDWR)
        finally:
            self.answered.set()

    def close(self) -> None:
        """Close the socket (once any answer being written is out)."""
        with self.lock, contextlib.suppress(OSError):
            self.sock.close()


class BodyWriter:
    """The body of one streamed answer (api.bridge.StreamWriter)."""

    def __init__(self, wire: Wire, *, chunked: bool, keep_alive: bool, head_only: bool) -> None:
        self._wire, self._chunked = wire, chunked
        self._keep_alive, self._head_only = keep_alive, head_only

    def write(self, data: bytes) -> None:
        """Send one piece of the body (a chunk, for HTTP/1.1); OSError once the client is gone."""
        if self._head_only or not data:
            return
        if not self._wire.send(self._frame(data)):
            raise BrokenPipeError("the client closed the connection")

    def finish(self) -> bool:
        """End the body; True if the connection may serve another request."""
        if self._head_only:
            return self._keep_alive
        if not self._chunked:
            return False  # HTTP/1.0: closing the connection ends the body
        return self._wire.send(b"0\r\n\r\n") and self._keep_alive

    def cut(self, last: bytes) -> None:
        """From any thread: send `last` unless a send is under way, then close, body unended."""
        wire = self._wire
        # Never wait for the line: the streaming thread may be stuck sending to a slow client.
        if wire.lock.acquire(blocking=False):
            try:
                if last and not wire.taken and not self._head_only:
                    with contextlib.suppress(OSError):
                        wire.sock.send(self._frame(last), _DONT_WAIT)
            finally:
                wire.lock.release()
        wire.taken = True
        with contextlib.suppress(OSError):
            wire.sock.shutdown(socket.SHUT_RDWR)
        wire.answered.set()

    def _frame(self, data: bytes) -> bytes:
        return b"%X\r\n%b\r\n" % (len(data), data) if self._chunked else data


def _encode(answer: Answer, *, head_only: bool, keep_alive: bool) -> bytes:
    status, headers, body = answer
    assert isinstance(body, bytes)
    head = _head(status, headers, keep_alive=keep_alive, length=len(body))
    return head if head_only else head + body


def _head(status: int, headers: list[tuple[str, str]], *, keep_alive: bool,
          length: int | None) -> bytes:
    """The status line and headers; `length` is added unless given or None (streamed)."""
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Unknown')}",
             f"Date: {_http_date()}", "Server: jido-kg"]
    has_length = False
    for name, value in headers:
        if name.lower() == "content-length":
            has_length = True
        lines.append(f"{name}: {value}")
    if length is not None and not has_length and status not in (204, 304) and status >= 200:
        lines.append(f"Content-Length: {length}")
    if not keep_alive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


# The Date header changes once a second; formatting it per response costs more than a query.
_date: list[Any] = [0, "", b""]


def _http_date() -> str:
    return str(_current_date()[1])


def _http_date_bytes() -> bytes:
    return bytes(_current_date()[2])


def _current_date() -> list[Any]:
    now = int(time.time())
    if _date[0] != now:
        text = formatdate(now, usegmt=True)
        _date[:] = [now, text, text.encode("latin-1")]  # one C call: atomic under the GIL
    return _date

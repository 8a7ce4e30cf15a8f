"""Between a parsed HTTP request and the WSGI app: its environ, and the app's response."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote_to_bytes

from api.errors import error_body

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication, WSGIEnvironment

__all__ = [
    "SENT",
    "Answer",
    "Begin",
    "BrokenStreamError",
    "Exchange",
    "Ready",
    "Request",
    "Shortcut",
    "StreamWriter",
    "TakenOverError",
    "collect",
    "environ_of",
    "refusal",
    "respond",
]

# A response: status, headers (name, value), body. A body of bytes is all of it; any other
# iterable has no known length and goes out as it comes (then closed, if it has close()).
Answer = tuple[int, list[tuple[str, str]], bytes | Iterable[bytes]]
# What a shortcut returns when it has streamed its answer through `Begin` already.
SENT: Answer = (200, [], b"")


class StreamWriter(Protocol):
    """The body of a response whose head went out: written in pieces as they come."""

    def write(self, data: bytes) -> None:
        """Send one piece; raises OSError once the client is gone."""

    def cut(self, last: bytes) -> None:
        """From any thread: send `last` if the line is free, and close with the body unended."""


# Sends the head of a streamed answer (status, headers without a length) and returns its body.
Begin = Callable[[int, list[tuple[str, str]]], StreamWriter]


@dataclass(slots=True)
class Ready:
    """A whole 200 answer whose header lines are encoded already (cached by the fast path).

    `headers` holds "Name: value" lines, each ending in CRLF; the connection adds the status
    line, Date, Server, Content-Length and Connection.
    """

    headers: bytes
    body: bytes


class Exchange(Protocol):
    """What a shortcut may use of the connection whose request it answers."""

    address: tuple[Any, ...]  # the client's

    def environ(self, request: Request) -> WSGIEnvironment:
        """The request's WSGI environ, made once per request (the app reuses it)."""

    def overrun(self, answer: Answer) -> None:
        """From another thread: answer for the request (a 504 at the deadline of a query still
        running), then close."""

    def begin(self, status: int, headers: list[tuple[str, str]]) -> StreamWriter:
        """Send the head of a streamed answer (no length); its body follows through the writer
        (the shortcut then returns SENT once the body is complete)."""


# Answers a request in the calling thread, or returns None to let the WSGI app take it.
Shortcut = Callable[["Request", Exchange], "Answer | Ready | None"]


class TakenOverError(Exception):
    """Raised by a shortcut whose request was answered by the watchdog (at its deadline)."""


class BrokenStreamError(Exception):
    """Raised by a shortcut whose streamed answer failed after its head: close, body unended."""


class Request:
    """One parsed request: method, target, headers and its body (None: it had none)."""

    __slots__ = ("body", "headers", "keep_alive", "method", "size", "url", "version")

    def __init__(self) -> None:  # one per request: 120 ns where a dataclass took 170
        self.method = ""
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: IO[bytes] | None = None
        self.size = 0
        self.keep_alive = True
        self.version = "1.1"


def refusal(status: int, code: str, message: str) -> Answer:
    """An error answer in the one JSON shape, for refusals made before any app runs."""
    return status, [("Content-Type", "application/json")], error_body(status, code, message)


def respond(app: WSGIApplication, environ: WSGIEnvironment) -> Answer:
    """Call a WSGI app in the calling thread; a body of unknown length is left to iterate."""
    started: list[Any] = []
    chunks: list[bytes] = []

    def start_response(status: str, headers: list[tuple[str, str]],
                       exc_info: Any = None) -> Callable[[bytes], object]:
        started[:] = [status, headers]
        return chunks.append

    iterable: Iterable[bytes] = app(environ, start_response)
    status, headers = started
    code = int(status[:3])
    if chunks or isinstance(iterable, list | tuple) or not _streams(code, headers):
        try:
            chunks.extend(iterable)
        finally:
            _close(iterable)
        return code, headers, b"".join(chunks)
    return code, headers, iterable


def collect(app: WSGIApplication, environ: WSGIEnvironment) -> tuple[
        int, list[tuple[str, str]], bytes]:
    """Call a WSGI app and gather its whole response, in the calling thread."""
    status, headers, body = respond(app, environ)
    if isinstance(body, bytes):
        return status, headers, body
    try:
        return status, headers, b"".join(body)
    finally:
        _close(body)


def _streams(status: int, headers: list[tuple[str, str]]) -> bool:
    """Whether a response goes out as it comes: one with a body and no Content-Length."""
    if status < 200 or status in (204, 304):
        return False
    return not any(name.lower() == "content-length" for name, _ in headers)


def _close(iterable: object) -> None:
    close = getattr(iterable, "close", None)
    if close is not None:
        close()


def environ_of(request: Request, *, server: tuple[str, int],
               client: tuple[Any, ...]) -> dict[str, Any]:
    """The request's WSGI environ (PEP 3333: strings are bytes decoded as latin-1)."""
    path, _, query = request.url.partition(b"?")
    if path.startswith((b"http://", b"https://")):  # absolute form: keep the path only
        path = b"/" + path.split(b"/", 3)[3] if path.count(b"/") >= 3 else b"/"
    environ: dict[str, Any] = {
        "REQUEST_METHOD": request.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": _unquote(path),
        "QUERY_STRING": query.partition(b"#")[0].decode("latin-1"),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1]),
        "SERVER_PROTOCOL": f"HTTP/{request.version}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in request.headers:
        name = raw_name.decode("latin-1")
        if name == "content-length":
            key = "CONTENT_LENGTH"
        elif name == "content-type":
            key = "CONTENT_TYPE"
        else:
            key = "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    body = request.body
    if body is None:
        environ["wsgi.input"] = io.BytesIO()
    else:
        environ["CONTENT_LENGTH"] = str(request.size)
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        body.seek(0)
        environ["wsgi.input"] = body
    return environ


def _unquote(path: bytes) -> str:
    """Percent-decode a request path to a PEP 3333 latin-1 string."""
    if b"%" not in path:
        return path.decode("latin-1")
    return unquote_to_bytes(path).decode("latin-1")

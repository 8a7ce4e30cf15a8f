"""Calling an ASGI app from a WSGI request thread with the body read and the answer gathered.

Two ways, for the MCP endpoint (api/mcp.py):
- `call_on(loop, ...)`: on a long-lived event loop in another thread (where state that outlives
  a request lives): one hand-off there, one back when the last piece of the body is sent; the
  app's clean-up after that runs on without the caller waiting for it.
- `LoopPool.call(...)`: on an event loop of its own in the calling thread: no hand-off at all,
  for requests that need no state of the long-lived loop. `answered_here()` is then True in
  the app, which may run blocking work inline: nothing else runs on that loop.
`http_scope(environ, ...)` gives the ASGI scope of a WSGI request (its headers as werkzeug reads
them), so that a caller need not build Flask's request object for it.
A general ASGI-to-WSGI adapter (a2wsgi, used at first) crossed threads for every receive and
send, and waited for the app's clean-up: about half of the endpoint's overhead over the HTTP
API (docs/benchmarks/agent-reach.md).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import Any

__all__ = ["Answer", "AsgiApp", "LoopPool", "answered_here", "call_on", "http_scope"]

# An ASGI answer: status, headers, the whole body.
Answer = tuple[int, list[tuple[bytes, bytes]], bytes]
AsgiApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
# After the answer went out, how long the app's task may take to wind down before it is
# cancelled (the SDK's stateless transport terminates itself; this only bounds a bug).
WIND_DOWN_SECONDS = 10.0

# Idle loops kept for reuse beyond this many are closed (each holds an epoll and a socket pair).
MAX_IDLE_LOOPS = 32

# Environ keys werkzeug does not read as headers (the body's length and type have their own).
_NOT_HEADERS = frozenset({"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"})

_HERE: contextvars.ContextVar[bool] = contextvars.ContextVar("kg_asgi_answered_here",
                                                             default=False)


def answered_here() -> bool:
    """True inside an app called by `LoopPool.call`: its loop serves this request alone."""
    return _HERE.get()


class _Exchange:
    """One request: its body served from memory, its answer gathered."""

    def __init__(self, body: bytes) -> None:
        self.body: bytes | None = body
        self.answer: Future[Answer] = Future()
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.sent = asyncio.Event()  # bound to a loop at its first wait (Python >= 3.10)
        self.deadline: asyncio.TimerHandle | None = None

    async def receive(self) -> dict[str, Any]:
        """The body in one piece, then (as from a server once it has answered) a disconnect."""
        if self.body is not None:
            body, self.body = self.body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.sent.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        """Gather the answer; its last piece of body completes `answer`."""
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = list(message.get("headers", ()))
        elif message["type"] == "http.response.body" and not self.sent.is_set():
            self.chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                self.sent.set()
                self.answer.set_result((self.status, self.headers, b"".join(self.chunks)))
                task = asyncio.current_task()
                if task is not None:
                    self.deadline = asyncio.get_running_loop().call_later(
                        WIND_DOWN_SECONDS, task.cancel)

    async def run(self, app: AsgiApp, scope: dict[str, Any], *, here: bool) -> None:
        """Call the app; one that fails or ends before answering fails the request."""
        if here:
            _HERE.set(True)  # this task's context (and its child tasks') only
        try:
            await app(scope, self.receive, self.send)
        except BaseException as exc:
            if not self.answer.done():
                self.answer.set_exception(exc)
            if not isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            if self.deadline is not None:
                self.deadline.cancel()
            if not self.answer.done():
                self.answer.set_exception(RuntimeError("the ASGI app ended without an answer"))


def http_scope(environ: Mapping[str, Any], *, path: str, root_path: str, body: bytes,
               extensions: dict[str, Any]) -> dict[str, Any]:
    """The ASGI scope of a WSGI request whose body was read whole (its headers as werkzeug reads
    them from the environ, its length that of `body`), served at `path` under `root_path`."""
    headers = [(b"content-length", str(len(body)).encode("ascii"))]
    for key, value in environ.items():
        if key.startswith("HTTP_") and key not in _NOT_HEADERS:
            headers.append((key[5:].replace("_", "-").lower().encode("latin-1"),
                            value.encode("latin-1")))
    if environ.get("CONTENT_TYPE"):
        headers.append((b"content-type", environ["CONTENT_TYPE"].encode("latin-1")))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.5"},
        "http_version": environ.get("SERVER_PROTOCOL", "HTTP/1.1").partition("/")[2] or "1.1",
        "method": environ.get("REQUEST_METHOD", "GET"),
        "scheme": environ.get("wsgi.url_scheme", "http"),
        "root_path": root_path,
        "path": path,
        "raw_path": path.encode("latin-1"),
        "query_string": environ.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "server": (environ.get("SERVER_NAME", "127.0.0.1"), int(environ.get("SERVER_PORT") or 0)),
        "extensions": extensions,
    }
    if environ.get("REMOTE_ADDR"):
        scope["client"] = (environ["REMOTE_ADDR"], int(environ.get("REMOTE_PORT") or 0))
    return scope


def call_on(loop: asyncio.AbstractEventLoop, app: AsgiApp, scope: dict[str, Any],
            body: bytes) -> Answer:
    """Answer a request on `loop` (running in another thread); blocks until it is answered."""
    exchange = _Exchange(body)
    asyncio.run_coroutine_threadsafe(exchange.run(app, scope, here=False), loop)
    return exchange.answer.result()


class LoopPool:
    """Idle event loops for requests answered in their own thread, one request per loop."""

    def __init__(self) -> None:
        self._idle: list[asyncio.AbstractEventLoop] = []
        self._lock = threading.Lock()
        self._closed = False

    def call(self, app: AsgiApp, scope: dict[str, Any], body: bytes) -> Answer:
        """Answer a request on a loop of its own in this thread (a loop costs ~10 µs reused,
        ~90 µs new: idle loops are kept)."""
        with self._lock:
            loop = self._idle.pop() if self._idle else asyncio.new_event_loop()
        exchange = _Exchange(body)
        try:
            loop.run_until_complete(exchange.run(app, scope, here=True))
            _finish_leftovers(loop)
        except BaseException:
            loop.close()
            raise
        with self._lock:
            kept = not self._closed and len(self._idle) < MAX_IDLE_LOOPS
            if kept:
                self._idle.append(loop)
        if not kept:
            loop.close()
        return exchange.answer.result()

    def close(self) -> None:
        """Close the idle loops; a loop in use is closed when its request ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for loop in idle:
            loop.close()


def _finish_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel tasks the app left behind, so that the next request starts on a clean loop."""
    leftovers = asyncio.all_tasks(loop)
    if leftovers:
        for task in leftovers:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))

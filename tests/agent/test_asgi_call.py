"""api.asgi: an ASGI app answered from a request thread, on a shared loop or on a loop of its own.

Real event loops and threads, a small ASGI app that records where it ran; no timing asserted.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from api.asgi import LoopPool, answered_here, call_on

SCOPE: dict[str, Any] = {"type": "http", "method": "POST", "path": "/x", "headers": []}


class Recorder:
    """An ASGI app: echoes the body, notes its thread and `answered_here()`, then (optionally)
    keeps running after its answer until `release` is set."""

    def __init__(self, *, linger: bool = False, fail: bool = False) -> None:
        self.linger, self.fail = linger, fail
        self.thread: int | None = None
        self.here: bool | None = None
        self.release = threading.Event()
        self.finished = threading.Event()
        self.after_answer: dict[str, Any] | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.thread, self.here = threading.get_ident(), answered_here()
        request = await receive()
        if self.fail:
            raise ValueError("the app broke before answering")
        await send({"type": "http.response.start", "status": 201,
                    "headers": [(b"content-type", b"text/plain")]})
        await send({"type": "http.response.body", "body": b"got ", "more_body": True})
        await send({"type": "http.response.body", "body": request["body"]})
        self.after_answer = await receive()  # the server has answered: a disconnect
        if self.linger:
            # Bounded: a caller that (wrongly) waits for the app's end gets it after 30 s.
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 30)
        self.finished.set()


@pytest.fixture
def shared_loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def test_on_a_loop_of_its_own_the_app_runs_in_the_calling_thread() -> None:
    pool = LoopPool()
    for body in (b"one", b"two"):  # the second call reuses the first one's loop
        app = Recorder()
        assert pool.call(app, SCOPE, body) == (201, [(b"content-type", b"text/plain")],
                                               b"got " + body)
        assert app.thread == threading.get_ident() and app.here is True
        assert app.after_answer == {"type": "http.disconnect"} and app.finished.is_set()
    pool.close()
    assert answered_here() is False  # the flag never leaks out of the app's task


def test_on_a_shared_loop_the_caller_does_not_wait_for_the_apps_clean_up(
        shared_loop: asyncio.AbstractEventLoop) -> None:
    app = Recorder(linger=True)
    assert call_on(shared_loop, app, SCOPE, b"body")[2] == b"got body"
    # Answered while the app still runs: it ends only once released.
    assert app.thread != threading.get_ident() and app.here is False
    assert not app.finished.is_set()
    app.release.set()
    assert app.finished.wait(30)


def test_an_app_that_fails_before_answering_fails_the_call(
        shared_loop: asyncio.AbstractEventLoop) -> None:
    with pytest.raises(ValueError, match="broke before answering"):
        call_on(shared_loop, Recorder(fail=True), SCOPE, b"")
    with pytest.raises(ValueError, match="broke before answering"):
        LoopPool().call(Recorder(fail=True), SCOPE, b"")


def test_an_app_that_ends_without_answering_fails_the_call() -> None:
    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()

    with pytest.raises(RuntimeError, match="ended without an answer"):
        LoopPool().call(silent, SCOPE, b"")

"""The poller's scheduling (api/poller.py) on real sockets, with connections that say what they do.

`tests/test_poller.py` drives the real server; here each parked "connection" is a socketpair
whose `serve_polled` is scripted, so a long request, a hand-off or an idle timeout is exact.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

import pytest

from api.poller import Poller

if TYPE_CHECKING:
    from api.connection import Connection

class _Line:
    """A parked connection: its server side, and what serving one request does."""

    def __init__(self, serve: Callable[[_Line], bool | Callable[[], bool]]) -> None:
        self.sock, self.client = socket.socketpair()
        self.fd = self.sock.fileno()
        self.serve = serve
        self.served_by: list[str] = []
        self.closed = threading.Event()

    def serve_polled(self) -> bool | Callable[[], bool]:
        self.sock.recv(4096)
        self.served_by.append(threading.current_thread().name + str(threading.get_ident()))
        return self.serve(self)

    def close(self) -> None:
        self.sock.close()
        self.closed.set()


Polling = tuple[Poller, list[tuple[_Line, Callable[[], bool]]], list[_Line]]


@pytest.fixture
def poller() -> Iterator[Polling]:
    handed: list[tuple[_Line, Callable[[], bool]]] = []
    forgotten: list[_Line] = []
    poller = Poller(idle_seconds=60, patience=0.01,
                    hand_off=lambda c, then: handed.append((cast("_Line", c), then)),
                    forget=lambda c: forgotten.append(cast("_Line", c)))
    yield poller, handed, forgotten
    poller.close_at(time.monotonic())


def _park(poller: Poller, line: _Line) -> _Line:
    poller.park(cast("Connection", line))
    return line


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_a_poller_busy_past_its_patience_is_replaced(poller: Polling) -> None:
    polling, _, _ = poller
    started, release = threading.Event(), threading.Event()

    def long(_: _Line) -> bool:
        started.set()
        release.wait(30)  # a long query
        return True

    slow = _park(polling, _Line(long))
    quick = _park(polling, _Line(lambda _: True))
    slow.client.sendall(b"x")
    assert started.wait(10)
    quick.client.sendall(b"x")
    _wait(lambda: bool(quick.served_by), "the quick connection's answer")
    assert not release.is_set() and quick.served_by[0] != slow.served_by[0]
    assert len(polling.threads) == 2  # the old poller finishes the long request
    release.set()
    _wait(lambda: len(polling.threads) == 1, "the old poller to end")
    slow.client.sendall(b"x")  # parked again after its long request: served by the new one
    _wait(lambda: len(slow.served_by) == 2, "the slow connection's next request")
    assert slow.served_by[1] == quick.served_by[0]


def test_quick_requests_on_many_connections_share_one_thread(
        poller: Polling) -> None:
    polling, _, _ = poller
    lines = [_park(polling, _Line(lambda _: True)) for _ in range(5)]
    for _ in range(3):
        for line in lines:
            count = len(line.served_by)
            line.client.sendall(b"x")
            _wait(lambda line=line, count=count: len(line.served_by) > count, "an answer")
    assert len({thread for line in lines for thread in line.served_by}) == 1


def test_hand_off_and_close_leave_the_poller(poller: Polling) -> None:
    polling, handed, forgotten = poller
    then = lambda: True  # noqa: E731
    moved = _park(polling, _Line(lambda _: then))
    closing = _park(polling, _Line(lambda _: False))
    moved.client.sendall(b"x")
    closing.client.sendall(b"x")
    _wait(lambda: bool(handed) and closing.closed.is_set(), "the hand-off and the close")
    assert handed == [(moved, then)] and forgotten == [closing] and not moved.closed.is_set()
    moved.client.sendall(b"y")  # its thread reads it now, not the poller
    time.sleep(0.1)
    assert len(moved.served_by) == 1


def test_idle_connections_close_after_the_keep_alive_timeout() -> None:
    forgotten: list[_Line] = []
    polling = Poller(idle_seconds=0.2, hand_off=lambda c, then: None,
                     forget=lambda c: forgotten.append(cast("_Line", c)))
    started = time.monotonic()
    idle = _park(polling, _Line(lambda _: True))
    assert idle.closed.wait(10)
    assert 0.2 <= time.monotonic() - started < 2 and forgotten == [idle]
    polling.close_at(time.monotonic())


def test_close_at_closes_every_parked_connection_and_ends_the_pollers() -> None:
    polling = Poller(idle_seconds=60, hand_off=lambda c, then: None, forget=lambda c: None)
    lines = [_park(polling, _Line(lambda _: True)) for _ in range(3)]
    polling.close_at(time.monotonic() + 0.1)
    for line in lines:
        assert line.closed.wait(10)
    _wait(lambda: not polling.threads, "the pollers to end")


def _two_requests(polling: Poller) -> None:
    """One request, then the next as soon as the first is answered."""
    line = _park(polling, _Line(lambda _: True))
    line.client.sendall(b"x")
    _wait(lambda: len(line.served_by) == 1, "the first answer")
    line.client.sendall(b"y")
    _wait(lambda: len(line.served_by) == 2, "the second answer")


@pytest.mark.parametrize(("spin", "quiet", "caught"), [
    (30.0, True, 1),  # the next request came while it spun: read without a sleep
    (0.0, True, 0),  # KG_POLL_SPIN_US=0: it sleeps at once
    (30.0, False, 0),  # a connection has a thread of its own: no spinning
])
def test_the_poller_spins_for_the_next_request_only_when_asked_and_quiet(
        spin: float, quiet: bool, caught: int) -> None:
    polling = Poller(idle_seconds=60, hand_off=lambda c, then: None, forget=lambda c: None,
                     spin=spin, quiet=lambda: quiet)
    try:
        _two_requests(polling)
        assert polling.caught == caught
    finally:
        polling.close_at(time.monotonic())

"""The fast lane (api/lane.py): turns in order, and nobody waits on a turn held too long."""

from __future__ import annotations

import threading
import time

from api.lane import Lane


def test_a_free_lane_gives_a_turn_at_once_and_again_after_it_ends() -> None:
    lane = Lane(patience=60)
    assert lane.enter() is True
    lane.leave()
    assert lane.enter() is True
    lane.leave()


def test_a_waiter_gets_its_turn_when_the_holder_leaves() -> None:
    lane = Lane(patience=60)
    assert lane.enter()
    order: list[str] = []
    waiting = threading.Event()

    def waiter() -> None:
        waiting.set()
        order.append(f"waiter entered: {lane.enter()}")
        lane.leave()

    thread = threading.Thread(target=waiter)
    thread.start()
    waiting.wait(timeout=10)
    order.append("holder leaves")
    lane.leave()
    thread.join(timeout=10)
    assert order == ["holder leaves", "waiter entered: True"]


def test_a_turn_held_past_patience_is_not_waited_for() -> None:
    lane = Lane(patience=0.05)
    assert lane.enter()
    lane._since = time.monotonic() - 1.0  # the holder's query has run for a second
    assert lane.enter() is False  # at once: no wait on a long holder
    lane.leave()
    assert lane.enter() is True  # the holder's leave freed it for the next one
    lane.leave()


def test_a_waiter_gives_up_after_patience_and_leaves_the_holder_its_turn() -> None:
    lane = Lane(patience=0.1)
    assert lane.enter()
    got: list[bool] = []
    thread = threading.Thread(target=lambda: got.append(lane.enter()))
    thread.start()
    thread.join(timeout=30)
    assert got == [False]  # it went on without a turn rather than wait on
    assert lane.enter() is False  # the holder, older than patience now, still has it
    lane.leave()

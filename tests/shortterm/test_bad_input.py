"""Bad input: a specific kg error naming the bad value, and the state left exactly as it was.

Covers invalid session ids, unknown context keys, confidences outside [0, 1] (and NaN), and
non-string content, through the manager and directly on the structures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from kg.errors import KgError, ValidationError
from kg.shortterm import InvalidContentError, SessionManager
from kg.terms import (
    InvalidConfidenceError,
    InvalidScoreError,
    InvalidSessionIdError,
    UnknownContextKeyError,
)

BAD_IDS = ["", "has space", "x" * 129, "tail\n", "semi;colon", None, 42]
BAD_KEYS = ["nope", "Active_File", "", None, 3, ("memory",)]
BAD_CONFIDENCES = [-0.1, 1.1, math.nan, math.inf, -math.inf, "0.9", None, True]
BAD_CONTENT = [None, 42, b"bytes", ["list"], {"a": 1}]


@pytest.fixture
def manager() -> SessionManager:
    manager = SessionManager(now=lambda: 0.0)
    manager.start("s1")
    manager.update_context("s1", "framework", "Flask")
    manager.add_pending_memory("s1", "keep", importance_score=0.5)
    manager.append_message("s1", "user", "hello")
    manager.record_access("s1", "framework")
    with manager.use("s1") as session:
        session.working_memory.add("note", [1.0, 0.0], agent_id="a", user_id="u")
    return manager


def check(
    manager: SessionManager, error: type[KgError], bad: object, call: Callable[[], Any]
) -> None:
    before = manager.snapshot("s1"), manager.list()
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, ValidationError)
    assert repr(bad) in str(info.value), str(info.value)
    assert (manager.snapshot("s1"), manager.list()) == before


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_invalid_session_ids(manager: SessionManager, bad: Any) -> None:
    if bad is not None:  # start(None) means "mint an id for me"
        check(manager, InvalidSessionIdError, bad, lambda: manager.start(bad))
    check(manager, InvalidSessionIdError, bad, lambda: manager.get(bad))
    check(manager, InvalidSessionIdError, bad, lambda: manager.update_context(bad, "framework", 1))


@pytest.mark.parametrize("bad", BAD_KEYS, ids=repr)
def test_unknown_context_keys(manager: SessionManager, bad: Any) -> None:
    check(manager, UnknownContextKeyError, bad, lambda: manager.update_context("s1", bad, "v"))
    check(manager, UnknownContextKeyError, bad, lambda: manager.get_context("s1", bad))
    check(manager, UnknownContextKeyError, bad, lambda: manager.record_access("s1", bad))


@pytest.mark.parametrize("bad", BAD_CONFIDENCES, ids=repr)
def test_bad_confidences(manager: SessionManager, bad: Any) -> None:
    check(
        manager,
        InvalidConfidenceError,
        bad,
        lambda: manager.update_context("s1", "framework", "Django", confidence=bad),
    )
    check(
        manager,
        InvalidConfidenceError,
        bad,
        lambda: manager.add_pending_memory("s1", "x", importance_score=0.5, confidence=bad),
    )
    check(
        manager,
        InvalidConfidenceError,
        bad,
        lambda: manager.add_agent_memory_decision("s1", "x", confidence=bad),
    )
    check(
        manager,
        InvalidScoreError,
        bad,
        lambda: manager.add_pending_memory("s1", "x", importance_score=bad),
    )


@pytest.mark.parametrize("bad", BAD_CONTENT, ids=repr)
def test_non_string_content(manager: SessionManager, bad: Any) -> None:
    check(
        manager,
        InvalidContentError,
        bad,
        lambda: manager.add_pending_memory("s1", bad, importance_score=0.5),
    )
    check(manager, InvalidContentError, bad, lambda: manager.add_agent_memory_decision("s1", bad))
    check(manager, InvalidContentError, bad, lambda: manager.append_message("s1", "user", bad))

    def add_to_working_memory() -> None:
        with manager.use("s1") as session:
            session.working_memory.add(bad, [1.0, 0.0], agent_id="a", user_id="u")

    check(manager, InvalidContentError, bad, add_to_working_memory)

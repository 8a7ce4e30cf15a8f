"""The query executor's in-thread path and its watchdog (kg/store/execution.py, watchdog.py)."""

from __future__ import annotations

import threading
import time

import pytest
from pyoxigraph import NamedNode, Quad, QueryResultsFormat

from kg.errors import QueryTimeoutError, StoreUnavailableError
from kg.store import EmbeddedStore
from kg.store.execution import QueryExecutor, ResultFormats
from kg.store.watchdog import Watchdog

JSON = ResultFormats(QueryResultsFormat.JSON, None)
# Evaluation that yields nothing until it ends: only the watchdog can answer for it in time.
SLOW = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"


@pytest.fixture
def filled() -> EmbeddedStore:
    store = EmbeddedStore(None)
    ex = "http://example.org/"
    store.add([Quad(NamedNode(f"{ex}s{i}"), NamedNode(f"{ex}p"), NamedNode(f"{ex}o{i}"))
                  for i in range(150)])
    return store


def test_watchdog_calls_back_once_at_the_deadline_and_not_after_release() -> None:
    watchdog = Watchdog(poll=0.01)
    fired: list[str] = []
    watchdog.watch(time.monotonic() + 0.05, lambda: fired.append("late"))
    released = watchdog.watch(time.monotonic() + 0.05, lambda: fired.append("released"))
    watchdog.release(released)
    time.sleep(0.3)
    assert fired == ["late"]


def test_query_here_runs_in_the_calling_thread(filled: EmbeddedStore) -> None:
    runner = QueryExecutor(filled, workers=1, max_runaway=1)
    seen: list[int] = []
    output = runner.query_here("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", formats=JSON,
                               timeout=5, max_rows=10, on_overrun=lambda e: seen.append(1))
    assert output is not None and b"\"150\"" in output.body
    assert seen == [] and runner.runaways == 0


def test_query_here_past_its_deadline_is_answered_by_the_watchdog(
        filled: EmbeddedStore) -> None:
    runner = QueryExecutor(filled, workers=1, max_runaway=1)
    answered: list[tuple[float, QueryTimeoutError]] = []
    started = time.monotonic()
    done = threading.Event()
    outcome: list[object] = []

    def run() -> None:
        outcome.append(runner.query_here(
            SLOW, formats=JSON, timeout=0.3, max_rows=10,
            on_overrun=lambda e: answered.append((time.monotonic() - started, e))))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    deadline = time.monotonic() + 5
    while not answered and time.monotonic() < deadline:
        time.sleep(0.01)
    assert answered, "the watchdog did not answer for the late query"
    elapsed, error = answered[0]
    assert 0.3 <= elapsed < 1.0
    assert error.details == {"timeout_seconds": 0.3}
    if not done.is_set():  # still running: it holds the one runaway slot
        assert runner.runaways == 1
        with pytest.raises(StoreUnavailableError):
            runner.query_here("ASK {}", formats=JSON, timeout=1, max_rows=1,
                              on_overrun=lambda e: None)
    assert done.wait(120)
    assert outcome == [None]  # its result is dropped: the answer went out already
    assert runner.runaways == 0

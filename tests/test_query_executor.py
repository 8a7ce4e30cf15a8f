"""The query executor's in-thread path and its watchdog (kg/store/execution.py, watchdog.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from pyoxigraph import Literal, NamedNode, Quad, QueryResultsFormat

from kg.errors import QueryTimeoutError, StoreUnavailableError
from kg.store import EmbeddedStore
from kg.store.execution import QueryExecutor, ResultFormats
from kg.store.watchdog import Watchdog

JSON = ResultFormats(QueryResultsFormat.JSON, None)


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
    late, later = threading.Event(), threading.Event()
    released = watchdog.watch(time.monotonic() + 0.01, lambda: fired.append("released"))
    watchdog.release(released)
    watchdog.watch(time.monotonic() + 0.05, lambda: (fired.append("late"), late.set()))
    assert late.wait(30)
    # A sentinel due now: once it has fired, the watchdog has passed over "late" again.
    watchdog.watch(time.monotonic(), later.set)
    assert later.wait(30)
    assert fired == ["late"]


def test_query_here_runs_in_the_calling_thread(filled: EmbeddedStore) -> None:
    runner = QueryExecutor(filled, workers=1, max_runaway=1)
    seen: list[int] = []
    output = runner.query_here("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", formats=JSON,
                               timeout=5, max_rows=10, on_overrun=lambda e: seen.append(1))
    assert output is not None and b"\"150\"" in output.body
    assert seen == [] and runner.runaways == 0


class GatedStore(EmbeddedStore):
    """The real store, with a SPARQL function that blocks evaluation until the test opens a gate.

    A query calling `GATE()` is in pyoxigraph's evaluation for as long as the test wants, on
    any machine: no query is merely "slow enough" here.
    """

    def __init__(self) -> None:
        super().__init__(None)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def _wait(self) -> Literal:
        self.entered.set()
        self.gate.wait(60)
        return Literal(1)

    def query(self, sparql: str, **options: Any) -> Any:
        """Run the query with the gate function available."""
        assert set(options) <= {"default_graph", "named_graphs", "base_iri"}
        return self._store.query(sparql, custom_functions={GATE: self._wait}, **options)


GATE = NamedNode("urn:jido-test:gate")
GATED = f"SELECT (COUNT(*) AS ?n) WHERE {{ BIND(<{GATE.value}>() AS ?x) }}"


def test_query_here_past_its_deadline_is_answered_by_the_watchdog() -> None:
    store = GatedStore()
    runner = QueryExecutor(store, workers=1, max_runaway=1)
    answered: list[tuple[float, QueryTimeoutError]] = []
    overrun = threading.Event()
    started = time.monotonic()
    outcome: list[object] = []

    def on_overrun(error: QueryTimeoutError) -> None:
        answered.append((time.monotonic() - started, error))
        overrun.set()

    def run() -> None:
        outcome.append(runner.query_here(GATED, formats=JSON, timeout=0.3, max_rows=10,
                                         on_overrun=on_overrun))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert store.entered.wait(30), "the query never started"
    assert overrun.wait(30), "the watchdog did not answer for the late query"
    assert not store.gate.is_set()  # answered while the query was still running
    elapsed, error = answered[0]
    assert elapsed >= 0.3
    assert error.details == {"timeout_seconds": 0.3}
    # Still running: it holds the one runaway slot, so the next query is refused.
    assert runner.runaways == 1
    with pytest.raises(StoreUnavailableError):
        runner.query_here("ASK {}", formats=JSON, timeout=1, max_rows=1,
                          on_overrun=lambda e: None)
    store.gate.set()
    thread.join(30)
    assert not thread.is_alive()
    assert outcome == [None]  # its result is dropped: the answer went out already
    assert runner.runaways == 0

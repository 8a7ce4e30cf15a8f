"""Runaway queries: a 504 at the time limit, then a new worker process, charged to the caller.

pyoxigraph cannot cancel a query; a query still running `KG_RUNAWAY_GRACE` (2 s) past its time
limit makes the worker process drain and be replaced by the supervisor (docs/sparql.md).
Every test has a server of its own, so none depends on another's runaway.
"""

from __future__ import annotations

import contextlib
import http.client
import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer, alive, start_server
from tests.processes import cores_used, cpu_seconds, wait_for, wait_for_new_worker, worker_pid
from tests.sparql.conftest import READER, WRITER, server_env
from tests.sparql.http import Answer, call

CROSS_JOIN = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
COUNT_JOIN = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
SMALL = "SELECT ?o WHERE { <http://example.org/s42> ?p ?o }"
GRACE = 2.0  # KG_RUNAWAY_GRACE's default


def _loaded(directory: Path, **settings: object) -> RunningServer:
    """A server holding 100,000 triples in its default graph.

    The cross joins below then have 10^15 rows: no machine ends them within their time limit,
    and the row limit is lifted so that they cannot end on it either.
    """
    server = start_server(directory, extra_env=server_env(max_result_rows=str(10**12),
                                                          **settings))
    lines = "".join(f"<http://example.org/s{i}> <http://example.org/p{i % 7}> {i} .\n"
                    for i in range(100_000))
    answer = call(f"{server.url}/store?default", method="PUT", body=lines.encode(),
                  headers={"Authorization": f"Bearer {WRITER}",
                           "Content-Type": "text/turtle"})
    assert answer.status in (201, 204)
    return server


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[RunningServer]:
    """A server of its own for each test, so no test depends on another's runaway."""
    server = _loaded(tmp_path / "store")
    yield server
    server.stop()


def _run(server: RunningServer, text: str, timeout: float = 2,
         token: str | None = None) -> tuple[Answer, float]:
    started = time.monotonic()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = call(f"{server.url}/sparql?timeout={timeout}&query={quote(text)}", timeout=60,
                  headers=headers)
    return answer, time.monotonic() - started


def _sent(server: RunningServer, text: str) -> None:
    """Send a query with a long time limit; the server may close the connection unanswered."""
    with contextlib.suppress(OSError, http.client.HTTPException):
        _run(server, text, timeout=60)


def _small_latencies(server: RunningServer, stop: threading.Event) -> list[float]:
    def one(_: int) -> float:
        answer, elapsed = _run(server, SMALL, timeout=30, token=READER)
        assert answer.status == 200
        return elapsed

    latencies: list[float] = []
    with ThreadPoolExecutor(20) as pool:
        while not stop.is_set():
            latencies += pool.map(one, range(20))
    return latencies


def _stopped_in_time(server: RunningServer, query: str, timeout: float) -> tuple[str, float]:
    """Send a runaway; how its caller learns it was stopped ('504', or 'cut' for a streamed
    200 whose body ends unfinished with the cut marker, docs/sparql.md) and when."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        connection.request("GET", f"/sparql?timeout={timeout}&query={quote(query)}")
        response = connection.getresponse()
        if response.status != 200:
            answer = Answer(response.status, {}, response.read())
            assert (answer.status, answer.error_code) == (504, "query_timeout")
            return "504", time.monotonic() - started
        try:
            body = response.read()
        except http.client.IncompleteRead as exc:  # chunked, and never ended
            body = exc.partial
        assert b"this result is cut short" in body[-400:] and b"query_timeout" in body[-400:]
        return "cut", time.monotonic() - started
    finally:
        connection.close()


@pytest.mark.parametrize("query", [CROSS_JOIN, COUNT_JOIN], ids=["streaming", "aggregate"])
def test_runaway_is_cut_off_while_small_queries_are_served(loaded: RunningServer,
                                                           query: str) -> None:
    stop = threading.Event()
    results: dict[str, object] = {}

    def runaway() -> None:
        try:
            results["how"], results["elapsed"] = _stopped_in_time(loaded, query, 2)
        finally:
            stop.set()

    thread = threading.Thread(target=runaway)
    thread.start()
    latencies = _small_latencies(loaded, stop)
    thread.join()
    how, elapsed = results["how"], results["elapsed"]
    assert isinstance(elapsed, float)
    assert how == ("504" if query == COUNT_JOIN else how)  # a stream may be cut instead
    assert elapsed <= 2 + 3  # the time limit, and the watchdog's few seconds of grace at most
    assert latencies  # small queries were answered (200) while the runaway ran
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else latencies[0]
    print(f"runaway {query[:30]}: {how} after {elapsed:.2f}s; {len(latencies)} small "
          f"queries, p95 {p95 * 1000:.1f} ms")
    assert loaded.process.poll() is None


def test_runaways_beyond_the_bound_are_refused_until_the_worker_is_replaced(
        tmp_path: Path) -> None:
    """With one runaway allowed, the next query gets 503 while it runs; a new worker serves."""
    server = _loaded(tmp_path / "store", max_runaway_queries="1")
    try:
        first = worker_pid(server)
        assert first is not None
        answer, _ = _run(server, COUNT_JOIN, timeout=1)
        assert (answer.status, answer.error_code) == (504, "query_timeout")
        answer, _ = _run(server, SMALL, timeout=30, token=READER)
        assert (answer.status, answer.error_code) == (503, "store_unavailable")
        assert call(f"{server.url}/health").status == 200
        wait_for_new_worker(server, first)
        answer, _ = _run(server, SMALL, timeout=30, token=READER)
        assert answer.status == 200  # the 503 state went with the old process
    finally:
        server.stop()


def test_three_anonymous_cross_joins_cost_one_replacement_and_no_cpu_after(
        loaded: RunningServer) -> None:
    """The issue's case: 3 anonymous runaways at once; answers, service, CPU, data after."""
    probes = [f"http://example.org/probe{i}" for i in range(10)]
    for probe in probes:  # acknowledged writes from before
        answer = call(f"{loaded.url}/update", method="POST",
                      body=f"INSERT DATA {{ <{probe}> <http://example.org/p> 1 }}".encode(),
                      headers={"Authorization": f"Bearer {WRITER}",
                               "Content-Type": "application/sparql-update"})
        assert answer.status == 204
    first = worker_pid(loaded)
    assert first is not None
    sent = time.monotonic()
    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(lambda _: _run(loaded, COUNT_JOIN, timeout=1), range(3)))
    for answer, elapsed in outcomes:
        assert answer.status in (503, 504, 429) and answer.error_code, answer.body[:200]
        assert elapsed <= 1 + 3
    # A small query (another caller) is answered 200 within 8 s of sending the joins; while
    # the runaways run it may be refused 503 (retry), and it waits while the worker changes.
    small = wait_for(lambda: _run(loaded, SMALL, timeout=30, token=READER)[0].status == 200,
                     timeout=8 - (time.monotonic() - sent), what="a small query's 200",
                     every=0.2)
    assert small and time.monotonic() - sent <= 8
    wait_for_new_worker(loaded, first)
    time.sleep(max(35 - (time.monotonic() - sent), 0))  # the issue measures 35 s later
    cores = cores_used(loaded, seconds=3)
    assert cores < 0.25, f"{cores:.2f} cores still busy"
    found = call(f"{loaded.url}/sparql?query=" + quote(
        "SELECT (COUNT(*) AS ?n) WHERE { ?s <http://example.org/p> 1 }"),
        headers={"Authorization": f"Bearer {READER}",
                 "Accept": "application/sparql-results+json"})
    assert found.status == 200
    assert found.json()["results"]["bindings"][0]["n"]["value"] == str(len(probes))
    # The anonymous caller's 3 runaways are over its budget (2 per 10 minutes).
    refused, _ = _run(loaded, SMALL, timeout=30)
    assert (refused.status, refused.error_code) == (429, "runaway_budget_exceeded")


def test_a_caller_over_its_runaway_budget_gets_429_with_retry_after(tmp_path: Path) -> None:
    server = _loaded(tmp_path / "store", runaway_budget="1", runaway_budget_window="120")
    try:
        first = worker_pid(server)
        assert first is not None
        answer, _ = _run(server, COUNT_JOIN, timeout=1)
        assert answer.status == 504
        wait_for_new_worker(server, first)
        refused, _ = _run(server, SMALL, timeout=30)
        assert (refused.status, refused.error_code) == (429, "runaway_budget_exceeded")
        retry = int(refused.headers["retry-after"])
        assert 0 < retry <= 120 and refused.json()["error"]["details"]["retry_after"] == retry
        by_post = call(f"{server.url}/sparql", method="POST",
                       body=f"query={quote(SMALL)}".encode(),
                       headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert (by_post.status, by_post.error_code) == (429, "runaway_budget_exceeded")
        # Only that caller, and only SPARQL: another caller and other routes are served.
        assert _run(server, SMALL, timeout=30, token=READER)[0].status == 200
        assert call(f"{server.url}/health").status == 200
        assert call(f"{server.url}/ontology").status == 200
    finally:
        server.stop()


def test_sigterm_with_two_runaways_in_flight_ends_every_process_with_status_0(
        loaded: RunningServer) -> None:
    pids = loaded.pids()
    worker = worker_pid(loaded)
    assert worker is not None
    before = cpu_seconds([worker])
    threads = [threading.Thread(target=_sent, args=(loaded, COUNT_JOIN)) for _ in range(2)]
    for thread in threads:
        thread.start()
    # They run once the worker has spent CPU time on them (an idle store spends none).
    wait_for(lambda: cpu_seconds([worker]) - before >= 1.0, timeout=60,
             what="the two queries to run")
    stopped = time.monotonic()
    loaded.process.terminate()
    assert loaded.process.wait(timeout=15) == 0
    wait_for(lambda: not any(map(alive, pids)), timeout=15 - (time.monotonic() - stopped),
             what="every process of the server to end")
    for thread in threads:
        thread.join(timeout=30)

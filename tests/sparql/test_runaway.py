"""A runaway query is answered 504 at its time limit while small queries are still served."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer, start_server
from tests.sparql.conftest import WRITER, server_env
from tests.sparql.http import Answer, call

CROSS_JOIN = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
COUNT_JOIN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
SMALL = "SELECT ?o WHERE { <http://example.org/s42> ?p ?o }"


def _loaded(directory: Path, *, max_runaway: int) -> RunningServer:
    """A server holding 100,000 triples in its default graph.

    The cross joins below then have 10^15 rows: no machine ends them within their time limit,
    and the row limit is lifted so that they cannot end on it either.
    """
    server = start_server(directory, extra_env=server_env(
        max_runaway_queries=str(max_runaway), max_result_rows=str(10**12)))
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
    server = _loaded(tmp_path / "store", max_runaway=2)
    yield server
    server.process.kill()  # uncancellable runaways would hold a graceful stop up
    server.stop()


def _run(server: RunningServer, text: str, timeout: float = 2) -> tuple[Answer, float]:
    started = time.monotonic()
    answer = call(f"{server.url}/sparql?timeout={timeout}&query={quote(text)}", timeout=60)
    return answer, time.monotonic() - started


def _small_latencies(server: RunningServer, stop: threading.Event) -> list[float]:
    def one(_: int) -> float:
        answer, elapsed = _run(server, SMALL, timeout=30)
        assert answer.status == 200
        return elapsed

    latencies: list[float] = []
    with ThreadPoolExecutor(20) as pool:
        while not stop.is_set():
            latencies += pool.map(one, range(20))
    return latencies


@pytest.mark.parametrize("query", [CROSS_JOIN, COUNT_JOIN], ids=["streaming", "aggregate"])
def test_runaway_is_cut_off_while_small_queries_are_served(loaded: RunningServer,
                                                           query: str) -> None:
    stop = threading.Event()
    results: dict[str, object] = {}

    def runaway() -> None:
        try:
            results["answer"], results["elapsed"] = _run(loaded, query, timeout=2)
        finally:
            stop.set()

    thread = threading.Thread(target=runaway)
    thread.start()
    latencies = _small_latencies(loaded, stop)
    thread.join()
    answer, elapsed = results["answer"], results["elapsed"]
    assert isinstance(answer, Answer) and isinstance(elapsed, float)
    assert (answer.status, answer.error_code) == (504, "query_timeout")
    assert elapsed <= 2 + 3  # the time limit, and the watchdog's few seconds of grace at most
    assert latencies  # small queries were answered (200) while the runaway ran
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) > 1 else latencies[0]
    print(f"runaway {query[:30]}: 504 after {elapsed:.2f}s; {len(latencies)} small queries, "
          f"p95 {p95 * 1000:.1f} ms")
    assert loaded.process.poll() is None


def test_runaways_beyond_the_bound_are_refused(tmp_path: Path) -> None:
    """With one runaway allowed, the next query is refused while the first still runs."""
    server = _loaded(tmp_path / "store", max_runaway=1)
    try:
        answer, _ = _run(server, COUNT_JOIN, timeout=1)
        assert (answer.status, answer.error_code) == (504, "query_timeout")
        answer, _ = _run(server, SMALL, timeout=30)
        assert (answer.status, answer.error_code) == (503, "store_unavailable")
        assert call(f"{server.url}/health").status == 200
    finally:
        server.process.kill()
        server.stop()

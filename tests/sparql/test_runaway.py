"""A runaway query is answered 504 within its time limit while small queries stay fast."""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer, start_server
from tests.sparql.conftest import WRITER, server_env
from tests.sparql.http import Answer, call

CROSS_JOIN = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
COUNT_JOIN = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }"
SMALL = "SELECT ?o WHERE { <http://example.org/s42> ?p ?o }"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server holding 100,000 triples in its default graph, at most 2 runaways at a time."""
    server = start_server(tmp_path_factory.mktemp("runaway"),
                          extra_env=server_env(max_runaway_queries="2"))
    lines = "".join(f"<http://example.org/s{i}> <http://example.org/p{i % 7}> {i} .\n"
                    for i in range(100_000))
    answer = call(f"{server.url}/store?default", method="PUT", body=lines.encode(),
                  headers={"Authorization": f"Bearer {WRITER}",
                           "Content-Type": "text/turtle"})
    assert answer.status in (201, 204)
    yield server
    server.stop()


def _run(server: RunningServer, text: str, timeout: float = 2) -> tuple[Answer, float]:
    started = time.monotonic()
    answer = call(f"{server.url}/sparql?timeout={timeout}&query={quote(text)}", timeout=30)
    return answer, time.monotonic() - started


def _small_latencies(server: RunningServer, stop: threading.Event) -> list[float]:
    def one(_: int) -> float:
        answer, elapsed = _run(server, SMALL)
        assert answer.status == 200
        return elapsed

    latencies: list[float] = []
    with ThreadPoolExecutor(20) as pool:
        while not stop.is_set():
            latencies += pool.map(one, range(20))
    return latencies


@pytest.mark.parametrize("query", [CROSS_JOIN, COUNT_JOIN], ids=["streaming", "aggregate"])
def test_runaway_is_cut_off_while_small_queries_stay_fast(loaded: RunningServer,
                                                          query: str) -> None:
    stop = threading.Event()
    results: dict[str, object] = {}

    def runaway() -> None:
        results["answer"], results["elapsed"] = _run(loaded, query, timeout=2)
        stop.set()

    thread = threading.Thread(target=runaway)
    thread.start()
    time.sleep(0.2)
    latencies = _small_latencies(loaded, stop)
    thread.join()
    answer, elapsed = results["answer"], results["elapsed"]
    assert isinstance(answer, Answer) and isinstance(elapsed, float)
    assert (answer.status, answer.error_code) == (504, "query_timeout")
    assert elapsed <= 3.0
    p95 = statistics.quantiles(latencies, n=20)[-1]
    print(f"runaway {query[:30]}: 504 after {elapsed:.2f}s; {len(latencies)} small queries, "
          f"p95 {p95 * 1000:.1f} ms")
    assert p95 <= 0.100
    assert loaded.process.poll() is None


def test_runaways_beyond_the_bound_are_refused_at_once(loaded: RunningServer) -> None:
    """The aggregate above cannot be cancelled and still runs; a second one fills the bound."""
    answer, elapsed = _run(loaded, COUNT_JOIN, timeout=2)
    if answer.status == 504:  # the slot was free (test order): now it is taken
        answer, elapsed = _run(loaded, SMALL)
    assert (answer.status, answer.error_code) == (503, "store_unavailable")
    assert elapsed < 0.5
    assert call(f"{loaded.url}/health").status == 200



"""Soak: concurrent clients mixing queries, updates and memory calls; no 5xx, bounded RSS."""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from bench.reliability.client import TOKENS, Client, Reply, server_env
from bench.reliability.dataset import PROBE_PREDICATE, seed_store
from bench.reliability.processes import rss_parts, worker_pid
from bench.reliability.result import CheckResult, p99
from bench.server import ServerProcess, start_server

__all__ = ["FULL_WARM_UP_SECONDS", "MAX_RSS_GROWTH", "WARM_UP_SECONDS", "run"]

MAX_RSS_GROWTH = 0.10
WARM_UP_SECONDS = 15.0  # the fast subset's store (2,000 memories) is cached within it
# The full run's 10,000-memory store: from a cold start the first ~25 s of the mix fill what has
# a fixed size (Python's arenas within 10 s, SQLite's heap up to its 16 MiB limit, RocksDB's
# 32 MiB index block cache); after that RSS grows with the data and the string cache (measured
# 2026-11-23, docs/benchmarks/reliability.md, "Memory under soak").
FULL_WARM_UP_SECONDS = 30.0
_PROJECTS = [f"proj-{i:04d}" for i in range(3)]  # projects the generator fills
_TOPICS = ("postgres", "redis cache", "retry backoff", "sparql ontology", "docker", "timeout")


def _operations(rng: random.Random, tag: str) -> list[tuple[str, float, Callable[[Client], Reply]]]:
    project = rng.choice(_PROJECTS)
    graph = f"https://jido.ai/graph/project/{project}/long-term"
    counter = iter(range(10**9))

    def query(c: Client) -> Reply:
        return c.sparql(
            f"SELECT ?m ?c WHERE {{ GRAPH <{graph}> {{ ?m <https://jido.ai/ontology#content> ?c "
            f"}} }} LIMIT {rng.randint(1, 50)}", token=TOKENS["read"])

    def count(c: Client) -> Reply:
        return c.sparql(f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}",
                        token=TOKENS["read"])

    def update(c: Client) -> Reply:
        subject = f"urn:jido-kg:reliability:soak-{tag}-{next(counter)}"
        return c.update(f"INSERT DATA {{ GRAPH <https://jido.ai/graph/project/{project}/codebase>"
                        f" {{ <{subject}> <{PROBE_PREDICATE.value}> 1 }} }}",
                        token=TOKENS["write"])

    def remember(c: Client) -> Reply:
        return c.remember(project, f"soak note {tag} {uuid.uuid4().hex} about "
                          f"{rng.choice(_TOPICS)}", token=TOKENS["write"], session=f"soak-{tag}")

    def recall(c: Client) -> Reply:
        return c.recall(project, rng.choice(_TOPICS), token=TOKENS["read"], limit=10)

    return [("query", 0.3, query), ("count", 0.1, count), ("update", 0.2, update),
            ("remember", 0.2, remember), ("recall", 0.2, recall)]


def _sample_until(deadline: float, server: ServerProcess, into: list[int]) -> None:
    """Append the worker's VmRSS (KiB) to `into` every 0.5 s until the deadline or its exit."""
    while time.perf_counter() < deadline and server.alive():
        into.append(_rss(server))
        time.sleep(0.5)


def _rss(server: ServerProcess) -> int:
    """VmRSS of the worker process, which holds the store (the supervisor's is small, fixed)."""
    return rss_parts(worker_pid(server))[0]


def _rss_parts(server: ServerProcess) -> tuple[int, int]:
    """The worker's anonymous and file-backed resident memory (RssAnon, RssFile) in KiB."""
    _, anon, file = rss_parts(worker_pid(server))
    return anon, file


def _data_kb(store: Path) -> int:
    """KiB on disk of the store directory and the recall index beside it (data, not memory)."""
    total = 0
    for entry in store.parent.glob(store.name + "*"):
        if entry.name.endswith(".log"):  # the server's own log beside the store
            continue
        for file in [entry] if entry.is_file() else entry.rglob("*"):
            with contextlib.suppress(OSError):  # RocksDB or tantivy removed it meanwhile
                total += file.stat().st_size if file.is_file() else 0
    return total // 1024


def run(seconds: float = 60.0, *, workdir: Path, clients: int = 16, memories: int = 10_000,
        seed: int = 0, warm_up: float = WARM_UP_SECONDS) -> CheckResult:
    """Run `clients` threads for `warm_up` + `seconds` against a store of `memories`."""
    result = CheckResult(f"soak ({clients} clients, {seconds:g} s)")
    started = time.perf_counter()
    store = workdir / "soak-store"
    seed_store(store, memories)
    server = start_server(store, env=server_env(), timeout=300)
    client = Client(server.url, timeout=120)
    latencies: dict[str, list[float]] = defaultdict(list)
    statuses: dict[int, int] = defaultdict(int)
    failures: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def worker(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        ops = _operations(rng, f"{seed}-{index}")
        names, weights = [o[0] for o in ops], [o[1] for o in ops]
        funcs = {o[0]: o[2] for o in ops}
        while not stop.is_set():
            name = rng.choices(names, weights)[0]
            reply = funcs[name](client)
            with lock:
                statuses[reply.status] += 1
                latencies[name].append(reply.seconds)
                if reply.status >= 500 or reply.status == 0 or reply.status >= 400:
                    failures.append(f"{name}: {reply.status} {reply.text[:160]}")
        client.close()

    rss_first = _rss(server)  # started and answering /health, no client yet
    first_worker = worker_pid(server)
    anon_first, file_first = _rss_parts(server)
    rss: list[int] = []
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    # The growth is measured from the RSS after a warm-up (the caches fill from the cold,
    # freshly seeded store); the warm-up comes on top of the measured `seconds`. The report
    # gives the first sample, the peak and the growth from the first sample as well
    # (docs/benchmarks/reliability.md, "Memory under soak").
    _sample_until(time.perf_counter() + warm_up, server, rss)
    with lock:
        for values in latencies.values():
            values.clear()
    rss_start = _rss(server)
    (anon_start, file_start), data_start = _rss_parts(server), _data_kb(store)
    _sample_until(time.perf_counter() + seconds, server, rss)
    stop.set()
    for thread in threads:
        thread.join(timeout=180)
    rss_end = _rss(server)
    (anon_end, file_end), data_end = _rss_parts(server), _data_kb(store)
    alive = server.alive()
    replaced = worker_pid(server) != first_worker
    server.stop()
    every = [t for values in latencies.values() for t in values]
    result.cycles = 1
    result.requests = len(every)
    result.errors = len(failures)
    growth = (rss_end - rss_start) / rss_start if rss_start else 0.0
    growth_first = (rss_end - rss_first) / rss_first if rss_first else 0.0
    result.figures = {
        "p99 ms": p99(every) * 1000,
        **{f"{k} p99 ms": p99(v) * 1000 for k, v in sorted(latencies.items())},
        "req/s": len(every) / seconds,
        "RSS first MB": rss_first / 1024,
        f"RSS after {warm_up:g} s warm-up MB": rss_start / 1024,
        "RSS peak MB": max([rss_start, rss_end, *rss]) / 1024,
        "RSS final MB": rss_end / 1024,
        "RSS growth from first %": growth_first * 100,
        "RSS growth after warm-up %": growth * 100,
        # What VmRSS is made of: anonymous memory (heaps, caches) and file-backed pages (the
        # libraries, the memory-mapped recall index); the files on disk grow with the data the
        # soak writes (docs/benchmarks/reliability.md, "Memory under soak").
        "anon RSS first/after warm-up/final MB": _mb3(anon_first, anon_start, anon_end),
        "file RSS first/after warm-up/final MB": _mb3(file_first, file_start, file_end),
        "store+index on disk after warm-up/final MB": _mb3(data_start, data_end),
    }
    for failure in failures[:10]:
        result.fail(failure)
    if not alive:
        result.fail("the server died during the soak")
    if replaced:
        result.fail("the worker process was replaced during the soak (a crash or a runaway)")
    if growth >= MAX_RSS_GROWTH:
        result.fail(f"resident memory grew {growth:.1%} after the {warm_up:g} s warm-up "
                    f"(limit {MAX_RSS_GROWTH:.0%})")
    result.note("statuses: " + ", ".join(f"{k}×{v}" for k, v in sorted(statuses.items())))
    result.seconds = time.perf_counter() - started
    return result


def _mb3(*kib: int) -> str:
    """KiB values as 'a / b / c' MB."""
    return " / ".join(f"{k / 1024:.0f}" for k in kib)

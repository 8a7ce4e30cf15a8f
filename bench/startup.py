"""Startup and resident memory of the service on an existing store of n memories.

Startup is the time from process start to the first 200 from /health; resident memory is the
server's resident memory (VmRSS of the supervisor and its worker, which holds the store) after
it has answered a few real queries over the whole store.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.generator import cached_store
from bench.reliability.client import TOKENS, Client, server_env
from bench.server import ServerProcess, start_server

__all__ = ["MAX_RSS_MB", "MAX_STARTUP_SECONDS", "run"]

MAX_STARTUP_SECONDS = 3.0
MAX_RSS_MB = 1536.0

# Queries that touch the whole store, so the RSS reflects a store that is open and serving.
_WARMUP = (
    "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?m <https://jido.ai/ontology#content> ?c } }",
    "SELECT ?m ?c WHERE { GRAPH ?g { ?m <https://jido.ai/ontology#content> ?c } } LIMIT 100",
)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    k = (len(ordered) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _warm_up(server: ServerProcess) -> list[int]:
    client = Client(server.url, timeout=300)
    codes = [client.sparql(q, token=TOKENS["read"]).status for q in _WARMUP]
    codes.append(client.recall("proj-0000", "postgres cache", token=TOKENS["read"]).status)
    client.close()
    return codes


def _row(metric: str, values: list[float], unit: str, target: str, ok: bool,
         n: int, **extra: Any) -> dict[str, Any]:
    return {"scenario": "startup", "metric": metric, "n": n,
            "median": statistics.median(values), "p95": percentile(values, 95),
            "unit": unit, "target": target, "ok": ok, **extra}


def run(repeats: int = 5, n: int = 10_000, quick: bool = False) -> list[dict[str, Any]]:
    """Start the server `repeats` times on a store of `n` memories; report time and memory."""
    store = cached_store(n)
    env = server_env()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        log = Path(tmp) / "server.log"
        # The first start may build what the service keeps beside the store (the recall
        # index); it is reported on its own and not counted as a startup.
        first = start_server(store, env=env, log=log, timeout=1800)
        first_seconds = first.startup_seconds
        first.stop()
        starts: list[float] = []
        rss: list[float] = []
        codes: list[int] = []
        for _ in range(max(1, repeats)):
            server = start_server(store, env=env, log=log, timeout=600)
            starts.append(server.startup_seconds)
            codes += _warm_up(server)
            time.sleep(0.2)
            rss.append(server.rss_kb() / 1024)
            server.stop()
    served = sum(1 for c in codes if c == 200)
    return [
        _row("startup_to_health", starts, "s", f"median ≤ {MAX_STARTUP_SECONDS:g} s",
             statistics.median(starts) <= MAX_STARTUP_SECONDS, n),
        _row("rss_serving", rss, "MB", f"≤ {MAX_RSS_MB:,.0f} MB",
             max(rss) <= MAX_RSS_MB, n, warmup_200=f"{served}/{len(codes)}"),
        _row("first_start", [first_seconds], "s", "informational (may build indexes)", True, n),
    ]

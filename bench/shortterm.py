"""Short-term memory benchmark: `python -m bench.shortterm` prints a table of the figures.

Scenarios (targets from the short-term issue): working-context put+get pairs per second,
access-log records per second with the log full (so every record also evicts), pending-memory
adds per second at the 500-item cap (so every add also evicts), and the latency of one ACT-R
query over 1,000 items with 256-dim embeddings. Throughputs are measured once per run; the
query latency is sampled per call. The median and p95 are over those samples.
`run()` returns the rows for the project's benchmark harness.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

import numpy as np

from kg.shortterm import AccessLog, PendingMemories, WorkingContext, WorkingMemory
from kg.terms import ContextKey

__all__ = ["run"]

Row = dict[str, object]


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _rate(repeats: int, ops: int, body: Callable[[int], None]) -> list[float]:
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        body(ops)
        rates.append(ops / (time.perf_counter() - start))
    return rates


def _context(ops: int) -> None:
    ctx = WorkingContext()
    keys = list(ContextKey)
    values = [f"value {i}" for i in range(len(keys))]
    put, get = ctx.put, ctx.get
    for i in range(ops):
        k = i % 11
        put(keys[k], values[k])
        get(keys[k])


def _access_log(ops: int) -> None:
    log = AccessLog()
    keys: list[object] = [*ContextKey, *(("memory", f"m{i}") for i in range(50))]
    for i in range(1_000):
        log.record(keys[i % len(keys)])  # type: ignore[arg-type]
    record = log.record
    n = len(keys)
    for i in range(ops):
        record(keys[i % n], "read")  # type: ignore[arg-type]


def _pending(ops: int) -> None:
    pending = PendingMemories()
    rng = random.Random(0)
    scores = [rng.random() for _ in range(ops + 500)]
    for i in range(500):
        pending.add_implicit("staged memory", importance_score=scores[i])
    add = pending.add_implicit
    for i in range(500, ops + 500):
        add("staged memory", importance_score=scores[i])


def _reader(cell: list[float]) -> Callable[[], float]:
    """A clock that reads a mutable cell, so the benchmark controls time."""
    return lambda: cell[0]


def _query_latencies(repeats: int, items: int, dim: int, queries: int) -> list[float]:
    samples: list[float] = []
    for r in range(repeats):
        rng = np.random.default_rng(r)
        clock = [0.0]
        wm = WorkingMemory(now=_reader(clock), rng=rng)
        vectors = rng.standard_normal((items, dim))
        for i in range(items):
            clock[0] = float(i)
            wm.add(f"item {i}", vectors[i], agent_id="agent", user_id="user")
        probes = rng.standard_normal((queries, dim))
        for q in range(queries):
            clock[0] = items + 60.0 * q
            start = time.perf_counter()
            wm.query(probes[q], top_k=5)
            samples.append((time.perf_counter() - start) * 1_000)
    return samples


def _row(
    scenario: str,
    metric: str,
    samples: list[float],
    unit: str,
    target: float,
    higher_is_better: bool,
) -> Row:
    median = statistics.median(samples)
    ok = median >= target if higher_is_better else median <= target
    return {
        "scenario": scenario,
        "metric": metric,
        "median": median,
        "p95": _p95(samples),
        "unit": unit,
        "target": target,
        "ok": ok,
    }


def run(
    repeats: int = 5, *, ops: int = 200_000, items: int = 1_000, dim: int = 256, queries: int = 200
) -> list[Row]:
    """Run every scenario `repeats` times and return one row per scenario."""

    # p95 of a throughput is its slow tail: the 5th percentile of the rates.
    def slow_tail(rates: list[float]) -> list[float]:
        return [-r for r in rates]

    rows = []
    for scenario, body, target in (
        ("working_context put+get", _context, 300_000.0),
        ("access_log record (full log)", _access_log, 500_000.0),
        ("pending add_implicit at 500 (evicting)", _pending, 100_000.0),
    ):
        rates = _rate(repeats, ops, body)
        row = _row(scenario, "throughput", rates, "ops/s", target, True)
        row["p95"] = -_p95(slow_tail(rates))
        rows.append(row)
    latencies = _query_latencies(repeats, items, dim, queries)
    rows.append(
        _row(f"act-r query ({items} items, {dim}-dim)", "latency", latencies, "ms", 2.0, False)
    )
    return rows


def _print(rows: list[Row]) -> None:
    print(f"{'scenario':42} {'median':>14} {'p95':>14} {'unit':>6} {'target':>10}  ok")
    for row in rows:
        print(
            f"{row['scenario']!s:42} {row['median']:>14,.3f} {row['p95']:>14,.3f} "
            f"{row['unit']!s:>6} {row['target']:>10,} {'yes' if row['ok'] else 'NO'}"
        )


if __name__ == "__main__":
    _print(run())

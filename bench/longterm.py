"""Long-term memory benchmark: `python -m bench.longterm` prints a table of the figures.

Scenarios (targets from the long-term issue):
- `remember`: single durable remembers per second through the Python API on an on-disk store
  (each one its own transaction, dedup lookup included), target ≥ 2,000/s; also per CPU second
  of the process, which a busy machine does not distort; and with the recall index listening
  (no embedder), as the service remembers, timed until the index applied every queued write;
- `bulk_import`: `LongTermMemory.bulk_import` of generated memories as N-Quads against
  pyoxigraph's own `Store.bulk_load` of the same file into a fresh on-disk store, measured in
  the same run, alternating which goes first; target ratio ≥ 0.8;
- `promotion`: one promotion run of a session holding 500 pending items (it scores all 500 and
  writes the best 20) on an on-disk store, target ≤ 50 ms; and, for information, draining all
  500 (the final run at session close).
`run()` returns the rows for the project's benchmark harness.
"""

from __future__ import annotations

import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyoxigraph
from pyoxigraph import RdfFormat

from bench.generator import generate
from kg.longterm import LongTermMemory
from kg.longterm.promotion import PromotionEngine
from kg.recall.keyword_index import KeywordIndex
from kg.shortterm import Session
from kg.store import EmbeddedStore
from kg.terms import MemoryType

__all__ = ["run"]

Row = dict[str, Any]
REMEMBERS = 2_000
BULK_MEMORIES = 20_000
PENDING = 500


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _row(metric: str, samples: list[float], unit: str, target: float | None, *,
         higher_is_better: bool = True, **extra: Any) -> Row:
    median = statistics.median(samples)
    ok = True  # informational rows have no target
    if target is not None:
        ok = median >= target if higher_is_better else median <= target
    return {"scenario": "longterm", "metric": metric, "median": round(median, 3),
            "p95": round(_p95(samples), 3), "unit": unit, "target": target, "ok": ok, **extra}


def _remember_rate(work: Path, *, indexed: bool = False) -> tuple[float, float]:
    path = work / f"remember-{time.monotonic_ns()}"
    store = EmbeddedStore(path)
    # `indexed`: the recall index (no embedder, the service's default) listens, as in the service.
    index = KeywordIndex(path.with_name(path.name + ".recall.sqlite")) if indexed else None
    ltm = LongTermMemory(store, listeners=[index] if index is not None else [])
    try:
        for i in range(200):  # warm-up: caches, first SST files
            ltm.remember(f"warm-up memory {i}", project="bench", session="s0", agent="a")
        start, cpu = time.perf_counter(), time.process_time()
        for i in range(REMEMBERS):
            ltm.remember(f"benchmark memory number {i} about the cache layer",
                         project="bench", session="s1", agent="a", rationale="benchmark")
        if index is not None:
            index.drain()  # the index writes in batches on a thread: count them all
        wall = time.perf_counter() - start
        return REMEMBERS / wall, REMEMBERS / (time.process_time() - cpu)
    finally:
        ltm.close()
        if index is not None:
            index.close()
        store.close()
        shutil.rmtree(path, ignore_errors=True)


def _bulk_seconds(source: Path, work: Path, *, ours: bool) -> float:
    path = work / f"bulk-{'ours' if ours else 'oxigraph'}-{time.monotonic_ns()}"
    try:
        if ours:
            store = EmbeddedStore(path)
            ltm = LongTermMemory(store)
            start = time.perf_counter()
            ltm.bulk_import(source)
            seconds = time.perf_counter() - start
            store.close()
        else:
            raw = pyoxigraph.Store(str(path))
            start = time.perf_counter()
            raw.bulk_load(path=str(source), format=RdfFormat.N_QUADS)
            seconds = time.perf_counter() - start
            del raw
        return seconds
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _session_with_pending(index: int) -> Session:
    rng = random.Random(index)
    session = Session(f"bench-{index}", project=f"promo-{index}", agent="a")
    types = list(MemoryType)
    for i in range(PENDING):
        session.pending_memories.add_implicit(
            f"pending item {i} of run {index}: {rng.random():.6f}",
            importance_score=round(rng.uniform(0.6, 1.0), 4), memory_type=rng.choice(types),
            confidence=round(rng.uniform(0.3, 1.0), 3),
        )
    return session


def _promotion_ms(ltm: LongTermMemory, index: int, *, drain: bool) -> float:
    session = _session_with_pending(index)
    engine = PromotionEngine(ltm)
    start = time.perf_counter()
    result = engine.promote(session, drain=drain)
    ms = (time.perf_counter() - start) * 1000
    assert len(result.written) == (PENDING if drain else 20) and result.ok
    return ms


def run(repeats: int = 5, *, quick: bool = False) -> list[Row]:
    """Measure every scenario `repeats` times; return one row per metric (`quick`: less data)."""
    work = Path(tempfile.mkdtemp(prefix="bench-longterm-"))
    try:
        measured = [_remember_rate(work) for _ in range(repeats)]
        indexed = [_remember_rate(work, indexed=True) for _ in range(repeats)]
        data = generate(work / "memories.nq", BULK_MEMORIES // 10 if quick else BULK_MEMORIES,
                        progress=False)
        ours: list[float] = []
        theirs: list[float] = []
        for i in range(repeats):
            order = (True, False) if i % 2 == 0 else (False, True)
            for mine in order:
                (ours if mine else theirs).append(_bulk_seconds(data.path, work, ours=mine))
        ratios = [t / o for o, t in zip(ours, theirs, strict=True)]
        store = EmbeddedStore(work / "promotion")
        ltm = LongTermMemory(store)
        _promotion_ms(ltm, -1, drain=False)  # warm-up
        once = [_promotion_ms(ltm, i, drain=False) for i in range(repeats)]
        drained = [_promotion_ms(ltm, 1000 + i, drain=True) for i in range(repeats)]
        ltm.close()
        store.close()
        return [
            _row("remember (durable, on disk)", [w for w, _ in measured], "ops/s", 2000.0,
                 n=REMEMBERS),
            # Per CPU second of this process (all its threads): what the machine's load hides.
            _row("remember per CPU second", [c for _, c in measured], "ops/s", None,
                 n=REMEMBERS),
            _row("remember with the recall index (durable, on disk)", [w for w, _ in indexed],
                 "ops/s", 2000.0, n=REMEMBERS),
            # Both threads' CPU (the remembers' and the index writer's), queued writes applied.
            _row("remember with the recall index per CPU second", [c for _, c in indexed],
                 "ops/s", None, n=REMEMBERS),
            _row("bulk_import", [data.quads / s for s in ours], "quads/s", None,
                 n=data.quads),
            _row("pyoxigraph bulk_load (baseline)", [data.quads / s for s in theirs], "quads/s",
                 None, n=data.quads),
            _row("bulk_import / bulk_load speed", ratios, "ratio", 0.8, n=data.quads),
            _row("promotion run, 500 pending", once, "ms", 50.0, higher_is_better=False,
                 n=PENDING),
            _row("drain 500 pending (close)", drained, "ms", None, higher_is_better=False,
                 n=PENDING),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    """Print the figures as a table."""
    rows = run()
    print(f"{'metric':36} {'median':>12} {'p95':>12} {'unit':>8} {'target':>8}  ok")
    for r in rows:
        target = "" if r["target"] is None else f"{r['target']:g}"
        print(f"{r['metric']:36} {r['median']:>12,.3f} {r['p95']:>12,.3f} {r['unit']:>8} "
              f"{target:>8}  {'yes' if r['ok'] else 'NO'}")


if __name__ == "__main__":
    main()

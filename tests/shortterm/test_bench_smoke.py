"""The short-term benchmark runs and returns well-formed rows (no timing is asserted)."""

from __future__ import annotations

from bench.shortterm import run


def test_bench_runs_on_tiny_sizes() -> None:
    rows = run(repeats=1, ops=500, items=20, dim=8, queries=3)
    assert len(rows) == 4
    for row in rows:
        assert set(row) == {"scenario", "metric", "median", "p95", "unit", "target", "ok"}
        assert isinstance(row["median"], float) and isinstance(row["ok"], bool)

"""The long-term benchmark runs and returns rows in the harness's shape (figures not asserted)."""

from __future__ import annotations

from bench.harness import REQUIRED_KEYS
from bench.longterm import run


def test_bench_rows_have_the_harness_shape() -> None:
    rows = run(repeats=1, quick=True)
    assert {r["metric"] for r in rows} >= {
        "remember (durable, on disk)", "bulk_import / bulk_load speed",
        "promotion run, 500 pending",
    }
    for row in rows:
        assert row.keys() >= REQUIRED_KEYS and row["scenario"] == "longterm"
        assert row["median"] > 0 and isinstance(row["ok"], bool)

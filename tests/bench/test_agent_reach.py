"""The agent-reach scenario through the harness at its quick size: every way answers, rows land.

No figure is asserted (benchmarks are not timed tests): the scenario itself asserts that each
call succeeded (remember's 201, recall's hits, MCP results without isError).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.agent_reach import MCP_OVERHEAD_MS
from bench.callers import LABELS
from bench.harness import ROOT, SCENARIOS


def test_quick_run_times_every_way_and_reports_the_mcp_target(tmp_path: Path) -> None:
    assert "agent_reach" in SCENARIOS
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "agent_reach",
         "--output", str(tmp_path / "B.md")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "BENCH_CACHE": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    [outcome] = json.loads((tmp_path / "B.json").read_text())
    assert outcome["status"] == "ok", outcome["error"]
    rows = {row["metric"]: row for row in outcome["rows"]}
    for operation in ("remember", "recall"):
        for label in LABELS.values():
            row = rows[f"{operation} via {label}"]
            assert row["median"] > 0 and row["p95"] >= row["median"] and row["unit"] == "ms"
            assert row["client_cpu_ms"] > 0 and row["server_cpu_ms"] > 0
        overhead = rows[f"{operation} p50 overhead, {LABELS['mcp']} - {LABELS['httpx']}"]
        assert overhead["target"] == f"<= {MCP_OVERHEAD_MS:g} ms"
        assert isinstance(overhead["ok"], bool)
        bare = rows[f"{operation} p50 overhead, {LABELS['mcp']} - HTTP API"]
        assert bare["target"] == "informational" and bare["ok"] is None
        assert rows[f"{operation} p50 overhead, MemoryClient - HTTP API"]["ok"] is None
        versus = rows[f"{operation} p50 overhead, {LABELS['mcp']} - MemoryClient"]
        assert versus["target"] == "informational" and versus["ok"] is None
    report = (tmp_path / "B.md").read_text()
    assert "## agent_reach" in report
    assert "`python -m bench --only agent_reach --quick`" in report

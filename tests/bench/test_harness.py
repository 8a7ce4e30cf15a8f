"""The benchmark harness end to end at tiny sizes: it runs, survives bad scenarios, reports.

No timing is asserted: benchmarks are not timed tests (the figures come from `make bench`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.harness import ROOT


def _bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--output", str(tmp_path / "B.md"), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "BENCH_CACHE": str(tmp_path / "cache")},
    )


def test_quick_run_writes_the_report_with_machine_commands_and_plot(tmp_path: Path) -> None:
    done = _bench(tmp_path, "--only", "startup", "--sizes", "200,400")
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "B.md").read_text()
    for needed in ("## Machine", "CPU", "Cores", "RAM", "Python", "pyoxigraph",
                   "python -m bench --only startup --sizes 200", "## startup",
                   "startup_to_health", "rss_serving"):
        assert needed in report, needed
    assert (tmp_path / "img" / "startup_by_size.png").stat().st_size > 1000
    results = json.loads((tmp_path / "B.json").read_text())
    assert {r["n"] for r in results} == {200, 400}
    assert all(r["status"] == "ok" for r in results)


def test_missing_and_broken_scenarios_are_reported_and_the_rest_still_run(
        tmp_path: Path) -> None:
    done = _bench(tmp_path, "--only", "no_such_scenario", "--only", "harness",
                  "--only", "startup", "--sizes", "200")
    assert done.returncode == 0, done.stderr
    results = {r["scenario"]: r for r in json.loads((tmp_path / "B.json").read_text())}
    assert results["no_such_scenario"]["status"] == "missing"
    assert results["harness"]["status"] == "failed"  # a module without run()
    assert results["startup"]["status"] == "ok"
    report = (tmp_path / "B.md").read_text()
    assert "**MISSING**" in report and "**FAILED**" in report


def test_merge_keeps_other_scenarios_and_replaces_the_one_measured_again(
        tmp_path: Path) -> None:
    first = _bench(tmp_path, "--only", "startup", "--only", "no_such_scenario",
                   "--sizes", "200")
    assert first.returncode == 0, first.stderr
    before = {r["scenario"]: r for r in json.loads((tmp_path / "B.json").read_text())}
    again = _bench(tmp_path, "--only", "startup", "--sizes", "200", "--merge")
    assert again.returncode == 0, again.stderr
    after = {r["scenario"]: r for r in json.loads((tmp_path / "B.json").read_text())}
    assert set(after) == {"startup", "no_such_scenario"}
    assert after["no_such_scenario"] == before["no_such_scenario"]
    assert after["startup"]["rows"] != before["startup"]["rows"]  # measured anew
    assert after["startup"]["measured"].count(", load ") == 1
    report = (tmp_path / "B.md").read_text()
    assert "| startup | 200 | pass |" in report and "**MISSING**" in report

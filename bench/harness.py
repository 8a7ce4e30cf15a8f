"""Runs the benchmark scenarios, each in its own process, and collects their rows.

A scenario is a module `bench.<name>` with `run(repeats: int = 5, ...) -> list[dict]`; each row
has scenario, metric, median, p95, unit, target, ok (and may add n, baseline, ratio ...). A
scenario whose `run` takes `n` is run at several store sizes. Each run happens in a child
process so that a crash (pyoxigraph can segfault), a hang or a missing module is reported as a
failed scenario and the rest still run, and so that the child's peak RSS is that scenario's own.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

__all__ = [
    "FULL_SIZES",
    "QUICK_SIZES",
    "REQUIRED_KEYS",
    "SCENARIOS",
    "Outcome",
    "merged",
    "run_all",
    "run_child",
]

ROOT = Path(__file__).resolve().parents[1]
# The order the report lists them in; startup is this package's own scenario.
SCENARIOS = ("shortterm", "longterm", "recall", "sparql", "context", "remote", "agent_reach",
             "startup", "explore", "sparql_beyond")
REQUIRED_KEYS = frozenset({"scenario", "metric", "median", "p95", "unit", "target", "ok"})
FULL_SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000,)


@dataclass
class Outcome:
    """One scenario run (at one size, if it is sized): its rows or why it failed."""

    scenario: str
    n: int | None
    status: str  # "ok", "failed", "missing", "timeout", "crashed"
    rows: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    peak_rss_mb: float | None = None
    command: str = ""
    measured: str = ""  # when it ran (UTC) and the load average then: a merged report mixes runs

    @property
    def passed(self) -> bool:
        """True if it ran and every row met its target."""
        # ok None marks an informational row (no target).
        return self.status == "ok" and all(r.get("ok") is not False for r in self.rows)


def _accepts(func: Any, name: str) -> bool:
    params = inspect.signature(func).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check_rows(name: str, rows: Any) -> list[dict[str, Any]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TypeError(f"bench.{name}.run() returned {type(rows).__name__}, not a list of dicts")
    for row in rows:
        missing = REQUIRED_KEYS - row.keys()
        if missing:
            raise ValueError(f"bench.{name} row {row.get('metric')!r} lacks {sorted(missing)}")
    return rows


def run_child(name: str, *, repeats: int, n: int | None, quick: bool, out: Path) -> int:
    """Run one scenario in this process and write {status, rows, error, peak_rss_mb} to `out`."""
    result: dict[str, Any] = {"status": "ok", "rows": [], "error": ""}
    try:
        module = importlib.import_module(f"bench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"bench.{name}", "bench"):
            result.update(status="failed", error=f"import failed: {exc}")
        else:
            result.update(status="missing", error=f"bench/{name}.py does not exist yet")
        module = None
    except Exception:  # any import-time failure is that scenario's failure, not the harness's
        result.update(status="failed", error=traceback.format_exc(limit=5))
        module = None
    if module is not None:
        run = getattr(module, "run", None)
        if not callable(run):
            result.update(status="failed", error=f"bench.{name} has no run() function")
        else:
            kwargs: dict[str, Any] = {"repeats": repeats}
            if n is not None and _accepts(run, "n"):
                kwargs["n"] = n
            if quick and _accepts(run, "quick"):
                kwargs["quick"] = True
            try:
                result["rows"] = _check_rows(name, run(**kwargs))
            except Exception:
                result.update(status="failed", error=traceback.format_exc(limit=8))
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.write_text(json.dumps(result, default=str))
    return 0


def sized(name: str) -> bool:
    """True if the scenario's run() takes a store size `n` (it is then run at several sizes)."""
    try:
        module = importlib.import_module(f"bench.{name}")
        return _accepts(module.run, "n")
    except Exception:
        return False  # a broken module is run once and reported as failed by its child


def command_for(name: str, n: int | None, *, quick: bool) -> str:
    """The command line that reproduces one scenario's figures."""
    parts = ["python -m bench", "--only", name]
    if n is not None:
        parts += ["--sizes", str(n)]
    if quick:
        parts.append("--quick")
    return " ".join(parts)


def _run_one(name: str, n: int | None, *, repeats: int, quick: bool,
             timeout: float) -> Outcome:
    outcome = Outcome(name, n, "ok", command=command_for(name, n, quick=quick),
                      measured=f"{datetime.now(UTC):%Y-%m-%d %H:%M}, load "
                               f"{os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [sys.executable, "-m", "bench.harness", name, "--repeats", str(repeats),
                "--out", str(out)]
        if n is not None:
            argv += ["--n", str(n)]
        if quick:
            argv.append("--quick")
        started = time.perf_counter()
        # The child's output goes to our stderr: its own progress bars stay visible.
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=sys.stderr, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # its own session: the servers it started go too
            proc.wait()
            outcome.status, outcome.error = "timeout", f"no result after {timeout:.0f} s"
            code = None
        outcome.seconds = time.perf_counter() - started
        if code is not None:
            if out.exists():
                data = json.loads(out.read_text())
                outcome.status = data["status"]
                outcome.rows = data["rows"]
                outcome.error = data["error"]
                outcome.peak_rss_mb = data["peak_rss_mb"]
            else:
                outcome.status = "crashed"
                outcome.error = f"the scenario process exited with status {code} and no result"
    for row in outcome.rows:
        if n is not None:
            row.setdefault("n", n)
    return outcome


def run_all(names: Sequence[str], *, repeats: int, sizes: Sequence[int], quick: bool,
            timeout: float) -> list[Outcome]:
    """Run every named scenario (sized ones at each size), with a progress bar."""
    plan: list[tuple[str, int | None]] = []
    for name in names:
        if sized(name):
            plan.extend((name, n) for n in sizes)
        else:
            plan.append((name, None))
    outcomes: list[Outcome] = []
    bar = tqdm(plan, desc="bench", unit="run", file=sys.stderr, disable=None)
    for name, n in bar:
        bar.set_postfix_str(name if n is None else f"{name} n={n:,}")
        outcome = _run_one(name, n, repeats=repeats, quick=quick, timeout=timeout)
        outcomes.append(outcome)
        if outcome.status != "ok":
            tqdm.write(f"bench.{name}: {outcome.status}: {outcome.error.strip()[-300:]}",
                       file=sys.stderr)
    return outcomes


def merged(earlier: Sequence[Outcome], new: Sequence[Outcome]) -> list[Outcome]:
    """`earlier` with each (scenario, size) that `new` measured replaced, in SCENARIOS order."""
    fresh = {(o.scenario, o.n) for o in new}
    kept = [o for o in earlier if (o.scenario, o.n) not in fresh]
    order = {name: k for k, name in enumerate(SCENARIOS)}
    return sorted([*kept, *new], key=lambda o: (order.get(o.scenario, len(order)), o.n or 0))


def outcomes_to_json(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The outcomes as plain data (for results.json)."""
    return [asdict(o) for o in outcomes]


def _child_main(argv: Sequence[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.harness")
    parser.add_argument("name")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--n", type=int)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    return run_child(args.name, repeats=args.repeats, n=args.n, quick=args.quick, out=args.out)


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))

"""`python -m bench.reliability [--quick]`: durability, runaway, soak, bad input, security, backup.

Prints the report table (cycles, requests, errors, losses per check); `--write-doc` also puts it
into docs/benchmarks/reliability.md between the markers there.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench.reliability import backup, durability, fuzz, runaway, security, soak
from bench.reliability.result import CheckResult, table

__all__ = ["CHECKS", "main", "run_checks"]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmarks" / "reliability.md"
BEGIN, END = "<!-- reliability-report:begin -->", "<!-- reliability-report:end -->"

# name -> (full run, quick run); each takes the work directory.
CHECKS: dict[str, tuple[Callable[[Path], CheckResult], Callable[[Path], CheckResult]]] = {
    "durability": (lambda d: durability.run(20, workdir=d),
                   lambda d: durability.run(3, workdir=d)),
    "runaway": (lambda d: runaway.run(5, workdir=d), lambda d: runaway.run(2, workdir=d,
                                                                            settle=10.0)),
    "soak": (lambda d: soak.run(60, workdir=d, warm_up=soak.FULL_WARM_UP_SECONDS),
             lambda d: soak.run(5, workdir=d, memories=2_000)),
    "fuzz": (lambda d: fuzz.run(10_000, workdir=d), lambda d: fuzz.run(300, workdir=d)),
    "security": (lambda d: security.run(workdir=d), lambda d: security.run(workdir=d)),
    "backup": (lambda d: backup.run(3, workdir=d), lambda d: backup.run(1, workdir=d)),
}


def run_checks(names: Sequence[str], *, quick: bool, workdir: Path) -> list[CheckResult]:
    """Run the named checks; a check that raises is reported as failed, the rest still run."""
    results = []
    for name in names:
        print(f"reliability: {name} ...", file=sys.stderr, flush=True)
        started = time.perf_counter()
        directory = workdir / name
        directory.mkdir(parents=True, exist_ok=True)
        try:
            result = CHECKS[name][1 if quick else 0](directory)
        except Exception as exc:  # the report must still come out
            result = CheckResult(name)
            result.fail(f"the check itself failed: {type(exc).__name__}: {exc}")
            result.seconds = time.perf_counter() - started
        print(f"reliability: {name}: {'pass' if result.ok else 'FAIL'} "
              f"({result.seconds:.0f} s)", file=sys.stderr, flush=True)
        results.append(result)
    return results


def render(results: Sequence[CheckResult], *, quick: bool, seconds: float) -> str:
    """The report: when, where, the command, the table and the notes of each check."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    command = "python -m bench.reliability" + (" --quick" if quick else "")
    lines = [f"Run {when} on {platform.node() or 'this machine'} (Python "
             f"{platform.python_version()}), {seconds / 60:.1f} min: `{command}`", "",
             table(results), ""]
    for r in results:
        if r.notes:
            lines.append(f"- **{r.name}**: " + "; ".join(r.notes))
    return "\n".join(lines).rstrip() + "\n"


def _write_doc(report: str) -> None:
    text = DOC.read_text() if DOC.exists() else f"{BEGIN}\n{END}\n"
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n{report}{END}{tail}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the suite, print the table; exit 1 if any check failed."""
    parser = argparse.ArgumentParser(prog="python -m bench.reliability", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the fast subset (about 1 min)")
    parser.add_argument("--only", action="append", choices=sorted(CHECKS), help="one check")
    parser.add_argument("--write-doc", action="store_true", help=f"update {DOC.name}")
    parser.add_argument("--keep", type=Path, help="keep stores and logs in this directory")
    args = parser.parse_args(argv)
    names = args.only or list(CHECKS)
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="jido-kg-reliability-"))
    started = time.perf_counter()
    try:
        results = run_checks(names, quick=args.quick, workdir=workdir)
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    report = render(results, quick=args.quick, seconds=time.perf_counter() - started)
    print(report)
    if args.write_doc:
        _write_doc(report)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""`python -m bench` (= `make bench`): run the scenarios and write BENCHMARKS.md with plots."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.harness import (
    FULL_SIZES,
    QUICK_SIZES,
    ROOT,
    SCENARIOS,
    Outcome,
    merged,
    outcomes_to_json,
    run_all,
)
from bench.report import write_report

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: tiny sizes, one repeat, report under .cache/bench/")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help=f"run only this scenario (repeatable; one of {', '.join(SCENARIOS)})")
    parser.add_argument("--sizes", help="comma-separated store sizes for sized scenarios "
                        f"[default {','.join(map(str, FULL_SIZES))}]")
    parser.add_argument("--repeats", type=int, help="repeats per figure [default 5; quick 1]")
    parser.add_argument("--timeout", type=float,
                        help="seconds before one scenario run is killed [default 3600; quick 300]")
    parser.add_argument("--output", type=Path,
                        help="report path [default BENCHMARKS.md; quick .cache/bench/"
                        "BENCHMARKS.quick.md]")
    parser.add_argument("--img-dir", type=Path,
                        help="where plots go [default docs/benchmarks/img next to the report]")
    parser.add_argument("--from-json", type=Path, metavar="FILE",
                        help="re-render the report from a results file (BENCHMARKS.json) "
                        "without running anything")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other scenarios' figures of the report's results file "
                        "(BENCHMARKS.json) and replace only those measured now")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 if any scenario failed or missed a target")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks and write the report; returns the exit status."""
    args = _parser().parse_args(argv)
    names: list[str] = []
    for item in args.only or SCENARIOS:
        names.extend(part.strip() for part in item.split(",") if part.strip())
    sizes = ([int(s.replace("_", "")) for s in args.sizes.split(",")] if args.sizes
             else list(QUICK_SIZES if args.quick else FULL_SIZES))
    repeats = args.repeats or (1 if args.quick else 5)
    timeout = args.timeout or (300.0 if args.quick else 3600.0)
    if args.output is not None:
        output = args.output
    elif args.quick:
        output = ROOT / ".cache" / "bench" / "BENCHMARKS.quick.md"
    else:
        output = ROOT / "BENCHMARKS.md"
    if args.img_dir is not None:
        img_dir = args.img_dir
    elif args.quick or args.output is not None:
        img_dir = output.parent / "img"
    else:
        img_dir = ROOT / "docs" / "benchmarks" / "img"
    started = time.perf_counter()
    if args.from_json is not None:
        outcomes = [Outcome(**item) for item in json.loads(args.from_json.read_text())]
        seconds = sum(o.seconds for o in outcomes)
    else:
        outcomes = run_all(names, repeats=repeats, sizes=sizes, quick=args.quick,
                           timeout=timeout)
        seconds = time.perf_counter() - started
    earlier = output.with_name(output.stem + ".json")
    if args.merge and earlier.exists():
        outcomes = merged([Outcome(**item) for item in json.loads(earlier.read_text())],
                          outcomes)
        seconds = sum(o.seconds for o in outcomes)
    path = write_report(outcomes, output=output, img_dir=img_dir, quick=args.quick,
                        repeats=repeats, sizes=sizes, seconds=seconds)
    results = path.with_name(path.stem + ".json")
    results.write_text(json.dumps(outcomes_to_json(outcomes), indent=1, default=str) + "\n")
    failed = [o for o in outcomes if not o.passed]
    print(f"report: {path} ({len(outcomes)} runs, {len(failed)} failed or short of target)",
          file=sys.stderr)
    for o in failed:
        print(f"  {o.scenario}{'' if o.n is None else f' n={o.n:,}'}: {o.status}",
              file=sys.stderr)
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())

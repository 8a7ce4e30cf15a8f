"""Writes BENCHMARKS.md: the machine, the date, the commands, per-scenario tables and plots."""

from __future__ import annotations

import os
import platform
import subprocess
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.harness import ROOT, Outcome

__all__ = ["machine", "plot_sizes", "write_report"]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gib() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=False)
        return done.stdout.strip()
    except OSError:
        return ""


def machine() -> dict[str, str]:
    """Describe the machine and software the figures were measured on (read at run time)."""
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain"):
        commit += " (with uncommitted changes)"
    return {
        "CPU": _cpu_model(),
        "Cores": str(os.cpu_count()),
        "RAM": _ram_gib(),
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "pyoxigraph": _version("pyoxigraph"),
        "oxigraph (server baseline)": _version("oxigraph"),
        "jido-kg commit": commit,
    }


def _fmt(value: Any) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        return f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _status(outcome: Outcome) -> str:
    if outcome.status != "ok":
        return f"**{outcome.status.upper()}**"
    # ok None marks an informational row (no target): neither a pass nor a failure.
    failed = sum(1 for r in outcome.rows if r.get("ok") is False)
    return "pass" if not failed else f"**FAIL** ({failed} of {len(outcome.rows)} rows)"


def _table(rows: Sequence[dict[str, Any]]) -> list[str]:
    extra = sorted({k for r in rows for k in r} - {
        "scenario", "metric", "n", "median", "p95", "unit", "target", "baseline", "ratio", "ok"})
    cols = ["metric", "n", "median", "p95", "unit", "target", "baseline", "ratio", *extra, "ok"]
    cols = [c for c in cols if c in ("metric", "median", "p95", "unit", "target", "ok")
            or any(c in r for r in rows)]
    if len({r.get("scenario") for r in rows}) > 1:  # several scenarios share one module
        cols.insert(0, "scenario")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows:
        cells = [_fmt(row.get(c)) for c in cols]
        ok = row.get("ok")
        cells[-1] = "–" if ok is None else ("pass" if ok else "**FAIL**")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


_TO_MS = {"s": 1000.0, "sec": 1000.0, "ms": 1.0, "us": 0.001, "µs": 0.001, "μs": 0.001,
          "ns": 1e-6}


def plot_sizes(outcomes: Sequence[Outcome], img_dir: Path) -> dict[str, Path]:
    """One PNG per sized scenario: each metric's median (and p95) against store size."""
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    series: dict[str, dict[tuple[str, str], list[tuple[int, float, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for outcome in outcomes:
        for row in outcome.rows:
            n = row.get("n", outcome.n)
            if n is None or not isinstance(row.get("median"), int | float):
                continue
            scale = _TO_MS.get(str(row.get("unit", "")).strip())
            if scale is None:
                continue  # only latencies are plotted (not MB, counts or ratios)
            p95 = row["p95"] if isinstance(row.get("p95"), int | float) else row["median"]
            key = (str(row["metric"]), "ms")
            series[outcome.scenario][key].append(
                (int(n), float(row["median"]) * scale, float(p95) * scale))
    img_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for scenario, metrics in sorted(series.items()):
        metrics = {k: sorted(v) for k, v in metrics.items() if len({p[0] for p in v}) > 1}
        if not metrics:
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        for (metric, unit), points in sorted(metrics.items()):
            xs = [p[0] for p in points]
            line = ax.plot(xs, [p[1] for p in points], marker="o", label=f"{metric} ({unit})")
            ax.plot(xs, [p[2] for p in points], linestyle="--", color=line[0].get_color(),
                    alpha=0.6)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories in the store")
        ax.set_ylabel("latency in ms (median solid, p95 dashed)")
        ax.set_title(f"{scenario}: latency against store size")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        path = img_dir / f"{scenario}_by_size.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written[scenario] = path
    return written


def write_report(outcomes: Sequence[Outcome], *, output: Path, img_dir: Path, quick: bool,
                 repeats: int, sizes: Sequence[int], seconds: float) -> Path:
    """Write the markdown report (and its plots) and return its path."""
    plots = plot_sizes(outcomes, img_dir)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["# jido-kg benchmarks", ""]
    if quick:
        lines += ["> **Smoke run (`--quick`)**: tiny sizes and one repeat; these numbers only",
                  "> show that the harness works. Run `make bench` for real figures.", ""]
    lines += [f"Written {now}; {seconds / 60:.1f} min of measuring, {repeats} repeats per figure "
              f"(median and 95th percentile over the repeats), store sizes "
              f"{', '.join(f'{s:,}' for s in sizes)} memories for the scenarios that take a size. "
              "When and at what load average (2 cores) each scenario ran is in the summary: "
              "`--merge` re-measures some and keeps the others.",
              "", "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {_fmt(v)} |" for k, v in machine().items()]
    lines += ["", "## Reproduce", "", "From a fresh clone (`make bench` creates `.venv` first):",
              "", "```sh", "make bench                       # every scenario, every size",
              "python -m bench --only recall    # one scenario",
              "python -m bench --quick          # smoke run (tiny sizes, one repeat)", "```", "",
              "Generated stores are cached in `.cache/bench/` (`python -m bench.generator`"
              " builds one by hand).", "", "## Summary", "",
              "| scenario | size | status | measured (UTC), load | wall time "
              "| peak RSS (harness child) | command |",
              "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        rss = f"{o.peak_rss_mb:,.0f} MB" if o.peak_rss_mb is not None else "–"
        size = f"{o.n:,}" if o.n is not None else "–"
        lines.append(f"| {o.scenario} | {size} | {_status(o)} | {o.measured or '–'} | "
                     f"{o.seconds:.1f} s | {rss} | `{o.command}` |")
    by_name: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_name[o.scenario].append(o)
    for name, group in by_name.items():
        lines += ["", f"## {name}"]
        rows = [r for o in group for r in o.rows]
        if rows:
            lines += ["", *_table(rows)]
        for o in group:
            if o.status != "ok":
                where = f" (n={o.n:,})" if o.n is not None else ""
                detail = o.error.strip().splitlines()[-1] if o.error.strip() else ""
                lines += ["", f"{o.status}{where}: {_fmt(detail)}"]
        if name in plots:
            rel = os.path.relpath(plots[name], output.parent)
            lines += ["", f"![{name} latency against store size]({rel})"]
    output.parent.mkdir(parents=True, exist_ok=True)
    notes = sorted((output.parent / "docs" / "benchmarks").glob("*.md"))
    if notes:
        # Figures that need a long set-up (1M-memory recall, the Virtuoso run, the full
        # reliability suite) are measured by their own commands and kept in these pages.
        lines += ["", "## Per-area notes", "",
                  "Longer measurements (recall at 1,000,000 memories, Virtuoso, the full",
                  "reliability suite) and their analysis live beside this report:", ""]
        lines += [f"- [{n.stem}]({n.relative_to(output.parent)})" for n in notes]
    output.write_text("\n".join(lines) + "\n")
    return output

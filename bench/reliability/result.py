"""The outcome of one reliability check, and the report table of all of them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["CheckResult", "p99", "table"]


@dataclass
class CheckResult:
    """Counts of one check; `ok` is whether every goal was met (errors and losses are zero ...)."""

    name: str
    cycles: int = 0
    requests: int = 0
    errors: int = 0
    losses: int = 0
    ok: bool = True
    notes: list[str] = field(default_factory=list)
    figures: dict[str, float | str] = field(default_factory=dict)
    seconds: float = 0.0

    def fail(self, note: str) -> None:
        """Record a failure (kept short: the first 20 are listed)."""
        self.ok = False
        if len(self.notes) < 20:
            self.notes.append(note)

    def note(self, note: str) -> None:
        """Record an observation that is not a failure."""
        if len(self.notes) < 40:
            self.notes.append(note)


def p99(values: Sequence[float]) -> float:
    """The 99th percentile (0 for no values)."""
    if not values:
        return 0.0
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=100, method="inclusive")[98])


def _fmt(value: float | str) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def table(results: Sequence[CheckResult]) -> str:
    """A markdown table: check, cycles, requests, errors, losses, figures, result."""
    lines = ["| check | cycles | requests | errors | losses | figures | result |",
             "|---|---:|---:|---:|---:|---|---|"]
    for r in results:
        figures = ", ".join(f"{k} {_fmt(v)}" for k, v in r.figures.items()) or "–"
        lines.append(f"| {r.name} | {r.cycles} | {r.requests:,} | {r.errors} | {r.losses} | "
                     f"{figures} | {'pass' if r.ok else '**FAIL**'} |")
    return "\n".join(lines)

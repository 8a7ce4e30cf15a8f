"""Fitting recall's weights on LoCoMo conversations, judged leave-one-conversation-out."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from kg.recall.fusion import FusionWeights
from kg.recall.locomo import LocomoResult, LocomoSet

__all__ = ["GRID", "CrossValidation", "cross_validate"]

# The weights fitted and the values tried (each alone in the grid's product).
GRID: Mapping[str, Sequence[float]] = {
    "semantic": (0.0, 0.25, 0.5, 1.0, 1.5),
    "time": (0.0, 1.0, 2.0, 4.0),
    "cue": (0.0, 0.05, 0.1, 0.3),
    "coverage": (0.0, 0.1, 0.25, 0.5),
    "rerank": (0.5, 1.0, 1.5, 2.0, 3.0),  # mode "rerank" only
}


@dataclass(frozen=True, slots=True)
class Fold:
    """One held-out conversation: the weights fitted on the others and its recall@10."""

    held_out: str
    weights: FusionWeights
    fitted_recall: float  # mean recall@10 on the other conversations' questions
    held_out_recall: float
    questions: int


@dataclass(frozen=True, slots=True)
class CrossValidation:
    """Leave-one-conversation-out folds and the recall@10 pooled over the held-out questions."""

    folds: list[Fold]
    best_on_all: FusionWeights  # fitted on every conversation (what a default would use)
    recall_on_all: float
    grid: Mapping[str, Sequence[float]]

    @property
    def pooled(self) -> float:
        """Mean held-out recall@10 over every question (each judged by weights not fitted on
        its own conversation)."""
        total = sum(f.questions for f in self.folds)
        return sum(f.held_out_recall * f.questions for f in self.folds) / total if total else 0.0

    def report(self) -> str:
        """Plain-text lines: one per fold, the pooled figure, the weights fitted on all."""
        lines = [f"leave-one-conversation-out (grid: {_grid_text(self.grid)})"]
        for f in self.folds:
            lines.append(f"  held out {f.held_out}: {_weights_text(f.weights)} fitted "
                         f"{f.fitted_recall:.4f}, held-out recall@10 {f.held_out_recall:.4f} "
                         f"({f.questions} q)")
        lines.append(f"held-out recall@10 {self.pooled:.4f}; fitted on all: "
                     f"{_weights_text(self.best_on_all)} {self.recall_on_all:.4f}")
        return "\n".join(lines)


def cross_validate(dataset: LocomoSet, *, mode: str = "hybrid",
                   grid: Mapping[str, Sequence[float]] = GRID) -> CrossValidation:
    """Score every weight setting of `grid` once, then fit per fold on the other conversations."""
    base = dataset.engine.default_weights()
    if dataset.engine.embedder is None or mode == "text":
        grid = {**grid, "semantic": (base.semantic,)}  # no cosine: the weight changes nothing
    if mode != "rerank":
        grid = {**grid, "rerank": (base.rerank,)}
    results: list[tuple[FusionWeights, LocomoResult]] = []
    names = list(grid)
    for values in itertools.product(*(grid[n] for n in names)):
        weights = replace(base, **dict(zip(names, values, strict=True)))
        results.append((weights, dataset.evaluate(mode=mode, weights=weights)))
    folds = []
    for project in dataset.projects:
        others = [p for p in dataset.projects if p != project]
        weights, result = max(results, key=lambda r: (_recall(r[1], others), -_distance(r[0])))
        folds.append(Fold(project, weights, _recall(result, others), _recall(result, [project]),
                          len(result.of(conversations=[project]))))
    weights, result = max(results, key=lambda r: (_recall(r[1], dataset.projects),
                                                  -_distance(r[0])))
    return CrossValidation(folds, weights, _recall(result, dataset.projects), grid)


def _recall(result: LocomoResult, conversations: Sequence[str]) -> float:
    values = [q.recall[10] for q in result.of(conversations=conversations)]
    return statistics.fmean(values) if values else 0.0


def _distance(weights: FusionWeights) -> float:
    """Ties go to the setting nearest the defaults (so a flat fold keeps the defaults)."""
    base = FusionWeights()
    return sum(abs(float(getattr(weights, n)) - float(getattr(base, n))) for n in GRID)


def _weights_text(weights: FusionWeights) -> str:
    return " ".join(f"{n}={getattr(weights, n):g}" for n in GRID)


def _grid_text(grid: Mapping[str, Sequence[float]]) -> str:
    return "; ".join(f"{n} {'/'.join(f'{v:g}' for v in values)}" for n, values in grid.items())

"""ImportanceScorer: how much a short-term item deserves a place in long-term memory (MISSION §3).

score = w_recency·recency + w_frequency·frequency + w_confidence·confidence + w_salience·salience,
with recency = 1/(1 + minutes since last access/30), frequency = min(accesses/10, 1) and the
salience of the memory type. Default weights 0.2, 0.3, 0.25, 0.25.

>>> ImportanceScorer().score(memory_type="decision", confidence=1.0, access_count=10,
...                          last_accessed=0.0, now=0.0)
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kg.errors import ValidationError
from kg.terms import MemoryType, parse_term, validate_confidence

__all__ = ["SALIENCE", "ImportanceScorer", "ImportanceWeights", "salience"]

_TOP = (
    MemoryType.DECISION,
    MemoryType.ARCHITECTURAL_DECISION,
    MemoryType.CONVENTION,
    MemoryType.CODING_STANDARD,
    MemoryType.LESSON_LEARNED,
    MemoryType.RISK,
)
SALIENCE: dict[MemoryType, float] = {
    **{t: 0.3 for t in MemoryType},
    **{t: 1.0 for t in _TOP},
    MemoryType.DISCOVERY: 0.8,
    MemoryType.FACT: 0.7,
    MemoryType.HYPOTHESIS: 0.5,
    MemoryType.ASSUMPTION: 0.4,
}


def salience(memory_type: MemoryType | str) -> float:
    """How much a memory type matters on its own (1.0 decisions … 0.3 the rest)."""
    return SALIENCE[parse_term(MemoryType, memory_type)]


@dataclass(frozen=True, slots=True)
class ImportanceWeights:
    """The four weights; each in [0, 1] and together summing to 1."""

    recency: float = 0.2
    frequency: float = 0.3
    confidence: float = 0.25
    salience: float = 0.25

    def __post_init__(self) -> None:
        values = (self.recency, self.frequency, self.confidence, self.salience)
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                0.0 <= value <= 1.0
            ):
                raise ValidationError(
                    f"importance weights must be numbers in [0, 1], got {value!r}"
                )
        if not math.isclose(sum(values), 1.0, abs_tol=1e-9):
            raise ValidationError(f"importance weights must sum to 1, got {sum(values):.6g}")


@dataclass(frozen=True, slots=True)
class ImportanceScorer:
    """Scores candidates for promotion; times are POSIX seconds."""

    weights: ImportanceWeights = ImportanceWeights()

    def score(
        self,
        *,
        memory_type: MemoryType | str,
        confidence: float,
        access_count: int,
        last_accessed: float | None,
        now: float,
    ) -> float:
        """The importance in [0, 1] of an item with these properties at time `now`."""
        w = self.weights
        minutes = 0.0 if last_accessed is None else max(0.0, now - last_accessed) / 60.0
        recency = 0.0 if last_accessed is None else 1.0 / (1.0 + minutes / 30.0)
        frequency = min(max(access_count, 0) / 10.0, 1.0)
        total = (
            w.recency * recency
            + w.frequency * frequency
            + w.confidence * validate_confidence(confidence)
            + w.salience * salience(memory_type)
        )
        return min(1.0, max(0.0, total))

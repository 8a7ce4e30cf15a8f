"""How recall ranks: keyword and embedding relevance fused with graph signals."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kg.recall.index_search import Candidate
from kg.terms import MemoryType

__all__ = ["SALIENCE", "FusionWeights", "Scored", "fuse"]

# The salience of each type, as in the ImportanceScorer (MISSION §3).
SALIENCE: Mapping[str, float] = {
    **{t.value: 0.3 for t in MemoryType},
    **dict.fromkeys(
        ("decision", "architectural_decision", "convention", "coding_standard",
         "lesson_learned", "risk"), 1.0),
    "discovery": 0.8, "fact": 0.7, "hypothesis": 0.5, "assumption": 0.4,
}


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """Weights of each signal; relevance dominates, graph signals order near-ties."""

    keyword: float = 1.0
    semantic: float = 0.5
    confidence: float = 0.04
    recency: float = 0.04
    frequency: float = 0.02
    salience: float = 0.02
    recency_days: float = 30.0  # recency = 1 / (1 + age / recency_days)


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate with its final score and each signal (for explanations)."""

    candidate: Candidate
    score: float
    keyword: float
    semantic: float
    recency: float
    frequency: float
    salience: float


def fuse(
    candidates: Sequence[Candidate],
    cosines: Mapping[int, float],
    *,
    now: float,
    weights: FusionWeights,
) -> list[Scored]:
    """Score candidates: BM25 (scaled to [0, 1] by the best) + cosine + graph signals."""
    best = max((c.bm25 for c in candidates), default=0.0)
    scored = []
    for c in candidates:
        keyword = c.bm25 / best if best > 0 else 0.0
        semantic = max(cosines.get(c.seq, 0.0), 0.0)
        age_days = max(now - c.timestamp, 0.0) / 86400.0
        recency = 1.0 / (1.0 + age_days / weights.recency_days)
        frequency = min(c.access_count / 10.0, 1.0)
        salience = SALIENCE.get(c.type, 0.3)
        score = (
            weights.keyword * keyword + weights.semantic * semantic
            + weights.confidence * c.confidence + weights.recency * recency
            + weights.frequency * frequency + weights.salience * salience
        )
        scored.append(Scored(c, score, keyword, semantic, recency, frequency, salience))
    scored.sort(key=lambda s: (-s.score, s.candidate.seq))
    return scored

"""Working memory: per-session items ranked by ACT-R activation (seed 002; MISSION §2).

A = B + S + ε as defined in `kg.shortterm.activation`: base level from the item's access
history (hours, floor 1 s, d = 0.5, Petrov's approximation above 50 accesses), S = 11.0 ×
cosine(query, item), logistic noise with σ = 1.2 (σ = 0: deterministic). Only the first 50
access times, the last one and the count are kept per item, so memory per item is bounded (the
original logged every access).

query() returns the top_k items at or above the retrieval threshold (0.0) and reinforces only
those — the original recorded an access on every item it scored, so merely being compared
strengthened an item. context_items() and top_activated() score without a query (S = 0) and
do not reinforce: they look, they do not retrieve.

Embeddings are stored L2-normalised in one numpy matrix, so scoring 1,000 items is a single
matrix-vector product plus a few vector operations.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kg.errors import ValidationError
from kg.shortterm.activation import (
    DECAY,
    EXACT_ACCESSES,
    NOISE_SIGMA,
    RETRIEVAL_THRESHOLD,
    SPREADING_WEIGHT,
    Vector,
    base_levels,
    noise_scale,
)
from kg.shortterm.errors import InvalidContentError, InvalidEmbeddingError, InvalidSnapshotError
from kg.terms import SourceType, parse_term, validate_identifier

__all__ = ["WorkingMemory", "WorkingMemoryItem"]


@dataclass(frozen=True, slots=True)
class WorkingMemoryItem:
    """A read-only view of one item, with the activation it was last ranked by."""

    id: str
    content: str
    agent_id: str
    user_id: str
    source: SourceType
    created_at: float
    last_accessed: float
    access_count: int
    activation: float


class WorkingMemory:
    """Per-session store of embedded items ranked by ACT-R activation."""

    # Row i of every array and list below describes the item with id _ids[i].
    _ids: list[str]
    _row: dict[str, int]
    _meta: list[tuple[str, str, str, SourceType]]  # content, agent_id, user_id, source
    _created: list[float]
    _emb: Vector
    _times: Vector  # the first EXACT_ACCESSES access times; −inf where unused
    _count: npt.NDArray[np.int64]
    _last: Vector
    _activation: Vector

    def __init__(
        self,
        *,
        decay: float = DECAY,
        spreading_weight: float = SPREADING_WEIGHT,
        noise_sigma: float = NOISE_SIGMA,
        retrieval_threshold: float = RETRIEVAL_THRESHOLD,
        now: Callable[[], float] = time.time,
        rng: np.random.Generator | None = None,
    ) -> None:
        if not 0.0 < decay < 1.0 or noise_sigma < 0.0:
            raise ValueError("decay must be in (0, 1) and noise_sigma ≥ 0")
        self.decay = decay
        self.spreading_weight = spreading_weight
        self.noise_sigma = noise_sigma
        self.retrieval_threshold = retrieval_threshold
        self._now = now
        self._rng = rng if rng is not None else np.random.default_rng()
        self.clear()

    def add(
        self,
        content: str,
        embedding: Sequence[float] | Vector,
        *,
        agent_id: str,
        user_id: str,
        source: SourceType | str = SourceType.AGENT,
    ) -> str:
        """Store an item (its creation counts as its first access) and return its id."""
        if not isinstance(content, str) or not content:
            raise InvalidContentError(
                f"content must be a non-empty string, got {content!r}",
                details={"value": repr(content)},
            )
        agent = validate_identifier(agent_id, name="agent_id")
        user = validate_identifier(user_id, name="user_id")
        kind = parse_term(SourceType, source)
        vector = self._vector(embedding)
        if self._emb.shape[1] == 0:
            self._emb = np.zeros((self._emb.shape[0], vector.size))
        row = len(self._ids)
        if row == self._emb.shape[0]:
            self._grow()
        item_id = uuid.uuid4().hex
        self._emb[row] = vector
        self._ids.append(item_id)
        self._row[item_id] = row
        self._meta.append((content, agent, user, kind))
        at = self._now()
        self._created.append(at)
        self._times[row, 0] = at
        self._count[row] = 1
        self._last[row] = at
        return item_id

    def query(
        self,
        embedding: Sequence[float] | Vector,
        *,
        top_k: int = 5,
        threshold: float | None = None,
    ) -> list[WorkingMemoryItem]:
        """The top_k items by A = B + S + ε at or above the threshold; only they are reinforced."""
        query = self._vector(embedding)
        n = len(self._ids)
        if n == 0:
            return []
        now = self._now()
        activation = self._base(slice(0, n), now) + self._noise(n)
        activation += self.spreading_weight * (self._emb[:n] @ query)
        self._activation[:n] = activation
        rows = self._select(np.arange(n), activation, top_k, threshold)
        for row in rows:
            self._touch(row, now)
        return [self._view(row) for row in rows]

    def top_activated(self, threshold: float | None = None) -> list[WorkingMemoryItem]:
        """Every item with A = B + ε ≥ threshold (default: retrieval threshold), highest first."""
        n = len(self._ids)
        rows = np.arange(n)
        activation = self._base(slice(0, n), self._now()) + self._noise(n)
        self._activation[:n] = activation
        return [self._view(row) for row in self._select(rows, activation, n, threshold)]

    def context_items(
        self, user_id: str, agent_id: str, *, top_k: int = 10
    ) -> list[WorkingMemoryItem]:
        """The top_k items of this user and agent by A = B + ε, with no threshold."""
        rows = np.array(
            [i for i, meta in enumerate(self._meta) if meta[2] == user_id and meta[1] == agent_id],
            dtype=np.intp,
        )
        if rows.size == 0:
            return []
        activation = self._base(rows, self._now()) + self._noise(rows.size)
        self._activation[rows] = activation
        return [self._view(row) for row in self._select(rows, activation, top_k, -math.inf)]

    def get(self, item_id: str) -> WorkingMemoryItem | None:
        """A view of the item with this id, or None."""
        row = self._row.get(item_id)
        return None if row is None else self._view(row)

    def size(self) -> int:
        """Number of items."""
        return len(self._ids)

    def clear(self) -> None:
        """Remove every item (the embedding dimension is fixed again by the next add)."""
        capacity = 64
        self._ids = []
        self._row = {}
        self._meta = []
        self._created = []
        self._emb = np.zeros((capacity, 0))
        # Unused slots hold −inf: an age of +inf contributes t^(−d) = 0, so no NaN masking.
        self._times = np.full((capacity, EXACT_ACCESSES), -np.inf)
        self._count = np.zeros(capacity, dtype=np.int64)
        self._last = np.zeros(capacity)
        self._activation = np.zeros(capacity)

    def snapshot(self) -> dict[str, Any]:
        """All items as JSON-able data (embeddings as stored: L2-normalised)."""
        items = []
        for row, item_id in enumerate(self._ids):
            content, agent, user, kind = self._meta[row]
            count = int(self._count[row])
            items.append(
                {
                    "id": item_id,
                    "content": content,
                    "agent_id": agent,
                    "user_id": user,
                    "source": kind.value,
                    "created_at": self._created[row],
                    "embedding": self._emb[row].tolist(),
                    "access_count": count,
                    "access_times": self._times[row, : min(count, EXACT_ACCESSES)].tolist(),
                    "last_accessed": float(self._last[row]),
                    "activation": float(self._activation[row]),
                }
            )
        return {"items": items}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the items with a snapshot's; on any error nothing changes."""
        fresh = WorkingMemory(
            decay=self.decay,
            spreading_weight=self.spreading_weight,
            noise_sigma=self.noise_sigma,
            retrieval_threshold=self.retrieval_threshold,
            now=self._now,
            rng=self._rng,
        )
        try:
            for raw in data["items"]:
                times = [float(t) for t in raw["access_times"]]
                count = int(raw["access_count"])
                if not times or count < len(times) or len(times) > EXACT_ACCESSES:
                    raise ValueError(f"access times inconsistent with count for {raw['id']!r}")
                fresh.add(
                    raw["content"],
                    raw["embedding"],
                    agent_id=raw["agent_id"],
                    user_id=raw["user_id"],
                    source=raw["source"],
                )
                row = len(fresh._ids) - 1
                item_id = validate_identifier(raw["id"], name="id")
                if item_id in fresh._row:
                    raise ValueError(f"duplicate item id {item_id!r}")
                del fresh._row[fresh._ids[row]]
                fresh._ids[row], fresh._row[item_id] = item_id, row
                # Stored verbatim: re-normalising a unit vector can move it by an ulp.
                fresh._emb[row] = np.asarray(raw["embedding"], dtype=np.float64)
                fresh._created[row] = float(raw["created_at"])
                fresh._times[row, : len(times)] = times
                fresh._count[row] = count
                fresh._last[row] = float(raw["last_accessed"])
                fresh._activation[row] = float(raw["activation"])
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise InvalidSnapshotError(f"invalid working-memory snapshot: {e}") from e
        self.__dict__.update(fresh.__dict__)

    def _vector(self, embedding: Sequence[float] | Vector) -> Vector:
        try:
            vector = np.array(embedding, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise InvalidEmbeddingError(f"embedding must be a sequence of numbers: {e}") from e
        dim = self._emb.shape[1]
        if vector.ndim != 1 or vector.size == 0 or (dim and vector.size != dim):
            raise InvalidEmbeddingError(
                f"embedding must be 1-D of length {dim or '≥ 1'}, got shape {vector.shape}"
            )
        norm = float(np.linalg.norm(vector))
        if not math.isfinite(norm) or norm == 0.0:
            raise InvalidEmbeddingError(f"embedding must be finite and non-zero (norm {norm})")
        vector /= norm
        return vector

    def _base(self, rows: slice | npt.NDArray[np.intp], now: float) -> Vector:
        return base_levels(
            self._times[rows], self._count[rows], self._last[rows], now, decay=self.decay
        )

    def _noise(self, n: int) -> Vector | float:
        if self.noise_sigma == 0.0:
            return 0.0
        return self._rng.logistic(0.0, noise_scale(self.noise_sigma), size=n)

    def _select(
        self, rows: npt.NDArray[np.intp], activation: Vector, top_k: int, threshold: float | None
    ) -> list[int]:
        if type(top_k) is not int or top_k < 0:
            raise ValueError(f"top_k must be a non-negative int, got {top_k!r}")
        if top_k == 0:
            return []
        limit = self.retrieval_threshold if threshold is None else threshold
        keep = activation >= limit
        rows, activation = rows[keep], activation[keep]
        if top_k < activation.size:
            # O(n) partial selection; only the top_k survivors are sorted.
            part = np.argpartition(-activation, top_k - 1)[:top_k]
            rows, activation = rows[part], activation[part]
        order = np.argsort(-activation, kind="stable")
        return [int(row) for row in rows[order]]

    def _touch(self, row: int, now: float) -> None:
        count = int(self._count[row])
        if count < EXACT_ACCESSES:
            self._times[row, count] = now
        self._count[row] = count + 1
        self._last[row] = now

    def _view(self, row: int) -> WorkingMemoryItem:
        content, agent, user, kind = self._meta[row]
        return WorkingMemoryItem(
            self._ids[row],
            content,
            agent,
            user,
            kind,
            self._created[row],
            float(self._last[row]),
            int(self._count[row]),
            float(self._activation[row]),
        )

    def _grow(self) -> None:
        extra = self._emb.shape[0]
        self._emb = np.vstack([self._emb, np.zeros_like(self._emb)])
        self._times = np.vstack([self._times, np.full((extra, EXACT_ACCESSES), -np.inf)])
        self._count = np.concatenate([self._count, np.zeros(extra, dtype=np.int64)])
        self._last = np.concatenate([self._last, np.zeros(extra)])
        self._activation = np.concatenate([self._activation, np.zeros(extra)])

"""Reading the recall index: keyword and embedding candidates, filtered in SQL, and hit records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from kg.memory import Memory
from kg.recall.keyword_index import KeywordIndex
from kg.recall.matrix_cache import MatrixCache
from kg.recall.memory_record import memory_from_json
from kg.recall.query_text import require_words

__all__ = ["ORDERS", "Candidate", "Filters", "IndexSearch"]

# The unary + keeps SQLite from choosing an index for the time range: the project's B-trees
# (type, time; recorded; session) serve the ORDER BY of the helpers instead.
_FILTER = (
    "m.project = ? AND +m.recorded_at <= ? AND (m.retired_at IS NULL OR m.retired_at > ?)"
    " AND (m.valid_from IS NULL OR m.valid_from <= ?)"
    " AND (m.valid_until IS NULL OR m.valid_until > ?) AND +m.confidence >= ?"
)
_COLUMNS = "m.seq, m.confidence, m.timestamp, m.access_count, m.type"
# Orders the sorting helpers read from the index's B-trees (ids break ties, as in the graph).
ORDERS = {
    "oldest": "timestamp ASC, recorded_at ASC, id",
    "newest": "timestamp DESC, id",
    "recorded": "recorded_at DESC, id",
    "confident": "confidence DESC, timestamp DESC, id",
}
_ORDER_COLUMNS = "m.seq, m.id, m.timestamp, m.recorded_at, m.confidence"


@dataclass(frozen=True, slots=True)
class Filters:
    """What a recall may return: one project, a moment, optional types, a confidence floor."""

    project: str
    at: float  # epoch seconds of the view wanted (now, unless as_of)
    types: tuple[str, ...] | None = None
    min_confidence: float = 0.0
    include_retired: bool = False  # keep memories retired before `at` (include_superseded)

    def sql(self) -> tuple[str, list[object]]:
        """A WHERE fragment over alias `m`, with every value as a parameter."""
        params: list[object] = [self.project, self.at, self.at, self.at, self.at,
                                self.min_confidence]
        text = _FILTER if not self.include_retired else _FILTER.replace(
            "(m.retired_at IS NULL OR m.retired_at > ?)", "(? IS NOT NULL)")
        if self.types is not None:
            text += " AND m.type IN (" + ",".join("?" * len(self.types)) + ")"
            params.extend(self.types)
        return text, params


class Candidate(NamedTuple):
    """One memory that passed the filters, with what ranking needs (no store access)."""

    # A tuple, not a frozen dataclass: a recall makes hundreds (a frozen __init__ cost ~1 µs).

    seq: int
    confidence: float
    timestamp: float
    access_count: int
    type: str
    bm25: float = 0.0  # positive, larger is better; 0 for embedding-only candidates


class IndexSearch:
    """Queries over a KeywordIndex (each inside its `reading()`: queued writes applied first);
    per-project embedding matrices come from `matrices`."""

    def __init__(self, index: KeywordIndex) -> None:
        self.index = index
        self.matrices = MatrixCache(index.matrices)
        self._sizes: dict[str, tuple[int, int]] = {}

    def keyword(self, filters: Filters, tokens: list[str], *, limit: int,
                all_words: bool = False,
                keys: Sequence[tuple[str, float]] = ()) -> list[Candidate]:
        """The best `limit` BM25 matches of `tokens` (any, or all) and weighted `keys` among
        filtered memories."""
        # all_words is the "facts about a topic" test: every word in the memory's own text.
        require_words(tokens)
        # Rank in the keyword index alone (top-k, the project's own postings), then filter the
        # best rows by their seq in SQLite; widen the window only when filters dropped too many.
        window = max(limit * 2, 100)
        while True:
            ranked = self.index.search_text(filters.project, tokens, limit=window,
                                            types=filters.types, all_words=all_words,
                                            keys=keys)
            kept = self._best_matching(filters, ranked, limit)
            if len(kept) >= limit or len(ranked) < window:
                return kept
            window *= 4

    def _best_matching(self, filters: Filters, ranked: Sequence[tuple[int, float]],
                       limit: int) -> list[Candidate]:
        """The first `limit` of `ranked` that pass `filters`, best first, with their BM25.

        Only as many rows as still wanted are looked up at a time: most pass, so a recall
        reads ~`limit` rows instead of the whole window (each ~2 µs at 1M memories)."""
        kept: list[Candidate] = []
        start = 0
        while start < len(ranked) and len(kept) < limit:
            chunk = ranked[start:start + max(limit - len(kept), 16)]
            start += len(chunk)
            kept += self.matching(filters, [seq for seq, _ in chunk], scores=dict(chunk))
        return kept[:limit]

    def matching(self, filters: Filters, seqs: Sequence[int], *,
                 scores: Mapping[int, float] | None = None) -> list[Candidate]:
        """The candidates among `seqs` that pass `filters`, in the order given (with their
        BM25 from `scores`, else 0)."""
        if not seqs:
            return []
        where, params = filters.sql()
        # The unary + stops SQLite from scanning the project's B-tree (100,000s of rows at 1M)
        # instead of looking the few seqs up by rowid.
        where = where.replace("m.project = ?", "+m.project = ?", 1)
        bm25 = scores or {}
        found: dict[int, Candidate] = {}
        for start in range(0, len(seqs), 900):
            chunk = seqs[start:start + 900]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_COLUMNS} FROM memory m WHERE m.seq IN ({marks}) AND {where}"
            with self.index.reading():
                rows = self.index.db.execute(sql, (*chunk, *params)).fetchall()
            found.update((r[0], Candidate(r[0], r[1], r[2], r[3], r[4], bm25.get(r[0], 0.0)))
                         for r in rows)
        return [found[s] for s in seqs if s in found]

    def vectors(self, seqs: Sequence[int], *,
                project: str | None = None) -> tuple[list[int], npt.NDArray[np.int8]]:
        """The stored int8 embeddings of `seqs` (missing ones left out), as (seqs, rows).

        Rows come from the project's matrix, kept or mapped from its file (no SQL), when it is
        current; else, or for seqs it lacks, from SQLite (~3 µs a row at 1M memories)."""
        found: list[int] = []
        parts: list[npt.NDArray[np.int8]] = []
        rest = list(seqs)
        matrix = (self.matrices.mapped(project, count=self.project_size(project))
                  if project is not None and rest else None)
        if matrix is not None and len(matrix.seqs):
            wanted = np.asarray(rest, dtype=np.int64)
            at = np.minimum(np.searchsorted(matrix.seqs, wanted), len(matrix.seqs) - 1)
            hit = matrix.seqs[at] == wanted
            found, rest = wanted[hit].tolist(), wanted[~hit].tolist()
            parts.append(np.asarray(matrix.codes[at[hit]]))
        if rest:
            marks = ",".join("?" * len(rest))
            with self.index.reading():
                rows = self.index.db.execute(
                    f"SELECT seq, embedding FROM memory WHERE seq IN ({marks})"
                    " AND embedding IS NOT NULL", tuple(rest)).fetchall()
            found += [seq for seq, _ in rows]
            parts += [np.frombuffer(blob, dtype=np.int8)[None, :] for _, blob in rows]
        if not found:
            return [], np.zeros((0, 0), dtype=np.int8)
        return found, np.concatenate(parts)

    def records(self, seqs: Sequence[int]) -> dict[int, Memory]:
        """The full Memory records of `seqs`, read from the index's JSON copies."""
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        with self.index.reading():
            rows = self.index.db.execute(
                f"SELECT seq, record FROM memory WHERE seq IN ({marks})", tuple(seqs)).fetchall()
        return {seq: memory_from_json(text) for seq, text in rows}

    def records_by_id(self, ids: Sequence[str]) -> dict[str, Memory]:
        """The full Memory records of memory ids (ids the index does not hold are left out)."""
        found: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            with self.index.reading():
                rows = self.index.db.execute(
                    f"SELECT id, record FROM memory WHERE id IN ({marks})", tuple(chunk))
                found.update((i, memory_from_json(text)) for i, text in rows.fetchall())
        return found

    def ordered(self, filters: Filters, order: str, *, limit: int, session: str | None = None,
                ids: Sequence[str] | None = None) -> list[tuple[int, str]]:
        """(seq, id) of filtered memories in one of ORDERS, first `limit` (index scans only)."""
        key = ORDERS[order]
        parts, params = [], []
        # One ordered, limited scan per type (a B-tree range each), merged by the outer ORDER BY.
        for kind in filters.types or (None,):
            where, values = replace(filters, types=None if kind is None else (kind,)).sql()
            if session is not None:
                where += " AND m.session = ?"
                values.append(session)
            if ids is not None:
                where += " AND m.id IN (" + ",".join("?" * len(ids)) + ")"
                values.extend(ids)
            parts.append(f"SELECT * FROM (SELECT {_ORDER_COLUMNS} FROM memory m WHERE {where}"
                         f" ORDER BY {key} LIMIT ?)")
            params += [*values, limit]
        sql = " UNION ALL ".join(parts) + f" ORDER BY {key} LIMIT ?"
        with self.index.reading():
            rows = self.index.db.execute(sql, (*params, limit)).fetchall()
        return [(r[0], r[1]) for r in rows]

    def project_size(self, project: str) -> int:
        """How many memories (any state) the index holds for a project (cached per generation)."""
        with self.index.reading():  # queued writes first: they may bump the generation
            generation = self.index.generation.get(project, 0)
            cached = self._sizes.get(project)
            if cached is not None and cached[0] == generation:
                return cached[1]
            row = self.index.db.execute(
                "SELECT COUNT(*) FROM memory WHERE project = ?", (project,)).fetchone()
        self._sizes[project] = (generation, int(row[0]))
        return int(row[0])

"""Reading the recall index: keyword and embedding candidates, filtered in SQL, and hit records."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

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


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory that passed the filters, with what ranking needs (no store access)."""

    seq: int
    confidence: float
    timestamp: float
    access_count: int
    type: str
    bm25: float = 0.0  # positive, larger is better; 0 for embedding-only candidates


class IndexSearch:
    """Queries over a KeywordIndex; per-project embedding matrices come from `matrices`."""

    def __init__(self, index: KeywordIndex) -> None:
        self.index = index
        self.matrices = MatrixCache(index.matrices)
        self._sizes: dict[str, tuple[int, int]] = {}

    def keyword(self, filters: Filters, tokens: list[str], *, limit: int,
                all_words: bool = False) -> list[Candidate]:
        """The best `limit` BM25 matches of `tokens` (any, or all) among filtered memories."""
        # all_words is the "facts about a topic" test: every word in the memory's own text.
        require_words(tokens)
        # Rank in the keyword index alone (top-k, the project's own postings), then filter the
        # best rows by their seq in SQLite; widen the window only when filters dropped too many.
        window = max(limit * 2, 100)
        while True:
            ranked = self.index.search_text(filters.project, tokens, limit=window,
                                            types=filters.types,
                                            all_words=all_words)
            scores = dict(ranked)
            kept = self.matching(filters, [seq for seq, _ in ranked])
            if len(kept) >= limit or len(ranked) < window:
                break
            window *= 4
        return [Candidate(c.seq, c.confidence, c.timestamp, c.access_count, c.type,
                          bm25=scores[c.seq]) for c in kept[:limit]]

    def matching(self, filters: Filters, seqs: Sequence[int]) -> list[Candidate]:
        """The candidates among `seqs` that pass `filters`, in the order given."""
        if not seqs:
            return []
        where, params = filters.sql()
        # The unary + stops SQLite from scanning the project's B-tree (100,000s of rows at 1M)
        # instead of looking the few seqs up by rowid.
        where = where.replace("m.project = ?", "+m.project = ?", 1)
        found: dict[int, Candidate] = {}
        for start in range(0, len(seqs), 900):
            chunk = seqs[start:start + 900]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT {_COLUMNS} FROM memory m WHERE m.seq IN ({marks}) AND {where}"
            with self.index.lock:
                found.update((r[0], Candidate(*r))
                             for r in self.index.db.execute(sql, (*chunk, *params)))
        return [found[s] for s in seqs if s in found]

    def vectors(self, seqs: Sequence[int], *,
                project: str | None = None) -> tuple[list[int], npt.NDArray[np.int8]]:
        """The stored int8 embeddings of `seqs` (missing ones left out), as (seqs, rows).

        Rows come from the project's matrix when a current one is at hand (no SQL); else, or
        for seqs it lacks, from SQLite."""
        found: list[int] = []
        parts: list[npt.NDArray[np.int8]] = []
        rest = list(seqs)
        matrix = self.matrices.kept(project) if project is not None and rest else None
        if matrix is not None and len(matrix.seqs):
            wanted = np.asarray(rest, dtype=np.int64)
            at = np.minimum(np.searchsorted(matrix.seqs, wanted), len(matrix.seqs) - 1)
            hit = matrix.seqs[at] == wanted
            found, rest = wanted[hit].tolist(), wanted[~hit].tolist()
            parts.append(np.asarray(matrix.codes[at[hit]]))
        if rest:
            marks = ",".join("?" * len(rest))
            with self.index.lock:
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
        with self.index.lock:
            rows = self.index.db.execute(
                f"SELECT seq, record FROM memory WHERE seq IN ({marks})", tuple(seqs)).fetchall()
        return {seq: memory_from_json(text) for seq, text in rows}

    def records_by_id(self, ids: Sequence[str]) -> dict[str, Memory]:
        """The full Memory records of memory ids (ids the index does not hold are left out)."""
        found: dict[str, Memory] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            with self.index.lock:
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
        with self.index.lock:
            rows = self.index.db.execute(sql, (*params, limit)).fetchall()
        return [(r[0], r[1]) for r in rows]

    def project_size(self, project: str) -> int:
        """How many memories (any state) the index holds for a project (cached per generation)."""
        generation = self.index.generation.get(project, 0)
        cached = self._sizes.get(project)
        if cached is not None and cached[0] == generation:
            return cached[1]
        with self.index.lock:
            row = self.index.db.execute(
                "SELECT COUNT(*) FROM memory WHERE project = ?", (project,)).fetchone()
        self._sizes[project] = (generation, int(row[0]))
        return int(row[0])

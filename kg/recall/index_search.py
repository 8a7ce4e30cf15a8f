"""Reading the recall index: keyword and embedding candidates, filtered in SQL, and hit records."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from kg.memory import Memory
from kg.recall.keyword_index import KeywordIndex
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
MATRIX_CACHE_BYTES = 1 << 30  # float32 project matrices kept for semantic scans (LRU)


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
    """Queries over a KeywordIndex; per-project float32 matrices are cached until they change."""

    def __init__(self, index: KeywordIndex) -> None:
        self.index = index
        self._matrices: OrderedDict[
            str, tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float32]]] = OrderedDict()
        self._sizes: dict[str, tuple[int, int]] = {}
        self._matrix_lock = threading.Lock()
        self._loading: set[str] = set()  # projects whose matrix a thread is building

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

    def vectors(self, seqs: Sequence[int]) -> dict[int, npt.NDArray[np.int8]]:
        """The stored int8 embeddings of `seqs` (missing ones are left out)."""
        if not seqs:
            return {}
        marks = ",".join("?" * len(seqs))
        with self.index.lock:
            rows = self.index.db.execute(
                f"SELECT seq, embedding FROM memory WHERE seq IN ({marks})"
                " AND embedding IS NOT NULL", tuple(seqs)).fetchall()
        return {seq: np.frombuffer(blob, dtype=np.int8) for seq, blob in rows}

    def cached_matrix(
            self, project: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]] | None:
        """The project's cached matrix, even if texts came or went since; None if there is none.

        A stale matrix misses only the newest memories (keyword search still finds them) and
        may name purged ones (the filters drop them); a thread rebuilds it meanwhile."""
        cached = self._matrices.get(project)
        if cached is None or cached[0] != self.index.generation.get(project, 0):
            self.load_matrix_soon(project)
        return None if cached is None else (cached[1], cached[2])

    def load_matrix_soon(self, project: str) -> None:
        """Build the project's matrix on a thread (once at a time per project)."""
        with self._matrix_lock:
            if project in self._loading:
                return
            self._loading.add(project)

        def load() -> None:
            try:
                self.matrix(project)
            finally:
                with self._matrix_lock:
                    self._loading.discard(project)

        threading.Thread(target=load, name="recall-matrix", daemon=True).start()

    def matrix(self, project: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """All of a project's embeddings as one float32 matrix (rows, ~unit) and their seqs."""
        generation = self.index.generation.get(project, 0)
        cached = self._matrices.get(project)
        if cached is not None and cached[0] == generation:
            self._matrices.move_to_end(project)
            return cached[1], cached[2]
        with self.index.lock:
            rows = self.index.db.execute(
                "SELECT seq, embedding FROM memory WHERE project = ? AND embedding IS NOT NULL",
                (project,)).fetchall()
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        dim = len(rows[0][1]) if rows else 0
        codes = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), dim)
        # Converted once and kept: converting int8 on every recall cost more than the product.
        unit = codes.astype(np.float32)
        unit /= 127.0
        with self._matrix_lock:
            self._matrices[project] = (generation, seqs, unit)
            while len(self._matrices) > 1 and sum(
                    m[2].nbytes for m in self._matrices.values()) > MATRIX_CACHE_BYTES:
                self._matrices.popitem(last=False)
        return seqs, unit

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

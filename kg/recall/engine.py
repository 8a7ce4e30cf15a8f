"""Ranked recall: keyword index + optional embeddings fused with graph signals (RecallEngine)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import numpy as np
import simsimd
from pyoxigraph import Literal, QuerySolutions
from tqdm import tqdm

from kg.errors import ValidationError
from kg.memory import Memory
from kg.recall.catch_up import IndexCatchUp
from kg.recall.embedding import Embedder
from kg.recall.fusion import FusionWeights, Scored, fuse
from kg.recall.index_key import query_keys
from kg.recall.index_search import Candidate, Filters, IndexSearch
from kg.recall.keyword_index import IndexFingerprint, KeywordIndex, memory_body
from kg.recall.memory_record import epoch
from kg.recall.query_text import query_tokens, validate_query
from kg.recall.reranker import Reranker
from kg.resources import query_text
from kg.settings import MEMORY_STORE, Settings
from kg.store import Store
from kg.terms import MemoryType, parse_term, validate_confidence, validate_identifier

__all__ = ["MODES", "MemorySource", "RecallEngine", "RecallHit", "index_location"]

log = logging.getLogger(__name__)

MODES = ("text", "semantic", "hybrid", "rerank")
MAX_LIMIT = 50
KEYWORD_CANDIDATES = 200  # BM25 candidates a hybrid recall reranks with cosine
SEMANTIC_CANDIDATES = 50  # embedding-only candidates added in hybrid mode …
SEMANTIC_SCAN_LIMIT = 20_000  # … when the project is small enough to scan its matrix (~1 ms)
MIN_HYBRID_COSINE = 0.25  # … and near enough (WordLlama: related 0.27-0.48, unrelated < 0.2)


class MemorySource(Protocol):
    """What recall needs from long-term memory (LongTermMemory provides it)."""

    def iter_memories(self, project: str | None = None) -> Iterator[Memory]:
        """Every memory, retired ones included (the index rebuilds from this)."""
        ...

    def note_recalled(self, memory_ids: Sequence[str], *, project: str | None = None,
                      background: bool = False) -> None:
        """Count one access for each recalled memory; a full batch may flush on a thread."""
        ...

    def flush(self) -> int:
        """Write pending access counts to the store now."""
        ...

    def get(self, memory_id: str, *, project: str | None = None,
            include_retired: bool = False) -> Memory:
        """One memory by id (retired ones too when asked); NotFoundError if there is none."""
        ...


@dataclass(frozen=True, slots=True)
class RecallHit:
    """One recalled memory, its score and the signals behind it."""

    memory: Memory
    score: float
    keyword: float  # BM25 scaled to [0, 1] by the best candidate
    semantic: float  # cosine similarity of the embeddings (0 without an embedder)
    recency: float
    frequency: float
    salience: float


def index_location(settings: Settings) -> Path | None:
    """Where the index lives: KG_INDEX, else `<store dir>.recall.sqlite`; None = in memory."""
    if settings.index:
        return None if settings.index == MEMORY_STORE else Path(settings.index)
    if settings.store_path is None:
        return None
    return settings.store_path.parent / (settings.store_path.name + ".recall.sqlite")


class RecallEngine:
    """Recall over one store's long-term memories; register `.listener` with the writer."""

    def __init__(
        self,
        store: Store,
        memories: MemorySource,
        *,
        index: KeywordIndex | None = None,
        weights: FusionWeights | None = None,
        record_access: bool = True,
        reranker: Reranker | None = None,
    ) -> None:
        self.store = store
        self.memories = memories
        self.index = index if index is not None else KeywordIndex(None)
        self.search = IndexSearch(self.index)
        self.weights = weights or self.default_weights()
        self.record_access = record_access
        self.reranker = reranker or Reranker()  # mode "rerank"; loads MiniLM at its first use

    @property
    def listener(self) -> KeywordIndex:
        """The MemoryListener to register with LongTermMemory to keep the index in step."""
        return self.index

    @property
    def embedder(self) -> Embedder | None:
        """The embedder of the index, if any."""
        return self.index.embedder

    def default_weights(self) -> FusionWeights:
        """FusionWeights with the cosine weight the index's embedder asks for (if it says)."""
        semantic = getattr(self.index.embedder, "semantic_weight", FusionWeights().semantic)
        return FusionWeights(semantic=float(semantic))

    def recall(
        self,
        project: str,
        query: str,
        *,
        types: Sequence[MemoryType | str] | None = None,
        min_confidence: float = 0.5,
        limit: int = 10,
        mode: str = "hybrid",
        as_of: datetime | None = None,
    ) -> list[RecallHit]:
        """Return up to `limit` memories of `project` best matching `query`, best first."""
        filters = Filters(
            project=validate_identifier(project, name="project id"),
            at=epoch(as_of) if as_of is not None else datetime.now(UTC).timestamp(),
            types=_types(types),
            min_confidence=validate_confidence(min_confidence),
        )
        validate_query(query)
        _check_limit(limit)
        if mode not in MODES:
            raise ValidationError(
                f"unknown recall mode {mode!r}; expected one of: {', '.join(MODES)}",
                details={"field": "mode", "value": repr(mode)[:100]},
            )
        if mode == "semantic" and self.embedder is None:
            raise ValidationError("semantic recall needs an embedder; this index has none")
        now = datetime.now(UTC).timestamp()
        if mode == "rerank":
            top, records = self._reranked(filters, query, now=now, limit=limit)
        else:
            top = self._rank(filters, query, mode=mode, now=now, limit=limit)
            records = self.search.records([s.candidate.seq for s in top])
        hits = [
            RecallHit(records[s.candidate.seq], s.score, s.keyword, s.semantic, s.recency,
                      s.frequency, s.salience)
            for s in top if s.candidate.seq in records
        ]
        if self.record_access and hits:
            self.memories.note_recalled([h.memory.id for h in hits], project=filters.project,
                                        background=True)
        return hits

    def _rank(self, filters: Filters, query: str, *, mode: str, now: float,
              limit: int) -> list[Scored]:
        candidates: list[Candidate] = []
        if mode != "semantic":
            # Times the query names ("in May 2023", "last week" from the recall's moment) and
            # its question type's cue ("when …") are keys the memories are indexed under too.
            keys = query_keys(query, datetime.fromtimestamp(filters.at, UTC),
                              time=self.weights.time, cue=self.weights.cue,
                              coverage=self.weights.coverage)
            candidates = self.search.keyword(
                filters, query_tokens(query), limit=KEYWORD_CANDIDATES, keys=keys)
        cosines: dict[int, float] = {}
        if self.embedder is not None and mode != "text":
            vector = self.embedder.embed([query])[0].astype(np.float32)
            vector /= max(float(np.linalg.norm(vector)), 1e-12)
            extra = self._semantic(filters, vector, mode=mode)
            known = {c.seq for c in candidates}
            candidates.extend(c for c in extra if c.seq not in known)
            seqs, rows = self.search.vectors([c.seq for c in candidates],
                                             project=filters.project)
            if seqs:
                products = _product(rows.astype(np.float32), vector)
                cosines = dict(zip(seqs, (products / 127.0).tolist(), strict=True))
            if mode == "hybrid":
                # A memory found by meaning alone must be near enough: without a floor, any
                # query (however unrelated) would recall `limit` memories of a small project.
                floor = float(getattr(self.embedder, "min_cosine", MIN_HYBRID_COSINE))
                candidates = [c for c in candidates
                              if c.bm25 > 0 or cosines.get(c.seq, 0.0) >= floor]
        return fuse(candidates, cosines, now=now, weights=self.weights, limit=limit)

    def _reranked(self, filters: Filters, query: str, *, now: float,
                  limit: int) -> tuple[list[Scored], dict[int, Memory]]:
        """The fast path's best candidates reordered with MiniLM's cosines (reranker.py)."""
        reranker = self.reranker
        _ = reranker.model  # RerankUnavailableError (400) before any work
        first = self._rank(filters, query, mode="hybrid", now=now,
                           limit=max(limit, reranker.candidates))
        records = self.search.records([s.candidate.seq for s in first])
        kept = [s.candidate for s in first if s.candidate.seq in records]
        known: dict[str, np.ndarray] = {}
        if reranker.uses(self.embedder):  # KG_EMBEDDER=minilm: the stored vectors
            seqs, rows = self.search.vectors([c.seq for c in kept], project=filters.project)
            known = {records[s].id: row.astype(np.float32) / 127.0
                     for s, row in zip(seqs, rows, strict=True)}
        cosines = reranker.cosines(
            query, [(records[c.seq].id, memory_body(records[c.seq])) for c in kept], known)
        weights = replace(self.weights, semantic=self.weights.rerank)
        scored = fuse(kept, dict(zip([c.seq for c in kept], cosines, strict=True)), now=now,
                      weights=weights, limit=limit)
        return scored, records

    def _semantic(self, filters: Filters, vector: np.ndarray, *, mode: str) -> list[Candidate]:
        size = self.search.project_size(filters.project)
        if mode == "hybrid" and size > SEMANTIC_SCAN_LIMIT:
            return []  # large project: hybrid reranks the keyword candidates only
        if mode == "hybrid":
            # The matrix comes from memory or from the project's file (mapped, ~0.5 ms per
            # 10,000 rows); hybrid never waits for the SQLite rows (30-40 ms): without a current
            # file, a cold project's recall reranks the keyword candidates only (as for large
            # projects) while a thread rewrites the file.
            matrix = self.search.matrices.current(filters.project, count=size)
            if matrix is None:
                return []
        else:
            matrix = self.search.matrices.exact(filters.project, count=size)
        if not len(matrix.seqs):
            return []
        top = _nearest(matrix.codes, vector, SEMANTIC_CANDIDATES if mode == "hybrid" else 1000)
        return self.search.matching(filters, [int(s) for s in matrix.seqs[top]])

    # --- keeping the index in step with the store ---------------------------------------------
    def store_fingerprint(self) -> IndexFingerprint:
        """The fingerprint of the store's long-term memories (queries/index_marker.rq)."""
        result = self.store.query(query_text("index_marker"))
        assert isinstance(result, QuerySolutions)
        row = next(iter(result))

        def value(name: str) -> object:
            term = row[name]
            return term.value if isinstance(term, Literal) else None

        def moment(name: str) -> float | None:
            text = value(name)
            return epoch(datetime.fromisoformat(str(text))) if text is not None else None

        return IndexFingerprint(
            count=int(str(value("count") or 0)), latest_recorded=moment("latestRecorded"),
            retired=int(str(value("retiredCount") or 0)), latest_retired=moment("latestRetired"),
            access_total=int(float(str(value("accessTotal") or 0))),
        )

    def is_index_current(self) -> bool:
        """True if the index has this code's schema and the store's fingerprint."""
        return self.index.is_compatible() and _same(self.index.fingerprint(),
                                                    self.store_fingerprint())

    def ensure_index(self, *, progress: bool = True) -> bool:
        """Bring the index in step with the store: catch up if it is behind, rebuild it if
        that fails or it is empty or incompatible; True if rebuilt.

        The store is scanned (~26 s at 1M memories) without the index's lock, so recalls and
        writes go on meanwhile; only a mismatch takes the lock, to check again and repair with
        no write landing between the two sides."""
        self.memories.flush()  # a rebuild then reads this instance's recall counts too
        self.repair_text(progress=progress)
        if self.index.is_compatible():
            if _same(self.index.fingerprint(), self.store_fingerprint()):
                self.repair_matrices()
                return False
            with self.index.lock:  # a write between the two fingerprints differs too: recheck
                if self._caught_up():
                    self.repair_matrices()
                    return False
        self.rebuild_index(progress=progress)
        return True

    def _caught_up(self) -> bool:
        """Apply what the store changed after the index's latest change (a crash's lost tail,
        another instance's writes) and what it purged; True if the index is then in step.

        ~36 s at 1M memories, where a rebuild with embeddings takes ~7 min with the index's
        lock held (recalls and writes waiting). An empty index is rebuilt instead."""
        if self.index.fingerprint().count == 0:
            return False
        catch_up = IndexCatchUp(self.store, self.memories, self.index)
        # Twice: a write can reach the store and then wait for the index's lock, held here;
        # long-term memory makes one write at a time, so a second pass sees the last of them.
        for _ in range(2):
            try:
                catch_up.catch_up()
            except Exception:  # a failed catch-up leaves the rebuild to do the work
                log.warning("recall index catch-up failed; rebuilding", exc_info=True)
                return False
            if _same(self.index.fingerprint(), self.store_fingerprint()):
                return True
        return False

    def repair_matrices(self) -> int:
        """Write the embedding file of every project whose file is missing or stale."""
        return self.index.matrices.repair()

    def repair_text(self, *, progress: bool = True) -> bool:
        """Re-index the words from the index's own rows if a crash left them behind."""
        if not self.index.text_stale:
            return False
        if progress:
            print("recall index: re-indexing the words of every memory", file=sys.stderr)
        self.index.rebuild_text()
        return True

    def rebuild_index(self, *, progress: bool = True) -> int:
        """Rebuild the whole index from `iter_memories()` (the store is the truth)."""
        total = self.store_fingerprint().count
        bar = tqdm(total=total, desc="recall index", unit="memory", disable=not progress or None,
                   file=sys.stderr)
        done = 0
        with bar:
            for done in self.index.rebuild(self.memories.iter_memories()):
                bar.update(done - bar.n)
        self.search = IndexSearch(self.index)
        self.repair_matrices()
        return done


def _product(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Matrix (int8 codes or float) times a float32 vector in one thread: `@` went through
    threaded BLAS, 20x slower on a busy 2-core machine (23 ms against 0.6 ms, 10,000 x 256)."""
    return np.einsum("ij,j->i", matrix, vector)  # type: ignore[no-any-return]


def _nearest(codes: np.ndarray, vector: np.ndarray, count: int) -> np.ndarray:
    """The positions of the `count` rows of `codes` nearest the unit `vector`, nearest first.

    A SIMD int8 scan shortlists twice as many; their float products then choose, so the
    query's int8 rounding never changes which rows are chosen."""
    shortlist = _best(_codes_product(codes, vector), count * 2)
    chosen: np.ndarray = shortlist[_best(_product(codes[shortlist].astype(np.float32), vector),
                                         count)]
    return chosen


def _best(scores: np.ndarray, count: int) -> np.ndarray:
    """The positions of the `count` highest scores, highest first."""
    top = np.argsort(-scores)[:count] if len(scores) <= count else (
        np.argpartition(-scores, count)[:count])
    ordered: np.ndarray = top[np.argsort(-scores[top])]
    return ordered


def _codes_product(codes: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Int8 codes times the int8-quantised unit `vector` (SIMD, exact integer sums): a scan
    only chooses candidates, whose cosines `_product` then computes from the float vector.
    ~0.25 ms per 10,000 x 256 against ~0.8 ms for the int8-by-float32 einsum."""
    # Scaled so the largest component is 127, not the unit length: a 256-dim unit vector's
    # components are ~0.06, which x127 would round to a few levels only.
    query = np.rint(vector * (127.0 / max(float(np.abs(vector).max()), 1e-12))).astype(np.int8)
    products: np.ndarray = np.asarray(simsimd.cdist(query[None, :], codes, metric="dot",
                                                    threads=1))[0]
    return products


def _same(a: IndexFingerprint, b: IndexFingerprint) -> bool:
    """True if both hold the same memories and retirements (recall counts aside)."""
    # Access totals are not compared: recall counts drift between instances sharing a store,
    # and a full rebuild for them costs minutes at 1M memories; kg/recall/catch_up.py reloads
    # the memories whose counts another instance changed.
    def close(x: float | None, y: float | None) -> bool:
        return (x is None) == (y is None) and (x is None or abs(x - (y or 0.0)) < 0.002)

    return (
        (a.count, a.retired) == (b.count, b.retired)
        and close(a.latest_recorded, b.latest_recorded)
        and (a.retired == 0 or close(a.latest_retired, b.latest_retired))
    )


def _types(types: Sequence[MemoryType | str] | None) -> tuple[str, ...] | None:
    if types is None:
        return None
    if isinstance(types, str):
        types = [types]
    return tuple(sorted({parse_term(MemoryType, t).value for t in types}))


def _check_limit(limit: object) -> None:
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(
            f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}",
            details={"field": "limit", "value": repr(limit)[:100]},
        )

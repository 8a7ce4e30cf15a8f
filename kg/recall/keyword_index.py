"""The recall index: SQLite rows and int8 embeddings plus a tantivy keyword index, in step.

Memory writes are queued and applied in batches on a thread (kg/recall/index_writer.py); every
read goes through `KeywordIndex.reading()`, which applies what is queued first. A crash loses
only queued writes, which the store already holds: the next start's check (`ensure_index`,
KG_INDEX_CHECK) finds the index behind the store's fingerprint and loads them again.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any, TypeVar

from kg.memory import Memory
from kg.recall.analyzer import stems
from kg.recall.embedding import Embedder, quantize
from kg.recall.index_key import memory_keys
from kg.recall.index_schema import SCHEMA, SCHEMA_VERSION, fingerprint_sql
from kg.recall.index_writer import IndexWriter
from kg.recall.matrix_file import MatrixFiles, matrix_location
from kg.recall.matrix_layout import Change
from kg.recall.memory_record import epoch, memory_to_json
from kg.recall.text_index import TextDocument, TextIndex

__all__ = ["NEIGHBOURS", "IndexFingerprint", "KeywordIndex", "memory_body", "text_location"]

NEIGHBOURS = 2  # memories on each side in the same session whose text is indexed as context
TEXT_COMMIT_INTERVAL = 1.0  # seconds between commits of the keyword index while writes come
_INSERT = (
    "INSERT INTO memory (project, session, type, confidence, timestamp, recorded_at, retired_at,"
    " valid_from, valid_until, access_count, body, record, embedding, id)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
_UPDATE = (
    "UPDATE memory SET project=?, session=?, type=?, confidence=?, timestamp=?, recorded_at=?,"
    " retired_at=?, valid_from=?, valid_until=?, access_count=?, body=?, record=?, embedding=?"
    " WHERE seq=?"
)
_SIDE = (
    "SELECT * FROM (SELECT n.seq FROM memory n, memory m WHERE m.seq = ?1"
    " AND n.project = m.project AND n.session = m.session"
    " AND (n.timestamp, n.recorded_at, n.seq) {op} (m.timestamp, m.recorded_at, m.seq)"
    " ORDER BY n.timestamp {order}, n.recorded_at {order}, n.seq {order} LIMIT ?2)"
)
_NEIGHBOURS = _SIDE.format(op="<", order="DESC") + " UNION ALL " + _SIDE.format(
    op=">", order="ASC")  # one statement: both sides, each nearest first
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexFingerprint:
    """Counts that change on every write, forget and purge; equal on both sides = in step."""

    count: int
    latest_recorded: float | None
    retired: int
    latest_retired: float | None
    access_total: int


def text_location(path: Path | None) -> Path | None:
    """The keyword index's folder beside the SQLite file (`x.recall.sqlite` → `x.recall.text`)."""
    return None if path is None else path.with_suffix(".text")


class KeywordIndex:
    """The recall index of long-term memories: one SQLite file and one tantivy folder (or both
    in memory), safe across threads.

    SQLite holds what filtering and ranking need and the records; tantivy holds the words.
    Memory writes are queued (`writer`) and applied in batches by a thread; every read of
    `db` or `text` goes through `reading()`, which applies them first (read your writes).
    Text writes reach searches at the next commit: a search commits first if any are pending,
    and a thread commits them every TEXT_COMMIT_INTERVAL seconds. The meta key `text` is
    'dirty' while writes are uncommitted, so a crash leaves a mark and the text is re-indexed
    from SQLite (`text_stale`)."""

    def __init__(self, path: Path | None = None, *, embedder: Embedder | None = None) -> None:
        self.path = path
        self.embedder = embedder
        self.lock = threading.RLock()
        self.db = sqlite3.connect(
            str(path) if path else ":memory:", check_same_thread=False, isolation_level=None
        )
        self.db.execute("PRAGMA journal_mode = WAL" if path else "PRAGMA journal_mode = MEMORY")
        self.db.execute("PRAGMA synchronous = NORMAL")
        # Recall reads rows by key all over the file: map it (no read() per page) and keep a
        # larger page cache than the 2 MB default.
        self.db.execute("PRAGMA mmap_size = 8589934592")
        self.db.execute("PRAGMA cache_size = -131072")
        self.generation: dict[str, int] = {}  # per project, bumped when texts come or go
        self._migrate()
        # A new file (or one without rows) holds nothing yet: its first check must build it.
        self.created = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'memory'").fetchone() is None
        self.db.executescript(SCHEMA)
        self.db.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema', ?), ('embedder', ?)",
            (SCHEMA_VERSION, self.embedder_name),
        )
        # Embedding matrices, one file per project (none without an embedder or on disk).
        self.writer = IndexWriter(self._apply, self.lock)
        self.matrices = MatrixFiles(matrix_location(path) if embedder is not None else None,
                                    self.db, self.lock, dim=embedder.dim if embedder else 0,
                                    drain=self.writer.drain)
        self._pending: dict[str, list[Change] | None] = {}  # this write's matrix changes
        self.text = TextIndex(text_location(path))
        self._text_dirty = False
        rows = self.db.execute("SELECT COUNT(*) FROM memory").fetchone()[0]
        mark = self.db.execute("SELECT value FROM meta WHERE key = 'text'").fetchone()
        self.text_stale = (mark is not None and mark[0] == "dirty") or self.text.count() != rows
        self._closed = threading.Event()
        threading.Thread(target=self._commit_periodically, name="recall-text-commit",
                         daemon=True).start()

    def _migrate(self) -> None:
        """Schema 3 kept the words in an FTS5 table: drop it (the text moves to tantivy)."""
        has_meta = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is not None
        if has_meta and self.db.execute(
                "SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("3",):
            self.db.executescript(
                "DROP TABLE IF EXISTS memory_text;"
                f" UPDATE meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema';")

    @property
    def embedder_name(self) -> str:
        """The embedder's class name, or '' without one (a change invalidates the vectors)."""
        return type(self.embedder).__name__ if self.embedder is not None else ""

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """The index's lock with every queued write applied: every read of the index is here."""
        with self.lock:
            self.writer.drain()
            yield self.db

    def drain(self) -> int:
        """Apply every queued write now (returns how many memories)."""
        return self.writer.drain()

    def built_with(self) -> tuple[str | None, str | None]:
        """(schema version, embedder name) the index's file was built with."""
        with self.reading():
            meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        return meta.get("schema"), meta.get("embedder")

    def is_compatible(self) -> bool:
        """True if the file has this code's schema and was built with the same embedder."""
        return self.built_with() == (SCHEMA_VERSION, self.embedder_name)

    def fingerprint(self) -> IndexFingerprint:
        """The fingerprint of what the index holds (compare with the store's)."""
        with self.reading():
            row = self.db.execute(fingerprint_sql()).fetchone()
        return IndexFingerprint(int(row[0]), row[1], int(row[2]), row[3], int(row[4] or 0))

    def close(self) -> None:
        """Apply queued writes, commit pending text and close both halves (once)."""
        with self.lock:
            if self._closed.is_set():
                return
            self._closed.set()
        self.writer.close()  # without the lock: its thread may be waiting for it
        with self.reading():
            self.text.close()
            self._mark_text("clean")
            self.db.close()

    # --- the keyword half -------------------------------------------------------------------
    def search_text(self, project: str, words: list[str], *, limit: int, all_words: bool = False,
                    types: Sequence[str] | None = None,
                    keys: Sequence[tuple[str, float]] = ()) -> list[tuple[int, float]]:
        """(seq, BM25) of the best `limit` memories of `project` for `words` (stemmed here) and
        weighted `keys` (kg/recall/index_key.py)."""
        self.commit_text()  # read your writes: queued ones too
        return self.text.search(project, [s for w in words for s in stems(w)], limit=limit,
                                all_words=all_words, types=types, keys=keys)

    def commit_text(self) -> None:
        """Apply queued writes and make pending text writes visible to searches (and durable)."""
        with self.reading():
            self._commit_written_text()

    def _commit_written_text(self) -> None:
        """Commit the text writes made so far (queued ones are the writer's to apply)."""
        if not self._text_dirty:
            return
        with self.lock:
            if self._text_dirty:
                self.text.commit()
                self._mark_text("clean")

    def rebuild_text(self) -> int:
        """Re-index every memory's words from the SQLite rows; returns how many."""
        with self.reading():
            self._mark_text("dirty")
            self.text.clear()
            done = self._index_all_text()
            self.text.commit()
            self._mark_text("clean")
            self.text_stale = False
            self.generation = {k: v + 1 for k, v in self.generation.items()}
            return done

    def _mark_text(self, state: str) -> None:
        self._text_dirty = state == "dirty"
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('text', ?)", (state,))

    def _commit_periodically(self) -> None:
        while not self._closed.wait(TEXT_COMMIT_INTERVAL):
            try:
                self._commit_written_text()
            except Exception:  # closed under us: the close committed already
                return

    # --- MemoryListener ---------------------------------------------------------------------
    def memory_written(self, memory: Memory) -> None:
        """Queue one memory to add or update (applied by `writer`, or by the next read)."""
        self.writer.put(memory)

    def memories_accessed(self, counts: Sequence[tuple[str, int, datetime]]) -> None:
        """Set the access count and last access of memories (their text is unchanged)."""
        with self.reading(), self._write():
            self.db.executemany(
                "UPDATE memory SET access_count = ?, record = json_set(record,"
                " '$.access_count', ?, '$.last_accessed', ?) WHERE id = ?",
                [(count, count, last.isoformat(), memory_id)
                 for memory_id, count, last in counts])

    def memory_retired(self, memory: Memory) -> None:
        """Queue a retirement (the memory stays findable with an earlier `as_of`)."""
        self.writer.put(memory)  # in order with the writes queued before it

    def memories_purged(self, project: str, memory_ids: Sequence[str] | None) -> None:
        """Hard-delete the given memories of a project, or all of them when ids is None."""
        with self.reading(), self._write():
            if memory_ids is None:
                rows = self.db.execute("SELECT seq FROM memory WHERE project = ?", (project,))
                self._delete([r[0] for r in rows], refresh=False)
                if self.embedder is not None:
                    self._pending[project] = None  # the project's file becomes empty
            else:
                seqs = [
                    r[0] for chunk in _chunks(list(memory_ids), 500)
                    for r in self.db.execute(
                        "SELECT seq FROM memory WHERE project = ? AND id IN ("
                        + ",".join("?" * len(chunk)) + ")", (project, *chunk))
                ]
                self._delete(seqs, refresh=True)
                for seq in seqs:
                    self._vector_change(project, seq, None)
            self._touch(project)

    # --- rebuilding -------------------------------------------------------------------------
    def rebuild(self, memories: Iterable[Memory], *, batch: int = 5000) -> Iterator[int]:
        """Replace the whole index by `memories`; yields the running count (for progress)."""
        with self.reading():
            self.db.executescript(
                "DROP TABLE IF EXISTS memory_text; DROP TABLE IF EXISTS memory;"
                " DROP TABLE IF EXISTS meta; DROP TABLE IF EXISTS matrix_version;" + SCHEMA
            )
            with self._transaction():
                done = 0
                for chunk in _chunks(memories, batch):
                    bodies = [memory_body(m) for m in chunk]
                    vectors: list[bytes | None] = [None] * len(chunk)
                    if self.embedder is not None:
                        vectors = [v.tobytes() for v in quantize(self.embedder.embed(bodies))]
                    self.db.executemany(_INSERT, [
                        (*_values(m, b, v), m.id) for m, b, v in zip(chunk, bodies, vectors,
                                                                     strict=True)])
                    done += len(chunk)
                    yield done
                self.db.execute(
                    "INSERT INTO meta VALUES ('schema', ?), ('embedder', ?)",
                    (SCHEMA_VERSION, self.embedder_name),
                )
            self.matrices.reset()  # a new epoch: no old file passes; repair() writes them
            self.rebuild_text()

    def _index_all_text(self) -> int:
        rows = self.db.execute(
            "SELECT seq, project, session, body, type, timestamp FROM memory"
            " ORDER BY project, session, timestamp, recorded_at, seq"
        )
        group: list[tuple[int, str, str, str, str, float]] = []
        done = 0
        for row in rows:
            if group and group[-1][1:3] != row[1:3]:
                done += self._index_session(group)
                group = []
            group.append(row)
        return done + self._index_session(group)

    def _index_session(self, group: list[tuple[int, str, str, str, str, float]]) -> int:
        words = [stems(row[3]) for row in group]
        return self.text.put((
            TextDocument(seq, project, kind, words[i], [
                s for w in words[max(0, i - NEIGHBOURS):i] + words[i + 1:i + 1 + NEIGHBOURS]
                for s in w], _keys(body, moment))
            for i, (seq, project, _, body, kind, moment) in enumerate(group)
        ), replace=False)

    # --- writing ---------------------------------------------------------------------------
    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)

    @contextmanager
    def _write(self) -> Iterator[None]:
        """The lock and one transaction; after its commit, the matrix files follow it."""
        with self.lock:
            self._pending = {}
            with self._transaction():
                yield
                staged = self.matrices.stage(self._pending)
            self.matrices.commit(self._pending, staged)

    def _apply(self, memories: list[Memory]) -> None:
        """Write queued memories (distinct ids) in one transaction; each affected text is
        re-indexed once, from the batch's final state."""
        affected: set[int] = set()
        spread: set[int] = set()
        with self._write():
            olds = self._old_rows([m.id for m in memories])
            for memory in memories:
                changed = self._upsert(memory, olds.get(memory.id))
                if changed is not None:
                    seq, left = changed
                    spread.add(seq)
                    affected |= left
                    self._touch(memory.project)
            self._refresh_text(affected, spread=spread)

    def _vector_change(self, project: str, seq: int, code: bytes | None) -> None:
        rows = self._pending.setdefault(project, [])
        assert rows is not None, "a purged project's matrix changed in the same write"
        rows.append((seq, code))

    def _touch(self, project: str) -> None:
        self.generation[project] = self.generation.get(project, 0) + 1

    def _old_rows(self, ids: list[str]) -> dict[str, tuple[Any, ...]]:
        """(seq, body, session, timestamp, embedding, type, project) of the ids held, by id."""
        found: dict[str, tuple[Any, ...]] = {}
        for chunk in _chunks(ids, 500):
            found.update((row[0], row[1:]) for row in self.db.execute(
                "SELECT id, seq, body, session, timestamp, embedding, type, project FROM memory"
                " WHERE id IN (" + ",".join("?" * len(chunk)) + ")", chunk))
        return found

    def _upsert(self, memory: Memory,
                old: tuple[Any, ...] | None) -> tuple[int, set[int]] | None:
        """Write one row (`old`: its row before, if any). If its text changed (not just counts
        or retirement): its seq and its former neighbours if it moved (their text is due)."""
        body = memory_body(memory)
        moved = old is None or (old[2], old[3]) != (memory.session, epoch(memory.timestamp))
        affected = set(self._neighbours(old[0])) if old is not None and moved else set()
        vector = old[4] if old is not None and old[1] == body else self._vector(body)
        values = _values(memory, body, vector)
        if old is None:
            seq = self.db.execute(_INSERT, (*values, memory.id)).lastrowid
            assert seq is not None
        else:
            seq = old[0]
            self.db.execute(_UPDATE, (*values, seq))
        if old is not None and old[6] != memory.project and old[4] is not None:
            self._vector_change(old[6], seq, None)
            self._touch(old[6])
        if vector is not None and (old is None or (old[4], old[6]) != (vector, memory.project)):
            self._vector_change(memory.project, seq, vector)
        if old is None or moved or old[1] != body or old[5] != memory.type.value:
            return seq, affected
        return None

    def _vector(self, body: str) -> bytes | None:
        if self.embedder is None:
            return None
        return quantize(self.embedder.embed([body])).tobytes()

    def _delete(self, seqs: list[int], *, refresh: bool) -> None:
        neighbours: set[int] = set()
        if refresh:
            for seq in seqs:
                neighbours.update(self._neighbours(seq))
        for chunk in _chunks(seqs, 500):
            marks = ",".join("?" * len(chunk))
            self.db.execute(f"DELETE FROM memory WHERE seq IN ({marks})", chunk)
        self._text_write()
        self.text.delete(seqs)
        self._refresh_text(neighbours - set(seqs))

    def _neighbours(self, seq: int) -> list[int]:
        """Up to NEIGHBOURS memories on each side of `seq` in its session, nearest first."""
        return [r[0] for r in self.db.execute(_NEIGHBOURS, (seq, NEIGHBOURS))]

    def _refresh_text(self, seqs: Iterable[int], *, spread: Iterable[int] = ()) -> None:
        """Re-index the text of `seqs`, and of each of `spread` and its neighbours."""
        # One read for every row involved (the memories and their neighbours): a remember
        # re-indexes itself and its neighbours, whose contexts overlap (was ~35 queries).
        around = {seq: self._neighbours(seq) for seq in spread}
        wanted = list({*seqs, *around, *(n for found in around.values() for n in found)})
        around.update((seq, self._neighbours(seq)) for seq in wanted if seq not in around)
        rows = self._rows({*wanted, *(n for found in around.values() for n in found)})
        documents = []
        for seq in wanted:
            row = rows.get(seq)
            if row is None:
                continue
            project, body, kind, moment = row
            context = [s for n in around[seq] if n in rows for s in _stems(rows[n][1])]
            documents.append(TextDocument(seq, project, kind, list(_stems(body)), context,
                                          _keys(body, moment)))
        if documents:
            self._text_write()
            self.text.put(documents)

    def _rows(self, seqs: set[int]) -> dict[int, tuple[str, str, str, float]]:
        """(project, body, type, timestamp) of each of `seqs` that exists."""
        found: dict[int, tuple[str, str, str, float]] = {}
        for chunk in _chunks(sorted(seqs), 500):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT seq, project, body, type, timestamp FROM memory WHERE seq IN ({marks})"
            for seq, *row in self.db.execute(sql, chunk):
                found[seq] = (row[0], row[1], row[2], row[3])
        return found

    def _text_write(self) -> None:
        """Mark the text dirty (inside the caller's SQLite transaction) before writing to it."""
        if not self._text_dirty:
            self._mark_text("dirty")

    # --- catch-up ---------------------------------------------------------------------------
    # What kg/recall/catch_up.py compares with the store to learn of other instances' writes.
    def project_counts(self) -> dict[str, int]:
        """How many memories (retired ones included) the index holds, per project."""
        with self.reading():
            rows = self.db.execute("SELECT project, COUNT(*) FROM memory GROUP BY project")
            return {str(project): int(count) for project, count in rows}

    def project_ids(self, project: str) -> set[str]:
        """The ids of every memory of `project` the index holds."""
        with self.reading():
            rows = self.db.execute("SELECT id FROM memory WHERE project = ?", (project,))
            return {str(row[0]) for row in rows}

    def memory_states(self, memory_ids: Sequence[str]) -> dict[str, tuple[bool, str | None]]:
        """(retired, last accessed as ISO text) of each given memory that the index holds."""
        found: dict[str, tuple[bool, str | None]] = {}
        with self.reading():
            for chunk in _chunks(list(memory_ids), 500):
                rows = self.db.execute(
                    "SELECT id, retired_at IS NOT NULL, json_extract(record, '$.last_accessed')"
                    " FROM memory WHERE id IN (" + ",".join("?" * len(chunk)) + ")", chunk)
                found.update((str(i), (bool(retired), last)) for i, retired, last in rows)
        return found

    def latest_change(self) -> float | None:
        """The latest recorded or retired time the index holds (epoch seconds; None if empty)."""
        with self.reading():
            row = self.db.execute("SELECT MAX(recorded_at), MAX(retired_at) FROM memory").fetchone()
        moments = [float(m) for m in row if m is not None]
        return max(moments) if moments else None

    def catch_up_watermark(self) -> float | None:
        """The store time up to which catch-up applied every change (kept in `meta`)."""
        with self.reading():
            row = self.db.execute(
                "SELECT value FROM meta WHERE key = 'catch_up_watermark'").fetchone()
        return float(row[0]) if row is not None else None

    def set_catch_up_watermark(self, moment: float) -> None:
        """Remember the catch-up watermark (a rebuild drops it with the rest of `meta`)."""
        with self.reading():
            self.db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('catch_up_watermark', ?)", (repr(moment),))

class _Transaction:
    """BEGIN … COMMIT, or ROLLBACK on any exception (the connection is in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, kind: object, *_: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


@lru_cache(maxsize=1024)
def _stems(body: str) -> tuple[str, ...]:
    # A body is stemmed for itself and as context of up to 2 * NEIGHBOURS others, in a row.
    return tuple(stems(body))


@lru_cache(maxsize=1024)
def _keys(body: str, moment: float) -> tuple[str, ...]:
    """The memory's keys: its timestamp's calendar terms, the times its text names, cues.

    Kept for recent memories: a remember re-indexes the new memory's neighbours too (their
    context changed, their keys did not)."""
    return tuple(memory_keys(body, datetime.fromtimestamp(moment, UTC)))


def memory_body(memory: Memory) -> str:
    """The text a memory is indexed and embedded by: its content, then its rationale."""
    return memory.content if not memory.rationale else f"{memory.content} {memory.rationale}"


def _opt(moment: object) -> float | None:
    from datetime import datetime

    return epoch(moment) if isinstance(moment, datetime) else None


def _values(memory: Memory, body: str, vector: bytes | None) -> tuple[object, ...]:
    return (
        memory.project, memory.session, memory.type.value, memory.confidence,
        epoch(memory.timestamp), epoch(memory.recorded_at), _opt(memory.retired_at),
        _opt(memory.valid_from), _opt(memory.valid_until), memory.access_count, body,
        memory_to_json(memory), vector,
    )


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk

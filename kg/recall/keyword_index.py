"""The recall index: SQLite FTS5 (BM25) plus int8 embeddings, kept in step as a MemoryListener."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TypeVar

from kg.memory import Memory
from kg.recall.embedding import Embedder, quantize
from kg.recall.index_schema import SCHEMA, SCHEMA_VERSION, fingerprint_sql
from kg.recall.memory_record import epoch, memory_to_json
from kg.recall.query_text import scope_token

__all__ = ["NEIGHBOURS", "IndexFingerprint", "KeywordIndex"]

NEIGHBOURS = 2  # memories on each side in the same session whose text is indexed as context
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
    "SELECT n.seq FROM memory n, memory m WHERE m.seq = ? AND n.project = m.project"
    " AND n.session = m.session AND (n.timestamp, n.recorded_at, n.seq) {op}"
    " (m.timestamp, m.recorded_at, m.seq)"
    " ORDER BY n.timestamp {order}, n.recorded_at {order}, n.seq {order} LIMIT ?"
)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexFingerprint:
    """Counts that change on every write, forget and purge; equal on both sides = in step."""

    count: int
    latest_recorded: float | None
    retired: int
    latest_retired: float | None
    access_total: int


class KeywordIndex:
    """SQLite FTS5 index of long-term memories; one file (or in memory), safe across threads."""

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
        self.db.executescript(SCHEMA)
        self.db.execute(
            "INSERT OR IGNORE INTO meta VALUES ('schema', ?), ('embedder', ?)",
            (SCHEMA_VERSION, self.embedder_name),
        )

    @property
    def embedder_name(self) -> str:
        """The embedder's class name, or '' without one (a change invalidates the vectors)."""
        return type(self.embedder).__name__ if self.embedder is not None else ""

    def is_compatible(self) -> bool:
        """True if the file has this code's schema and was built with the same embedder."""
        with self.lock:
            meta = dict(self.db.execute("SELECT key, value FROM meta").fetchall())
        return bool(
            meta.get("schema") == SCHEMA_VERSION and meta.get("embedder") == self.embedder_name
        )

    def fingerprint(self) -> IndexFingerprint:
        """The fingerprint of what the index holds (compare with the store's)."""
        with self.lock:
            row = self.db.execute(fingerprint_sql()).fetchone()
        return IndexFingerprint(int(row[0]), row[1], int(row[2]), row[3], int(row[4] or 0))

    def close(self) -> None:
        """Close the SQLite connection."""
        with self.lock:
            self.db.close()

    # --- MemoryListener ---------------------------------------------------------------------
    def memory_written(self, memory: Memory) -> None:
        """Add or update one memory (and the context text of its session neighbours)."""
        with self.lock, self._transaction():
            if self._upsert(memory):
                self._touch(memory.project)

    def memory_retired(self, memory: Memory) -> None:
        """Record a retirement (the memory stays findable with an earlier `as_of`)."""
        self.memory_written(memory)

    def memories_purged(self, project: str, memory_ids: Sequence[str] | None) -> None:
        """Hard-delete the given memories of a project, or all of them when ids is None."""
        with self.lock, self._transaction():
            if memory_ids is None:
                rows = self.db.execute("SELECT seq FROM memory WHERE project = ?", (project,))
                self._delete([r[0] for r in rows], refresh=False)
            else:
                seqs = [
                    r[0] for chunk in _chunks(list(memory_ids), 500)
                    for r in self.db.execute(
                        "SELECT seq FROM memory WHERE project = ? AND id IN ("
                        + ",".join("?" * len(chunk)) + ")", (project, *chunk))
                ]
                self._delete(seqs, refresh=True)
            self._touch(project)

    # --- rebuilding -------------------------------------------------------------------------
    def rebuild(self, memories: Iterable[Memory], *, batch: int = 5000) -> Iterator[int]:
        """Replace the whole index by `memories`; yields the running count (for progress)."""
        with self.lock:
            self.db.executescript(
                "DROP TABLE IF EXISTS memory_text; DROP TABLE IF EXISTS memory;"
                " DROP TABLE IF EXISTS meta;" + SCHEMA
            )
            with self._transaction():
                done = 0
                for chunk in _chunks(memories, batch):
                    bodies = [_body(m) for m in chunk]
                    vectors: list[bytes | None] = [None] * len(chunk)
                    if self.embedder is not None:
                        vectors = [v.tobytes() for v in quantize(self.embedder.embed(bodies))]
                    self.db.executemany(_INSERT, [
                        (*_values(m, b, v), m.id) for m, b, v in zip(chunk, bodies, vectors,
                                                                     strict=True)])
                    done += len(chunk)
                    yield done
                self._index_all_text()
                self.db.execute(
                    "INSERT INTO meta VALUES ('schema', ?), ('embedder', ?)",
                    (SCHEMA_VERSION, self.embedder_name),
                )
            self.db.execute("INSERT INTO memory_text (memory_text) VALUES ('optimize')")
            self.generation = {k: v + 1 for k, v in self.generation.items()}

    def _index_all_text(self) -> None:
        rows = self.db.execute(
            "SELECT seq, project, session, body FROM memory"
            " ORDER BY project, session, timestamp, recorded_at, seq"
        )
        group: list[tuple[int, str, str, str]] = []
        for row in rows:
            if group and group[-1][1:3] != row[1:3]:
                self._index_session(group)
                group = []
            group.append(row)
        self._index_session(group)

    def _index_session(self, group: list[tuple[int, str, str, str]]) -> None:
        if not group:
            return
        scope = scope_token(group[0][1])
        self.db.executemany(
            "INSERT INTO memory_text (rowid, scope, body, context) VALUES (?,?,?,?)",
            [
                (seq, scope, body, " ".join(
                    g[3] for g in group[max(0, i - NEIGHBOURS):i] + group[i + 1:i + 1 + NEIGHBOURS]
                ))
                for i, (seq, _, _, body) in enumerate(group)
            ],
        )

    # --- writing ---------------------------------------------------------------------------
    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)

    def _touch(self, project: str) -> None:
        self.generation[project] = self.generation.get(project, 0) + 1

    def _upsert(self, memory: Memory) -> bool:
        """Write one row; True if its text changed (not just counts or retirement)."""
        body = _body(memory)
        old = self.db.execute(
            "SELECT seq, body, session, timestamp, embedding FROM memory WHERE id = ?",
            (memory.id,),
        ).fetchone()
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
        if old is None or moved or old[1] != body:
            affected.update(self._neighbours(seq))
            affected.add(seq)
            self._refresh_text(affected)
            return True
        return False

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
            self.db.execute(f"DELETE FROM memory_text WHERE rowid IN ({marks})", chunk)
            self.db.execute(f"DELETE FROM memory WHERE seq IN ({marks})", chunk)
        self._refresh_text(neighbours - set(seqs))

    def _neighbours(self, seq: int) -> list[int]:
        """Up to NEIGHBOURS memories on each side of `seq` in its session, nearest first."""
        found: list[int] = []
        for op, order in (("<", "DESC"), (">", "ASC")):
            sql = _SIDE.format(op=op, order=order)
            found.extend(r[0] for r in self.db.execute(sql, (seq, NEIGHBOURS)))
        return found

    def _refresh_text(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            row = self.db.execute(
                "SELECT project, body FROM memory WHERE seq = ?", (seq,)).fetchone()
            if row is None:
                continue
            context = " ".join(
                r[0] for n in self._neighbours(seq)
                for r in self.db.execute("SELECT body FROM memory WHERE seq = ?", (n,))
            )
            self.db.execute("DELETE FROM memory_text WHERE rowid = ?", (seq,))
            self.db.execute(
                "INSERT INTO memory_text (rowid, scope, body, context) VALUES (?,?,?,?)",
                (seq, scope_token(row[0]), row[1], context),
            )


class _Transaction:
    """BEGIN … COMMIT, or ROLLBACK on any exception (the connection is in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, kind: object, *_: object) -> None:
        self.db.execute("COMMIT" if kind is None else "ROLLBACK")


def _body(memory: Memory) -> str:
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

"""IndexCatchUp: bring a recall index up to date with what other instances wrote to the store.

Each service instance keeps its own recall index, fed by its own writes. When several instances
share one remote SPARQL server, a poll (`catch_up()`, or every `interval` seconds on a daemon
thread) reads the memories recorded, retired or last accessed since a watermark
(`queries/memories_changed_since.rq`), reloads those the index holds differently through
long-term memory's reading API, and compares per-project counts with the store to drop memories
purged elsewhere (`queries/memory_counts_by_project.rq`, `queries/memory_ids_in_project.rq`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.errors import NotFoundError
from kg.graphs import long_term, project_of_graph
from kg.longterm.triples import datetime_literal, parse_datetime
from kg.memory import Memory, memory_iri
from kg.recall.keyword_index import KeywordIndex
from kg.recall.memory_record import epoch
from kg.resources import query_text
from kg.store import Store

__all__ = ["BACKOFF", "BULK_LOAD", "OVERLAP", "CatchUpReport", "IndexCatchUp", "MemoryReader"]

# Seconds re-read behind the watermark. A change is stamped by the writer's clock before it is
# committed: access counts carry the time of the recall and reach the store up to
# KG_ACCESS_FLUSH_INTERVAL (5 s) later, and the instances' clocks may differ. Re-reading is cheap:
# what the index already holds is compared, not reloaded.
OVERLAP = 10.0
BACKOFF = 4.0  # the thread waits at least this many times the last poll's duration (≤ 20 % busy)
MAX_PAUSE = 60.0  # … but never longer than this between polls
BULK_LOAD = 200  # more memories of one project to load than this: read its graph in one go
_MEMORY_PREFIX = memory_iri("").value
log = logging.getLogger(__name__)


class MemoryReader(Protocol):
    """What catch-up needs from long-term memory (LongTermMemory provides it)."""

    def get(self, memory_id: str, *, project: str | None = None,
            include_retired: bool = False) -> Memory:
        """One memory by id (retired ones too when asked); NotFoundError if there is none."""
        ...

    def iter_memories(self, project: str | None = None) -> Iterator[Memory]:
        """Every memory of a project, retired ones included."""
        ...


@dataclass(frozen=True, slots=True)
class CatchUpReport:
    """What one catch-up did."""

    since: float  # store time (epoch seconds) from which changes were read: watermark - overlap
    changed: int  # memories the store reported changed since then
    loaded: int  # memories (re)loaded into the index: new, retired or re-counted elsewhere
    purged: int  # memories removed from the index because the store no longer has them


@dataclass(slots=True)
class _Change:
    project: str
    retired: bool = False
    accessed: float | None = None


class IndexCatchUp:
    """Keeps `index` in step with writes to `store` it did not see (`start()`: on a thread)."""

    def __init__(self, store: Store, memories: MemoryReader, index: KeywordIndex, *,
                 interval: float = 1.0, overlap: float = OVERLAP,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.memories = memories
        self.index = index
        self.interval = interval
        self.overlap = overlap
        self._clock = clock
        self._watermark: float | None = None
        self._lock = threading.Lock()  # one catch-up at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failures = 0  # consecutive failed polls of the thread

    @property
    def watermark(self) -> float | None:
        """The store time up to which every change has been applied (None before the first)."""
        return self._watermark

    def catch_up(self) -> CatchUpReport:
        """Apply what changed in the store since the watermark, then drop purged memories."""
        with self._lock:
            started = self._clock()
            since = self._start(started) - self.overlap
            changes = self._changed(since)
            states = self.index.memory_states(list(changes))
            due: dict[str, set[str]] = {}
            for memory_id, change in changes.items():
                if _differs(change, states.get(memory_id)):
                    due.setdefault(change.project, set()).add(memory_id)
            loaded = sum(self._load(project, ids) for project, ids in sorted(due.items()))
            purged, found = self._reconcile()
            self._watermark = started
            self.index.set_catch_up_watermark(started)
            return CatchUpReport(since, len(changes), loaded + found, purged)

    def _start(self, now: float) -> float:
        """The watermark: this run's, else the index's saved one, else its latest change."""
        if self._watermark is None:
            saved = self.index.catch_up_watermark()
            latest = self.index.latest_change()  # stamped by writers' clocks: maybe ahead
            self._watermark = saved if saved is not None else min(latest or now, now)
        return self._watermark

    def _changed(self, since: float) -> dict[str, _Change]:
        moment = datetime_literal(datetime.fromtimestamp(since, UTC))
        result = self.store.query(query_text("memories_changed_since"),
                                  substitutions={"since": moment})
        assert isinstance(result, QuerySolutions)
        changes: dict[str, _Change] = {}
        for row in result:
            memory, graph = row["memory"], row["graph"]
            if not (isinstance(memory, NamedNode) and isinstance(graph, NamedNode)
                    and memory.value.startswith(_MEMORY_PREFIX)):
                continue
            project = project_of_graph(graph)
            if project is None:
                continue
            change = changes.setdefault(memory.value[len(_MEMORY_PREFIX):], _Change(project))
            change.retired |= row["retired"] is not None
            accessed = row["accessed"]
            if isinstance(accessed, Literal):
                at = epoch(parse_datetime(accessed))
                change.accessed = max(at, change.accessed or at)
        return changes

    def _reconcile(self) -> tuple[int, int]:
        """Compare per-project counts; where they differ, compare ids. (purged, loaded)."""
        result = self.store.query(query_text("memory_counts_by_project"))
        assert isinstance(result, QuerySolutions)
        stored_counts: dict[str, int] = {}
        for row in result:
            graph, count = row["graph"], row["count"]
            project = project_of_graph(graph) if isinstance(graph, NamedNode) else None
            if project is not None and isinstance(count, Literal):
                stored_counts[project] = int(count.value)
        held_counts = self.index.project_counts()
        purged = loaded = 0
        for project in sorted(set(stored_counts) | set(held_counts)):
            if stored_counts.get(project, 0) == held_counts.get(project, 0):
                continue
            # The index first: whatever it holds was committed to the store before, so an id
            # missing from the store's list read after it was purged, not written meanwhile.
            held = self.index.project_ids(project)
            stored = self._store_ids(project)
            gone = sorted(held - stored)
            if gone:
                self.index.memories_purged(project, gone)
                purged += len(gone)
            loaded += self._load(project, stored - held)
        return purged, loaded

    def _store_ids(self, project: str) -> set[str]:
        result = self.store.query(query_text("memory_ids_in_project"),
                                  substitutions={"g": long_term(project)})
        assert isinstance(result, QuerySolutions)
        return {
            term.value[len(_MEMORY_PREFIX):] for row in result
            if isinstance(term := row["memory"], NamedNode)
            and term.value.startswith(_MEMORY_PREFIX)
        }

    def _load(self, project: str, memory_ids: set[str]) -> int:
        """Read the memories from the store and write them into the index; returns how many."""
        if not memory_ids:
            return 0
        if len(memory_ids) > BULK_LOAD:
            found: Iterator[Memory] | list[Memory] = (
                m for m in self.memories.iter_memories(project) if m.id in memory_ids)
        else:
            found = []
            for memory_id in sorted(memory_ids):
                try:
                    found.append(self.memories.get(memory_id, project=project,
                                                   include_retired=True))
                except NotFoundError:
                    continue  # purged since the store listed it
        done = 0
        for memory in found:
            self.index.memory_written(memory)
            done += 1
        return done

    # --- the thread -------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """True while the polling thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Poll on a daemon thread every `interval` seconds (nothing if interval is 0)."""
        if self.interval <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="recall-index-catch-up",
                                        daemon=True)
        self._thread.start()

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop the thread, waiting up to `timeout` seconds for a poll in progress."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def _run(self) -> None:
        pause = self.interval
        while not self._stop.wait(pause):
            began = time.monotonic()
            try:
                self.catch_up()
            except Exception:  # the store may be down: log, keep the watermark, try again
                self.failures += 1
                if self.failures == 1:
                    log.warning("recall index catch-up failed; it is retried until it works",
                            exc_info=True)
                else:
                    log.debug("recall index catch-up failed again", exc_info=True)
            else:
                if self.failures:
                    log.info("recall index catch-up works again after %d failed attempts",
                             self.failures)
                self.failures = 0
            pause = min(MAX_PAUSE, max(self.interval, BACKOFF * (time.monotonic() - began)))


def _differs(change: _Change, state: tuple[bool, str | None] | None) -> bool:
    """True if the index lacks the memory, or holds it unretired or with an older access."""
    if state is None:
        return True
    retired, last = state
    if change.retired and not retired:
        return True
    if change.accessed is None:
        return False
    return last is None or epoch(datetime.fromisoformat(last)) < change.accessed - 1e-6

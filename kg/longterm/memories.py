"""LongTermMemory: remember, get, forget, purge and recall-count memories in per-project graphs.

Every remember is one store transaction (an `add`, or one atomic update when it merges into an
equivalent memory). Listeners hear of each change only after it is committed.

>>> from kg.store import EmbeddedStore
>>> ltm = LongTermMemory(EmbeddedStore())
>>> first = ltm.remember("Tests use pytest", project="demo", session="s1")
>>> again = ltm.remember("tests   use PYTEST", project="demo", session="s2")
>>> again.created, again.memory.id == first.memory.id, again.memory.access_count
(False, True, 1)
"""

from __future__ import annotations

import contextlib
import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat

from kg.graphs import long_term, project_graphs, project_of_graph
from kg.longterm.access import AccessDelta, AccessTracker
from kg.longterm.errors import InvalidMemoryError, MemoryNotFoundError, MemoryRetiredError
from kg.longterm.items import (
    Item,
    check_key,
    check_namespace,
    find_item,
    item_content_key,
    item_quads,
    value_text,
)
from kg.longterm.purge import memory_scope, session_scope
from kg.longterm.session_records import SessionRecords
from kg.longterm.triples import (
    changeset_update,
    content_key,
    datetime_literal,
    evidence_quads,
    memories_from_quads,
    memory_quads,
    parse_datetime,
)
from kg.memory import Evidence, Memory, MemoryListener, memory_iri
from kg.namespaces import JIDO
from kg.resources import query_text
from kg.store.base import Store
from kg.terms import (
    SESSION_ID_PATTERN,
    MemoryType,
    SourceType,
    parse_term,
    validate_confidence,
    validate_identifier,
    validate_session_id,
)

__all__ = [
    "ITEM_REPLACED_REASON",
    "MAX_CONTENT_BYTES",
    "MAX_REASON_BYTES",
    "LongTermMemory",
    "RememberOutcome",
    "check_text",
]

MAX_CONTENT_BYTES = 2_000
MAX_REASON_BYTES = 500
ITEM_REPLACED_REASON = "replaced: the item's namespace and key were put again"
_log = logging.getLogger(__name__)
_DERIVED_FROM = JIDO["derivedFrom"]


class RememberOutcome(NamedTuple):
    """The memory as stored, and whether it is new (False: merged into an equivalent one)."""

    memory: Memory
    created: bool


def check_text(value: object, field: str, limit: int, *, required: bool = True) -> str:
    """Return `value` if it is a string within `limit` UTF-8 bytes, else raise naming `field`."""
    if not isinstance(value, str):
        raise InvalidMemoryError(f"{field} must be a string, got {type(value).__name__}",
                                 details={"field": field})
    if required and not value.strip():
        raise InvalidMemoryError(f"{field} must not be empty", details={"field": field})
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise InvalidMemoryError(f"{field} is {size:,} bytes; the limit is {limit:,}",
                                 details={"field": field, "bytes": size, "limit": limit})
    return value


class LongTermMemory:
    """The long-term memory of every project in one store."""

    def __init__(
        self,
        store: Store,
        *,
        listeners: Sequence[MemoryListener] = (),
        clock: Callable[[], datetime] | None = None,
        flush_every: int = 1000,
        flush_interval: float = 5.0,
    ) -> None:
        self.store = store
        self._listeners = list(listeners)
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self.records = SessionRecords(store, clock=self._clock)
        self._access = AccessTracker(
            self._write_access, flush_every=flush_every, flush_interval=flush_interval
        )

    # -- writing ------------------------------------------------------------------------------

    def remember(
        self,
        content: str,
        *,
        project: str,
        session: str,
        type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8,
        source_type: SourceType | str = SourceType.AGENT,
        agent: str | None = None,
        rationale: str | None = None,
        evidence: Sequence[Evidence] = (),
        valid_from: datetime | None = None,
        valid_until: datetime | None = None,
        timestamp: datetime | None = None,
        item: Item | None = None,
    ) -> RememberOutcome:
        """Store a memory, or merge it into the equivalent current one of the same project.

        With an `item` the memory is filed at the item's namespace and key instead: it
        supersedes the current memory there, if any, and is never merged by content."""
        check_text(content, "content", MAX_CONTENT_BYTES)
        if item is not None:
            check_namespace(item.namespace)
            check_key(item.key)
            value_text(item.value)
        if rationale is not None:
            check_text(rationale, "rationale", MAX_CONTENT_BYTES, required=False)
        kind = parse_term(MemoryType, type)
        score = validate_confidence(confidence)
        source = parse_term(SourceType, source_type)
        validate_identifier(project, name="project id")
        validate_session_id(session)
        if agent is not None:
            validate_identifier(agent, name="agent id")
        if valid_from and valid_until and valid_from >= valid_until:
            raise InvalidMemoryError("valid_from must be before valid_until",
                                     details={"field": "valid_until"})
        now = self._clock()
        graph = long_term(project)
        key = content_key(content, kind) if item is None else item_content_key(item, content, kind)
        stamped = [replace(e, recorded_at=now) for e in evidence]
        replaced: Memory | None = None
        with self._lock:
            existing = self._find_by_key(graph, key) if item is None else None
            if item is not None:
                found = find_item(self.store, graph, item.namespace, item.key)
                replaced = self._read(graph, found[0]) if found is not None else None
            identity = self.records.missing_quads(session, project=project, agent=agent, at=now)
            if existing is not None:
                memory = self._merge(existing, graph, score, rationale, stamped, session, now,
                                     identity)
            else:
                memory = Memory(
                    id=uuid.uuid4().hex, project=project, session=session, type=kind,
                    content=content, confidence=score, source_type=source,
                    timestamp=timestamp or now, recorded_at=now, agent=agent,
                    rationale=rationale, valid_from=valid_from, valid_until=valid_until,
                    evidence=tuple(stamped),
                )
                quads = memory_quads(memory, key=key, graph=graph) + identity
                for proof in stamped:
                    quads += evidence_quads(proof, memory=memory.iri, session=session, graph=graph)
                if item is not None:
                    quads += item_quads(memory.iri, item, graph)
                if replaced is not None:
                    # One add: the new memory and the old one's retirement land together.
                    replaced = replace(replaced, retired_at=now,
                                       retirement_reason=ITEM_REPLACED_REASON,
                                       superseded_by=memory.id)
                    quads += [
                        Quad(replaced.iri, JIDO["retiredAt"], datetime_literal(now), graph),
                        Quad(replaced.iri, JIDO["retirementReason"],
                             Literal(ITEM_REPLACED_REASON), graph),
                        Quad(replaced.iri, JIDO["supersededBy"], memory.iri, graph),
                    ]
                self.store.add(quads)
            self.records.mark_known(session, project=project, agent=agent)
        if replaced is not None:
            self._notify("memory_retired", replaced)
        self._notify("memory_written", memory)
        return RememberOutcome(memory, existing is None)

    def _merge(self, memory_id: str, graph: NamedNode, confidence: float, rationale: str | None,
               evidence: list[Evidence], session: str, now: datetime,
               identity: list[Quad]) -> Memory:
        old = self._read(graph, memory_id)
        assert old is not None
        new = replace(
            old, confidence=max(old.confidence, confidence), access_count=old.access_count + 1,
            last_accessed=now, rationale=old.rationale if old.rationale is not None else rationale,
            evidence=(*old.evidence, *evidence),
        )
        s = old.iri
        changed = ("confidenceScore", "hasConfidence", "accessCount", "lastAccessed", "rationale")
        remove = [q for name in changed for q in self.store.quads(s, JIDO[name], None, graph)]
        add = [q for q in memory_quads(new, key="", graph=graph)
               if q.predicate.value.removeprefix(str(JIDO)) in changed]
        for item in evidence:
            add += evidence_quads(item, memory=s, session=session, graph=graph)
        self.store.update(changeset_update(remove, add + identity))
        return new

    def forget(
        self,
        memory_id: str,
        *,
        project: str,
        reason: str,
        replacement_id: str | None = None,
    ) -> Memory:
        """Supersede a memory: keep it for provenance, hidden from default reads from now on."""
        check_text(reason, "reason", MAX_REASON_BYTES)
        with self._lock:
            memory = self.get(memory_id, project=project, include_retired=True)
            if memory.retired_at is not None:
                raise MemoryRetiredError(
                    f"memory {memory_id!r} was already forgotten "
                    f"at {memory.retired_at.isoformat()}",
                    details={"field": "memory_id"},
                )
            if replacement_id is not None:
                self._check_replacement(memory_id, replacement_id, project)
            now = self._clock()
            graph = long_term(project)
            quads = [
                Quad(memory.iri, JIDO["retiredAt"], datetime_literal(now), graph),
                Quad(memory.iri, JIDO["retirementReason"], Literal(reason), graph),
            ]
            if replacement_id is not None:
                quads.append(Quad(memory.iri, JIDO["supersededBy"], memory_iri(replacement_id),
                                  graph))
            self.store.add(quads)
        retired = replace(memory, retired_at=now, retirement_reason=reason,
                          superseded_by=replacement_id)
        self._notify("memory_retired", retired)
        return retired

    def _check_replacement(self, memory_id: str, replacement_id: str, project: str) -> None:
        if replacement_id == memory_id:
            raise InvalidMemoryError("a memory cannot replace itself",
                                     details={"field": "replacement_id"})
        try:
            replacement = self.get(replacement_id, project=project, include_retired=True)
        except MemoryNotFoundError:
            raise MemoryNotFoundError(f"replacement memory {replacement_id!r} not found",
                                      details={"field": "replacement_id"}) from None
        if replacement.retired_at is not None:
            raise MemoryRetiredError(
                f"replacement memory {replacement_id!r} was itself forgotten",
                details={"field": "replacement_id"},
            )

    # -- purging ------------------------------------------------------------------------------

    def purge_memory(self, memory_id: str, *, project: str) -> None:
        """Hard-delete one memory, its evidence and every link to it."""
        graph = long_term(project)
        with self._lock:
            quads = memory_scope(self.store, graph, [memory_id])
            if not any(q.subject == memory_iri(memory_id) for q in quads):
                raise MemoryNotFoundError(
                    f"memory {memory_id!r} not found in project {project!r}",
                    details={"field": "memory_id"},
                )
            self.store.remove(quads)
            self._access.discard([memory_id])
        self._notify("memories_purged", project, [memory_id])

    def purge_session(self, session_id: str, *, project: str) -> list[str]:
        """Hard-delete a session's memories, its record and the evidence it produced."""
        validate_session_id(session_id)
        validate_identifier(project, name="project id")
        with self._lock:
            memory_ids, quads = session_scope(self.store, project, session_id)
            self.store.remove(quads)
            self._access.discard(memory_ids)
            self.records.forget_cache(project=project, session_id=session_id)
        self._notify("memories_purged", project, memory_ids)
        return memory_ids

    def purge_project(self, project: str) -> None:
        """Hard-delete every graph of a project."""
        with self._lock:
            for graph in project_graphs(project):
                if self.store.contains_graph(graph):
                    self.store.drop_graph(graph)
            self._access.discard(project=project)
            self.records.forget_cache(project=project)
        self._notify("memories_purged", project, None)

    # -- reading ------------------------------------------------------------------------------

    def get(
        self,
        memory_id: str,
        *,
        project: str | None = None,
        as_of: datetime | None = None,
        include_retired: bool = False,
    ) -> Memory:
        """The memory with this id, as visible now (or at `as_of`); MemoryNotFoundError if not."""
        if not isinstance(memory_id, str) or not SESSION_ID_PATTERN.fullmatch(memory_id):
            raise MemoryNotFoundError(f"memory {memory_id!r} not found",
                                      details={"field": "memory_id"})
        graph = long_term(project) if project is not None else self._graph_of(memory_id)
        memory = self._read(graph, memory_id) if graph is not None else None
        where = f" in project {project!r}" if project is not None else ""
        if memory is None:
            raise MemoryNotFoundError(f"memory {memory_id!r} not found{where}",
                                      details={"field": "memory_id"})
        if not include_retired and not memory.is_current(as_of or self._clock()):
            raise MemoryNotFoundError(
                f"memory {memory_id!r} not found{where}"
                + (f" as of {as_of.isoformat()}" if as_of else " (it was forgotten or expired)"),
                details={"field": "memory_id"},
            )
        return memory

    def memories(self, project: str, *, as_of: datetime | None = None) -> list[Memory]:
        """The memories of a project visible now (or at `as_of`)."""
        at = as_of or self._clock()
        return [m for m in self.iter_memories(project) if m.is_current(at)]

    def iter_memories(self, project: str | None = None) -> Iterator[Memory]:
        """Every memory (retired ones included), of one project or of all, read from the store."""
        if project is not None:
            graphs = [long_term(project)]
        else:
            graphs = sorted(
                (g for g in self.store.named_graphs()
                 if isinstance(g, NamedNode) and project_of_graph(g) is not None
                 and g.value.endswith("/long-term")),
                key=lambda g: g.value,
            )
        for graph in graphs:
            name = project_of_graph(graph) or ""
            for memory in memories_from_quads(list(self.store.quads(None, None, None, graph)),
                                              project=name):
                yield self._with_pending(memory)

    def _read(self, graph: NamedNode, memory_id: str) -> Memory | None:
        iri = memory_iri(memory_id)
        quads = list(self.store.quads(iri, None, None, graph))
        for quad in quads[:]:
            if quad.predicate == _DERIVED_FROM and isinstance(quad.object, NamedNode):
                quads += self.store.quads(quad.object, None, None, graph)
        found = memories_from_quads(quads, project=project_of_graph(graph) or "")
        return self._with_pending(found[0]) if found else None

    def _with_pending(self, memory: Memory) -> Memory:
        delta = self._access.peek(memory.id)
        if delta is None:
            return memory
        last = max(memory.last_accessed, delta.last) if memory.last_accessed else delta.last
        return replace(memory, access_count=memory.access_count + delta.count, last_accessed=last)

    def _graph_of(self, memory_id: str) -> NamedNode | None:
        rows = self.store.query(query_text("memory_graph"),
                                substitutions={"m": memory_iri(memory_id)})
        for row in rows:  # type: ignore[union-attr]
            graph = row["g"]
            return graph if isinstance(graph, NamedNode) else None
        return None

    def _find_by_key(self, graph: NamedNode, key: str) -> str | None:
        rows = self.store.query(query_text("memory_by_content_key"),
                                substitutions={"g": graph, "key": Literal(key)})
        for row in rows:  # type: ignore[union-attr]
            return str(row["m"].value).rsplit("/", 1)[-1]
        return None

    # -- recall counts ------------------------------------------------------------------------

    def note_recalled(self, memory_ids: Sequence[str], *, project: str | None = None,
                      background: bool = False) -> None:
        """Count a recall of each memory (written in batches; off the caller's thread if asked)."""
        self._access.note(memory_ids, at=self._clock(), project=project, background=background)

    def flush(self) -> int:
        """Write the pending recall counts now; return how many memories were updated."""
        return self._access.flush()

    def close(self) -> None:
        """Flush pending recall counts (the store itself stays open)."""
        self._access.close()

    def _write_access(self, batch: dict[str, AccessDelta]) -> None:
        updated: list[Memory] = []
        accessed: list[tuple[str, int, datetime]] = []
        with self._lock:
            remove: list[Quad] = []
            add: list[Quad] = []
            for memory_id, delta in batch.items():
                graph = (long_term(delta.project) if delta.project is not None
                         else self._graph_of(memory_id))
                if graph is None:
                    continue  # purged before the flush
                s = memory_iri(memory_id)
                counts = list(self.store.quads(s, JIDO["accessCount"], None, graph))
                lasts = list(self.store.quads(s, JIDO["lastAccessed"], None, graph))
                if not counts and not any(self.store.quads(s, JIDO["recordedAt"], None, graph)):
                    continue
                count = delta.count + sum(
                    int(q.object.value) for q in counts[:1] if isinstance(q.object, Literal)
                )
                latest = max([delta.last, *(parse_datetime(q.object) for q in lasts[:1])])
                remove += counts + lasts
                accessed.append((memory_id, count, latest))
                add += [Quad(s, JIDO["accessCount"], Literal(count), graph),
                        Quad(s, JIDO["lastAccessed"], datetime_literal(latest), graph)]
            if add:
                self.store.update(changeset_update(remove, add))
            # Listeners that take counts alone get them (no memory re-read: this runs every
            # few recalls); the others get each whole memory again.
            full = [x for x in self._listeners if not hasattr(x, "memories_accessed")]
            if full:
                for memory_id, delta in batch.items():
                    with contextlib.suppress(MemoryNotFoundError):  # purged meanwhile
                        updated.append(self.get(memory_id, project=delta.project,
                                                include_retired=True))
        for listener in self._listeners:
            if listener not in full:
                self._notify_one(listener, "memories_accessed", accessed)
        for memory in updated:
            for listener in full:
                self._notify_one(listener, "memory_written", memory)

    # -- bulk import --------------------------------------------------------------------------

    def bulk_import(self, path: Path, *, format: RdfFormat = RdfFormat.N_QUADS) -> None:
        """Load memories exported as N-Quads fast (not transactional, no dedup: trusted input)."""
        with self._lock:
            self.store.bulk_load(path=Path(path), format=format)
            self.records.forget_cache()
        if self._listeners:
            for memory in self.iter_memories():
                self._notify("memory_written", memory)

    def _notify(self, method: str, *args: object) -> None:
        for listener in self._listeners:
            self._notify_one(listener, method, *args)

    @staticmethod
    def _notify_one(listener: MemoryListener, method: str, *args: object) -> None:
        try:
            getattr(listener, method)(*args)
        except Exception:  # the write is committed; a failing listener must not undo it
            _log.exception("memory listener %r failed in %s", listener, method)

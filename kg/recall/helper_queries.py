"""The named query helpers (seed 001 and the originals), each scoped to one project's graph."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.errors import ValidationError
from kg.graphs import codebase, long_term
from kg.longterm.triples import datetime_literal
from kg.memory import Memory, memory_iri, session_iri
from kg.namespaces import JIDO
from kg.recall.engine import RecallEngine
from kg.recall.index_search import Filters
from kg.recall.memory_record import epoch
from kg.recall.query_text import query_tokens, validate_query
from kg.resources import query_text
from kg.store.base import Term
from kg.terms import validate_identifier, validate_session_id

__all__ = ["DecisionAlternatives", "QueryHelpers", "RelatedMemory"]

_EXPLICIT = frozenset(
    JIDO[name].value
    for name in ("relatedTo", "refines", "confirms", "contradicts", "supersededBy")
)
MAX_DEPTH = 5
MAX_RESULTS = 500


@dataclass(frozen=True, slots=True)
class RelatedMemory:
    """A memory related to another: how (relation local name) and how many links away."""

    memory: Memory
    relation: str  # assertedIn (shared session), derivedFrom (shared evidence), or a link name
    inverse: bool  # True when the link points at the start memory (e.g. X refines start)
    depth: int


@dataclass(frozen=True, slots=True)
class DecisionAlternatives:
    """A decision, the alternatives it considered, and the one it chose (if recorded)."""

    decision: Memory
    alternatives: tuple[Memory, ...]
    selected: Memory | None


class QueryHelpers:
    """Named helpers over the graph; memory records come from the engine's index (no N+1 reads)."""

    def __init__(self, engine: RecallEngine) -> None:
        self.engine = engine

    def facts_about(self, project: str, topic: str, *, limit: int = 20,
                    include_superseded: bool = False,
                    as_of: datetime | None = None) -> list[Memory]:
        """Facts whose text has every word of `topic` (stemmed), newest first."""
        validate_query(topic)
        at = _at(as_of)
        filters = Filters(project=validate_identifier(project, name="project id"),
                          at=epoch(at), types=("fact",), include_retired=include_superseded)
        candidates = self.engine.search.keyword(
            filters, query_tokens(topic), limit=max(limit * 5, 100), all_words=True)
        by_seq = self.engine.search.records([c.seq for c in candidates])
        confirmed: list[tuple[datetime, Memory]] = []
        for candidate in candidates:
            memory = by_seq.get(candidate.seq)
            if memory is None:
                continue
            rows = list(self._rows("facts_about", project, at, include_superseded,
                                   memory=memory_iri(memory.id)))
            if rows:
                confirmed.append((memory.timestamp, memory))
            if len(confirmed) >= limit:
                break
        confirmed.sort(key=lambda pair: pair[0], reverse=True)
        return [m for _, m in confirmed]

    def decisions_in_order(self, project: str, *, limit: int = 100,
                           include_superseded: bool = False,
                           as_of: datetime | None = None) -> list[Memory]:
        """Decisions of every decision class, oldest first."""
        return self._memories("decisions_in_order", project, as_of, include_superseded, limit)

    def project_conventions(self, project: str, *, limit: int = 100,
                            include_superseded: bool = False,
                            as_of: datetime | None = None) -> list[Memory]:
        """Conventions of every convention class, most confident first."""
        return self._memories("project_conventions", project, as_of, include_superseded, limit)

    def errors_for_module(self, project: str, module: str, *, limit: int = 100,
                          include_superseded: bool = False,
                          as_of: datetime | None = None) -> list[Memory]:
        """Errors whose jido:affectsModule has this jido:moduleName, newest first."""
        return self._memories("errors_for_module", project, as_of, include_superseded, limit,
                              graphs=[long_term(project), codebase(project)],
                              moduleName=Literal(_text(module, "module")))

    def lessons_for_error(self, project: str, error_id: str, *, limit: int = 100,
                          include_superseded: bool = False,
                          as_of: datetime | None = None) -> list[Memory]:
        """Lessons learned from an error (producedLesson or relatedError), oldest first."""
        return self._memories("lessons_for_error", project, as_of, include_superseded, limit,
                              error=memory_iri(_text(error_id, "error id")))

    def session_memories(self, project: str, session: str, *, limit: int = MAX_RESULTS,
                         include_superseded: bool = False,
                         as_of: datetime | None = None) -> list[Memory]:
        """The memories asserted in one work session, in the order they were made."""
        return self._memories("memories_in_session", project, as_of, include_superseded, limit,
                              session=session_iri(validate_session_id(session)))

    def recent_memories(self, project: str, *, limit: int = 20,
                        include_superseded: bool = False,
                        as_of: datetime | None = None) -> list[Memory]:
        """The most recently recorded memories, newest first."""
        return self._memories("recent_memories", project, as_of, include_superseded, limit)

    def decisions_with_alternatives(self, project: str, *, limit: int = 100,
                                    include_superseded: bool = False,
                                    as_of: datetime | None = None) -> list[DecisionAlternatives]:
        """Decisions with the alternatives they considered and the one selected, oldest first."""
        at = _at(as_of)
        grouped: dict[str, tuple[list[str], list[str]]] = {}
        for row in self._rows("decisions_with_alternatives", project, at, include_superseded):
            decision, alternative = _id(row["memory"]), _id(row["alternative"])
            alternatives, selected = grouped.setdefault(decision, ([], []))
            if alternative not in alternatives:
                alternatives.append(alternative)
            if row["selected"] == Literal(True):
                selected.append(alternative)
        decisions = list(grouped)[:_limit(limit)]
        wanted = decisions + [a for d in decisions for a in grouped[d][0]]
        records = self.engine.search.records_by_id(wanted)
        return [
            DecisionAlternatives(
                records[d], tuple(records[a] for a in grouped[d][0] if a in records),
                next((records[s] for s in grouped[d][1] if s in records), None))
            for d in decisions if d in records
        ]

    def related_memories(self, project: str, memory_id: str, *, depth: int = 2,
                         limit: int = 100, include_superseded: bool = False,
                         as_of: datetime | None = None) -> list[RelatedMemory]:
        """Memories sharing a session or evidence, or linked explicitly up to `depth` links."""
        if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
            raise ValidationError(f"depth must be an integer from 1 to {MAX_DEPTH}",
                                  details={"field": "depth", "value": repr(depth)[:50]})
        at = _at(as_of)
        start = _text(memory_id, "memory id")
        found: dict[str, tuple[str, bool, int]] = {}
        frontier = [start]
        for level in range(1, depth + 1):
            following: list[str] = []
            for node in frontier:
                for row in self._rows("related_memories", project, at, include_superseded,
                                      memory=memory_iri(node)):
                    other, relation = _id(row["related"]), row["relation"]
                    explicit = isinstance(relation, NamedNode) and relation.value in _EXPLICIT
                    if other == start or other in found or (level > 1 and not explicit):
                        continue
                    name = _id(relation).rsplit("#", 1)[-1]
                    found[other] = (name, row["inverse"] == Literal(True), level)
                    if explicit:
                        following.append(other)
            frontier = following
        ids = list(found)[:_limit(limit)]
        records = self.engine.search.records_by_id(ids)
        return [RelatedMemory(records[i], *found[i]) for i in ids if i in records]

    # --- plumbing ---------------------------------------------------------------------------
    def _memories(self, name: str, project: str, as_of: datetime | None,
                  include_superseded: bool, limit: int, *,
                  graphs: list[NamedNode] | None = None, **bound: Term) -> list[Memory]:
        ids: list[str] = []
        wanted = _limit(limit)
        for row in self._rows(name, project, _at(as_of), include_superseded, graphs=graphs,
                              **bound):
            memory = _id(row["memory"])
            if memory not in ids:
                ids.append(memory)
                if len(ids) >= wanted:
                    break
        records = self.engine.search.records_by_id(ids)
        return [records[i] for i in ids if i in records]

    def _rows(self, name: str, project: str, at: datetime, include_superseded: bool, *,
              graphs: list[NamedNode] | None = None, **bound: Term) -> Iterator[dict[str, Term]]:
        validate_identifier(project, name="project id")
        result = self.engine.store.query(
            query_text(name),
            substitutions={"at": datetime_literal(at),
                           "includeSuperseded": Literal(include_superseded), **bound},
            default_graph=graphs or [long_term(project)],
        )
        assert isinstance(result, QuerySolutions)
        names = [v.value for v in result.variables]
        for solution in result:
            yield {n: solution[n] for n in names if solution[n] is not None}


def _at(as_of: datetime | None) -> datetime:
    moment = as_of or datetime.now(UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _id(term: Term | None) -> str:
    return term.value.rsplit("/", 1)[-1] if isinstance(term, NamedNode) else ""


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 1000:
        raise ValidationError(f"{field} must be a non-empty string of at most 1,000 characters",
                              details={"field": field})
    return value


def _limit(limit: object) -> int:
    if type(limit) is not int or not 1 <= limit <= MAX_RESULTS:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_RESULTS}",
                              details={"field": "limit", "value": repr(limit)[:50]})
    return limit

"""The named query helpers (seed 001 and the originals), each scoped to one project's graph."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.errors import ValidationError
from kg.graphs import codebase, long_term
from kg.longterm.triples import datetime_literal
from kg.memory import Memory, memory_iri
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
_RELATIONS = ("related_evidence", "related_memories")
_DECISIONS = ("architectural_decision", "decision", "implementation_decision")
_CONVENTIONS = ("agent_rule", "architectural_convention", "coding_standard", "convention",
                "process_convention")
_HAS_ALTERNATIVE, _SELECTED = JIDO["hasAlternative"], JIDO["selectedAlternative"]
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
        # Like the ordered helpers, the index alone answers (kept in step with the graph on
        # every write; tests check it against queries/facts_about.rq): confirming each hit
        # with that query cost ~0.2 ms a hit at 100,000 memories a project.
        candidates = self.engine.search.keyword(filters, query_tokens(topic), limit=limit,
                                                all_words=True)
        records = self.engine.search.records([c.seq for c in candidates])
        found = [records[c.seq] for c in candidates if c.seq in records]
        return sorted(found, key=lambda memory: memory.timestamp, reverse=True)

    def decisions_in_order(self, project: str, *, limit: int = 100,
                           include_superseded: bool = False,
                           as_of: datetime | None = None) -> list[Memory]:
        """Decisions of every decision class, oldest first."""
        return self._ordered(project, as_of, include_superseded, limit, "oldest", _DECISIONS)

    def project_conventions(self, project: str, *, limit: int = 100,
                            include_superseded: bool = False,
                            as_of: datetime | None = None) -> list[Memory]:
        """Conventions of every convention class, most confident first."""
        return self._ordered(project, as_of, include_superseded, limit, "confident", _CONVENTIONS)

    def errors_for_module(self, project: str, module: str, *, limit: int = 100,
                          include_superseded: bool = False,
                          as_of: datetime | None = None) -> list[Memory]:
        """Errors whose jido:affectsModule has this jido:moduleName, newest first."""
        return self._linked("errors_for_module", project, as_of, include_superseded, limit,
                            "newest", None, graphs=[long_term(project), codebase(project)],
                            moduleName=Literal(_text(module, "module")))

    def lessons_for_error(self, project: str, error_id: str, *, limit: int = 100,
                          include_superseded: bool = False,
                          as_of: datetime | None = None) -> list[Memory]:
        """Lessons learned from an error (producedLesson or relatedError), oldest first."""
        return self._linked("lessons_for_error", project, as_of, include_superseded, limit,
                            "oldest", ("lesson_learned",), timed=False,
                            error=memory_iri(_text(error_id, "error id")))

    def session_memories(self, project: str, session: str, *, limit: int = MAX_RESULTS,
                         include_superseded: bool = False,
                         as_of: datetime | None = None) -> list[Memory]:
        """The memories asserted in one work session, in the order they were made."""
        return self._ordered(project, as_of, include_superseded, limit, "oldest", None,
                             session=validate_session_id(session))

    def recent_memories(self, project: str, *, limit: int = 20,
                        include_superseded: bool = False,
                        as_of: datetime | None = None) -> list[Memory]:
        """The most recently recorded memories, newest first."""
        return self._ordered(project, as_of, include_superseded, limit, "recorded", None)

    def decisions_with_alternatives(self, project: str, *, limit: int = 100,
                                    include_superseded: bool = False,
                                    as_of: datetime | None = None) -> list[DecisionAlternatives]:
        """Decisions with the alternatives they considered and the one selected, oldest first."""
        at, wanted = _at(as_of), _limit(limit)
        filters = self._filters(project, at, include_superseded, _DECISIONS)
        # First the oldest decisions from the index, their links read by subject (point
        # lookups); only if too few of them have alternatives, every link of the project.
        first = self.engine.search.ordered(filters, "oldest", limit=wanted * 4)
        grouped = self._alternatives_of(project, [i for _, i in first], wanted)
        decisions = list(grouped)  # oldest first, as `first` came
        if len(grouped) < wanted and len(first) == wanted * 4:
            grouped = self._all_alternatives(project, at, include_superseded)
            order = self.engine.search.ordered(filters, "oldest", limit=wanted,
                                               ids=list(grouped))
            decisions = [i for _, i in order]
        for alternatives, _ in grouped.values():
            alternatives.sort()  # IRI order, as the graph query's ORDER BY ?alternative gave
        records = self.engine.search.records_by_id(
            decisions + [a for d in decisions for a in grouped[d][0]])
        return [
            DecisionAlternatives(
                records[d], tuple(records[a] for a in grouped[d][0] if a in records),
                next((records[s] for s in grouped[d][1] if s in records), None))
            for d in decisions if d in records
        ]

    def _alternatives_of(self, project: str, decisions: list[str],
                         wanted: int) -> dict[str, tuple[list[str], list[str]]]:
        """The links of the first `wanted` of `decisions` (in order) that have any."""
        graph = long_term(project)
        grouped: dict[str, tuple[list[str], list[str]]] = {}
        for decision in decisions:
            if len(grouped) == wanted:
                break
            subject = memory_iri(decision)
            alternatives = [_id(q.object) for q in self.engine.store.quads(
                subject, _HAS_ALTERNATIVE, None, graph)]
            selected = [_id(q.object) for q in self.engine.store.quads(
                subject, _SELECTED, None, graph)]
            if alternatives or selected:
                grouped[decision] = (list(dict.fromkeys(alternatives + selected)), selected)
        return grouped

    def _all_alternatives(self, project: str, at: datetime,
                          include_superseded: bool) -> dict[str, tuple[list[str], list[str]]]:
        grouped: dict[str, tuple[list[str], list[str]]] = {}
        for row in self._rows("decisions_with_alternatives", project, at, include_superseded,
                              timed=False):
            decision, alternative = _id(row["memory"]), _id(row["alternative"])
            alternatives, selected = grouped.setdefault(decision, ([], []))
            if alternative not in alternatives:
                alternatives.append(alternative)
            if row["selected"] == Literal(True):
                selected.append(alternative)
        return grouped

    def related_memories(self, project: str, memory_id: str, *, depth: int = 2,
                         limit: int = 100, include_superseded: bool = False,
                         as_of: datetime | None = None) -> list[RelatedMemory]:
        """Memories sharing a session or evidence, or linked explicitly up to `depth` links."""
        if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
            raise ValidationError(f"depth must be an integer from 1 to {MAX_DEPTH}",
                                  details={"field": "depth", "value": repr(depth)[:50]})
        at = _at(as_of)
        start = _text(memory_id, "memory id")
        wanted = _limit(limit)
        found: dict[str, tuple[str, bool, int]] = {}
        # Shared session first: the index holds each memory's session (a B-tree range scan).
        own = self.engine.search.records_by_id([start]).get(start)
        if own is not None and own.project == project:
            rows = self.engine.search.ordered(
                self._filters(project, at, include_superseded, None), "oldest",
                limit=wanted + 1, session=own.session)
            found.update((i, ("assertedIn", False, 1)) for _, i in rows if i != start)
        frontier = [start]
        for level in range(1, depth + 1):
            following: list[str] = []
            # One query per relation kind; shared session and evidence only at the first hop.
            kinds = _RELATIONS if level == 1 else _RELATIONS[-1:]
            for node in frontier:
                for kind in kinds:
                    if len(found) >= wanted:
                        break  # later finds would only be cut off by the limit
                    for row in self._rows(kind, project, at, include_superseded,
                                          memory=memory_iri(node)):
                        if len(found) >= wanted:
                            break
                        other, relation = _id(row["related"]), row["relation"]
                        explicit = isinstance(relation, NamedNode) and (
                            relation.value in _EXPLICIT)
                        if other == start or other in found:
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
    def _filters(self, project: str, at: datetime, include_superseded: bool,
                 types: tuple[str, ...] | None) -> Filters:
        return Filters(project=validate_identifier(project, name="project id"), at=epoch(at),
                       types=types, include_retired=include_superseded)

    def _ordered(self, project: str, as_of: datetime | None, include_superseded: bool,
                 limit: int, order: str, types: tuple[str, ...] | None, *,
                 session: str | None = None) -> list[Memory]:
        """Ids and order from the index's B-trees (a bounded range scan, never a project sort)."""
        filters = self._filters(project, _at(as_of), include_superseded, types)
        rows = self.engine.search.ordered(filters, order, limit=_limit(limit), session=session)
        records = self.engine.search.records([seq for seq, _ in rows])  # by rowid: no id index
        return [records[seq] for seq, _ in rows if seq in records]

    def _linked(self, name: str, project: str, as_of: datetime | None,
                include_superseded: bool, limit: int, order: str,
                types: tuple[str, ...] | None, *, timed: bool = True,
                graphs: list[NamedNode] | None = None, **bound: Term) -> list[Memory]:
        """Ids from a link query (few, unordered); type, time, order and limit from the index."""
        at, wanted = _at(as_of), _limit(limit)
        ids = list(dict.fromkeys(_id(row["memory"]) for row in self._rows(
            name, project, at, include_superseded, timed=timed, graphs=graphs, **bound)))
        if not ids:
            return []
        rows = self.engine.search.ordered(
            self._filters(project, at, include_superseded, types), order, limit=wanted,
            ids=ids)
        records = self.engine.search.records([seq for seq, _ in rows])
        return [records[seq] for seq, _ in rows if seq in records]

    def _rows(self, name: str, project: str, at: datetime, include_superseded: bool, *,
              timed: bool = True, graphs: list[NamedNode] | None = None,
              **bound: Term) -> Iterator[dict[str, Term]]:
        validate_identifier(project, name="project id")
        moment: dict[str, Term] = {"at": datetime_literal(at),
                                   "includeSuperseded": Literal(include_superseded)}
        result = self.engine.store.query(
            query_text(name), substitutions={**(moment if timed else {}), **bound},
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

"""The memory explorer's reads: projects with their counts and keyset pages of a project's memories.

A page is read from one sorted pattern (`queries/explore_page.rq`: Oxigraph sorts the rows of
`jido:recordedAt` alone, ~50 ms at 100,000 memories) and each row is checked here for type,
confidence and retirement until the page is full; a filter that matches few rows stops after
`MAX_EXAMINED` rows and the next page goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, QuerySolutions

from kg.errors import ValidationError
from kg.graphs import long_term, project_of_graph
from kg.longterm import LongTermMemory
from kg.longterm.errors import MemoryNotFoundError
from kg.longterm.triples import datetime_literal
from kg.memory import Memory, memory_iri, session_iri
from kg.namespaces import DATA
from kg.resources import query_text
from kg.store.base import Store
from kg.terms import (
    SESSION_ID_PATTERN,
    ConfidenceLevel,
    MemoryType,
    validate_identifier,
    validate_session_id,
)

__all__ = ["MAX_EXAMINED", "Cursor", "Explorer", "Page", "PageQuery", "ProjectSummary"]

MAX_EXAMINED = 5_000
MAX_PAGE = 200
_MEMORY_PREFIX = str(DATA) + "memory/"
_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ProjectSummary:
    """A project and how many memories its long-term graph holds."""

    project: str
    memories: int
    retired: int

    @property
    def current(self) -> int:
        """Memories not retired (validity windows aside)."""
        return self.memories - self.retired


@dataclass(frozen=True, slots=True)
class Cursor:
    """A position in the newest-first order: after the memory recorded then with this id."""

    recorded: datetime
    memory_id: str

    def text(self) -> str:
        """The cursor as one URL parameter value."""
        return f"{self.recorded.isoformat()}~{self.memory_id}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """Read a cursor written by `text` (ValidationError if it is not one)."""
        stamp, _, memory_id = text.rpartition("~")
        try:
            recorded = datetime.fromisoformat(stamp)
        except ValueError:
            raise ValidationError("after must be a page cursor from a 'next page' link",
                                  details={"field": "after"}) from None
        if not SESSION_ID_PATTERN.fullmatch(memory_id):
            raise ValidationError("after must be a page cursor from a 'next page' link",
                                  details={"field": "after"})
        return cls(_aware(recorded), memory_id)


@dataclass(frozen=True, slots=True)
class PageQuery:
    """What a page shows: types and confidence levels (empty: all), a time range, a session."""

    types: frozenset[MemoryType] = frozenset()
    levels: frozenset[ConfidenceLevel] = frozenset()
    since: datetime | None = None
    until: datetime | None = None
    session: str | None = None
    include_retired: bool = False
    size: int = 50

    def admits(self, memory: Memory, at: datetime) -> bool:
        """True if the memory belongs on this page (its time range is checked by the query)."""
        if self.types and memory.type not in self.types:
            return False
        if self.levels and memory.level not in self.levels:
            return False
        return self.include_retired or memory.is_current(at)


@dataclass(frozen=True, slots=True)
class Page:
    """Memories newest first; `next` continues after the last row examined (None at the end)."""

    memories: list[Memory] = field(default_factory=list)
    next: Cursor | None = None
    examined: int = 0

    @property
    def cut_short(self) -> bool:
        """True if the page stopped at MAX_EXAMINED rows before it was full."""
        return self.examined >= MAX_EXAMINED


class Explorer:
    """Reads for the explorer pages over one store and its long-term memory."""

    def __init__(self, store: Store, memories: LongTermMemory, *,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self.memories = memories
        self._clock = clock or (lambda: datetime.now(UTC))

    def projects(self) -> list[ProjectSummary]:
        """Every project with a long-term graph, by id, with its memory counts."""
        totals = self._counts("memory_counts_by_project")
        retired = self._counts("explore_retired_counts")
        return [ProjectSummary(p, n, retired.get(p, 0)) for p, n in sorted(totals.items())]

    def page(self, project: str, query: PageQuery, *, after: Cursor | None = None) -> Page:
        """One page of the project's memories, newest first, after `after`."""
        validate_identifier(project, name="project id")
        if not 1 <= query.size <= MAX_PAGE:
            raise ValidationError(f"a page holds 1 to {MAX_PAGE} memories",
                                  details={"field": "size"})
        at = self._clock()
        found: list[Memory] = []
        examined = 0
        last: Cursor | None = None
        for memory_id, recorded in self._rows(project, query, after):
            examined += 1
            last = Cursor(recorded, memory_id)
            try:
                memory = self.memories.get(memory_id, project=project, include_retired=True)
            except MemoryNotFoundError:
                continue  # purged since the query ran
            if query.admits(memory, at):
                found.append(memory)
                if len(found) == query.size:
                    return Page(found, last, examined)
            if examined >= MAX_EXAMINED:
                return Page(found, last, examined)
        return Page(found, None, examined)

    def _rows(self, project: str, query: PageQuery,
              after: Cursor | None) -> Iterator[tuple[str, datetime]]:
        until = query.until or _LATEST
        cursor_time, cursor_id = until, ""
        if after is not None and after.recorded <= until:
            cursor_time, cursor_id = after.recorded, memory_iri(after.memory_id).value
        bound: dict[str, NamedNode | Literal] = {
            "g": long_term(project), "since": datetime_literal(query.since or _EARLIEST),
            "cursorTime": datetime_literal(cursor_time), "cursorId": Literal(cursor_id),
        }
        name = "explore_page"
        if query.session is not None:
            bound["session"] = session_iri(validate_session_id(query.session))
            name = "explore_session_page"
        result = self.store.query(query_text(name), substitutions=bound)
        assert isinstance(result, QuerySolutions)
        for row in result:
            memory, recorded = row["memory"], row["recorded"]
            if not isinstance(memory, NamedNode) or not isinstance(recorded, Literal):
                continue
            if memory.value.startswith(_MEMORY_PREFIX):
                stamp = _aware(datetime.fromisoformat(recorded.value))
                yield memory.value[len(_MEMORY_PREFIX):], stamp

    def _counts(self, name: str) -> dict[str, int]:
        result = self.store.query(query_text(name))
        assert isinstance(result, QuerySolutions)
        counts: dict[str, int] = {}
        for row in result:
            graph, count = row["graph"], row["count"]
            if isinstance(graph, NamedNode) and isinstance(count, Literal):
                project = project_of_graph(graph)
                if project is not None and graph == long_term(project):
                    counts[project] = int(count.value)
        return counts


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)

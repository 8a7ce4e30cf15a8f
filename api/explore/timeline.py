"""A project's timeline: memories by recorded time, retired ones marked, a page at a time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from flask import Response, request

from api.explore.blueprint import blueprint, explorer, next_page_url, page, project_access
from api.explore.listing import page_query
from kg.explore import Cursor
from kg.memory import Memory

__all__ = ["Day", "Tick", "strip"]

WIDTH = 960
HEIGHT = 56


@dataclass(frozen=True, slots=True)
class Day:
    """The memories of one day on the page, newest first."""

    day: date
    memories: list[Memory]


@dataclass(frozen=True, slots=True)
class Tick:
    """One memory's mark on the page's time strip."""

    x: float
    memory: Memory


def strip(memories: list[Memory]) -> list[Tick]:
    """Place each memory on a strip from the page's oldest (left) to its newest (right)."""
    if not memories:
        return []
    oldest = min(m.recorded_at for m in memories)
    span = (max(m.recorded_at for m in memories) - oldest).total_seconds() or 1.0
    margin = 12
    return [Tick(margin + (WIDTH - 2 * margin) * (m.recorded_at - oldest).total_seconds() / span,
                 m) for m in memories]


@blueprint.get("/<project>/timeline")
def timeline(project: str) -> Response:
    """Memories by recorded time (retired ones included and marked), newest first."""
    project_access(project)
    query = page_query(include_retired=True)
    after = request.args.get("after")
    found = explorer().page(project, query, after=Cursor.parse(after) if after else None)
    days: list[Day] = []
    for memory in found.memories:
        day = memory.recorded_at.date()
        if not days or days[-1].day != day:
            days.append(Day(day, []))
        days[-1].memories.append(memory)
    return page("timeline.html", project=project, days=days, ticks=strip(found.memories),
                width=WIDTH, height=HEIGHT, args=request.args,
                next_url=next_page_url("explore.timeline",
                                       found.next.text() if found.next else None,
                                       project=project),
                count=len(found.memories))

"""The explorer's lists: projects with their counts, and one project's memories or search hits."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Response, request

from api.auth import require
from api.explore.blueprint import (
    blueprint,
    explorer,
    next_page_url,
    page,
    parse_when,
    project_access,
)
from api.memory import memory_service
from kg.explore import Cursor, PageQuery
from kg.longterm.errors import RecallUnavailableError
from kg.memory import Memory
from kg.recall.query_text import InvalidQueryError
from kg.terms import ConfidenceLevel, MemoryType, parse_term

__all__ = ["SEARCH_LIMIT", "Row", "page_query"]

SEARCH_LIMIT = 50


@dataclass(frozen=True, slots=True)
class Row:
    """One memory in a list, with its recall score when the list is a search."""

    memory: Memory
    score: float | None = None


def page_query(*, include_retired: bool | None = None) -> PageQuery:
    """The filters of a list page, read from its URL."""
    types = frozenset(parse_term(MemoryType, t) for t in request.args.getlist("type") if t)
    levels = frozenset(parse_term(ConfidenceLevel, v) for v in request.args.getlist("level")
                       if v)
    retired = request.args.get("retired") == "1" if include_retired is None else include_retired
    return PageQuery(
        types=types, levels=levels, include_retired=retired,
        since=parse_when(request.args.get("since"), field="since"),
        until=parse_when(request.args.get("until"), field="until", end=True),
        session=request.args.get("session") or None,
    )


@blueprint.get("")
@blueprint.get("/")
def index() -> Response:
    """Every project the caller may read, with its memory counts."""
    principal = require("read")
    projects = [p for p in explorer().projects() if principal.may_access(p.project)]
    return page("index.html", projects=projects)


@blueprint.get("/<project>")
def project_list(project: str) -> Response:
    """The project's memories newest first (filtered, paged), or search hits with scores."""
    project_access(project)
    query = page_query()
    text = request.args.get("q", "").strip()
    rows: list[Row] = []
    notice = None
    next_cursor = None
    examined = 0
    if text:
        try:
            hits = memory_service().recall(project, text, types=sorted(query.types) or None,
                                           limit=SEARCH_LIMIT)
            rows = [Row(h.memory, h.score) for h in hits
                    if not query.levels or h.memory.level in query.levels]
        except (InvalidQueryError, RecallUnavailableError) as e:
            notice = str(e)
    else:
        after = request.args.get("after")
        found = explorer().page(project, query, after=Cursor.parse(after) if after else None)
        rows = [Row(m) for m in found.memories]
        next_cursor = found.next
        examined = found.examined if found.cut_short else 0
    return page("project.html", project=project, rows=rows, query=query, text=text,
                notice=notice, examined=examined,
                next_url=next_page_url("explore.project_list",
                                       next_cursor.text() if next_cursor else None,
                                       project=project),
                types=list(MemoryType), levels=list(ConfidenceLevel), args=request.args,
                filtered=bool(query.types or query.levels or query.since or query.until
                              or query.session))



"""The explorer's blueprint and what its views share: the readers, the caller, page rendering."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

from flask import Blueprint, Response, g, render_template, request, url_for

from api.auth import Principal, current_principal, require
from api.errors import status_for
from api.memory import memory_service
from kg.errors import KgError, ValidationError
from kg.explore import Explorer
from kg.explore_graph import MemoryGraph
from kg.terms import validate_identifier

__all__ = ["blueprint", "explorer", "memory_graph", "next_page_url", "page", "parse_when",
           "project_access"]

blueprint = Blueprint("explore", __name__, url_prefix="/explore")


def explorer() -> Explorer:
    """The list reads over the app's store and long-term memory."""
    service = memory_service()
    return Explorer(service.store, service.long_term)


def memory_graph() -> MemoryGraph:
    """The reads around one memory."""
    service = memory_service()
    return MemoryGraph(service.store, service.long_term)


def project_access(project: str, *, write: bool = False, admin: bool = False) -> Principal:
    """Check the project id and the caller's access to it (401/403 otherwise)."""
    validate_identifier(project, name="project id")
    return require("admin" if admin else "write" if write else "read", project=project)


def page(template: str, *, status: int = 200, **context: Any) -> Response:
    """Render one explorer template with the caller and its token state."""
    from api.explore.access import form_secret, token_state

    principal = _principal_or_anonymous()
    body = render_template(f"explore/{template}", principal=principal, token=token_state(),
                           csrf=form_secret(), **context)
    return Response(body, status=status, mimetype="text/html")


def next_page_url(endpoint: str, cursor: str | None, **values: Any) -> str | None:
    """The URL of the page after `cursor`, keeping this page's filters (None at the end)."""
    if cursor is None:
        return None
    args: dict[str, Any] = {k: v for k, v in request.args.to_dict(flat=False).items()
                            if k != "after"}
    return url_for(endpoint, **values, **args, after=cursor)


def parse_when(raw: str | None, *, field: str, end: bool = False) -> datetime | None:
    """A date (YYYY-MM-DD) or ISO date-time from a form; `end` makes a date cover its day."""
    if not raw:
        return None
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw)
            start = datetime(day.year, day.month, day.day, tzinfo=UTC)
            return start + timedelta(days=1) if end else start
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationError(f"{field} must be a date (YYYY-MM-DD)",
                              details={"field": field}) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _principal_or_anonymous() -> Principal | None:
    try:
        return current_principal()
    except KgError:
        return None


@blueprint.before_request
def _start() -> None:
    from api.explore.access import use_cookie

    g.explore_started = time.perf_counter()
    use_cookie()


@blueprint.after_request
def _timing(response: Response) -> Response:
    started = g.get("explore_started")
    if started is not None:
        millis = (time.perf_counter() - started) * 1000
        response.headers["Server-Timing"] = f"app;dur={millis:.1f};desc=\"explorer view\""
    response.headers.setdefault("Cache-Control", "no-store")
    return response


@blueprint.errorhandler(KgError)
def _error(error: KgError) -> Response:
    status = status_for(error)
    return page("error.html", status=status, error=error, status_code=status,
                next_url=request.full_path if request.method == "GET" else None)

"""The memory explorer under /explore: server-rendered pages to see, search and correct memories.

Pages: `/explore` (projects), `/explore/<project>` (memories, filters, search),
`/explore/<project>/timeline`, `/explore/<project>/memories/<id>` (one memory, forget, purge)
and `/explore/<project>/memories/<id>/graph` (its neighbourhood). Reads follow the service's
auth (anonymous where reads are anonymous); a token typed at `/explore/token` is kept for the
browser session (api.explore.access).
"""

from __future__ import annotations

from flask import Flask

from api.explore import access, graph, listing, memory_page, timeline
from api.explore.blueprint import blueprint

__all__ = ["install"]

_VIEWS = (access, graph, listing, memory_page, timeline)  # imported for their routes


def install(app: Flask) -> None:
    """Register the explorer's pages on the app."""
    app.register_blueprint(blueprint)

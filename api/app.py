"""The application factory: the only place an app, its store and its routes come together."""

from __future__ import annotations

from flask import Flask

from api.errors import register_error_handlers
from api.services import Services
from kg.settings import Settings
from kg.store import Store, open_store
from kg.system_knowledge import OntologyDocument, ensure_ontology

__all__ = ["create_app"]


def create_app(settings: Settings | None = None, *, store: Store | None = None) -> Flask:
    """Build the jido-kg WSGI app; opens the configured store unless one is passed in."""
    settings = settings or Settings()
    app = Flask(__name__)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    store = store if store is not None else open_store(settings)
    ensure_ontology(store)
    services = Services(settings=settings, store=store, ontology=OntologyDocument())
    services.install(app)

    from api import health, ontology

    app.register_blueprint(health.blueprint)
    app.register_blueprint(ontology.blueprint)

    # SPARQL protocol, graph store, query page (issue 6); auth is shared with the memory API.
    from api import auth, graph_store, sparql, transport, ui

    auth.install(app, settings)
    sparql.install(app, settings=settings, store=store)
    app.register_blueprint(graph_store.blueprint)
    app.register_blueprint(ui.blueprint)
    transport.install(app, settings)

    # Memory API (issue 7): one MemoryService per app, shared with nothing else in the process.
    from api import memory, openapi
    from kg.memory_service import MemoryService

    memory_service = MemoryService.open(settings, store=store)
    services.closers.append(memory_service.close)
    memory.install(app, memory_service)
    app.register_blueprint(openapi.blueprint)
    # MCP over Streamable HTTP at /mcp/<project> (issue 18): the stdio server's tools, same auth.
    from api import mcp

    services.closers.append(mcp.install(app, memory_service, settings).close)
    # Admin routes (issue 9): POST /admin/backup while serving; needs auth installed above.
    from api import admin

    admin.install(app)
    # Memory explorer (issue 21): /explore pages over the same memory service and auth.
    from api import explore

    explore.install(app)
    register_error_handlers(app)
    return app

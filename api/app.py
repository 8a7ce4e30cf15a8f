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
    Services(settings=settings, store=store, ontology=OntologyDocument()).install(app)

    from api import health, ontology

    app.register_blueprint(health.blueprint)
    app.register_blueprint(ontology.blueprint)
    register_error_handlers(app)
    return app

"""What the app holds for its views: settings, the store and the parsed ontology."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from flask import current_app

from kg.settings import Settings
from kg.store import Store
from kg.system_knowledge import OntologyDocument

__all__ = ["Services", "close_app", "services"]

_KEY = "jido_kg"


@dataclass(slots=True)
class Services:
    """The long-lived objects of one app instance."""

    settings: Settings
    store: Store
    ontology: OntologyDocument
    closers: list[Callable[[], None]] = field(default_factory=list)

    def install(self, app: object) -> None:
        """Attach these services to a Flask app."""
        app.extensions[_KEY] = self  # type: ignore[attr-defined]


def services() -> Services:
    """Return the services of the app handling the current request."""
    found = current_app.extensions[_KEY]
    assert isinstance(found, Services)
    return found


def close_app(app: object) -> None:
    """Run the app's closers (newest first): flush background work before the store closes."""
    found = app.extensions.get(_KEY)  # type: ignore[attr-defined]
    if isinstance(found, Services):
        while found.closers:
            found.closers.pop()()

"""The store layer: one interface, an embedded pyoxigraph backend, and a way to open it."""

from __future__ import annotations

from kg.settings import Settings
from kg.store.base import GraphName, QueryResult, Store, Term
from kg.store.embedded import EmbeddedStore

__all__ = ["EmbeddedStore", "GraphName", "QueryResult", "Store", "Term", "open_store"]


def open_store(settings: Settings) -> Store:
    """Open the store the settings name (the embedded on-disk store by default)."""
    if settings.backend == "remote":
        from kg.store.remote import RemoteStore

        return RemoteStore.from_settings(settings)
    path = settings.store_path
    if path is not None:
        path.mkdir(parents=True, exist_ok=True)
    return EmbeddedStore(path)

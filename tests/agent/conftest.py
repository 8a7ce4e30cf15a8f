"""Fixtures of the agent tests: a MemoryService on the real store, an app with tokens."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from api import create_app
from kg.memory_service import MemoryService
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore

TOKENS = {"w-token": "write", "r-token": "read", "demo-writer": "write@demo"}
WRITE = {"Authorization": "Bearer w-token"}
READ = {"Authorization": "Bearer r-token"}
DEMO = {"Authorization": "Bearer demo-writer"}


@pytest.fixture
def service(store: EmbeddedStore) -> Iterator[MemoryService]:
    """A MemoryService over the fresh in-memory store (real long-term memory and recall)."""
    svc = MemoryService.open(Settings(store=MEMORY_STORE), store=store)
    yield svc
    svc.close()


@pytest.fixture
def api_app(store: EmbeddedStore) -> Flask:
    """The app with write, read and project-scoped tokens configured."""
    app = create_app(Settings(store=MEMORY_STORE, tokens=TOKENS), store=store)
    app.config["TESTING"] = True
    return app


@pytest.fixture
def api(api_app: Flask) -> FlaskClient:
    """Test client of `api_app`."""
    return api_app.test_client()

"""Fixtures for the explorer: an app with tokens over an in-memory store, seeded memories."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from flask import Flask
from flask.testing import FlaskClient

from api import create_app
from api.memory import memory_service
from kg.memory_service import MemoryService
from kg.settings import MEMORY_STORE, Settings
from kg.store import Store

READ, WRITE, ADMIN, SCOPED = "read-token", "write-token", "admin-token", "other-read-token"
TOKENS = {READ: "read", WRITE: "write", ADMIN: "admin", SCOPED: "read@other"}


@dataclass(frozen=True)
class Seeded:
    """Ids of the seeded memories of project `demo`."""

    postgres: str
    sqlite: str
    pytest: str
    other: str


def make_app(store: Store, *, anonymous_read: bool = True) -> Flask:
    """The app over `store` with the test tokens."""
    app = create_app(Settings(store=MEMORY_STORE, tokens=TOKENS, anonymous_read=anonymous_read),
                     store=store)
    app.config["TESTING"] = True
    return app


def seed(service: MemoryService) -> Seeded:
    """A decision that replaced another (with a reason), a convention, another project's fact."""
    service.start_session("s-design", project="demo", agent="planner")
    sqlite = service.remember("demo", "The main database is SQLite in a single file",
                              memory_type="architectural_decision", confidence=0.6,
                              session_id="s-design", agent="planner")
    postgres = service.remember("demo", "The main database is PostgreSQL 16 with pgvector",
                                memory_type="architectural_decision", confidence=0.92,
                                session_id="s-design", agent="planner",
                                rationale="concurrent writers")
    service.forget("demo", sqlite.id, reason="several writers need a server database",
                   replacement_id=postgres.id)
    tests = service.remember("demo", "Tests run with pytest and never mock the store",
                             memory_type="convention", confidence=0.35)
    other = service.remember("other", "Deployments go through Kubernetes", confidence=0.8)
    return Seeded(postgres.id, sqlite.id, tests.id, other.id)


@pytest.fixture
def explore_app(store: Store) -> Flask:
    """The app with tokens and anonymous reads."""
    return make_app(store)


@pytest.fixture
def seeded(explore_app: Flask) -> Seeded:
    """The seeded memories in the app's store (no app context left open: `g` is per request)."""
    with explore_app.app_context():
        return seed(memory_service())


@pytest.fixture
def web(explore_app: Flask) -> FlaskClient:
    """Flask's test client for the app."""
    return explore_app.test_client()

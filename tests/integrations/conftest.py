"""Fixtures of the framework-adapter tests: one real `jido-kg serve` per module, and clients."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import Phase

from kg.client import MemoryClient
from tests.agent.conftest import api, api_app, service  # noqa: F401 (app and service fixtures)
from tests.client.conftest import local  # noqa: F401 (an in-process MemoryService)
from tests.conftest import RunningServer, start_server

TOKEN = "w-token"
# Each step of the property tests is a request to a real server: shrinking a failure would run
# for many minutes (past the test timeout); the failing sequence is printed as found instead.
NO_SHRINKING = (Phase.explicit, Phase.reuse, Phase.generate)
TOKEN_ENV = {"KG_TOKENS": json.dumps({TOKEN: "write", "r-token": "read"})}


@pytest.fixture(scope="module")
def service_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One `jido-kg serve` with a write token, for a test module."""
    # WordLlama (not the default): the LangGraph store's semantic search is tested here.
    server = start_server(tmp_path_factory.mktemp("integrations") / "store",
                          extra_env={**TOKEN_ENV, "KG_EMBEDDER": "wordllama"})
    yield server
    server.stop()


@pytest.fixture(scope="module")
def memory(service_server: RunningServer) -> Iterator[MemoryClient]:
    """A blocking client with the write token."""
    with MemoryClient(service_server.url, token=TOKEN) as client:
        yield client


def fresh_project() -> str:
    """A project no test used: each example of a property test starts from an empty store."""
    return "p" + uuid.uuid4().hex[:16]

"""Fixtures of the client tests: a real service with tokens, and a MemoryService to compare with."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kg.client import MemoryClient
from kg.memory_service import MemoryService
from kg.settings import MEMORY_STORE, Settings
from kg.store import Store
from tests.conftest import RunningServer, start_server

TOKENS = {"w-token": "write", "r-token": "read", "demo-writer": "write@demo"}
TOKEN_ENV = {"KG_TOKENS": json.dumps(TOKENS)}  # writes need a token


@pytest.fixture(scope="module")
def service_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One `jido-kg serve` with write, read and project-scoped tokens, for a test module."""
    server = start_server(tmp_path_factory.mktemp("client") / "store",
                          extra_env=TOKEN_ENV)
    yield server
    server.stop()


@pytest.fixture
def writer(service_server: RunningServer) -> Iterator[MemoryClient]:
    """A client with the write token."""
    with MemoryClient(service_server.url, token="w-token") as client:
        yield client


@pytest.fixture
def local(store: Store) -> Iterator[MemoryService]:
    """An in-process MemoryService on its own fresh store: what the client must match."""
    service = MemoryService.open(Settings(store=MEMORY_STORE), store=store)
    yield service
    service.close()

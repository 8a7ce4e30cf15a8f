"""Fixtures for the SPARQL endpoint tests: real `jido-kg serve` processes with tokens set."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.conftest import RunningServer, start_server
from tests.sparql import w3c

ADMIN = "admin-token"
WRITER = "writer-token"
READER = "reader-token"
SCOPED = "acme-token"
TOKENS = {ADMIN: "admin", WRITER: "write", READER: "read", SCOPED: "read@acme"}


def server_env(**overrides: object) -> dict[str, str]:
    """KG_* variables for a test server (tokens always set)."""
    env = {"KG_TOKENS": json.dumps(TOKENS)}
    for key, value in overrides.items():
        env[f"KG_{key.upper()}"] = value if isinstance(value, str) else json.dumps(value)
    return env


@pytest.fixture(scope="module")
def sparql_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """One real server per test module, on an on-disk store, with the test tokens."""
    server = start_server(tmp_path_factory.mktemp("store"), extra_env=server_env())
    yield server
    server.stop()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the W3C conformance scores at the end of the run."""
    for line in w3c.score_lines():
        terminalreporter.write_line(line)



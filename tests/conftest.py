"""Shared fixtures: a fresh store with the ontology, the Flask app, and real servers on loopback.

`KG_TEST_BACKEND=oxigraph` (default `embedded`) runs the same fixtures on a real Oxigraph
server (the PyPI `oxigraph` binary on loopback): `store` is then a RemoteStore on a shared
server emptied before each test, and every `jido-kg serve` started here runs with
`KG_BACKEND=remote` against its own Oxigraph server over a directory beside its store.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from api import create_app
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore, Store
from kg.system_knowledge import ensure_ontology

ROOT = Path(__file__).resolve().parents[1]

# --- backend switch (issue 8): the shared fixtures on the embedded store or on Oxigraph --------
TEST_BACKEND = os.environ.get("KG_TEST_BACKEND", "embedded")
if TEST_BACKEND not in ("embedded", "oxigraph"):
    raise RuntimeError(f"KG_TEST_BACKEND must be 'embedded' or 'oxigraph', not {TEST_BACKEND!r}")
# Oxigraph servers behind `jido-kg serve` processes, by directory: a server restarted on the
# same store directory (after a kill -9, say) finds its data again on the same Oxigraph.
_DATABASES: dict[Path, Any] = {}


@pytest.fixture(scope="session")
def backend_oxigraph() -> Iterator[Any]:
    """The Oxigraph server behind the `store` fixture when KG_TEST_BACKEND=oxigraph.

    It keeps its data in memory (`oxigraph serve` without `-l`): the fixture empties and
    reloads it for every test, and on-disk writes made that 5-20x slower on a busy machine.
    Servers behind `jido-kg serve` (start_server) keep theirs on disk.
    """
    from tests.remote.conftest import OxigraphServer, oxigraph_binary

    port = free_port()
    server = OxigraphServer(Path("<in memory>"), port)
    server.process = subprocess.Popen(
        [oxigraph_binary(), "serve", "-b", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or server.process.poll() is not None:
                server.stop()
                raise RuntimeError("the in-memory oxigraph server did not start") from None
            time.sleep(0.05)
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def _stop_databases() -> Iterator[None]:
    """Stop the Oxigraph servers still running behind servers started by this run."""
    yield
    for database in _DATABASES.values():
        database.stop()
    _DATABASES.clear()


@pytest.fixture
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """A fresh store holding the ontology (in memory; or the emptied Oxigraph server)."""
    if TEST_BACKEND == "oxigraph":
        remote = request.getfixturevalue("backend_oxigraph").store()
        remote.update("DROP ALL")
        ensure_ontology(remote)
        yield remote
        remote.close()
        return
    s = EmbeddedStore(None)
    ensure_ontology(s)
    yield s


@pytest.fixture
def app(store: EmbeddedStore) -> Flask:
    """The app over the in-memory store."""
    application = create_app(Settings(store=MEMORY_STORE), store=store)
    application.config["TESTING"] = True
    return application


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    """Flask's test client for the app."""
    return app.test_client()


def free_port() -> int:
    """Ask the kernel for a free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RunningServer:
    """A `jido-kg serve` process on loopback."""

    process: subprocess.Popen[bytes]
    port: int
    store_dir: Path
    database: Any = None  # its Oxigraph server when KG_TEST_BACKEND=oxigraph

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pids(self) -> list[int]:
        """The supervisor's pid and its descendants' (the worker holding the store)."""
        found, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            try:
                todo += map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
            except OSError:
                continue
            found.append(pid)
        return found

    def stop(self) -> None:
        workers = self.pids()[1:]
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        # A worker dies with its supervisor; wait for that, so its store's lock is free.
        deadline = time.monotonic() + 15
        while any(map(alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.database is not None:
            self.database.stop()
            _DATABASES.pop(self.database.directory, None)


def alive(pid: int) -> bool:
    """True while a process runs: a zombie (ended, not yet reaped) whose other threads have
    all ended holds nothing any more (its files, the store's lock, are closed)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" or len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def backend_env(store_dir: Path) -> tuple[dict[str, str], Any]:
    """KG_* variables (and the Oxigraph server) that put a server on the test backend."""
    if TEST_BACKEND != "oxigraph":
        return {}, None
    from tests.remote.conftest import start_oxigraph

    directory = store_dir.parent / f"{store_dir.name}.oxigraph"
    database = _DATABASES.get(directory)
    if database is None or database.process is None or database.process.poll() is not None:
        database = _DATABASES[directory] = start_oxigraph(directory)
    url = database.url
    env = {"KG_BACKEND": "remote", "KG_REMOTE_DIALECT": "oxigraph",
           "KG_REMOTE_QUERY_URL": f"{url}/query", "KG_REMOTE_UPDATE_URL": f"{url}/update",
           "KG_REMOTE_GRAPH_STORE_URL": f"{url}/store"}
    return env, database


def jido_kg_command() -> list[str]:
    """The command that runs the CLI of this checkout with this interpreter."""
    return [sys.executable, "-m", "api"]


def start_server(store_dir: Path, *, extra_env: dict[str, str] | None = None,
                 timeout: float = 30.0) -> RunningServer:
    """Start `jido-kg serve --store DIR --port P` and wait until /health answers."""
    port = free_port()
    database = None
    backend: dict[str, str] = {}
    if "KG_BACKEND" not in (extra_env or {}):  # a test that names its backend keeps it
        backend, database = backend_env(store_dir)
    env = {**os.environ, **backend, **(extra_env or {})}
    process = subprocess.Popen(
        [*jido_kg_command(), "serve", "--store", str(store_dir), "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    server = RunningServer(process, port, store_dir, database)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            _, err = process.communicate()
            raise RuntimeError(f"server exited early: {err.decode(errors='replace')}")
        try:
            with urllib.request.urlopen(f"{server.url}/health", timeout=1) as r:
                if r.status == 200:
                    return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError("server did not answer /health in time")


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., RunningServer]]:
    """Start real servers on loopback; every one is stopped after the test."""
    started: list[RunningServer] = []

    def factory(store_dir: Path | None = None, **kwargs: object) -> RunningServer:
        server = start_server(store_dir or tmp_path / "store", **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def live_server(server_factory: Callable[..., RunningServer]) -> RunningServer:
    """One real server on loopback over an on-disk store in tmp_path."""
    return server_factory()

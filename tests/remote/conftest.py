"""Real SPARQL servers on loopback for the remote backend: Oxigraph by default, Virtuoso on demand.

`KG_TEST_REMOTE=virtuoso` (set by tools/virtuoso/run.sh, with KG_TEST_VIRTUOSO_URL) points the
remote side of the contract suite at a running Virtuoso instead of a fresh Oxigraph server.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kg.store import EmbeddedStore, Store
from kg.store.remote import RemoteStore
from kg.store.sparql_client import SparqlClient
from tests.conftest import free_port
from tests.processes import wait_for

REMOTE_KIND = os.environ.get("KG_TEST_REMOTE", "oxigraph")


def oxigraph_binary() -> str:
    """The `oxigraph` server binary installed beside this interpreter (the dev extra)."""
    local = Path(sys.executable).with_name("oxigraph")
    found = str(local) if local.exists() else shutil.which("oxigraph")
    if not found:
        raise RuntimeError("the oxigraph server is missing: pip install -e '.[dev]'")
    return found


def _listens(pid: int, port: int) -> bool:
    """True when process `pid` holds a TCP socket listening on `port` (Linux /proc)."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                listening = fields[3] == "0A"
                if listening and int(fields[1].rsplit(":", 1)[1], 16) == port \
                        and fields[9] in inodes:
                    return True
    return False


@dataclass
class OxigraphServer:
    """One `oxigraph serve` process on loopback, restartable on the same port and directory."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, *, timeout: float = 20.0) -> OxigraphServer:
        self.process = subprocess.Popen(
            [oxigraph_binary(), "serve", "-l", str(self.directory), "-b",
             f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"oxigraph exited: {self.process.stderr.read()!r}")  # type: ignore[union-attr]
            # Our process must own the listening socket: another test run's server that took
            # the same free port would otherwise answer for it (and keep answering when ours
            # is paused).
            if _listens(self.process.pid, self.port):
                return self
            time.sleep(0.05)
        raise RuntimeError("oxigraph did not listen in time")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def pause(self) -> None:
        """Freeze the server: the kernel still accepts connections, nothing answers."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        # The signal arrives asynchronously: a thread still running could answer one more
        # request. Return once every thread of the server is stopped.
        wait_for(lambda: _stopped(self.process.pid) if self.process else False, timeout=10,
                 what="the server's threads to stop")

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def store(self, **client_options: float) -> RemoteStore:
        """A RemoteStore on this server (query, update and graph-store URLs)."""
        return RemoteStore(f"{self.url}/query", update_url=f"{self.url}/update",
                           graph_store_url=f"{self.url}/store", dialect="oxigraph",
                           client=SparqlClient(**client_options))  # type: ignore[arg-type]


def start_oxigraph(directory: Path) -> OxigraphServer:
    """Start an Oxigraph server on a free loopback port over `directory`."""
    return OxigraphServer(directory, free_port()).start()


@pytest.fixture(scope="session")
def oxigraph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OxigraphServer]:
    """One Oxigraph server for the whole run (tests empty it before use)."""
    server = start_oxigraph(tmp_path_factory.mktemp("oxigraph"))
    yield server
    server.stop()


@pytest.fixture
def oxigraph_factory(tmp_path: Path) -> Iterator[Callable[[], OxigraphServer]]:
    """Start private Oxigraph servers (for tests that stop or freeze them)."""
    started: list[OxigraphServer] = []

    def factory() -> OxigraphServer:
        server = start_oxigraph(tmp_path / f"ox{len(started)}")
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


def virtuoso_store() -> RemoteStore:
    """A RemoteStore on the Virtuoso that tools/virtuoso/run.sh started."""
    base = os.environ.get("KG_TEST_VIRTUOSO_URL", "http://127.0.0.1:8890")
    return RemoteStore(f"{base}/sparql", dialect="virtuoso",
                       default_graph_iri="urn:x-jido-kg:default-graph")


@pytest.fixture
def remote_store(request: pytest.FixtureRequest) -> Iterator[RemoteStore]:
    """An empty remote store: the shared Oxigraph server, or Virtuoso when asked for."""
    if REMOTE_KIND == "virtuoso":
        store = virtuoso_store()
        # Virtuoso's own graphs are hidden from named_graphs(); the default graph is an IRI.
        assert store.default_graph_iri is not None
        for graph in [*store.named_graphs(), store.default_graph_iri]:
            store.drop_graph(graph)
    else:
        server: OxigraphServer = request.getfixturevalue("oxigraph")
        store = server.store()
        store.update("DROP ALL")
    yield store
    store.close()


@pytest.fixture(params=["embedded", "remote"])
def any_store(request: pytest.FixtureRequest) -> Store:
    """The same empty dataset on each backend: embedded pyoxigraph, then the remote server."""
    if request.param == "embedded":
        return EmbeddedStore(None)
    store: Store = request.getfixturevalue("remote_store")
    return store


def _stopped(pid: int) -> bool:
    """True once every thread of `pid` is stopped (state T); True where /proc is missing."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return True
    states = []
    for task in tasks.iterdir():
        with contextlib.suppress(OSError):
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
    return bool(states) and all(state in ("T", "t") for state in states)

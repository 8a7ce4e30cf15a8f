"""Shared fixtures: a fresh store with the ontology, the Flask app, and real servers on loopback."""

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

import pytest
from flask import Flask
from flask.testing import FlaskClient

from api import create_app
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore
from kg.system_knowledge import ensure_ontology

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def store() -> EmbeddedStore:
    """A fresh in-memory store holding the ontology."""
    s = EmbeddedStore(None)
    ensure_ontology(s)
    return s


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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def jido_kg_command() -> list[str]:
    """The command that runs the CLI of this checkout with this interpreter."""
    return [sys.executable, "-m", "api"]


def start_server(store_dir: Path, *, extra_env: dict[str, str] | None = None,
                 timeout: float = 30.0) -> RunningServer:
    """Start `jido-kg serve --store DIR --port P` and wait until /health answers."""
    port = free_port()
    env = {**os.environ, **(extra_env or {})}
    process = subprocess.Popen(
        [*jido_kg_command(), "serve", "--store", str(store_dir), "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    server = RunningServer(process, port, store_dir)
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

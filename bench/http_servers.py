"""The HTTP servers compared by `python -m bench.sparql --servers`: ours, gunicorn, granian.

Each serves the same jido-kg app over its own copy of one store (a store directory can be open
in one process only). gunicorn and granian load the app through `wsgi_app`, which opens the
store named by `KG_STORE` in their worker process; they serve it with the same GET fast path as
ours (`api.fast_path.QueryFastPath`, the app's WSGI middleware), which hands each query to a
query worker thread so that the time limit holds (ours runs it in the connection's thread).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from flask import Flask

from bench.server import wait_healthy

__all__ = ["KINDS", "Server", "server_cpu_seconds", "start", "wsgi_app"]

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("jido-kg", "gunicorn", "granian")
THREADS = 8  # request threads of each server (KG_THREADS for ours)


def wsgi_app() -> Flask:
    """The jido-kg app over the store of `KG_STORE` (a factory for gunicorn and granian)."""
    from api.app import create_app
    from kg.settings import Settings

    return create_app(Settings())


@dataclass
class Server:
    """One running server process (with its worker processes, if any)."""

    kind: str
    process: subprocess.Popen[bytes]
    port: int

    @property
    def url(self) -> str:
        """Its base URL."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not stopped within 20 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _argv(kind: str, port: int, store: Path) -> list[str]:
    python = sys.executable
    if kind == "jido-kg":
        return [python, "-m", "api", "serve", "--store", str(store), "--port", str(port),
                "--threads", str(THREADS)]
    if kind == "gunicorn":
        return [python, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
                "--worker-class", "gthread", "--threads", str(THREADS),
                "--no-control-socket", "--log-level", "warning",
                "bench.http_servers:wsgi_app()"]
    if kind == "granian":
        return [python, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
                "--port", str(port), "--workers", "1", "--blocking-threads", str(THREADS),
                "--log-level", "warning", "--no-ws", "--http", "1", "--factory",
                "bench.http_servers:wsgi_app"]
    raise ValueError(f"unknown server {kind!r}; one of {', '.join(KINDS)}")


def start(kind: str, *, port: int, store: Path, env: dict[str, str],
          timeout: float = 120.0) -> Server:
    """Start one server over `store`; return once /health answers 200."""
    log = store.with_name(f"{store.name}.{kind}.log")
    with open(log, "ab") as sink:
        process = subprocess.Popen(_argv(kind, port, store), cwd=ROOT,
                                   env={**os.environ, **env, "KG_STORE": str(store)},
                                   stdout=subprocess.DEVNULL, stderr=sink)
    server = Server(kind, process, port)
    if wait_healthy(server.url, timeout=timeout, what=kind, poll=0.05,
                    exited=lambda: None if process.poll() is None
                    else log.read_text(errors="replace")[-2000:]):
        return server
    server.stop()
    raise RuntimeError(f"{kind} did not answer /health within {timeout:.0f} s")


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def server_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of a process and all its descendants."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        todo += _children(current)
    return total

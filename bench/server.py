"""A real `jido-kg serve` subprocess on loopback: start, wait for /health, measure, kill."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ServerProcess", "free_port", "start_server", "tree_rss_kb", "wait_healthy"]

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    """Ask the kernel for a free TCP port on loopback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    """One running server and what it took to start it."""

    process: subprocess.Popen[bytes]
    port: int
    store: Path
    startup_seconds: float = 0.0
    log: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The base URL, e.g. http://127.0.0.1:7879."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process.poll() is None

    def rss_kb(self) -> int:
        """Resident memory (VmRSS) of the server's process tree in KiB: the supervisor and its
        worker, which holds the store (pages they share are counted twice); 0 once exited."""
        return tree_rss_kb(self.pid)

    def kill(self) -> None:
        """SIGKILL: no flush, no clean shutdown (what a power cut or the OOM killer does)."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM and wait; SIGKILL if it does not stop in time."""
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the server's stderr log."""
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(errors="replace")[-chars:]


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_healthy(url: str, *, exited: Callable[[], str | None], timeout: float,
                 what: str = "server", poll: float = 0.02) -> bool:
    """Poll `url`/health until it answers 200 (True) or `timeout` passes (False).

    `exited()` returns why the process ended, or None while it runs; an ended one raises.
    """
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        reason = exited()
        if reason is not None:
            raise RuntimeError(f"{what} exited: {reason}")
        if _health(url):
            return True
        time.sleep(poll)
    return False


def start_server(store: Path, *, env: dict[str, str] | None = None, timeout: float = 120.0,
                 log: Path | None = None, port: int | None = None,
                 threads: int | None = None) -> ServerProcess:
    """Start `jido-kg serve --store DIR --port P`; return once /health answers 200.

    `startup_seconds` is the time from process start to the first 200 from /health.
    """
    port = port or free_port()
    argv = [sys.executable, "-m", "api", "serve", "--store", str(store), "--port", str(port)]
    if threads is not None:
        argv += ["--threads", str(threads)]
    extra = dict(env or {})
    log = log or store.with_name(store.name + f".server-{port}.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **extra},
                                   stdout=subprocess.DEVNULL, stderr=sink)
    server = ServerProcess(process, port, store, log=log, env=extra)
    if wait_healthy(server.url, timeout=timeout - (time.perf_counter() - started),
                    exited=lambda: None if process.poll() is None
                    else f"code {process.returncode}: {server.log_tail()}"):
        server.startup_seconds = time.perf_counter() - started
        return server
    server.kill()
    raise RuntimeError(f"server did not answer /health within {timeout:.0f} s")


def tree_rss_kb(pid: int) -> int:
    """VmRSS of a process and all its descendants, in KiB (0 for a process that is gone)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        todo += [int(c) for c in children]
    return total

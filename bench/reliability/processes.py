"""The processes of a `jido-kg serve`: its supervisor, the worker that holds the store, their CPU.

`jido-kg serve` is a supervisor process (the pid `bench.server` knows) and one worker process
that opens the store; these read /proc to find the worker, kill it, and see them all gone.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.server import ServerProcess

__all__ = ["alive", "cpu_seconds", "rss_parts", "tree", "wait_gone", "wait_worker",
           "worker_pid"]


def tree(pid: int) -> list[int]:
    """`pid` and its descendants."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        try:
            todo += map(int, Path(f"/proc/{current}/task/{current}/children").read_text().split())
        except OSError:
            continue
        found.append(current)
    return found


def alive(pid: int) -> bool:
    """True while a process runs (a zombie whose threads have all ended holds nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" or len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def worker_pid(server: ServerProcess) -> int | None:
    """The server's live worker process, if it has one now."""
    workers = [pid for pid in tree(server.pid)[1:] if alive(pid)]
    return workers[0] if workers else None


def wait_worker(server: ServerProcess, *, other_than: int | None = None,
                timeout: float = 60.0) -> int | None:
    """Wait for a live worker (not `other_than`, which must be gone); None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = worker_pid(server)
        if pid is not None and pid != other_than and (other_than is None or not alive(other_than)):
            return pid
        time.sleep(0.02)
    return None


def wait_gone(pids: list[int], *, timeout: float = 15.0) -> bool:
    """Wait until none of `pids` runs; False on timeout."""
    deadline = time.monotonic() + timeout
    while any(map(alive, pids)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds (user + system) used by the live processes `pids`."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def rss_parts(pid: int | None) -> tuple[int, int, int]:
    """VmRSS, RssAnon and RssFile of a process in KiB (zeros once it is gone)."""
    parts = {"VmRSS": 0, "RssAnon": 0, "RssFile": 0}
    if pid is None:
        return 0, 0, 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in parts:
                parts[name] = int(value.split()[0])
    except OSError:
        pass
    return parts["VmRSS"], parts["RssAnon"], parts["RssFile"]

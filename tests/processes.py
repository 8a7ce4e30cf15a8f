"""The processes of a `jido-kg serve` under test: its worker, their CPU time, waiting on them."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from bench.reliability.processes import cpu_seconds
from tests.conftest import RunningServer, alive

__all__ = ["cores_used", "cpu_seconds", "wait_for", "wait_for_new_worker", "worker_pid"]

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], *, timeout: float, what: str,
             every: float = 0.05) -> T:
    """Poll `condition` until it returns something truthy; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        found = condition()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:g} s")
        time.sleep(every)


def worker_pid(server: RunningServer) -> int | None:
    """The pid of the server's (live) worker process, if it has one now."""
    workers = [pid for pid in server.pids()[1:] if alive(pid)]
    return workers[0] if workers else None


def wait_for_new_worker(server: RunningServer, old: int, *, timeout: float = 30) -> int:
    """Wait until a worker other than `old` runs and the old one is gone; its pid."""
    return wait_for(lambda: (pid if (pid := worker_pid(server)) not in (None, old)
                             and not alive(old) else None),
                    timeout=timeout, what=f"a worker to replace {old}")


def cores_used(server: RunningServer, *, seconds: float) -> float:
    """How many cores the server's processes keep busy on average over `seconds`."""
    pids = server.pids()
    before, started = cpu_seconds(pids), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pids) - before) / (time.monotonic() - started)

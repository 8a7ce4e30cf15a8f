"""Durability: SIGKILL during a stream of writes; no acknowledged write may be lost.

`jido-kg serve` is a supervisor and a worker process that holds the store. Every other cycle
kills the worker first: the supervisor starts a new one, the writers go on against it (their
requests wait in the socket's backlog meanwhile), and the time until it answers is the
replacement's pause. Every cycle then kills the supervisor, whose worker dies with it, and the
store is opened directly to look for every acknowledged write.
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from bench.reliability.client import TOKENS, Client, server_env
from bench.reliability.dataset import PROBE_PREDICATE, inspect_store
from bench.reliability.processes import tree, wait_gone, wait_worker, worker_pid
from bench.reliability.result import CheckResult
from bench.server import ServerProcess, start_server

__all__ = ["PROJECT", "run"]

PROJECT = "rel-dur"
_PROBE_GRAPH = f"https://jido.ai/graph/project/{PROJECT}/codebase"


class _Acks:
    """Writes the server acknowledged (2xx), and what went wrong while it was up."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.probes: set[str] = set()
        self.memories: dict[str, str] = {}
        self.requests = 0
        self.errors: list[str] = []


def _sparql_writer(client: Client, acks: _Acks, stop: threading.Event, tag: str) -> None:
    i = 0
    while not stop.is_set():
        subject = f"urn:jido-kg:reliability:{tag}-{i}"
        reply = client.update(
            f"INSERT DATA {{ GRAPH <{_PROBE_GRAPH}> {{ <{subject}> <{PROBE_PREDICATE.value}> "
            f"{i} }} }}", token=TOKENS["write"])
        with acks.lock:
            acks.requests += 1
            if 200 <= reply.status < 300:
                acks.probes.add(subject)
            elif reply.status != 0 and not stop.is_set():
                acks.errors.append(f"update {reply.status}: {reply.text[:200]}")
        if reply.status == 0:  # no answer: a killed worker (retry) or supervisor (stop)
            time.sleep(0.05)
        i += 1


def _memory_writer(client: Client, acks: _Acks, stop: threading.Event, tag: str) -> None:
    i = 0
    while not stop.is_set():
        content = f"durability probe {tag} {i} {uuid.uuid4().hex}"
        reply = client.remember(PROJECT, content, token=TOKENS["write"], session=f"dur-{tag}")
        with acks.lock:
            acks.requests += 1
            if 200 <= reply.status < 300:
                acks.memories[reply.json()["id"]] = content
            elif reply.status != 0 and not stop.is_set():
                acks.errors.append(f"remember {reply.status}: {reply.text[:200]}")
        if reply.status == 0:
            time.sleep(0.05)
        i += 1


def run(cycles: int = 20, *, workdir: Path, writers: int = 2, seed: int = 0,
        kill_after: tuple[float, float] = (0.4, 1.5)) -> CheckResult:
    """Kill the worker (odd cycles) and the supervisor (every cycle) mid-write; check the
    store after each cycle."""
    rng = random.Random(seed)
    result = CheckResult("durability (SIGKILL of worker and supervisor during writes)")
    started = time.perf_counter()
    store = workdir / "durability-store"
    acks = _Acks()
    lost: set[str] = set()
    pauses: list[float] = []
    worker_kills = supervisor_kills = 0
    for cycle in range(cycles):
        try:
            server = start_server(store, env=server_env(), timeout=120)
        except RuntimeError as exc:
            result.fail(f"cycle {cycle}: the server did not start: {exc}")
            break
        client = Client(server.url, timeout=30)
        stop = threading.Event()
        threads = [threading.Thread(target=target, args=(client, acks, stop, f"c{cycle}{k}{t}"))
                   for k, target in (("s", _sparql_writer), ("m", _memory_writer))
                   for t in range(writers)]
        for thread in threads:
            thread.start()
        time.sleep(rng.uniform(*kill_after))
        if cycle % 2 == 1:
            pause = _kill_worker(server.url, server)
            if pause is None:
                result.fail(f"cycle {cycle}: no new worker answered after the worker's SIGKILL")
            else:
                worker_kills += 1
                pauses.append(pause)
                time.sleep(rng.uniform(*kill_after))  # writes to the new worker, then the kill
        processes = tree(server.pid)
        server.kill()  # SIGKILL the supervisor while the writers are mid-request
        supervisor_kills += 1
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        if not wait_gone(processes):
            result.fail(f"cycle {cycle}: the worker outlived its supervisor's SIGKILL")
            break
        result.cycles += 1
        found = inspect_store(store)
        if not found.opened:
            result.fail(f"cycle {cycle}: the store did not open after SIGKILL: {found.error}")
            break
        with acks.lock:
            missing = {p for p in acks.probes if p not in found.probes}
            missing |= {m for m in acks.memories if m not in found.memories}
        for item in sorted(missing - lost)[:5]:
            result.fail(f"cycle {cycle}: acknowledged write lost: {item}")
        lost |= missing
        for mid, gaps in list(found.incomplete.items())[:3]:
            result.fail(f"cycle {cycle}: memory {mid} lacks {', '.join(gaps)}")
    # The store must still serve after the last kill.
    try:
        start_server(store, env=server_env(), timeout=120).stop()
    except RuntimeError as exc:
        result.fail(f"the server did not start after the last kill: {exc}")
    result.requests = acks.requests
    result.errors = len(acks.errors)
    for error in acks.errors[:5]:
        result.fail(error)
    result.losses = len(lost)
    result.figures = {"acknowledged": len(acks.probes) + len(acks.memories),
                      "worker kills": worker_kills, "supervisor kills": supervisor_kills}
    if pauses:
        result.figures["replacement pause median s"] = statistics.median(pauses)
        result.figures["replacement pause max s"] = max(pauses)
    if result.cycles < cycles:
        result.fail(f"only {result.cycles} of {cycles} cycles ran")
    if not acks.probes or not acks.memories:
        result.fail("no SPARQL update or no remember call was acknowledged: nothing was tested")
    result.seconds = time.perf_counter() - started
    return result


def _kill_worker(url: str, server: ServerProcess) -> float | None:
    """SIGKILL the worker; seconds until a new one answers /health (None: none did)."""
    worker = worker_pid(server)
    if worker is None:
        return None
    killed = time.perf_counter()
    os.kill(worker, signal.SIGKILL)
    if wait_worker(server, other_than=worker, timeout=60) is None:
        return None
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as response:
                if response.status == 200:
                    return time.perf_counter() - killed
        except OSError:
            time.sleep(0.02)
    return None

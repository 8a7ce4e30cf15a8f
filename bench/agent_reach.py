"""Agent reach: remember and recall through the HTTP API, MemoryClient and MCP over HTTP.

`python -m bench.agent_reach [--repeats 5] [--quick] [--before DIR]` starts one real
`jido-kg serve` over a copy of a generated store of 10,000 memories (1,000 with --quick) and
times the same remember and recall calls (same arguments: limit 10, min_confidence 0) several
ways, one after another on the same server:

- http: the HTTP API (`POST /v1/projects/{p}/memories`, `.../recall`) on one keep-alive
  `http.client` connection, the body read and parsed;
- client: `kg.client.MemoryClient` (httpx underneath, the answers decoded into records);
- mcp: MCP over Streamable HTTP (`POST /mcp/{p}`) with the `mcp` SDK's own client, its session
  opened once, then `call_tool` per call (it speaks the 2026-07-28 per-request revision);
- mcp_raw: the SDK client's request as one raw JSON-RPC POST on a keep-alive connection: the
  service's share of the mcp figure without the SDK client's own (informational);
- mcp_2025: the same tool call as a raw POST of the 2025-06-18 revision: what clients of the
  initialize-handshake era send (informational);
- httpx: the HTTP API again, sent with httpx2's AsyncClient, the HTTP library the SDK's MCP
  client sends with (the same client object).

The target (MCP may add at most 2 ms to the plain API's p50, issue 18) is checked on "MCP over
HTTP (SDK client) - HTTP API (httpx2)": both ways then send with the same HTTP library, so the
difference is what MCP adds (its envelope, the SDK's client session, the SDK's server side),
not what one HTTP library costs over another. Against the API sent with bare `http.client`
the difference also holds httpx2's own cost per call (its row "HTTP API (httpx2) - HTTP API",
about 1 ms of client CPU here); that row and the comparison with MemoryClient stay beside it,
informational.

The ways (bench/callers.py) take turns call by call, in a new random order each time, so a
load spike on this shared machine hits all of them alike. Each repeat is one round of `calls`
calls per way and operation; a latency row gives the median over the rounds of each round's
p50 and p95, and the CPU per call of this client and of the server's process tree (steadier
than latency when the machine is loaded); an overhead row the median and p95 over the rounds
of (p50 of a way - p50 of http) in the same round, and the difference in CPU per call. One more
overhead row compares the two ways a Python agent reaches the service, each with its library:
MCP with the SDK's client against MemoryClient (informational).

`--before DIR` also starts a server from an older checkout (`git archive <commit> | tar -x -C
DIR`) over its own copy of the store, and times its http and mcp ways in the same rounds (rows
prefixed "before:"), for a before/after comparison of a change in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from bench import callers
from bench.callers import LABELS, TOKEN, Way, cpu_ns
from bench.generator import copy_cached_store
from bench.http_servers import server_cpu_seconds
from bench.server import ServerProcess, free_port, start_server, wait_healthy

__all__ = ["MCP_OVERHEAD_MS", "run"]

MCP_OVERHEAD_MS = 2.0  # issue 18: MCP over HTTP may add at most this to the HTTP API's p50
N, QUICK_N = 10_000, 1_000
CALLS, QUICK_CALLS = 200, 15  # timed calls per way, operation and round
WARM_UP = 20
OPERATIONS = ("remember", "recall")
# (way, the way it is compared with) -> the most it may add (ms); the other overheads are
# informational. Same HTTP library on both sides (module docstring).
TARGETS = {("mcp", "httpx"): MCP_OVERHEAD_MS}
# Overheads of one way over another but http: MCP over the API with the same HTTP library (the
# target), and the two ways a Python agent reaches the service, each with its own library (the
# SDK's MCP client, MemoryClient; informational).
VERSUS = (("mcp", "httpx"), ("mcp", "client"))
# operation -> way -> each round's figures (p50, p95, client_cpu, server_cpu; ms)
Rounds = dict[str, dict[str, list[dict[str, float]]]]


def _settle(pid: int, *, limit: float = 60.0) -> None:
    """Wait until the server's start-up work (index check, store flush) is done: < 3 % CPU."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = server_cpu_seconds(pid)
        time.sleep(0.5)
        if server_cpu_seconds(pid) - before < 0.015:
            return


async def _round(ways: dict[str, Way], operation: str, count: int,
                 start: int) -> dict[str, dict[str, float]]:
    """`count` calls per way, taking turns call by call: each way's p50 and p95 latency and its
    CPU per call (this client's, the server's), in ms."""
    names = list(ways)
    samples: dict[str, list[float]] = {name: [] for name in names}
    cpu = {name: [0, 0] for name in names}
    # A new order per call, seeded: a call runs faster after one of its own kind (warm caches),
    # and a fixed rotation would give each way the same predecessor every time.
    rng = random.Random(start)
    for i in range(start, start + count):
        for name in rng.sample(names, len(names)):
            way = ways[name]
            server = cpu_ns(way.server_pid)
            client = time.process_time_ns()
            began = time.perf_counter()
            await way.calls[operation](i)
            samples[name].append((time.perf_counter() - began) * 1000)
            cpu[name][0] += time.process_time_ns() - client
            cpu[name][1] += cpu_ns(way.server_pid) - server
    return {name: {"p50": statistics.median(values), "p95": _p95(values),
                   "client_cpu": cpu[name][0] / count / 1e6,
                   "server_cpu": cpu[name][1] / count / 1e6}
            for name, values in samples.items()}


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def _measure(servers: dict[str, ServerProcess], *, rounds: int, count: int) -> Rounds:
    """Per operation and way, each round's figures (ms)."""
    per_round: Rounds = {}
    async with AsyncExitStack() as stack:
        every = await callers.ways(stack, servers)
        per_round = {op: {name: [] for name in every} for op in OPERATIONS}
        start = 0
        for operation in OPERATIONS:  # warm-up: connections, caches, the SDK's tool list
            await _round(every, operation, WARM_UP, start)
            start += WARM_UP
        for _ in range(rounds):
            for operation in OPERATIONS:
                figures = await _round(every, operation, count, start)
                start += count
                for name, figure in figures.items():
                    per_round[operation][name].append(figure)
    return per_round


def _label(name: str) -> str:
    side, _, way = name.rpartition(":")
    return f"{side}: {LABELS[way]}" if side else LABELS[way]


def _difference(rounds: list[dict[str, float]], base: list[dict[str, float]],
                key: str) -> list[float]:
    return [r[key] - b[key] for r, b in zip(rounds, base, strict=True)]


def _rows(per_round: Rounds, *, n: int, load: str) -> list[dict[str, Any]]:
    """A latency row per way (its CPU per call beside it), an overhead row per way but http and
    one per pair of VERSUS (the CPU columns then hold the difference to the other way's CPU,
    the p95 column that of the p50s)."""
    rows: list[dict[str, Any]] = []
    common = {"scenario": "agent_reach", "n": n, "load_avg": load}
    for operation, ways in per_round.items():
        for name, rounds in ways.items():
            rows.append({**common, "metric": f"{operation} via {_label(name)}",
                         "median": statistics.median(r["p50"] for r in rounds),
                         "p95": statistics.median(r["p95"] for r in rounds), "unit": "ms",
                         "target": "informational", "ok": None,
                         "client_cpu_ms": statistics.median(r["client_cpu"] for r in rounds),
                         "server_cpu_ms": statistics.median(r["server_cpu"] for r in rounds)})
        pairs = [(name, _http_of(name)) for name in ways if name.rpartition(":")[2] != "http"]
        pairs += [(way, base) for way, base in VERSUS if way in ways and base in ways]
        for name, base in pairs:
            side, _, way = name.rpartition(":")
            target = None if side else TARGETS.get((way, base))
            versus = "HTTP API" if base == _http_of(name) else _label(base)
            rows.append({**common, **_overhead(ways[name], ways[base], target),
                         "metric": f"{operation} p50 overhead, {_label(name)} - {versus}"})
    return rows


def _http_of(name: str) -> str:
    """The http way of the server a way calls ("before:mcp" -> "before:http")."""
    side = name.rpartition(":")[0]
    return f"{side}:http" if side else "http"


def _overhead(rounds: list[dict[str, float]], base: list[dict[str, float]],
              target: float | None) -> dict[str, Any]:
    """The figures of an overhead row: of the p50s, per round, and of the CPU per call."""
    over = _difference(rounds, base, "p50")
    median = statistics.median(over)
    return {"median": median, "p95": _p95(over), "unit": "ms",
            "target": "informational" if target is None else f"<= {target:g} ms",
            "ok": None if target is None else median <= target,
            "client_cpu_ms": statistics.median(_difference(rounds, base, "client_cpu")),
            "server_cpu_ms": statistics.median(_difference(rounds, base, "server_cpu"))}


def _start_before(checkout: Path, store: Path, env: dict[str, str], log: Path) -> ServerProcess:
    """`jido-kg serve` from an older checkout (its own `api` and `kg` first on the path)."""
    port = free_port()
    argv = [sys.executable, "-m", "api", "serve", "--store", str(store), "--port", str(port)]
    with open(log, "ab") as sink:
        process = subprocess.Popen(argv, cwd=checkout, stdout=subprocess.DEVNULL, stderr=sink,
                                   env={**os.environ, **env, "PYTHONPATH": str(checkout)})
    server = ServerProcess(process, port, store, log=log, env=env)
    if wait_healthy(server.url, timeout=600, what=f"the server of {checkout}",
                    exited=lambda: None if server.alive() else server.log_tail()):
        return server
    server.kill()
    raise RuntimeError(f"the server of {checkout} did not start")


def run(repeats: int = 5, quick: bool = False,
        before: Path | None = None) -> list[dict[str, Any]]:
    """Time remember and recall each way on one server; one row per way and overhead."""
    n, count = (QUICK_N, QUICK_CALLS) if quick else (N, CALLS)
    env = {"KG_TOKENS": json.dumps({TOKEN: "write"}), "KG_ANONYMOUS_READ": "false"}
    servers: dict[str, ServerProcess] = {}
    with tempfile.TemporaryDirectory(prefix="bench-agent-reach-") as tmp:
        root = Path(tmp)
        try:
            copy_cached_store(n, root / "store")
            servers["now"] = start_server(root / "store", env=env, log=root / "server.log",
                                          timeout=1800)
            if before is not None:
                copy_cached_store(n, root / "before")
                servers["before"] = _start_before(before, root / "before", env,
                                                  root / "before.log")
            for server in servers.values():
                _settle(server.pid)
            started = os.getloadavg()[0]
            per_round = anyio.run(partial(_measure, servers, rounds=max(1, repeats),
                                          count=count))
            load = f"{started:.1f}-{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        finally:
            for server in servers.values():
                server.stop()
    return _rows(per_round, n=n, load=load)


def main(argv: list[str] | None = None) -> None:
    """Command line: print the rows as JSON lines."""
    parser = argparse.ArgumentParser(prog="python -m bench.agent_reach", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="also time a server started from this older checkout")
    args = parser.parse_args(argv)
    for row in run(args.repeats, quick=args.quick, before=args.before):
        print(json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()

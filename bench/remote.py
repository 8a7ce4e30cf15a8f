"""Remote vs embedded store: a remember-like write and a point query, side by side in one run.

`python -m bench.remote [--repeats N]` starts a real Oxigraph server on loopback (the `oxigraph`
binary from the dev extra), an on-disk embedded store, and times the same operations on both.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from pyoxigraph import Literal, NamedNode, Quad

from kg.store.base import Store
from kg.store.embedded import EmbeddedStore
from kg.store.remote import RemoteStore

__all__ = ["run"]

JIDO = "https://jido.ai/ontology#"
OPS = 200  # timed operations per repeat and scenario
# Targets for the remote backend on loopback (the embedded rows carry none).
TARGETS_MS = {"remember-like write (15 quads)": 15.0, "point query": 5.0}


def _memory_quads(i: int) -> list[Quad]:
    """About what one remember() writes: 15 quads of one memory in a project graph."""
    graph = NamedNode("https://jido.ai/graph/project/bench/long-term")
    m = NamedNode(f"https://jido.ai/data/memory/{uuid.uuid4().hex}")
    p = lambda name: NamedNode(JIDO + name)  # noqa: E731
    values = [
        ("content", Literal(f"memory number {i}: the build uses uv, \"quoted\" {{braces}}")),
        ("confidenceScore", Literal(0.8)), ("hasConfidence", NamedNode(JIDO + "High")),
        ("hasSourceType", NamedNode(JIDO + "AgentSource")),
        ("hasTimestamp", Literal("2025-01-01T00:00:00Z")),
        ("recordedAt", Literal("2025-01-01T00:00:00Z")),
        ("assertedIn", NamedNode("https://jido.ai/data/session/s1")),
        ("assertedBy", NamedNode("https://jido.ai/data/agent/a1")),
        ("appliesToProject", NamedNode("https://jido.ai/data/project/bench")),
        ("rationale", Literal("because")), ("accessCount", Literal(0)),
        ("contentKey", Literal(uuid.uuid4().hex)), ("validFrom", Literal("2025-01-01")),
        ("lastAccessed", Literal("2025-01-01T00:00:00Z")),
    ]
    quads = [Quad(m, NamedNode("http://www.w3.org/1999/02/22-rdf-syntax-ns#type"),
                  NamedNode(JIDO + "Fact"), graph)]
    return quads + [Quad(m, p(k), v, graph) for k, v in values]


def _time(op: Callable[[int], object], n: int) -> list[float]:
    samples = []
    for i in range(n):
        began = time.perf_counter()
        op(i)
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def _scenarios(store: Store) -> dict[str, Callable[[int], object]]:
    subjects = [q.subject for q in store.quads(predicate=NamedNode(JIDO + "content"))]

    def point(i: int) -> object:
        return list(store.query(  # type: ignore[call-overload]
            "SELECT ?s ?p ?o ?g WHERE { GRAPH ?g { ?s ?p ?o } }",
            substitutions={"s": subjects[i % len(subjects)], "g": _GRAPH}))

    return {"remember-like write (15 quads)": lambda i: store.add(_memory_quads(i)),
            "point query": point}


_GRAPH = NamedNode("https://jido.ai/graph/project/bench/long-term")


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_oxigraph(directory: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _port()
    binary = Path(sys.executable).with_name("oxigraph")
    process = subprocess.Popen([str(binary), "serve", "-l", str(directory), "-b",
                                f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return process, f"http://127.0.0.1:{port}"


def run(repeats: int = 5) -> list[dict[str, object]]:
    """Time both backends; one dict per (scenario, backend) with median and p95 in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        process, url = _start_oxigraph(Path(tmp) / "oxigraph")
        try:
            stores: dict[str, Store] = {
                "embedded": EmbeddedStore(Path(tmp) / "embedded"),
                "remote": RemoteStore(f"{url}/query", update_url=f"{url}/update",
                                      graph_store_url=f"{url}/store", dialect="oxigraph"),
            }
            samples: dict[tuple[str, str], list[float]] = {}
            for store in stores.values():
                for i in range(500):  # a project of 500 memories to query
                    store.add(_memory_quads(i))
            for _ in range(repeats):
                for backend, store in stores.items():
                    for name, op in _scenarios(store).items():
                        _time(op, 20)  # warm-up: pooled connections, caches
                        samples.setdefault((name, backend), []).extend(_time(op, OPS))
            for store in stores.values():
                store.close()
        finally:
            process.terminate()
            process.wait()
    results: list[dict[str, object]] = []
    for (name, backend), values in samples.items():
        median = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[-1]
        target = TARGETS_MS[name] if backend == "remote" else None
        results.append({"scenario": f"{name} [{backend}]", "metric": "latency",
                        "median": round(median, 3), "p95": round(p95, 3), "unit": "ms",
                        "target": target, "ok": target is None or p95 <= target})
    return results


def main() -> None:
    """Print the results as a Markdown table."""
    parser = argparse.ArgumentParser(prog="python -m bench.remote", description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("| scenario | median (ms) | p95 (ms) | target p95 (ms) | ok |")
    print("| --- | ---: | ---: | ---: | --- |")
    for row in run(repeats=args.repeats):
        target = "—" if row["target"] is None else row["target"]
        print(f"| {row['scenario']} | {row['median']} | {row['p95']} | {target} | {row['ok']} |")


if __name__ == "__main__":
    main()

"""Agent-API speed: context assembly in process, remember and recall over HTTP on loopback.

`python -m bench.context [--sizes 10000,100000,1000000] [--repeats 5]` prints one row per
figure: {"scenario", "metric", "median", "p95", "unit", "target", "ok"}. Recall runs against a
real `jido-kg serve` over a copy of a generated store (bench.generator.cached_store) of each size.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.generator import TOPICS, copy_cached_store, project_id
from kg.memory_service import MemoryService
from kg.settings import MEMORY_STORE, Settings

__all__ = ["run"]

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "bench-token"
DEFAULT_SIZES = (10_000, 100_000)


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _row(scenario: str, metric: str, samples: list[float], target: str, limit: float,
         which: str) -> dict[str, Any]:
    median, p95 = _stats(samples)
    value = p95 if which == "p95" else median
    return {"scenario": scenario, "metric": metric, "median": round(median, 3),
            "p95": round(p95, 3), "unit": "ms", "target": target, "ok": value <= limit}


def _timed(job: Callable[[], object], count: int) -> list[float]:
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        job()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def assembly(repeats: int) -> dict[str, Any]:
    """ContextBuilder.build with a 32,000-token budget, 200 messages and 10 memories recalled."""
    service = MemoryService.open(Settings(store=MEMORY_STORE))
    try:
        session = service.start_session("bench", project="bench")
        for i in range(200):
            role = "user" if i % 2 == 0 else "assistant"
            service.add_message(session.id, role, f"message {i} about {TOPICS[i % len(TOPICS)]} "
                                + "and some more words " * 10)
        for i in range(200):
            service.remember("bench", f"The {TOPICS[i % len(TOPICS)]} layer note {i} uses "
                             f"{TOPICS[(i * 7) % len(TOPICS)]}", confidence=0.5 + (i % 50) / 100)
        service.put_context_item(session.id, "framework", "Phoenix",  # type: ignore[arg-type]
                                 source="tool", confidence=1.0)  # type: ignore[arg-type]
        hints = [f"how does the {t} layer work?" for t in TOPICS]

        def build() -> None:
            ctx = service.builder.build(session.id, token_budget=32_000,
                                        query_hint=hints[int(time.perf_counter_ns()) % len(hints)])
            assert len(ctx.long_term_memories) == 10 and len(ctx.conversation) == 200

        _timed(build, 20)  # warm-up
        samples = _timed(build, 100 * repeats)
    finally:
        service.close()
    return _row("context assembly (in process)", "build, 32k budget, 200 msgs, 10 memories",
                samples, "p95 ≤ 5 ms", 5.0, "p95")


class _Server:
    def __init__(self, store_dir: Path) -> None:
        port = _free_port()
        env = {**os.environ, "KG_TOKENS": json.dumps({TOKEN: "write"})}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "api", "serve", "--store", str(store_dir), "--port", str(port)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.port = port
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(self.process.stderr.read().decode() if self.process.stderr
                                   else "server exited")
            try:
                self.request("GET", "/health")
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("server did not start")

    def connection(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def request(self, method: str, path: str, body: object = None,
                conn: http.client.HTTPConnection | None = None) -> Any:
        own = conn is None
        conn = conn or self.connection()
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
        conn.request(method, path, None if body is None else json.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
        if own:
            conn.close()
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
        return json.loads(data) if data else None

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def remember_http(repeats: int, workdir: Path) -> dict[str, Any]:
    """POST /v1/projects/p/memories over one keep-alive connection to a real server."""
    server = _Server(workdir / "remember-store")
    try:
        conn = server.connection()
        counter = iter(range(10**9))

        def remember() -> None:
            i = next(counter)
            server.request("POST", "/v1/projects/bench/memories",
                           {"content": f"remembered fact number {i} about "
                                       f"{TOPICS[i % len(TOPICS)]}", "confidence": 0.8}, conn)

        _timed(remember, 20)
        samples = _timed(remember, 100 * repeats)
    finally:
        server.stop()
    return _row("remember over HTTP (loopback)", "POST /v1/projects/{p}/memories", samples,
                "p50 ≤ 3 ms", 3.0, "p50")


def recall_http(repeats: int, workdir: Path, n: int) -> dict[str, Any]:
    """POST /v1/projects/p/recall against a copy of a generated store of n memories."""
    target = copy_cached_store(n, workdir / f"recall-{n}")
    started = time.perf_counter()
    server = _Server(target)  # builds the recall index at startup when there is none
    startup = time.perf_counter() - started
    try:
        conn = server.connection()
        queries = [f"{a} {b}" for a in TOPICS[:10] for b in TOPICS[10:20]]
        counter = iter(range(10**9))

        def recall() -> None:
            i = next(counter)
            server.request("POST", f"/v1/projects/{project_id(i % 10)}/recall",
                           {"query": queries[i % len(queries)], "limit": 10}, conn)

        _timed(recall, 20)
        samples = _timed(recall, 50 * repeats)
    finally:
        server.stop()
        shutil.rmtree(target, ignore_errors=True)
    row = _row("recall over HTTP (loopback)", f"POST /v1/projects/{{p}}/recall, n={n:,}",
               samples, "p95 ≤ 30 ms at 1,000,000", 30.0, "p95")
    row["startup_s"] = round(startup, 1)
    return row


def run(repeats: int = 5, sizes: Sequence[int] = DEFAULT_SIZES) -> list[dict[str, Any]]:
    """Measure every scenario; one row per figure."""
    rows = [assembly(repeats)]
    with tempfile.TemporaryDirectory(prefix="bench-context-") as tmp:
        rows.append(remember_http(repeats, Path(tmp)))
        for n in sizes:
            rows.append(recall_http(repeats, Path(tmp), n))
    return rows


def main(argv: list[str] | None = None) -> None:
    """Command line: print the rows as JSON lines."""
    parser = argparse.ArgumentParser(prog="python -m bench.context", description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    for row in run(args.repeats, sizes):
        print(json.dumps(row, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    main()

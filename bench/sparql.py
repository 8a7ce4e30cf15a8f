"""SPARQL endpoint benchmark, side by side with Oxigraph's own server on the same data.

`python -m bench.sparql` (or `run(repeats=5)`): 100,000 triples are loaded into a `jido-kg
serve` process, an `oxigraph serve` process (PyPI `oxigraph`) and an in-process pyoxigraph
store; both servers are left to finish their background work (store flushes, compactions: under
3 % CPU) before three scenarios are timed, each repeat on fresh keep-alive connections:

- small-query latency p50 over HTTP vs the same query in process (target: <= 1 ms above);
- small-query throughput with 8 concurrent clients (target: >= 0.5x Oxigraph server);
- a 100,000-row SELECT as JSON, whole body read (target: >= 0.8x Oxigraph server's rows/s).
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote, urlsplit

import pyoxigraph

from bench import http_servers
from bench.server import ServerProcess, free_port, start_server

__all__ = ["main", "run"]

N_TRIPLES = 100_000
SMALL = "SELECT ?p ?o WHERE { <http://example.org/s4242> ?p ?o }"
LARGE = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
JSON = "application/sparql-results+json"
LATENCY_N, CLIENTS, PER_CLIENT = 400, 8, 150


def _data(path: Path) -> None:
    with open(path, "w") as out:
        for i in range(N_TRIPLES):
            out.write(f"<http://example.org/s{i}> <http://example.org/p{i % 7}> \"v{i}\" .\n")


def _oxigraph(directory: Path, data: Path) -> tuple[subprocess.Popen[bytes], str]:
    binary = str(Path(sys.executable).with_name("oxigraph"))
    subprocess.run([binary, "load", "-l", str(directory), "-f", str(data)], check=True,
                   capture_output=True)
    port = free_port()
    process = subprocess.Popen([binary, "serve", "-l", str(directory), "-b",
                                f"127.0.0.1:{port}"], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
            return process, url
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("oxigraph serve did not start")


def _cpu_seconds(pid: int) -> float:
    # The whole process tree: `jido-kg serve` is a supervisor and a worker process.
    return http_servers.server_cpu_seconds(pid)


def _settle(pid: int, *, idle: float = 0.03, limit: float = 60.0) -> None:
    """Wait until a server's background work (flushes, compactions) is done: under 3 % CPU."""
    deadline = time.monotonic() + limit
    time.sleep(1.5)  # past the first store flush
    while time.monotonic() < deadline:
        before = _cpu_seconds(pid)
        time.sleep(0.5)
        if _cpu_seconds(pid) - before < idle * 0.5:
            return


def _getter(url: str, path: str) -> Callable[[str], bytes]:
    """A keep-alive GET of `path?query=...` on one connection (the endpoint path differs)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)

    def get(query: str) -> bytes:
        connection.request("GET", f"{path}?query={quote(query)}", headers={"Accept": JSON})
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        return body

    return get


def _latencies(get: Callable[[str], bytes], n: int) -> list[float]:
    get(SMALL)
    out = []
    for _ in range(n):
        started = time.perf_counter()
        get(SMALL)
        out.append(time.perf_counter() - started)
    return out


def _throughput(url: str, path: str, *, per_client: int = PER_CLIENT) -> float:
    def client(_: int) -> int:
        get = _getter(url, path)
        for _ in range(per_client):
            get(SMALL)
        return per_client

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        done = sum(pool.map(client, range(CLIENTS)))
    return done / (time.perf_counter() - started)


def _large(url: str, path: str) -> float:
    started = time.perf_counter()
    body = _getter(url, path)(LARGE)
    elapsed = time.perf_counter() - started
    assert body.count(b'"s":') == N_TRIPLES
    return N_TRIPLES / elapsed


def _row(metric: str, values: list[float], unit: str, target: str, ok: bool,
         **extra: object) -> dict[str, object]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"scenario": "sparql", "metric": metric, "median": statistics.median(values),
            "p95": p95, "unit": unit, "target": target, "ok": ok, **extra}


def run(repeats: int = 5) -> list[dict[str, object]]:
    """Measure the three scenarios `repeats` times; one row per metric."""
    with tempfile.TemporaryDirectory(prefix="bench-sparql-") as tmp:
        root = Path(tmp)
        data = root / "data.nt"
        _data(data)
        local = pyoxigraph.Store()
        local.bulk_load(path=str(data), format=pyoxigraph.RdfFormat.N_TRIPLES)
        # A prompt store flush, so the load below is flushed and compacted before measuring
        # (Oxigraph's server is loaded offline, and starts with settled files too).
        jido: ServerProcess = start_server(root / "jido", env={"KG_TOKENS": '{"bench": "admin"}',
                                                               "KG_STORE_FLUSH_INTERVAL": "1"})
        ox_process, ox_url = _oxigraph(root / "oxigraph", data)
        try:
            load = http.client.HTTPConnection("127.0.0.1", jido.port, timeout=120)
            load.request("PUT", "/store?default", body=data.read_bytes(),
                         headers={"Content-Type": "application/n-triples",
                                  "Authorization": "Bearer bench"})
            assert load.getresponse().status in (201, 204)
            for pid in (jido.pid, ox_process.pid):
                _settle(pid)
            return _measure(local, jido.url, ox_url, repeats)
        finally:
            jido.stop()
            ox_process.terminate()
            ox_process.wait()


def _measure(local: pyoxigraph.Store, jido: str, oxigraph: str,
             repeats: int) -> list[dict[str, object]]:
    overhead, jido_p50, local_p50, ox_p50 = [], [], [], []
    ratio_tp, jido_tp, ox_tp, ratio_large, jido_large, ox_large = [], [], [], [], [], []
    for _ in range(repeats):
        in_process = _latencies(
            lambda q: local.query(q).serialize(format=pyoxigraph.QueryResultsFormat.JSON),
            LATENCY_N)
        over_http = _latencies(_getter(jido, "/sparql"), LATENCY_N)
        ox_http = _latencies(_getter(oxigraph, "/query"), LATENCY_N)
        local_p50.append(statistics.median(in_process) * 1000)
        jido_p50.append(statistics.median(over_http) * 1000)
        ox_p50.append(statistics.median(ox_http) * 1000)
        overhead.append(jido_p50[-1] - local_p50[-1])
        jido_tp.append(_throughput(jido, "/sparql"))
        ox_tp.append(_throughput(oxigraph, "/query"))
        ratio_tp.append(jido_tp[-1] / ox_tp[-1])
        jido_large.append(_large(jido, "/sparql"))
        ox_large.append(_large(oxigraph, "/query"))
        ratio_large.append(jido_large[-1] / ox_large[-1])
    return [
        _row("small query p50 overhead vs in-process", overhead, "ms", "<= 1 ms",
             statistics.median(overhead) <= 1.0,
             jido_p50_ms=statistics.median(jido_p50), in_process_p50_ms=statistics.median(
                 local_p50), oxigraph_p50_ms=statistics.median(ox_p50)),
        _row("small query throughput, 8 clients, vs Oxigraph server", ratio_tp, "x",
             ">= 0.5x", statistics.median(ratio_tp) >= 0.5,
             jido_qps=statistics.median(jido_tp), oxigraph_qps=statistics.median(ox_tp)),
        _row("100,000-row SELECT as JSON, rows/s vs Oxigraph server", ratio_large, "x",
             ">= 0.8x", statistics.median(ratio_large) >= 0.8,
             jido_rows_per_s=statistics.median(jido_large),
             oxigraph_rows_per_s=statistics.median(ox_large)),
    ]


# --- HTTP servers side by side (issue 17): ours, gunicorn and granian, and Oxigraph's --------

COMPARE_PER_CLIENT = 400  # small queries per client and repeat: a few seconds per server


def _template_store(root: Path, data: Path) -> Path:
    """A store directory holding the data (and the ontology), settled, to copy per server."""
    from kg.store import EmbeddedStore
    from kg.system_knowledge import ensure_ontology

    path = root / "template"
    store = EmbeddedStore(path)
    try:
        store.bulk_load(path=data, format=pyoxigraph.RdfFormat.N_TRIPLES)
        ensure_ontology(store)
    finally:
        store.close()
    return path


def compare_servers(repeats: int = 5, *, kinds: tuple[str, ...] = http_servers.KINDS,
                    per_client: int = COMPARE_PER_CLIENT) -> list[dict[str, object]]:
    """Small-query throughput, p50 latency and a 100,000-row SELECT for each of `kinds` and
    Oxigraph's server, in one run: the servers take turns within each repeat (the order
    rotates), and each figure is also given as a ratio to Oxigraph's in the same repeat."""
    import shutil

    with tempfile.TemporaryDirectory(prefix="bench-servers-") as tmp:
        root = Path(tmp)
        data = root / "data.nt"
        _data(data)
        template = _template_store(root, data)
        ox_process, ox_url = _oxigraph(root / "oxigraph", data)
        servers: dict[str, http_servers.Server] = {}
        try:
            for kind in kinds:
                store = root / f"store-{kind}"
                shutil.copytree(template, store)
                servers[kind] = http_servers.start(
                    kind, port=free_port(), store=store,
                    env={"KG_TOKENS": '{"bench": "admin"}', "KG_EMBEDDER": "none"})
            for pid in [ox_process.pid, *(s.process.pid for s in servers.values())]:
                _settle(pid)
            urls = {"oxigraph": (ox_url, "/query", ox_process.pid),
                    **{k: (s.url, "/sparql", s.process.pid) for k, s in servers.items()}}
            return _compare(urls, repeats, per_client)
        finally:
            for server in servers.values():
                server.stop()
            ox_process.terminate()
            ox_process.wait()


def _compare(urls: dict[str, tuple[str, str, int]], repeats: int,
             per_client: int) -> list[dict[str, object]]:
    names = list(urls)
    figures: dict[str, dict[str, list[float]]] = {
        name: {"qps": [], "cpu_us": [], "p50_ms": [], "rows_per_s": []} for name in names}
    ratios: dict[str, dict[str, list[float]]] = {
        name: {"qps": [], "rows_per_s": []} for name in names}
    for repeat in range(repeats):
        order = names[repeat % len(names):] + names[:repeat % len(names)]
        for name in order:
            url, path, pid = urls[name]
            before = http_servers.server_cpu_seconds(pid)
            qps = _throughput(url, path, per_client=per_client)
            cpu = http_servers.server_cpu_seconds(pid) - before
            done = CLIENTS * per_client
            figures[name]["qps"].append(qps)
            figures[name]["cpu_us"].append(cpu / done * 1e6)
            figures[name]["p50_ms"].append(
                statistics.median(_latencies(_getter(url, path), LATENCY_N)) * 1000)
            figures[name]["rows_per_s"].append(_large(url, path))
        for name in names:
            for metric in ("qps", "rows_per_s"):
                ratios[name][metric].append(figures[name][metric][-1]
                                            / figures["oxigraph"][metric][-1])
        print(f"repeat {repeat + 1}/{repeats}: " + ", ".join(
            f"{n} {figures[n]['qps'][-1]:,.0f} q/s" for n in names), file=sys.stderr)
    rows = []
    for name in names:
        f, r = figures[name], ratios[name]
        rows.append({"server": name, "repeats": repeats,
                     "qps": statistics.median(f["qps"]),
                     "qps_vs_oxigraph": statistics.median(r["qps"]),
                     "qps_vs_oxigraph_all": [round(x, 2) for x in r["qps"]],
                     "cpu_us_per_query": statistics.median(f["cpu_us"]),
                     "p50_ms": statistics.median(f["p50_ms"]),
                     "rows_per_s": statistics.median(f["rows_per_s"]),
                     "rows_vs_oxigraph": statistics.median(r["rows_per_s"])})
    return rows


def main() -> None:
    """Run with 5 repeats (`N` as first argument) and print one line per metric; with
    `--servers` compare the HTTP servers instead (docs/benchmarks/sparql.md)."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repeats = int(args[0]) if args else 5
    if "--servers" in sys.argv:
        for result in compare_servers(repeats):
            print(json.dumps(result))
        return
    for row in run(repeats=repeats):
        extra = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()
                 if k not in ("scenario", "metric", "median", "p95", "unit", "target", "ok")}
        print(f"{row['metric']}: median {row['median']:.3f} {row['unit']} "
              f"(p95 {row['p95']:.3f}; target {row['target']}; ok={row['ok']}) {extra}")


if __name__ == "__main__":
    main()

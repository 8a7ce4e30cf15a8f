"""HTTP servers side by side (issue 17): ours, gunicorn and granian, and Oxigraph's server.

`python -m bench.sparql --servers` (docs/benchmarks/sparql.md): small-query throughput, server
CPU per query, p50 latency and a 100,000-row SELECT for each server over copies of one store.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import pyoxigraph

from bench import http_servers
from bench.server import free_port
from bench.sparql import (
    CLIENTS,
    LATENCY_N,
    getter,
    large_rows_per_s,
    latencies,
    oxigraph,
    settle,
    throughput,
    write_data,
)

__all__ = ["compare_servers"]

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
    with tempfile.TemporaryDirectory(prefix="bench-servers-") as tmp:
        root = Path(tmp)
        data = root / "data.nt"
        write_data(data)
        template = _template_store(root, data)
        ox_process, ox_url = oxigraph(root / "oxigraph", data)
        servers: dict[str, http_servers.Server] = {}
        try:
            for kind in kinds:
                store = root / f"store-{kind}"
                shutil.copytree(template, store)
                servers[kind] = http_servers.start(
                    kind, port=free_port(), store=store,
                    env={"KG_TOKENS": '{"bench": "admin"}', "KG_EMBEDDER": "none"})
            for pid in [ox_process.pid, *(s.process.pid for s in servers.values())]:
                settle(pid)
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
            qps = throughput(url, path, per_client=per_client)
            cpu = http_servers.server_cpu_seconds(pid) - before
            done = CLIENTS * per_client
            figures[name]["qps"].append(qps)
            figures[name]["cpu_us"].append(cpu / done * 1e6)
            figures[name]["p50_ms"].append(
                statistics.median(latencies(getter(url, path), LATENCY_N)) * 1000)
            figures[name]["rows_per_s"].append(large_rows_per_s(url, path))
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

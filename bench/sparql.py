"""SPARQL endpoint benchmark, side by side with Oxigraph's own server on the same data.

`python -m bench.sparql` (or `run(repeats=5)`): 100,000 triples are loaded into a `jido-kg
serve` process, an `oxigraph serve` process (PyPI `oxigraph`) and an in-process pyoxigraph
store; both servers are left to finish their background work (store flushes, compactions: under
3 % CPU) before the scenarios are timed, each repeat on fresh keep-alive connections, the two
servers taking turns within a repeat (issue 17's targets):

- point-query latency p50 over HTTP vs the same query in process (<= 0.3 ms above), on an
  on-disk store as the server's (RocksDB answers a point query ~17 µs slower than pyoxigraph's
  in-memory store; that is the store's, not HTTP's): the in-memory store's p50 is a column;
  the same against a second `jido-kg serve` whose poller sleeps at once (`KG_POLL_SPIN_US=0`,
  informational: what spinning before sleeping buys, docs/sparql.md "The HTTP server");
- small-query throughput with 8 concurrent clients (>= 0.6x Oxigraph's server, goal 0.8x):
  8 threads of this process, as the target was first measured, and 8 client processes
  (informational: threads share one interpreter lock, which caps what they can ask for),
  asking the same query or each time another subject's (informational: no two requests alike,
  so nothing a server keeps per request text helps);
- a 100,000-row SELECT as JSON: the first body byte (<= 50 ms) and rows/s (>= 0.9x Oxigraph's);
- then, on 1,000,000 triples, each server's peak RSS (process tree) while serving a
  1,000,000-row SELECT as JSON, sampled every 10 ms, against its RSS before.
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from urllib.parse import quote, urlsplit

import pyoxigraph

from bench import http_servers
from bench.server import ServerProcess, free_port, start_server, tree_rss_kb

__all__ = ["CLIENTS", "LATENCY_N", "getter", "large_rows_per_s", "latencies", "main",
           "oxigraph", "run", "settle", "throughput", "throughput_processes",
           "write_data"]

N_TRIPLES = 100_000
N_HUGE = 1_000_000
SMALL = "SELECT ?p ?o WHERE { <http://example.org/s4242> ?p ?o }"
LARGE = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
JSON = "application/sparql-results+json"
LATENCY_N, CLIENTS, PER_CLIENT = 400, 8, 150
_HEADERS = {"Accept": JSON}


def write_data(path: Path, n: int = N_TRIPLES) -> None:
    """Write `n` triples, one subject each, as N-Triples."""
    with open(path, "w") as out:
        for i in range(n):
            out.write(f"<http://example.org/s{i}> <http://example.org/p{i % 7}> \"v{i}\" .\n")


def oxigraph(directory: Path, data: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Load `data` into a new Oxigraph store and serve it; return the process and its URL."""
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


def settle(pid: int, *, idle: float = 0.03, limit: float = 60.0) -> None:
    """Wait until a server's background work (flushes, compactions) is done: under 3 % CPU."""
    deadline = time.monotonic() + limit
    time.sleep(1.5)  # past the first store flush
    while time.monotonic() < deadline:
        # The whole process tree: `jido-kg serve` is a supervisor and a worker process.
        before = http_servers.server_cpu_seconds(pid)
        time.sleep(0.5)
        if http_servers.server_cpu_seconds(pid) - before < idle * 0.5:
            return


def _connection(url: str) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=300)


def getter(url: str, path: str) -> Callable[[str], bytes]:
    """A keep-alive GET of `path?query=...` on one connection (the endpoint path differs)."""
    connection = _connection(url)

    def get(query: str) -> bytes:
        connection.request("GET", f"{path}?query={quote(query)}", headers=_HEADERS)
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        return body

    return get


def latencies(get: Callable[[str], bytes], n: int) -> list[float]:
    """Seconds for each of `n` point queries, after one warm-up."""
    get(SMALL)
    out = []
    for _ in range(n):
        started = time.perf_counter()
        get(SMALL)
        out.append(time.perf_counter() - started)
    return out


def throughput(url: str, path: str, *, per_client: int = PER_CLIENT) -> float:
    """Point queries per second answered to CLIENTS concurrent keep-alive clients."""
    def client(_: int) -> int:
        get = getter(url, path)
        for _ in range(per_client):
            get(SMALL)
        return per_client

    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        done = sum(pool.map(client, range(CLIENTS)))
    return done / (time.perf_counter() - started)


# One client of `throughput_processes`: keep-alive point queries for a fixed time, then the count.
# With a fourth argument, each query asks for another subject (no two requests alike: nothing
# the server keeps per request text helps; the subjects are those of `write_data`).
_PROCESS_CLIENT = """
import random, sys, time
from bench.sparql import SMALL, getter
get = getter(sys.argv[1], sys.argv[2])
get(SMALL)
subjects = int(sys.argv[4]) if len(sys.argv) > 4 else 0
pick = random.Random().randrange
sys.stdout.write("ready\\n"); sys.stdout.flush(); sys.stdin.readline()
end, done = time.monotonic() + float(sys.argv[3]), 0
while time.monotonic() < end:
    get(SMALL.replace("s4242", f"s{pick(subjects)}") if subjects else SMALL)
    done += 1
print(done)
"""


def throughput_processes(url: str, path: str, *, seconds: float = 3.0,
                         subjects: int = 0) -> float:
    """Point queries per second answered to CLIENTS client processes, started together.

    The threads of `throughput` share one interpreter's lock, which caps what they can ask
    for: a server much faster than the clients looks only as fast as they are. Processes
    do not share it. With `subjects`, every query names a random one of that many subjects.
    """
    root = str(Path(__file__).resolve().parent.parent)
    extra = [str(subjects)] if subjects else []
    clients = [subprocess.Popen([sys.executable, "-c", _PROCESS_CLIENT, url, path, str(seconds),
                                 *extra],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                cwd=root) for _ in range(CLIENTS)]
    try:
        for client in clients:
            assert client.stdout is not None and client.stdout.readline().strip() == "ready"
        for client in clients:
            assert client.stdin is not None
            client.stdin.write("go\n")
            client.stdin.flush()
        return sum(int(client.communicate()[0]) for client in clients) / seconds
    finally:
        for client in clients:
            if client.poll() is None:
                client.kill()


def large_rows_per_s(url: str, path: str) -> float:
    """Rows per second of the 100,000-row SELECT, whole body read."""
    return _large(url, path)[1]


def _large(url: str, path: str, *, rows: int = N_TRIPLES) -> tuple[float, float]:
    """(seconds to the first body byte, rows/s) of `LARGE` read whole on a new connection."""
    connection = _connection(url)
    try:
        started = time.perf_counter()
        connection.request("GET", f"{path}?query={quote(LARGE)}", headers=_HEADERS)
        response = connection.getresponse()
        first = response.read(1)
        first_byte = time.perf_counter() - started
        body = first + response.read()
        elapsed = time.perf_counter() - started
    finally:
        connection.close()
    assert response.status == 200, body[:300]
    assert body.count(b'"s":') == rows
    return first_byte, rows / elapsed


def _tree_rss_mb(pid: int) -> float:
    return tree_rss_kb(pid) / 1024


def _peak_rss_serving(url: str, path: str, pid: int) -> tuple[float, float]:
    """(RSS before, peak RSS while serving) the 1,000,000-row SELECT, in MB."""
    before = _tree_rss_mb(pid)
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.01):
            peak[0] = max(peak[0], _tree_rss_mb(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        _large(url, path, rows=N_HUGE)
    finally:
        done.set()
        sampler.join()
    return before, peak[0]


def _in_process(store: pyoxigraph.Store, query: str) -> bytes:
    result = store.query(query)
    assert isinstance(result, pyoxigraph.QuerySolutions)
    body = result.serialize(format=pyoxigraph.QueryResultsFormat.JSON)
    assert body is not None
    return body


def _row(metric: str, values: list[float], unit: str, target: str, ok: bool | None,
         **extra: object) -> dict[str, object]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"scenario": "sparql", "metric": metric, "median": statistics.median(values),
            "p95": p95, "unit": unit, "target": target, "ok": ok, **extra}


def _serve_both(root: Path, data: Path) -> tuple[ServerProcess, subprocess.Popen[bytes], str]:
    jido = _jido(root / "jido", data)
    ox_process, ox_url = oxigraph(root / "oxigraph", data)
    for pid in (jido.pid, ox_process.pid):
        settle(pid)
    return jido, ox_process, ox_url


def _jido(store: Path, data: Path, **env: str) -> ServerProcess:
    """A `jido-kg serve` on a new store holding `data` (not yet settled)."""
    # A prompt store flush, so the load below is flushed and compacted before measuring
    # (Oxigraph's server is loaded offline, and starts with settled files too).
    jido = start_server(store, env={"KG_TOKENS": '{"bench": "admin"}',
                                    "KG_STORE_FLUSH_INTERVAL": "1", "KG_EMBEDDER": "none",
                                    **env}, timeout=600)
    load = http.client.HTTPConnection("127.0.0.1", jido.port, timeout=600)
    try:
        with open(data, "rb") as body:
            load.request("PUT", "/store?default", body=body,
                         headers={"Content-Type": "application/n-triples",
                                  "Authorization": "Bearer bench"})
            assert load.getresponse().status in (201, 204)
    finally:
        load.close()  # a connection with a thread of its own would keep the poller from spinning
    return jido


def run(repeats: int = 5, *, quick: bool = False) -> list[dict[str, object]]:
    """Measure the scenarios `repeats` times; one row per metric (module docstring)."""
    rows: list[dict[str, object]] = []
    for size in (N_TRIPLES,) if quick else (N_TRIPLES, N_HUGE):
        with tempfile.TemporaryDirectory(prefix="bench-sparql-") as tmp:
            root = Path(tmp)
            data = root / "data.nt"
            write_data(data, size)
            jido, ox_process, ox_url = _serve_both(root, data)
            try:
                if size == N_TRIPLES:
                    local = pyoxigraph.Store(str(root / "in-process"))
                    memory = pyoxigraph.Store()
                    for store in (local, memory):
                        store.bulk_load(path=str(data), format=pyoxigraph.RdfFormat.N_TRIPLES)
                    sleeper = _jido(root / "jido-no-spin", data, KG_POLL_SPIN_US="0")
                    try:
                        settle(sleeper.pid)
                        rows += _measure((local, memory), (jido.url, sleeper.url), ox_url,
                                         repeats)
                    finally:
                        sleeper.stop()
                else:
                    rows += _measure_huge((jido.url, jido.pid), (ox_url, ox_process.pid))
            finally:
                jido.stop()
                ox_process.terminate()
                ox_process.wait()
    return rows


def _measure(stores: tuple[pyoxigraph.Store, pyoxigraph.Store], servers: tuple[str, str],
             ox: str, repeats: int) -> list[dict[str, object]]:
    """The 100,000-triple scenarios; `stores`: in process, on disk and in memory; `servers`:
    ours, and ours with `KG_POLL_SPIN_US=0`."""
    local, memory = stores
    jido, sleeper = servers
    f: dict[str, list[float]] = {k: [] for k in (
        "overhead", "jido_p50", "local_p50", "memory_p50", "ox_p50", "sleeper_overhead",
        "sleeper_p50", "ratio_tp", "jido_tp",
        "ox_tp",
        "ratio_tpp", "jido_tpp", "ox_tpp", "ratio_tpv", "jido_tpv", "ox_tpv",
        "ratio_rows", "jido_rows", "ox_rows", "jido_first", "ox_first")}
    for _ in range(repeats):
        in_process = latencies(partial(_in_process, local), LATENCY_N)
        f["local_p50"].append(statistics.median(in_process) * 1000)
        f["memory_p50"].append(statistics.median(
            latencies(partial(_in_process, memory), LATENCY_N)) * 1000)
        f["jido_p50"].append(statistics.median(latencies(getter(jido, "/sparql"),
                                                         LATENCY_N)) * 1000)
        f["ox_p50"].append(statistics.median(latencies(getter(ox, "/query"), LATENCY_N)) * 1000)
        f["sleeper_p50"].append(statistics.median(latencies(getter(sleeper, "/sparql"),
                                                            LATENCY_N)) * 1000)
        f["overhead"].append(f["jido_p50"][-1] - f["local_p50"][-1])
        f["sleeper_overhead"].append(f["sleeper_p50"][-1] - f["local_p50"][-1])
        f["jido_tp"].append(throughput(jido, "/sparql"))
        f["ox_tp"].append(throughput(ox, "/query"))
        f["ratio_tp"].append(f["jido_tp"][-1] / f["ox_tp"][-1])
        f["jido_tpp"].append(throughput_processes(jido, "/sparql"))
        f["ox_tpp"].append(throughput_processes(ox, "/query"))
        f["ratio_tpp"].append(f["jido_tpp"][-1] / f["ox_tpp"][-1])
        f["jido_tpv"].append(throughput_processes(jido, "/sparql", subjects=N_TRIPLES))
        f["ox_tpv"].append(throughput_processes(ox, "/query", subjects=N_TRIPLES))
        f["ratio_tpv"].append(f["jido_tpv"][-1] / f["ox_tpv"][-1])
        for name, url, path in (("jido", jido, "/sparql"), ("ox", ox, "/query")):
            first, per_s = _large(url, path)
            f[f"{name}_first"].append(first * 1000)
            f[f"{name}_rows"].append(per_s)
        f["ratio_rows"].append(f["jido_rows"][-1] / f["ox_rows"][-1])
    med = {k: statistics.median(v) for k, v in f.items()}
    return [
        _row("point query p50 overhead vs in-process", f["overhead"], "ms", "<= 0.3 ms",
             med["overhead"] <= 0.3, jido_p50_ms=med["jido_p50"],
             in_process_p50_ms=med["local_p50"], in_memory_p50_ms=med["memory_p50"],
             oxigraph_p50_ms=med["ox_p50"]),
        _row("point query p50 overhead vs in-process, poller not spinning (KG_POLL_SPIN_US=0)",
             f["sleeper_overhead"], "ms", "informational", None, jido_p50_ms=med["sleeper_p50"],
             in_process_p50_ms=med["local_p50"], oxigraph_p50_ms=med["ox_p50"]),
        _row("small query throughput, 8 clients, vs Oxigraph server", f["ratio_tp"], "x",
             ">= 0.6x (goal 0.8x)", med["ratio_tp"] >= 0.6,
             jido_qps=med["jido_tp"], oxigraph_qps=med["ox_tp"]),
        _row("small query throughput, 8 client processes, vs Oxigraph server", f["ratio_tpp"],
             "x", "informational", None, jido_qps=med["jido_tpp"], oxigraph_qps=med["ox_tpp"]),
        _row("small query throughput, 8 client processes, a new subject each query, vs "
             "Oxigraph server", f["ratio_tpv"], "x", "informational", None,
             jido_qps=med["jido_tpv"], oxigraph_qps=med["ox_tpv"]),
        _row("100,000-row SELECT as JSON, first body byte", f["jido_first"], "ms", "<= 50 ms",
             med["jido_first"] <= 50, oxigraph_first_byte_ms=med["ox_first"]),
        _row("100,000-row SELECT as JSON, rows/s vs Oxigraph server", f["ratio_rows"], "x",
             ">= 0.9x", med["ratio_rows"] >= 0.9,
             jido_rows_per_s=med["jido_rows"], oxigraph_rows_per_s=med["ox_rows"]),
    ]


def _measure_huge(jido: tuple[str, int], ox: tuple[str, int]) -> list[dict[str, object]]:
    j_before, j_peak = _peak_rss_serving(jido[0], "/sparql", jido[1])
    o_before, o_peak = _peak_rss_serving(ox[0], "/query", ox[1])
    return [
        _row("peak RSS serving a 1,000,000-row SELECT as JSON", [j_peak], "MB",
             "informational", None, rss_before_mb=j_before, growth_mb=j_peak - j_before,
             oxigraph_peak_mb=o_peak, oxigraph_before_mb=o_before,
             oxigraph_growth_mb=o_peak - o_before),
    ]


def main() -> None:
    """Run with 5 repeats (`N` as first argument) and print one line per metric; with
    `--servers` compare the HTTP servers instead (docs/benchmarks/sparql.md)."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repeats = int(args[0]) if args else 5
    if "--servers" in sys.argv:
        from bench.sparql_servers import compare_servers

        for result in compare_servers(repeats):
            print(json.dumps(result))
        return
    for row in run(repeats=repeats, quick="--quick" in sys.argv):
        extra = {k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()
                 if k not in ("scenario", "metric", "median", "p95", "unit", "target", "ok")}
        print(f"{row['metric']}: median {row['median']:.3f} {row['unit']} "
              f"(p95 {row['p95']:.3f}; target {row['target']}; ok={row['ok']}) {extra}")


if __name__ == "__main__":
    main()

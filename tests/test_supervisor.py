"""`jido-kg serve` as a supervisor and a worker process: replacement, kills, sessions, signals.

Real servers on loopback (tests/conftest.py). A runaway here is a four-way join over the
named graphs (the ontology's 1,400 triples: 4 × 10^12 rows), which no machine counts within
its time limit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

from kg.store import EmbeddedStore
from tests.conftest import ROOT, RunningServer, alive, free_port, jido_kg_command
from tests.processes import wait_for, wait_for_new_worker, worker_pid
from tests.sparql.http import Answer, call

WRITER, READER = "w-token", "r-token"
TOKENS = json.dumps({WRITER: "write", READER: "read"})
RUNAWAY = ("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g1 { ?a ?b ?c } GRAPH ?g2 { ?d ?e ?f } "
           "GRAPH ?g3 { ?h ?i ?j } GRAPH ?g4 { ?k ?l ?m } }")
CONTEXT_KEY = "active_file"


def _server(factory: Callable[..., RunningServer], **env: str) -> RunningServer:
    return factory(extra_env={"KG_TOKENS": TOKENS, **env})


def _json(server: RunningServer, method: str, path: str, body: object = None,
          token: str = WRITER) -> Answer:
    return call(f"{server.url}{path}", method=method,
                body=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})


def _session_with_context(server: RunningServer, session: str, value: str) -> None:
    made = _json(server, "POST", "/v1/sessions", {"project": "sup", "session_id": session})
    assert made.status == 201, made.body
    put = _json(server, "PUT", f"/v1/sessions/{session}/context/{CONTEXT_KEY}",
                {"value": value})
    assert put.status == 200, put.body


def _context(server: RunningServer, session: str) -> Answer:
    return _json(server, "GET", f"/v1/sessions/{session}/context/{CONTEXT_KEY}", token=READER)


def test_a_killed_worker_is_replaced_and_its_acknowledged_writes_and_index_kept(
        server_factory: Callable[..., RunningServer]) -> None:
    server = _server(server_factory)
    made = _json(server, "POST", "/v1/projects/sup/memories",
                 {"content": "the deploy key rotates every tuesday"})
    assert made.status == 201, made.body
    memory = made.json()["id"]
    first = worker_pid(server)
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for_new_worker(server, first)
    wait_for(lambda: call(f"{server.url}/health").status == 200, timeout=30,
             what="the new worker to answer")
    assert _json(server, "GET", f"/v1/projects/sup/memories/{memory}",
                 token=READER).status == 200
    # The recall index is in step with the store in the new worker once its start-up check
    # has run (in the background: the kill may have come before the index applied the write).
    def recalled() -> bool:
        found = _json(server, "POST", "/v1/projects/sup/recall",
                      {"query": "deploy key tuesday"}, token=READER)
        assert found.status == 200, found.body
        return memory in found.body.decode()

    wait_for(recalled, timeout=30, what="the new worker's recall to find the memory")
    assert server.process.poll() is None


def test_sessions_survive_a_planned_replacement(
        server_factory: Callable[..., RunningServer]) -> None:
    server = _server(server_factory, KG_SESSION_SNAPSHOT_INTERVAL="3600")
    _session_with_context(server, "kept-session", "src/app.py")
    first = worker_pid(server)
    assert first is not None
    # A runaway replaces the worker; sessions are snapshotted on the way out (the periodic
    # snapshot is an hour away).
    answer = call(f"{server.url}/sparql?timeout=1&query={quote(RUNAWAY)}",
                  headers={"Authorization": f"Bearer {READER}"}, timeout=60)
    assert (answer.status, answer.error_code) == (504, "query_timeout")
    wait_for_new_worker(server, first)
    found = _context(server, "kept-session")
    assert found.status == 200, found.body
    assert found.json()["value"] == "src/app.py"


def test_a_killed_worker_loses_no_session_state_older_than_the_last_snapshot(
        server_factory: Callable[..., RunningServer]) -> None:
    server = _server(server_factory, KG_SESSION_SNAPSHOT_INTERVAL="0.2")
    _session_with_context(server, "snap-session", "docs/index.md")
    snapshots = server.store_dir.with_name(server.store_dir.name + ".sessions.json")
    wait_for(lambda: snapshots.exists() and "docs/index.md" in snapshots.read_text(),
             timeout=30, what="a snapshot holding the context item")
    first = worker_pid(server)
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for_new_worker(server, first)
    found = _context(server, "snap-session")
    assert found.status == 200, found.body
    assert found.json()["value"] == "docs/index.md"


def test_killing_the_supervisor_takes_the_worker_with_it(
        server_factory: Callable[..., RunningServer]) -> None:
    server = _server(server_factory)
    assert _json(server, "POST", "/v1/projects/sup/memories",
                 {"content": "written before the kill"}).status == 201
    pids = server.pids()
    assert len(pids) == 2
    server.process.kill()
    server.process.wait()
    wait_for(lambda: not any(map(alive, pids)), timeout=10, what="the worker to end")
    store = EmbeddedStore(server.store_dir)  # its lock is free
    try:
        assert len(store) > 0
    finally:
        store.close()


def test_sigint_stops_every_process_with_status_0(
        server_factory: Callable[..., RunningServer]) -> None:
    server = _server(server_factory)
    pids = server.pids()
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(timeout=15) == 0
    wait_for(lambda: not any(map(alive, pids)), timeout=15, what="every process to end")


# -- exposure: anonymous reads beyond loopback only when asked for --------------------------------

def _clean_env(**variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("KG_")}
    return {**env, **variables}


def _serve(tmp_path: Path, *args: str, **variables: str) -> subprocess.Popen[bytes]:
    command = [*jido_kg_command(), "serve", "--store", str(tmp_path / "store"),
               "--port", str(variables.pop("port", free_port())), *args]
    return subprocess.Popen(command, cwd=ROOT, env=_clean_env(**variables),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _refused(process: subprocess.Popen[bytes]) -> str:
    _, err = process.communicate(timeout=60)
    lines = err.decode().strip().splitlines()
    assert process.returncode == 2 and len(lines) == 1, err.decode()
    return lines[0]


def test_beyond_loopback_anonymous_reads_must_be_asked_for(tmp_path: Path) -> None:
    line = _refused(_serve(tmp_path, "--host", "0.0.0.0"))
    assert line.startswith("jido-kg: error: --host 0.0.0.0 ")
    assert "KG_ANONYMOUS_READ=true" in line and "--allow-anonymous-read" in line
    line = _refused(_serve(tmp_path, KG_HOST="0.0.0.0"))
    assert "KG_HOST=0.0.0.0" in line and "KG_ANONYMOUS_READ=false" in line
    assert not (tmp_path / "store").exists()  # refused before anything was made


def _starts(process: subprocess.Popen[bytes], port: int) -> None:
    try:
        wait_for(lambda: process.poll() is not None or _health(port), timeout=60,
                 what="the server to answer")
        assert process.poll() is None, process.communicate()[1].decode()
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0


def _health(port: int) -> bool:
    try:
        return call(f"http://127.0.0.1:{port}/health", timeout=2).status == 200
    except OSError:
        return False


def test_beyond_loopback_the_server_starts_when_asked_explicitly(tmp_path: Path) -> None:
    for args, variables in (((), {"KG_ANONYMOUS_READ": "true"}),
                            (("--allow-anonymous-read",), {}),
                            ((), {"KG_ANONYMOUS_READ": "false"})):
        port = free_port()
        _starts(_serve(tmp_path, *args, KG_HOST="0.0.0.0", port=str(port), **variables), port)
    # On loopback nothing needs saying.
    port = free_port()
    _starts(_serve(tmp_path, "--host", "127.0.0.1", port=str(port)), port)

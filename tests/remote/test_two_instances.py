"""Two `jido-kg serve` instances on one Oxigraph server, driven only through the HTTP API (/v1).

Both instances run at once (`KG_BACKEND=remote`, each with its own store directory for its
recall index). What instance A remembers, instance B recalls; a session started on A is handed
off to B and continues there. There is no snapshot/restore route, so the hand-off copies the
session through the routes that exist: A's working context, conversation and pending memories
are read with GET and re-created on B under the same session id.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import RunningServer
from tests.remote.conftest import OxigraphServer

TOKEN = "two-instances-writer"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


def call(server: RunningServer, method: str, path: str, body: object = None) -> Any:
    """One JSON request; returns the decoded answer (None for 204)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers=HEADERS)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{method} {path}: {exc.code} {exc.read().decode()}") from None
    return json.loads(raw) if raw else None


def instance(start: Callable[..., RunningServer], directory: Path,
             oxigraph: OxigraphServer, **env: str) -> RunningServer:
    """A `jido-kg serve --store DIR` configured for the remote backend on `oxigraph`."""
    env = {"KG_BACKEND": "remote", "KG_REMOTE_DIALECT": "oxigraph",
           "KG_REMOTE_QUERY_URL": f"{oxigraph.url}/query",
           "KG_REMOTE_UPDATE_URL": f"{oxigraph.url}/update",
           "KG_REMOTE_GRAPH_STORE_URL": f"{oxigraph.url}/store",
           "KG_TOKENS": json.dumps({TOKEN: "write"}), **env}
    return start(directory, extra_env=env)


def recalled(server: RunningServer, project: str, query: str) -> list[str]:
    answer = call(server, "POST", f"/v1/projects/{project}/recall",
                  {"query": query, "mode": "text"})
    return [hit["memory"]["content"] for hit in answer["hits"]]


def recalled_soon(server: RunningServer, project: str, query: str, expected: list[str],
                  *, within: float = 10.0) -> list[str]:
    """Recall until the answer is `expected` or `within` seconds passed; the last answer."""
    deadline = time.monotonic() + within
    while (found := recalled(server, project, query)) != expected and (
            time.monotonic() < deadline):
        time.sleep(0.1)
    return found


def hand_off(source: RunningServer, target: RunningServer, session_id: str,
             project: str) -> None:
    """Re-create a session on `target` from what `source` serves about it."""
    base = f"/v1/sessions/{session_id}"
    context = call(source, "GET", base + "/context")["items"]
    messages = call(source, "GET", base + "/messages")["messages"]
    pending = call(source, "GET", base + "/pending?threshold=0")["items"]
    call(target, "POST", "/v1/sessions", {"project": project, "session_id": session_id})
    for item in context:
        call(target, "PUT", f"{base}/context/{item['key']}",
             {"value": item["value"], "source": item["source"],
              "confidence": item["confidence"], "type": item["type"]})
    for message in messages:
        call(target, "POST", base + "/messages",
             {"role": message["role"], "content": message["content"]})
    for item in pending:
        staged = {k: item[k] for k in ("content", "type", "confidence", "source_type",
                                       "rationale")}
        if item["suggested_by"] != "agent":
            staged["importance_score"] = item["importance_score"]
        call(target, "POST", base + "/pending", staged)


def test_remembered_on_a_is_recalled_on_b_and_a_session_moves_from_a_to_b(
    server_factory: Callable[..., RunningServer],
    oxigraph_factory: Callable[[], OxigraphServer],
    tmp_path: Path,
) -> None:
    oxigraph = oxigraph_factory()
    a = instance(server_factory, tmp_path / "a", oxigraph)
    made = call(a, "POST", "/v1/projects/acme/memories",
                {"content": "The database is Postgres on port 5433", "type": "fact"})
    # A session starts on A.
    call(a, "POST", "/v1/sessions", {"project": "acme", "session_id": "moving", "agent": "coder"})
    call(a, "PUT", "/v1/sessions/moving/context/current_task",
         {"value": "migrate the database", "source": "explicit"})
    call(a, "POST", "/v1/sessions/moving/messages",
         {"role": "user", "content": "Move the orders table to the new cluster"})
    call(a, "POST", "/v1/sessions/moving/pending",
         {"content": "Orders live in the orders_v2 table", "type": "fact"})

    # B joins (its recall index catches up with the server on start-up); both keep running.
    b = instance(server_factory, tmp_path / "b", oxigraph)
    for server in (a, b):
        assert call(server, "GET", "/health")["store"].startswith(
            f"RemoteStore({oxigraph.url}/query")
    # Long-term memory is shared: remembered through A, recalled and read through B.
    assert recalled(b, "acme", "postgres port") == ["The database is Postgres on port 5433"]
    assert call(b, "GET", f"/v1/projects/acme/memories/{made['id']}")["content"] == (
        "The database is Postgres on port 5433")

    # The session is handed off to B and continues there.
    hand_off(a, b, "moving", "acme")
    session = call(b, "GET", "/v1/sessions/moving")
    assert (session["project"], session["status"]) == ("acme", "active")
    context = {i["key"]: i["value"] for i in call(b, "GET", "/v1/sessions/moving/context")["items"]}
    assert context == {"current_task": "migrate the database"}
    messages = call(b, "GET", "/v1/sessions/moving/messages")["messages"]
    assert [m["content"] for m in messages] == ["Move the orders table to the new cluster"]
    call(b, "PUT", "/v1/sessions/moving/context/active_file", {"value": "orders/models.py"})
    call(b, "POST", "/v1/sessions/moving/messages",
         {"role": "user", "content": "Which database holds the orders?"})
    assembled = call(b, "POST", "/v1/sessions/moving/context-assembly",
                     {"query_hint": "database port"})
    assert "migrate the database" in assembled["prompt"]
    assert "orders/models.py" in assembled["prompt"]
    assert "Postgres on port 5433" in assembled["prompt"]  # A's memory, recalled on B
    closed = call(b, "POST", "/v1/sessions/moving/close")
    assert closed["session"]["status"] == "closed"
    [promoted] = closed["promotion"]["promoted"]

    # What the session promoted on B is read through A (the server is the one truth).
    memory = call(a, "GET", f"/v1/projects/acme/memories/{promoted}")
    assert memory["content"] == "Orders live in the orders_v2 table"


def test_running_instances_catch_up_with_each_other(
    server_factory: Callable[..., RunningServer],
    oxigraph_factory: Callable[[], OxigraphServer],
    tmp_path: Path,
) -> None:
    """Both instances run throughout; nothing restarts. B's index follows A's writes."""
    oxigraph = oxigraph_factory()
    a = instance(server_factory, tmp_path / "a", oxigraph, KG_INDEX_CATCH_UP_INTERVAL="0.2")
    b = instance(server_factory, tmp_path / "b", oxigraph, KG_INDEX_CATCH_UP_INTERVAL="0.2")
    assert recalled(b, "acme", "redis cache") == []

    made = call(a, "POST", "/v1/projects/acme/memories",
                {"content": "The cache is Redis on port 6380", "type": "fact"})
    call(a, "POST", "/v1/projects/scratch/memories", {"content": "Scratch notes use Redis too"})
    assert recalled_soon(b, "acme", "redis cache", ["The cache is Redis on port 6380"]) == [
        "The cache is Redis on port 6380"]
    assert recalled_soon(b, "scratch", "redis", ["Scratch notes use Redis too"]) == [
        "Scratch notes use Redis too"]

    call(a, "POST", f"/v1/projects/acme/memories/{made['id']}/forget",
         {"reason": "moved to memcached"})
    assert recalled_soon(b, "acme", "redis cache", []) == []  # forgotten on A, hidden on B

    # Purge through A's HTTP API: the Graph Store protocol drops the project's long-term graph.
    graph = urllib.parse.quote("https://jido.ai/graph/project/scratch/long-term", safe="")
    call(a, "DELETE", f"/store?graph={graph}")
    assert recalled_soon(b, "scratch", "redis", []) == []
    assert recalled_soon(a, "scratch", "redis", []) == []  # A's index learns it the same way

    # And the other way round: B writes, A recalls.
    call(b, "POST", "/v1/projects/acme/memories", {"content": "The queue is NATS JetStream"})
    assert recalled_soon(a, "acme", "nats queue", ["The queue is NATS JetStream"]) == [
        "The queue is NATS JetStream"]

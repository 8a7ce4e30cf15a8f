"""The MCP endpoint's route around Flask (api/mcp_route.py) against the Flask view it stands for.

A real app over a real in-memory store, called through its whole WSGI chain (the query fast path,
the route, Flask) by Flask's test client: which requests the route takes, and that its answers,
its refusals left to the view, a large answer and a failing call are those of the view.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import EnvironBuilder

from api import create_app
from api.mcp_route import McpRoute
from api.services import close_app
from api.transport import GZIP_MIN_BYTES
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore
from kg.system_knowledge import ensure_ontology
from tests.agent.conftest import TOKENS

ORIGIN = "https://app.example"
MCP = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def message(method: str, name: str | None = None, **arguments: Any) -> dict[str, Any]:
    """A JSON-RPC request of the 2026-07-28 revision (the SDK client's)."""
    params: dict[str, Any] = {"_meta": META}
    if name is not None:
        params |= {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def headers(token: str | None = None, body: Any = None, **extra: str) -> dict[str, str]:
    """MCP request headers: a bearer token, the routing headers of the message (the 2026-07-28
    revision wants them to match its method and tool name)."""
    found = {**MCP, **({"Authorization": f"Bearer {token}"} if token else {}), **extra}
    if isinstance(body, dict):
        found["Mcp-Method"] = body["method"]
        if "name" in body["params"]:
            found["Mcp-Name"] = body["params"]["name"]
    return found


@pytest.fixture(scope="module")
def app() -> Iterator[Flask]:
    """One app for the module: tokens, CORS for ORIGIN, a small body cap."""
    store = EmbeddedStore(None)
    ensure_ontology(store)
    application = create_app(Settings(store=MEMORY_STORE, tokens=TOKENS, cors_origins=[ORIGIN],
                                      max_body_bytes=64 * 1024), store=store)
    application.config["TESTING"] = True
    yield application
    close_app(application)
    store.close()


@pytest.fixture(scope="module")
def client(app: Flask) -> FlaskClient:
    """Flask's test client of the module's app (its WSGI chain whole, the route included)."""
    return app.test_client()


def route_of(app: Flask) -> McpRoute:
    """The route, where install() put it: inside the query fast path, in front of Flask."""
    found = app.wsgi_app.inner  # type: ignore[attr-defined]
    assert isinstance(found, McpRoute)
    return found


def takes(app: Flask, path: str, body: Any, *, method: str = "POST", **sent: str) -> bool:
    """Whether the route answers this request itself (else Flask does)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    environ = EnvironBuilder(path=path, method=method, data=data, headers=list(sent.items()),
                             content_type="application/json").get_environ()
    return route_of(app).checked(environ) is not None


def test_plain_allowed_calls_take_the_route_and_every_other_goes_to_the_view(
        app: Flask) -> None:
    recall = message("tools/call", "recall", query="deploys")
    remember = message("tools/call", "remember", content="Deploys run on Fridays")
    assert takes(app, "/mcp/demo", remember, **headers("w-token"))
    assert takes(app, "/mcp/demo", remember, **headers("demo-writer"))  # write@demo
    assert takes(app, "/mcp/demo", recall, **headers("r-token"))
    assert takes(app, "/mcp/demo", recall, **headers())  # anonymous reads are on here
    assert takes(app, "/mcp/demo?agent=bot-1", recall, **headers("r-token"))
    assert takes(app, "/mcp/demo", message("tools/list"), **headers())
    assert takes(app, "/mcp/demo", b"not json", **headers())  # the SDK's parse error
    # The view's: CORS, refusals of any kind, another method, a body over the cap.
    assert not takes(app, "/mcp/demo", recall, **headers("r-token", Origin=ORIGIN))
    assert not takes(app, "/mcp/demo", remember, **headers())
    assert not takes(app, "/mcp/demo", remember, **headers("r-token"))
    assert not takes(app, "/mcp/demo", [recall, remember], **headers("r-token"))
    assert not takes(app, "/mcp/other", recall, **headers("demo-writer"))
    assert not takes(app, "/mcp/demo", recall, **headers("not-a-token"))
    assert not takes(app, "/mcp/not a project", recall, **headers("r-token"))
    assert not takes(app, "/mcp/demo?agent=no%20spaces", recall, **headers("r-token"))
    assert not takes(app, "/mcp/demo", recall, method="PUT", **headers("r-token"))
    huge = message("tools/call", "recall", query="x" * (64 * 1024))
    assert not takes(app, "/mcp/demo", huge, **headers("r-token"))


def test_refusals_left_to_the_view_keep_the_one_json_error_shape(client: FlaskClient) -> None:
    remember = message("tools/call", "remember", content="Deploys run on Fridays")
    # The route read the body before it found the write: the view reads it again and refuses.
    refused = client.post("/mcp/demo", json=remember, headers=headers("r-token"))
    assert refused.status_code == 403
    assert refused.get_json()["error"]["code"] == "forbidden"
    assert client.post("/mcp/demo", json=remember, headers=headers()).status_code == 401
    big = client.post("/mcp/demo", json=message("tools/call", "recall", query="x" * 70_000),
                      headers=headers("r-token"))
    assert big.status_code == 413 and big.get_json()["error"]["status"] == 413


def test_the_route_answers_as_the_view_does(client: FlaskClient) -> None:
    remember = message("tools/call", "remember", content="The billing service uses Kotlin")
    saved = client.post("/mcp/demo", json=remember, headers=headers("w-token", remember))
    assert saved.status_code == 200, saved.get_data(as_text=True)
    memory_id = saved.get_json()["result"]["structuredContent"]["result"]["memory_id"]
    for request in (message("tools/list"),
                    message("tools/call", "recall", query="billing Kotlin")):
        plain = client.post("/mcp/demo", json=request, headers=headers("r-token", request))
        cors = client.post("/mcp/demo", json=request,
                           headers=headers("r-token", request, Origin=ORIGIN))
        assert plain.status_code == cors.status_code == 200
        assert plain.content_type == cors.content_type == "application/json"
        if request["method"] == "tools/list":
            assert plain.get_json() == cors.get_json()
        else:
            for answer in (plain, cors):
                found = answer.get_json()["result"]["structuredContent"]["result"]["memories"]
                assert [m["memory_id"] for m in found] == [memory_id]
        assert "Access-Control-Allow-Origin" not in plain.headers
        assert cors.headers["Access-Control-Allow-Origin"] == ORIGIN


def test_a_large_answer_is_finished_by_flask_and_gzipped(client: FlaskClient) -> None:
    for k in range(30):
        content = f"Gzip check {k}: the archive service keeps logs " + "compressed " * 160
        remember = message("tools/call", "remember", content=content)
        done = client.post("/mcp/big", json=remember, headers=headers("w-token", remember))
        assert done.get_json()["result"]["isError"] is False
    request = message("tools/call", "recall", query="archive logs", limit=30)
    answer = client.post("/mcp/big", json=request,
                         headers=headers("r-token", request, **{"Accept-Encoding": "gzip"}))
    assert answer.status_code == 200 and answer.headers["Content-Encoding"] == "gzip"
    body = gzip.decompress(answer.get_data())
    assert len(body) >= GZIP_MIN_BYTES
    memories = json.loads(body)["result"]["structuredContent"]["result"]["memories"]
    assert len(memories) == 30


def test_a_call_that_fails_is_answered_in_the_one_json_error_shape() -> None:
    store = EmbeddedStore(None)
    ensure_ontology(store)
    app = create_app(Settings(store=MEMORY_STORE, tokens=TOKENS), store=store)
    try:
        app.extensions["jido_kg_mcp"].close()  # as in shutdown: the endpoint takes no call
        environ = EnvironBuilder(path="/mcp/demo", method="POST",
                                 headers=list(headers("r-token").items()),
                                 json=message("tools/list")).get_environ()
        assert route_of(app).checked(environ) is not None
        answer = app.test_client().post("/mcp/demo", json=message("tools/list"),
                                        headers=headers("r-token", message("tools/list")))
        assert answer.status_code == 503
        assert answer.get_json()["error"]["code"] == "store_unavailable"
    finally:
        close_app(app)
        store.close()

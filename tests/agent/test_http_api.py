"""The memory HTTP API through Flask's test client and a real server on loopback.

HTTP counterparts of seed 004 §5.5: context assembly includes working context and long-term
memories within budget (test_session_flow_over_http), memory tools over HTTP
(test_remember_recall_forget), response processing shows in the next assembly
(test_session_flow_over_http), close → promotion → recall in the next session
(test_promotion_across_sessions_live, real server). Also: the error shape on every kind of
failure, auth and project scoping, and the OpenAPI document against Flask's url_map.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.agent.conftest import DEMO, READ, TOKENS, WRITE
from tests.conftest import RunningServer


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "code", "message", "details"}
    assert body["error"]["status"] == status
    return body["error"]  # type: ignore[no-any-return]


def test_session_flow_over_http(api: FlaskClient) -> None:
    ok(api.post("/v1/sessions", json={"project": "demo", "session_id": "s1", "agent": "bot"},
                headers=WRITE), 201)
    ok(api.post("/v1/projects/demo/memories", json={"content": "Staging runs on Fly.io",
                                                    "confidence": 0.9}, headers=WRITE), 201)
    ok(api.put("/v1/sessions/s1/context/current_task", json={"value": "migrate staging"},
               headers=WRITE))
    ok(api.post("/v1/sessions/s1/messages", json={"role": "user", "content": "where is staging?"},
                headers=WRITE), 201)
    inferred = ok(api.post("/v1/sessions/s1/responses",
                           json={"content": "This is a Go project; editing deploy.go."},
                           headers=WRITE))
    assert inferred == {"inferred": {"active_file": "deploy.go", "primary_language": "Go"}}
    body = ok(api.post("/v1/sessions/s1/context-assembly",
                       json={"query_hint": "staging host", "token_budget": 4000}, headers=READ))
    assert "- **Current task**: migrate staging" in body["prompt"]
    assert "- **Active file**: deploy.go" in body["prompt"]
    assert "Staging runs on Fly.io" in body["prompt"]
    assert body["token_counts"]["total"] <= 4000 and body["budget"]["total"] == 4000
    listed = ok(api.get("/v1/sessions/s1/context", headers=READ))
    assert {i["key"] for i in listed["items"]} == {"current_task", "active_file",
                                                   "primary_language"}
    assert ok(api.get("/v1/sessions/s1/messages", headers=READ))["messages"][0]["role"] == "user"
    assert api.delete("/v1/sessions/s1/context/active_file", headers=WRITE).status_code == 204
    error(api.get("/v1/sessions/s1/context/active_file", headers=READ), 404)
    ok(api.post("/v1/sessions/s1/pause", headers=WRITE))
    assert error(api.post("/v1/sessions/s1/messages", json={"role": "user", "content": "x"},
                          headers=WRITE), 409)["code"] == "session_state"
    ok(api.post("/v1/sessions/s1/resume", headers=WRITE))
    assert ok(api.get("/v1/sessions/s1", headers=READ))["status"] == "active"


def test_pending_and_promotion(api: FlaskClient) -> None:
    ok(api.post("/v1/sessions", json={"project": "demo", "session_id": "s2"}, headers=WRITE), 201)
    decision = ok(api.post("/v1/sessions/s2/pending", json={
        "content": "Releases are tagged vX.Y.Z", "type": "process_convention"},
        headers=WRITE), 201)
    assert decision["suggested_by"] == "agent" and decision["importance_score"] == 1.0
    assert decision["type"] == "process_convention"
    ok(api.post("/v1/sessions/s2/pending", json={"content": "maybe tabs", "importance_score": 0.2},
                headers=WRITE), 201)
    ready = ok(api.get("/v1/sessions/s2/pending", headers=READ))["items"]
    assert [i["content"] for i in ready] == ["Releases are tagged vX.Y.Z"]
    run = ok(api.post("/v1/sessions/s2/promotions", headers=WRITE))
    assert len(run["promoted"]) == 1
    memory = ok(api.get(f"/v1/projects/demo/memories/{run['promoted'][0]}", headers=READ))
    assert memory["type"] == "process_convention"
    closed = ok(api.post("/v1/sessions/s2/close", headers=WRITE))
    assert closed["session"]["status"] == "closed"
    error(api.get("/v1/sessions/s2", headers=READ), 404)


def test_remember_recall_forget(api: FlaskClient) -> None:
    created = ok(api.post("/v1/projects/demo/memories", json={
        "content": "Use httpx for HTTP calls", "type": "coding_standard"}, headers=WRITE),
        201)
    assert created["type"] == "coding_standard"
    hits = ok(api.post("/v1/projects/demo/recall", json={"query": "httpx"}, headers=READ))["hits"]
    assert [h["memory"]["id"] for h in hits] == [created["id"]]
    forgotten = ok(api.post(f"/v1/projects/demo/memories/{created['id']}/forget",
                            json={"reason": "switched to urllib3"}, headers=WRITE))
    assert forgotten["retirement_reason"] == "switched to urllib3"
    assert ok(api.post("/v1/projects/demo/recall", json={"query": "httpx"}))["hits"] == []
    error(api.get(f"/v1/projects/demo/memories/{created['id']}"), 404)
    assert error(api.post(f"/v1/projects/demo/memories/{created['id']}/forget", json={},
                          headers=WRITE), 409)["code"] == "memory_retired"


def test_errors_have_the_shape(api: FlaskClient) -> None:
    error(api.post("/v1/sessions", json={"project": "demo"}), 401)
    error(api.post("/v1/sessions", json={"project": "demo"}, headers=READ), 403)
    error(api.post("/v1/sessions", data="not json", headers=WRITE), 415)
    error(api.post("/v1/sessions", data="{", content_type="application/json", headers=WRITE), 400)
    assert error(api.post("/v1/sessions", json={"project": "demo", "confidance": 1},
                          headers=WRITE), 400)["code"] == "invalid_request"
    error(api.post("/v1/sessions", json={"project": "bad project!"}, headers=WRITE), 400)
    error(api.get("/v1/sessions/missing", headers=READ), 404)
    error(api.get("/v1/sessions/bad%20id", headers=READ), 400)
    error(api.delete("/v1/sessions", headers=WRITE), 405)
    ok(api.post("/v1/sessions", json={"project": "demo", "session_id": "dup"}, headers=WRITE), 201)
    error(api.post("/v1/sessions", json={"project": "demo", "session_id": "dup"}, headers=WRITE),
          409)
    assert error(api.get("/v1/sessions/dup/context/not_a_key", headers=READ), 400)["code"] == (
        "unknown_context_key")
    error(api.post("/v1/projects/demo/recall", json={"query": "x", "limit": 0}), 400)
    error(api.get("/v1/sessions/dup/pending?threshold=abc", headers=READ), 400)
    error(api.post("/v1/projects/demo/memories", json={"content": "x" * 3000}, headers=WRITE), 400)


def test_project_scoping(api: FlaskClient) -> None:
    ok(api.post("/v1/sessions", json={"project": "demo", "session_id": "d1"}, headers=DEMO), 201)
    ok(api.post("/v1/projects/demo/memories", json={"content": "demo fact"}, headers=DEMO), 201)
    error(api.post("/v1/sessions", json={"project": "acme", "session_id": "a1"}, headers=DEMO),
          403)
    error(api.post("/v1/projects/acme/memories", json={"content": "x"}, headers=DEMO), 403)
    ok(api.post("/v1/sessions", json={"project": "acme", "session_id": "a1"}, headers=WRITE), 201)
    error(api.put("/v1/sessions/a1/context/framework", json={"value": "x"}, headers=DEMO), 403)
    error(api.post("/v1/sessions/a1/close", headers=DEMO), 403)
    assert ok(api.get("/v1/sessions/a1", headers=WRITE))["status"] == "active"


def test_openapi_matches_url_map(api_app: Flask, api: FlaskClient) -> None:
    doc = ok(api.get("/openapi.json"))
    assert doc["openapi"] == "3.1.0"
    documented = {(path, method.upper()) for path, ops in doc["paths"].items() for method in ops}
    routed = set()
    for rule in api_app.url_map.iter_rules():
        path = re.sub(r"<(?:[a-z]+:)?([A-Za-z_]+)>", r"{\1}", rule.rule)
        routed |= {(path, m) for m in rule.methods or () if m not in ("HEAD", "OPTIONS")}
    # Every documented operation exists; every memory-API operation is documented.
    assert documented <= routed
    assert {r for r in routed if r[0].startswith("/v1/") or r[0] == "/openapi.json"} <= documented
    schemas = doc["components"]["schemas"]
    for ops in doc["paths"].values():
        for op in ops.values():
            refs = re.findall(r'"#/components/schemas/([A-Za-z]+)"', json.dumps(op))
            assert all(name in schemas for name in refs)
            assert all(r["content"]["application/json"]["schema"]["$ref"].endswith(
                "ErrorResponse") for s, r in op["responses"].items() if int(s) >= 400)


def test_promotion_across_sessions_live(server_factory: Callable[..., RunningServer]) -> None:
    server = server_factory(extra_env={"KG_TOKENS": json.dumps(TOKENS)})

    def call(method: str, path: str, body: object | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(server.url + path, data=data, method=method,
                                     headers={**WRITE, "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null")

    call("POST", "/v1/sessions", {"project": "live", "session_id": "one"})
    call("PUT", "/v1/sessions/one/context/framework", {"value": "Django", "source": "tool"})
    call("POST", "/v1/sessions/one/pending", {"content": "Never run migrations on Fridays",
                                              "type": "agent_rule"})
    closed = call("POST", "/v1/sessions/one/close")
    assert len(closed["promotion"]["promoted"]) == 2
    call("POST", "/v1/sessions", {"project": "live", "session_id": "two"})
    body = call("POST", "/v1/sessions/two/context-assembly", {"query_hint": "migrations Friday"})
    assert "- [agent_rule] (high confidence) Never run migrations on Fridays" in body["prompt"]


@pytest.mark.parametrize("path", ["/v1/sessions/x", "/v1/projects/demo/memories/nope"])
def test_reads_need_read_access_when_anonymous_read_is_off(store: Any, path: str) -> None:
    from api import create_app
    from kg.settings import MEMORY_STORE, Settings

    app = create_app(Settings(store=MEMORY_STORE, tokens=TOKENS, anonymous_read=False),
                     store=store)
    error(app.test_client().get(path), 401)

"""Property: random valid and invalid bodies on every body-taking memory route never give a 5xx,
every error has the one JSON shape, and a rejected request writes nothing (store and sessions)."""

from __future__ import annotations

import json
from typing import Any

from flask import Flask
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.memory import memory_service
from tests.agent.conftest import WRITE

ROUTES = [
    ("POST", "/v1/sessions"),
    ("PUT", "/v1/sessions/prop/context/framework"),
    ("PUT", "/v1/sessions/prop/context/not_a_key"),
    ("POST", "/v1/sessions/prop/messages"),
    ("POST", "/v1/sessions/prop/responses"),
    ("POST", "/v1/sessions/prop/pending"),
    ("POST", "/v1/sessions/prop/context-assembly"),
    ("POST", "/v1/projects/prop/memories"),
    ("POST", "/v1/projects/prop/recall"),
    ("POST", "/v1/projects/prop/memories/nope/forget"),
]
FIELDS = ["project", "session_id", "agent", "value", "source", "confidence", "memory_type",
          "role", "content", "importance_score", "rationale", "query", "types", "limit", "mode",
          "min_confidence", "query_hint", "token_budget", "include_memories", "reason", "bogus"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
                    st.sampled_from(["fact", "user", "tool", "demo", "hybrid", "x" * 3000, "",
                                     " "]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
bodies = st.one_of(st.dictionaries(st.sampled_from(FIELDS), values, max_size=6), values)
raw = st.one_of(st.binary(max_size=60), st.just(b"{"), st.just(b"[]"), st.just(b'{"a":'))


def snapshot(app: Flask) -> tuple[int, str]:
    with app.app_context():
        service = memory_service()
        quads = len(list(service.store.quads(None, None, None, None)))
        state = json.dumps(service.sessions.snapshot("prop"), sort_keys=True, default=str)
    return quads, state


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(route=st.sampled_from(ROUTES), body=bodies, garbage=raw, use_raw=st.booleans(),
       json_type=st.booleans())
def test_no_5xx_and_rejections_write_nothing(api_app: Flask, route: tuple[str, str], body: Any,
                                             garbage: bytes, use_raw: bool,
                                             json_type: bool) -> None:
    client = api_app.test_client()
    with api_app.app_context():
        sessions = memory_service().sessions
        if "prop" not in sessions.list():
            memory_service().start_session("prop", project="prop")
    before = snapshot(api_app)
    data = garbage if use_raw else json.dumps(body).encode()
    ctype = "application/json" if json_type else "text/plain"
    method, path = route
    response = client.open(path, method=method, data=data, content_type=ctype, headers=WRITE)
    assert response.status_code < 500, response.get_data(as_text=True)
    if response.status_code >= 400:
        err = response.get_json()["error"]
        assert set(err) == {"status", "code", "message", "details"}
        assert err["status"] == response.status_code
        assert snapshot(api_app) == before

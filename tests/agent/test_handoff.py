"""Session hand-off between two service instances on one store, through the HTTP API."""

from __future__ import annotations

from flask.testing import FlaskClient

from api import create_app
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore
from tests.agent.conftest import DEMO, READ, TOKENS, WRITE
from tests.test_service import assert_error_shape


def _instance(store: EmbeddedStore) -> FlaskClient:
    app = create_app(Settings(store=MEMORY_STORE, tokens=TOKENS), store=store)
    app.config["TESTING"] = True
    return app.test_client()


def test_handoff_moves_the_whole_session_to_another_instance(store: EmbeddedStore) -> None:
    a, b = _instance(store), _instance(store)
    r = a.post("/v1/sessions", json={"project": "demo", "session_id": "s-1"}, headers=WRITE)
    assert r.status_code == 201
    a.put("/v1/sessions/s-1/context/framework", json={"value": "Flask", "source": "explicit"},
          headers=WRITE)
    a.post("/v1/sessions/s-1/messages", json={"role": "user", "content": "hello"}, headers=WRITE)
    kept = a.get("/v1/sessions/s-1/snapshot", headers=READ)
    assert kept.status_code == 200 and a.get("/v1/sessions/s-1", headers=READ).status_code == 200

    moved = a.post("/v1/sessions/s-1/handoff", headers=WRITE)
    assert moved.status_code == 200
    snapshot = moved.json["snapshot"]  # type: ignore[index]
    assert_error_shape(a.get("/v1/sessions/s-1", headers=READ), 404)

    restored = b.post("/v1/session-snapshots", json={"snapshot": snapshot}, headers=WRITE)
    assert restored.status_code == 201, restored.json
    assert restored.json["messages"] == 1 and restored.json["context_items"] == 1  # type: ignore[index]
    item = b.get("/v1/sessions/s-1/context/framework", headers=READ)
    assert item.status_code == 200 and item.json["value"] == "Flask"  # type: ignore[index]
    assert b.post("/v1/sessions/s-1/close", headers=WRITE).status_code == 200


def test_restore_refuses_bad_snapshots_duplicates_and_foreign_projects(
    store: EmbeddedStore,
) -> None:
    a = _instance(store)
    a.post("/v1/sessions", json={"project": "other", "session_id": "s-2"}, headers=WRITE)
    snapshot = a.get("/v1/sessions/s-2/snapshot", headers=READ).json["snapshot"]  # type: ignore[index]
    assert_error_shape(a.post("/v1/session-snapshots", json={"snapshot": snapshot},
                              headers=WRITE), 409)
    assert_error_shape(a.post("/v1/session-snapshots", json={"snapshot": {"version": 99}},
                              headers=WRITE), 400)
    b = _instance(store)
    assert_error_shape(b.post("/v1/session-snapshots", json={"snapshot": snapshot},
                              headers=DEMO), 403)
    assert_error_shape(b.post("/v1/session-snapshots", json={"snapshot": snapshot}), 401)
    assert_error_shape(b.get("/v1/sessions/s-2", headers=READ), 404)

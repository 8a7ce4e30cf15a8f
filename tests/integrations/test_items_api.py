"""The HTTP routes under the adapters: remember with an item, the memory listing, namespaces,
recall of items, and messages with items (pop, clear, snapshots), through Flask's test client;
and what they write conforms to the SHACL shapes and to the OWL ontology."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from kg.longterm import LongTermMemory
from kg.longterm.items import Item
from kg.owl_check import check_ontology
from kg.resources import ontology_path
from kg.store import EmbeddedStore
from tests.agent.conftest import DEMO, READ, WRITE
from tests.longterm.conftest import Clock, export_turtle, shacl_report, utc


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.get_data(as_text=True)
    return response.get_json()


def error(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error"} and body["error"]["status"] == status
    return body["error"]  # type: ignore[no-any-return]


def put(api: FlaskClient, namespace: str, key: str, value: Any, **extra: Any) -> Any:
    return ok(api.post("/v1/projects/demo/memories", headers=WRITE,
                       json={"namespace": namespace, "key": key, "value": value, **extra}), 201)


def listing(api: FlaskClient, **params: Any) -> Any:
    return ok(api.get("/v1/projects/demo/memories", query_string=params, headers=READ))


def test_an_item_is_a_memory_with_its_address_and_exact_value(api: FlaskClient) -> None:
    first = put(api, "memories.alice", "tea", {"content": "Likes green tea", "n": 1})
    assert (first["content"], first["type"], first["namespace"], first["key"],
            first["value"]) == ("Likes green tea", "fact", "memories.alice", "tea",
                                {"content": "Likes green tea", "n": 1})
    second = put(api, "memories.alice", "tea", {"z": 1, "a": [None, "ü"]}, type="convention")
    assert second["content"] == '{"a":[null,"ü"],"z":1}' and second["type"] == "convention"
    assert list(second["value"]) == ["z", "a"]
    error(api.get(f"/v1/projects/demo/memories/{first['id']}", headers=READ), 404)  # replaced
    read = ok(api.get(f"/v1/projects/demo/memories/{second['id']}", headers=READ))
    assert (read["namespace"], read["key"], read["value"]) == (
        "memories.alice", "tea", {"z": 1, "a": [None, "ü"]})
    gone = ok(api.post(f"/v1/projects/demo/memories/{second['id']}/forget", json={},
                       headers=WRITE))
    assert gone["key"] == "tea" and gone["retired_at"]
    assert listing(api, namespace="memories.alice", key="tea")["memories"] == []
    plain = ok(api.post("/v1/projects/demo/memories", json={"content": "Likes green tea"},
                        headers=WRITE), 201)
    assert plain["namespace"] is None and plain["key"] is None and plain["value"] is None
    again = put(api, "memories.alice", "tea2", {"content": "Likes green tea"})
    assert again["id"] != plain["id"]  # an item is never merged into an equal plain memory


def test_the_listing_is_newest_first_by_type_namespace_and_value(api: FlaskClient) -> None:
    ids = [ok(api.post("/v1/projects/demo/memories", headers=WRITE,
                       json={"content": f"plain {i}", "type": kind}), 201)["id"]
           for i, kind in enumerate(["fact", "decision", "fact"])]
    items = [put(api, ns, key, {"content": f"item {key}", "n": n})["id"]
             for ns, key, n in [("a.b", "k1", 1), ("a.bc", "k2", 2), ("a", "k3", 3)]]
    everything = listing(api)
    assert [m["id"] for m in everything["memories"]] == [*reversed(items), *reversed(ids)]
    assert everything["next_offset"] is None
    first = listing(api, limit=2)
    assert [m["id"] for m in first["memories"]] == items[::-1][:2] and first["next_offset"] == 2
    rest = listing(api, limit=2, offset=2)
    assert [m["id"] for m in rest["memories"]] == [items[0], ids[2]]
    assert [m["id"] for m in listing(api, type="decision")["memories"]] == [ids[1]]
    assert [m["key"] for m in listing(api, namespace_prefix="")["memories"]] == [
        "k3", "k2", "k1"]
    assert [m["key"] for m in listing(api, namespace_prefix="a.b")["memories"]] == ["k1"]
    assert [m["key"] for m in listing(
        api, namespace_prefix="a", filter=json.dumps({"n": {"$gte": 2}}))["memories"]] == [
        "k3", "k2"]
    assert [m["key"] for m in listing(api, namespace="a.bc", key="k2")["memories"]] == ["k2"]
    assert ok(api.get("/v1/projects/demo/namespaces", headers=READ)) == {
        "namespaces": ["a", "a.b", "a.bc"]}
    assert ok(api.get("/v1/projects/demo/namespaces?prefix=a.b", headers=READ)) == {
        "namespaces": ["a.b"]}  # by labels: a.bc is not below a.b


def test_listing_and_item_errors_have_the_shape(api: FlaskClient) -> None:
    for params in [{"limit": 0}, {"limit": 1001}, {"limit": "x"}, {"offset": -1},
                   {"filter": "{"}, {"filter": "[1]"}, {"filter": '{"n": {"$near": 1}}'},
                   {"namespace": "a"}, {"type": "opinion"}, {"namespace_prefix": "a..b"}]:
        error(api.get("/v1/projects/demo/memories", query_string=params, headers=READ), 400)
    assert error(api.get("/v1/projects/demo/memories?filter=%7B%22n%22%3A%7B%22%24x%22%3A1%7D%7D",
                         headers=READ), 400)["code"] == "invalid_filter"
    for body in [{"namespace": "a", "key": "k"}, {"value": {"n": 1}},
                 {"namespace": "a", "value": {"n": 1}}, {"namespace": "a..b", "key": "k",
                                                         "value": {}},
                 {"namespace": "a", "key": "k", "value": [1]}, {}]:
        error(api.post("/v1/projects/demo/memories", json=body, headers=WRITE), 400)
    error(api.post("/v1/projects/demo/recall", json={"query": "x", "filter": {}},
                   headers=READ), 400)
    error(api.post("/v1/projects/acme/memories", headers=DEMO,
                   json={"namespace": "a", "key": "k", "value": {}}), 403)
    assert listing(api)["memories"] == []  # nothing was written


def test_recall_of_items_picks_items_under_the_prefix(api: FlaskClient) -> None:
    ok(api.post("/v1/projects/demo/memories", json={"content": "Orders ship from Leeds"},
                headers=WRITE), 201)
    put(api, "shop.orders", "ship", {"content": "Orders ship from York", "n": 1})
    put(api, "shop.returns", "ship", {"content": "Returns ship back to Leeds", "n": 2})
    def hits(**body: Any) -> list[tuple[str, str]]:
        found = ok(api.post("/v1/projects/demo/recall", json={"query": "ship", **body},
                            headers=READ))["hits"]
        return [(h["memory"]["namespace"], h["memory"]["content"]) for h in found]
    assert len(hits()) == 3
    assert {ns for ns, _ in hits(namespace_prefix="")} == {"shop.orders", "shop.returns"}
    assert hits(namespace_prefix="shop.orders") == [("shop.orders", "Orders ship from York")]
    assert hits(namespace_prefix="shop", filter={"n": 2}) == [
        ("shop.returns", "Returns ship back to Leeds")]
    assert len(hits(namespace_prefix="shop", offset=1)) == 1


def test_messages_keep_their_items_through_pop_clear_and_snapshots(api: FlaskClient) -> None:
    ok(api.post("/v1/sessions", json={"project": "demo", "session_id": "chat"}, headers=WRITE),
       201)
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"ü\": 1}"}
    ok(api.post("/v1/sessions/chat/messages", json={"role": "user", "content": "hi"},
                headers=WRITE), 201)
    added = ok(api.post("/v1/sessions/chat/messages", headers=WRITE,
                        json={"role": "assistant", "content": "f({\"ü\": 1})", "item": call}), 201)
    assert added["item"] == call
    listed = ok(api.get("/v1/sessions/chat/messages", headers=READ))["messages"]
    assert [m["item"] for m in listed] == [None, call]
    snapshot = ok(api.post("/v1/sessions/chat/handoff", headers=WRITE))["snapshot"]
    ok(api.post("/v1/session-snapshots", json={"snapshot": snapshot}, headers=WRITE), 201)
    assert [m["item"] for m in ok(api.get("/v1/sessions/chat/messages", headers=READ))[
        "messages"]] == [None, call]
    assert ok(api.post("/v1/sessions/chat/messages/pop", headers=WRITE))["message"]["item"] == call
    assert ok(api.post("/v1/sessions/chat/messages/pop", headers=WRITE))["message"][
        "content"] == "hi"
    assert ok(api.post("/v1/sessions/chat/messages/pop", headers=WRITE)) == {"message": None}
    ok(api.post("/v1/sessions/chat/messages", json={"role": "user", "content": "again"},
                headers=WRITE), 201)
    assert api.delete("/v1/sessions/chat/messages", headers=WRITE).status_code == 204
    assert ok(api.get("/v1/sessions/chat/messages", headers=READ)) == {"messages": [],
                                                                       "tokens": 0}
    error(api.post("/v1/sessions/chat/messages", headers=WRITE,
                   json={"role": "user", "content": "x", "item": [1]}), 400)
    error(api.post("/v1/sessions/chat/messages/pop", headers=READ), 403)
    error(api.delete("/v1/sessions/nope/messages", headers=WRITE), 404)


def test_what_items_write_conforms_to_the_shapes_and_the_ontology(store: EmbeddedStore,
                                                                  tmp_path: Path) -> None:
    # Whole seconds: HermiT's xsd:dateTime takes at most milliseconds (the existing long-term
    # conformance test writes with the same settable clock).
    clock = Clock(utc(2025, 3, 1, 9))
    ltm = LongTermMemory(store, clock=clock)
    ltm.remember("Likes green tea", project="shop", session="s1",
                 item=Item("memories.alice", "tea", {"content": "Likes green tea"}))
    clock.now += timedelta(minutes=1)
    newer = ltm.remember("Likes black tea", project="shop", session="s1", agent="coder",
                         item=Item("memories.alice", "tea", {"content": "Likes black tea"}))
    ltm.remember('{"a":1}', project="shop", session="s1", item=Item("x", "", {"a": 1}))
    clock.now += timedelta(minutes=1)
    ltm.forget(newer.memory.id, project="shop", reason="deleted from the LangGraph store")
    ltm.close()
    conforms, report = shacl_report(store)
    assert conforms, report
    data = export_turtle(store, tmp_path / "data.ttl")
    result = check_ontology([ontology_path(), data])
    assert result.ok, result.summary()

"""One name for a memory's type at every edge: `type`, with `memory_type` as a request alias.

HTTP bodies (remember, pending items, working-context items) accept `type` or the older
`memory_type`; both in one body is a 400 naming both. Responses carry `type` only. The OpenAPI
document says `type` and describes the alias; every pydantic model of api.models names a
memory-type field `type` (`types` for the recall filter). The tools' side is in
tests/longterm/test_tools.py and tests/agent/test_mcp.py.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import types as pytypes
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, Union, get_args, get_origin
from urllib.parse import quote

import pytest
from flask.testing import FlaskClient
from pydantic import AliasChoices, BaseModel

import api.models
from kg.memory import memory_iri
from kg.terms import MemoryType, SourceType
from tests.agent.conftest import READ, TOKENS, WRITE
from tests.agent.test_http_api import error, ok
from tests.conftest import RunningServer

SPELLINGS = ["type", "memory_type"]
# Every request body that carries a memory type, and a route taking it.
REQUESTS = {
    "RememberRequest": ("POST", "/v1/projects/demo/memories", {"content": "Deploys on Fridays"}),
    "PendingIn": ("POST", "/v1/sessions/t1/pending", {"content": "Deploys on Fridays"}),
    "ContextItemPut": ("PUT", "/v1/sessions/t1/context/framework", {"value": "Django"}),
}
RESPONSES = {"MemoryOut", "PendingOut", "ContextItemOut"}


def no_alias_in(body: Any) -> None:
    """No key anywhere in a response body spells a memory's type other than `type`."""
    if isinstance(body, dict):
        assert "memory_type" not in body and "suggested_type" not in body, body
        for value in body.values():
            no_alias_in(value)
    elif isinstance(body, list):
        for value in body:
            no_alias_in(value)


def classes_of(api: FlaskClient, memory_id: str) -> set[str]:
    """The rdf:type IRIs of a memory, asked through the SPARQL endpoint."""
    query = f"SELECT ?t WHERE {{ GRAPH ?g {{ <{memory_iri(memory_id).value}> a ?t }} }}"
    body = ok(api.get(f"/sparql?query={quote(query)}",
                      headers={"Accept": "application/sparql-results+json"}))
    return {row["t"]["value"] for row in body["results"]["bindings"]}


@pytest.fixture
def session(api: FlaskClient) -> str:
    ok(api.post("/v1/sessions", json={"project": "demo", "session_id": "t1"}, headers=WRITE), 201)
    return "t1"


# -- remember ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("spelling", "kind"), [("type", "decision"),
                                                ("memory_type", "coding_standard")])
def test_remember_takes_either_spelling_and_answers_type(api: FlaskClient, spelling: str,
                                                         kind: str) -> None:
    created = ok(api.post("/v1/projects/demo/memories",
                          json={"content": f"We use Postgres 16 ({spelling})", spelling: kind},
                          headers=WRITE), 201)
    assert created["type"] == kind
    no_alias_in(created)
    read = ok(api.get(f"/v1/projects/demo/memories/{created['id']}", headers=READ))
    assert read["type"] == kind
    no_alias_in(read)
    assert MemoryType(kind).iri.value in classes_of(api, created["id"])
    hits = ok(api.post("/v1/projects/demo/recall",
                       json={"query": "Postgres", "types": [kind]}, headers=READ))["hits"]
    assert [h["memory"]["id"] for h in hits] == [created["id"]]
    no_alias_in(hits)


def test_the_first_look_body_of_the_readme(api: FlaskClient) -> None:
    created = ok(api.post("/v1/projects/shop/memories",
                          json={"content": "We use Postgres 16", "type": "decision"},
                          headers=WRITE), 201)
    assert created["type"] == "decision"
    assert MemoryType.DECISION.iri.value in classes_of(api, created["id"])


# -- pending items ----------------------------------------------------------------------------


@pytest.mark.parametrize(("spelling", "kind"), [("type", "agent_rule"),
                                                ("memory_type", "process_convention")])
def test_pending_takes_either_spelling_and_promotes_the_right_class(
    api: FlaskClient, session: str, spelling: str, kind: str,
) -> None:
    staged = ok(api.post(f"/v1/sessions/{session}/pending",
                         json={"content": "Never run migrations on Fridays", spelling: kind},
                         headers=WRITE), 201)
    assert staged["type"] == kind
    no_alias_in(staged)
    listed = ok(api.get(f"/v1/sessions/{session}/pending", headers=READ))
    assert [i["type"] for i in listed["items"]] == [kind]
    no_alias_in(listed)
    promoted = ok(api.post(f"/v1/sessions/{session}/promotions", headers=WRITE))["promoted"]
    assert len(promoted) == 1
    assert ok(api.get(f"/v1/projects/demo/memories/{promoted[0]}", headers=READ))["type"] == kind
    assert MemoryType(kind).iri.value in classes_of(api, promoted[0])


# -- working-context items --------------------------------------------------------------------


@pytest.mark.parametrize(("spelling", "kind"), [("type", "decision"),
                                                ("memory_type", "convention")])
def test_context_item_takes_either_spelling_and_answers_type(
    api: FlaskClient, session: str, spelling: str, kind: str,
) -> None:
    put = ok(api.put(f"/v1/sessions/{session}/context/framework",
                     json={"value": "Django", "source": "tool", spelling: kind}, headers=WRITE))
    assert put["type"] == kind
    no_alias_in(put)
    assert ok(api.get(f"/v1/sessions/{session}/context/framework", headers=READ))["type"] == kind
    listed = ok(api.get(f"/v1/sessions/{session}/context", headers=READ))
    assert [i["type"] for i in listed["items"]] == [kind]
    no_alias_in(listed)
    # Without a type the item's own inference answers, under the same name.
    inferred = ok(api.put(f"/v1/sessions/{session}/context/active_file",
                          json={"value": "orders.py"}, headers=WRITE))
    assert "type" in inferred and inferred["type"] is None
    # The type given is the class the item is promoted as.
    promoted = ok(api.post(f"/v1/sessions/{session}/close", headers=WRITE))["promotion"]
    classes = set().union(*(classes_of(api, mid) for mid in promoted["promoted"]))
    assert MemoryType(kind).iri.value in classes


# -- both spellings ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", sorted(REQUESTS))
def test_both_spellings_are_a_400_naming_both(api: FlaskClient, session: str,
                                              model: str) -> None:
    method, path, body = REQUESTS[model]
    with api.application.app_context():
        from api.memory import memory_service
        before = (len(list(memory_service().store.quads(None, None, None, None))),
                  json.dumps(memory_service().sessions.snapshot(session), sort_keys=True,
                             default=str))
    for values in (("fact", "fact"), ("decision", "fact")):
        sent = {**body, "type": values[0], "memory_type": values[1]}
        err = error(api.open(path, method=method, json=sent, headers=WRITE), 400)
        assert err["code"] == "invalid_request"
        assert "'type'" in err["message"] and "'memory_type'" in err["message"], err
        assert model in err["message"]
        assert [e["type"] for e in err["details"]["errors"]] == ["conflicting_alias"]
    with api.application.app_context():
        after = (len(list(memory_service().store.quads(None, None, None, None))),
                 json.dumps(memory_service().sessions.snapshot(session), sort_keys=True,
                            default=str))
    assert after == before


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_bad_value_is_reported_under_the_spelling_sent(api: FlaskClient,
                                                         spelling: str) -> None:
    err = error(api.post("/v1/projects/demo/memories",
                         json={"content": "x", spelling: "facts"}, headers=WRITE), 400)
    assert err["code"] == "invalid_request"
    assert [e["loc"] for e in err["details"]["errors"]] == [[spelling]]


def test_recall_filter_is_the_list_types(api: FlaskClient) -> None:
    ok(api.post("/v1/projects/demo/memories", json={"content": "Use ruff", "type": "convention"},
                headers=WRITE), 201)
    ok(api.post("/v1/projects/demo/memories", json={"content": "ruff is slow on CI",
                                                    "type": "risk"}, headers=WRITE), 201)
    hits = ok(api.post("/v1/projects/demo/recall",
                       json={"query": "ruff", "types": ["risk"]}, headers=READ))["hits"]
    assert [h["memory"]["type"] for h in hits] == ["risk"]
    # A single `type` is not the recall filter: an unknown field, as before.
    err = error(api.post("/v1/projects/demo/recall", json={"query": "ruff", "type": "risk"},
                         headers=READ), 400)
    assert err["details"]["errors"][0]["type"] == "extra_forbidden"


# -- the OpenAPI document ---------------------------------------------------------------------


def refers_to_memory_type(schema: Any) -> bool:
    return "#/components/schemas/MemoryType" in json.dumps(schema)


def test_openapi_names_type_and_describes_the_alias(api: FlaskClient) -> None:
    schemas = ok(api.get("/openapi.json"))["components"]["schemas"]
    carrying: dict[str, str] = {}
    for name, schema in schemas.items():
        for prop, sub in schema.get("properties", {}).items():
            assert prop not in ("memory_type", "suggested_type"), (name, prop)
            if refers_to_memory_type(sub):
                carrying[name] = prop
    assert carrying == {**{n: "type" for n in [*REQUESTS, *RESPONSES]},
                        "RecallRequest": "types"}
    for name in REQUESTS:
        prop = schemas[name]["properties"]["type"]
        assert "`memory_type` is accepted as an alias of `type`" in prop["description"]
        assert prop["x-aliases"] == ["memory_type"]
    for name in RESPONSES:
        prop = schemas[name]["properties"]["type"]
        assert "x-aliases" not in prop and "memory_type" not in prop.get("description", "")
        assert "type" in schemas[name]["required"]
    types = schemas["RecallRequest"]["properties"]["types"]
    assert "a memory's `type`" in types["description"]


# -- the models themselves --------------------------------------------------------------------


def all_models() -> Iterator[type[BaseModel]]:
    """Every pydantic model defined in api.models and its submodules."""
    for info in pkgutil.iter_modules(api.models.__path__, "api.models."):
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseModel) and obj.__module__ == module.__name__:
                yield obj


def memory_type_shape(annotation: Any) -> str | None:
    """"one" for MemoryType (or Optional), "list" for a list of them, else None."""
    if annotation is MemoryType:
        return "one"
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if origin in (Union, pytypes.UnionType):
        shapes = {memory_type_shape(a) for a in args} - {None}
        return shapes.pop() if len(shapes) == 1 else None
    if origin is list and args and memory_type_shape(args[0]) == "one":
        return "list"
    return None


def test_every_memory_type_field_is_named_type() -> None:
    models = list(all_models())
    assert {"RememberRequest", "PendingIn", "ContextItemPut", "MemoryOut", "PendingOut",
            "ContextItemOut", "RecallRequest"} <= {m.__name__ for m in models}
    named: dict[str, str] = {}
    for model in models:
        for mode in ("validation", "serialization"):
            props = model.model_json_schema(mode=mode).get("properties", {})
            assert "memory_type" not in props, (model.__name__, mode)
        for field, info in model.model_fields.items():
            assert field != "memory_type" and info.alias != "memory_type"
            assert info.serialization_alias in (None, field), (model.__name__, field)
            shape = memory_type_shape(info.annotation)
            if shape is not None:
                named[f"{model.__name__}.{field}"] = field
                assert field == ("types" if shape == "list" else "type"), (model, field)
            if info.validation_alias is not None:
                # The only alias of a request field is the old spelling of a memory's type.
                assert shape == "one"
                assert isinstance(info.validation_alias, AliasChoices)
                assert info.validation_alias.choices == ["type", "memory_type"]
    assert named == {**{f"{n}.type": "type" for n in [*REQUESTS, *RESPONSES]},
                     "RecallRequest.types": "types"}


def test_responses_serialise_type_only() -> None:
    out = api.models.PendingOut(id="p1", content="c", type=MemoryType.RISK, confidence=0.5,
                                source_type=SourceType.AGENT, rationale=None, suggested_by="agent",
                                importance_score=1.0)
    assert json.loads(out.model_dump_json())["type"] == "risk"
    assert "memory_type" not in out.model_dump() and "memory_type" not in out.model_dump(
        by_alias=True)
    put = api.models.ContextItemPut.model_validate_json('{"value": 1, "memory_type": "bug"}')
    assert put.model_dump(by_alias=True)["type"] == "bug"


# -- a real server ----------------------------------------------------------------------------


def test_both_spellings_on_a_real_server(server_factory: Callable[..., RunningServer]) -> None:
    server = server_factory(extra_env={"KG_TOKENS": json.dumps(TOKENS)})

    def post(path: str, body: object) -> tuple[int, Any]:
        req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                     method="POST",
                                     headers={**WRITE, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    status, made = post("/v1/projects/shop/memories",
                        {"content": "We use Postgres 16", "type": "decision"})
    assert (status, made["type"]) == (201, "decision") and "memory_type" not in made
    status, old = post("/v1/projects/shop/memories",
                       {"content": "We deploy with Ansible", "memory_type": "convention"})
    assert (status, old["type"]) == (201, "convention") and "memory_type" not in old
    status, both = post("/v1/projects/shop/memories",
                        {"content": "x", "type": "fact", "memory_type": "fact"})
    assert status == 400 and both["error"]["code"] == "invalid_request"
    assert "'type'" in both["error"]["message"] and "'memory_type'" in both["error"]["message"]

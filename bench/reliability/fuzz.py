"""Bad input: a hypothesis-driven fuzz of every route; no 5xx, no crash, rejections change nothing.

The routes come from the service's own /openapi.json (the memory API) plus the SPARQL 1.1
Protocol and Graph Store routes. After every request that could write and was rejected (4xx),
a fingerprint of the store (quad count, subjects, total literal length — access statistics
excluded, since recall legitimately updates them) must equal the one before it.
"""

from __future__ import annotations

import re
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from bench.reliability.client import TOKENS, Client, server_env
from bench.reliability.dataset import seed_store
from bench.reliability.result import CheckResult
from bench.server import ServerProcess, start_server

__all__ = ["FINGERPRINT", "Operation", "operations", "run"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One route and method, with what its body and parameters look like."""

    method: str
    path: str  # OpenAPI template, e.g. /v1/projects/{project}/memories
    fields: tuple[str, ...] = ()  # JSON body fields (from the schema)
    query: tuple[str, ...] = ()  # query parameter names
    write: bool = False  # needs a write (or admin) token
    example: str = ""  # a minimal valid JSON body built from the schema ("" = none)


FINGERPRINT = """SELECT (COUNT(*) AS ?n) (COUNT(DISTINCT ?s) AS ?subjects)
       (SUM(STRLEN(STR(?o))) AS ?length)
WHERE {
  { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } }
  FILTER (?p NOT IN (<https://jido.ai/ontology#accessCount>,
                     <https://jido.ai/ontology#lastAccessed>))
}"""

_PROTOCOL = [
    Operation("GET", "/sparql", query=("query", "default-graph-uri", "named-graph-uri")),
    Operation("POST", "/sparql", query=("query", "default-graph-uri", "named-graph-uri")),
    Operation("POST", "/update", query=("update", "using-graph-uri", "using-named-graph-uri"),
              write=True),
    Operation("GET", "/store", query=("graph", "default")),
    Operation("PUT", "/store", query=("graph", "default"), write=True),
    Operation("POST", "/store", query=("graph", "default"), write=True),
    Operation("DELETE", "/store", query=("graph", "default"), write=True),
    Operation("HEAD", "/store", query=("graph", "default")),
    Operation("GET", "/health"),
    Operation("GET", "/ontology"),
    Operation("GET", "/openapi.json"),
    Operation("POST", "/admin/backup", fields=("name",), write=True, example="{}"),
]
_SPARQL = [
    "SELECT * WHERE { ?s ?p ?o } LIMIT 5",
    "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 5",
    "ASK { ?s ?p ?o }",
    "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 5",
    "DESCRIBE <https://jido.ai/data/memory/x>",
    "SELECT * WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }",
    "INSERT DATA { GRAPH <https://jido.ai/graph/project/proj-0000/codebase> "
    "{ <urn:f> <urn:p> 1 } }",
    "DELETE WHERE { GRAPH <https://jido.ai/graph/fuzz-scratch> { ?s ?p ?o } }",
    "LOAD <http://127.0.0.1:9/x.ttl>",
    "DROP GRAPH <https://jido.ai/graph/fuzz-scratch>",
    "PREFIX : <urn:> SELECT (COUNT(*) AS ?n) WHERE { ?s :p ?o FILTER(REGEX(?o, \"(a+)+$\")) }",
]
_NASTY = ["", " ", "'", '"', "\\", "%00", "\x00", "../../etc/passwd", "} ; DROP ALL ; #",
          "proj-0000> } GRAPH ?g { ?s ?p ?o", "*", "a" * 300, "ü\u202e", "{" * 300, "null",
          "-1", "1e309", "NaN", "<script>", "' OR 1=1 --", "\"* OR content:*"]
_IDS = ["proj-0000", "proj-a", "proj-b", "fuzz-s1", "m7-0000001", "active_file"]
_TYPES = ["application/json", "application/x-www-form-urlencoded", "application/sparql-query",
          "application/sparql-update", "text/turtle", "application/n-quads", "text/plain",
          "multipart/form-data", "application/ld+json", None]
_ACCEPT = [None, "*/*", "application/json", "application/sparql-results+json", "text/csv",
           "application/sparql-results+xml", "text/turtle", "application/n-quads", "image/png",
           "text/html", "application/rdf+xml;q=0.9, */*;q=0.1"]


def operations(client: Client) -> list[Operation]:
    """The memory API's operations from /openapi.json, plus the protocol routes."""
    reply = client.request("GET", "/openapi.json")
    found: list[Operation] = []
    if reply.status == 200:
        doc = reply.json()
        schemas = doc.get("components", {}).get("schemas", {})
        for path, methods in doc.get("paths", {}).items():
            for method, op in methods.items():
                ref = (op.get("requestBody", {}).get("content", {}).get("application/json", {})
                       .get("schema", {}).get("$ref", ""))
                schema = schemas.get(ref.rsplit("/", 1)[-1], {})
                props = schema.get("properties", {})
                query = tuple(p["name"] for p in op.get("parameters", []) if p["in"] == "query")
                example = _dump(_example(schema, schemas)).decode() if ref else ""
                found.append(Operation(method.upper(), path, tuple(props), query,
                                       write="security" in op, example=example))
    known = {(o.method, o.path) for o in found}
    return found + [o for o in _PROTOCOL if (o.method, o.path) not in known]


def _example(schema: dict[str, Any], schemas: dict[str, Any]) -> Any:
    """A minimal valid value of a JSON schema: required fields only, plausible values."""
    if "$ref" in schema:
        return _example(schemas.get(schema["$ref"].rsplit("/", 1)[-1], {}), schemas)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return _example(options[0], schemas)
    if "enum" in schema:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type", "object")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: _example(props.get(k, {}), schemas) for k in schema.get("required", [])}
    return {"string": "sec-x", "integer": 1, "number": 0.5, "boolean": True,
            "array": []}.get(kind)


def _text() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(_NASTY + _IDS + _SPARQL), st.text(max_size=60),
                     st.sampled_from(_SPARQL).flatmap(
                         lambda q: st.integers(0, len(q)).map(lambda k: q[:k])))


def _json_value() -> st.SearchStrategy[Any]:
    leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                     st.floats(allow_nan=True), _text())
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=12)


@st.composite
def _request(draw: st.DrawFn, ops: list[Operation]) -> dict[str, Any]:
    op = draw(st.sampled_from(ops))
    path = re.sub(r"\{[^}]+\}", lambda _: urllib.parse.quote(
        draw(st.one_of(st.sampled_from(_IDS), _text())), safe="") or "x", op.path)
    names = [*list(op.query), "timeout", "limit", "x"]
    params = draw(st.lists(st.tuples(st.sampled_from(names), _text()), max_size=3))
    kind = draw(st.sampled_from(["none", "json", "fields", "text", "bytes"]))
    body: bytes | None = None
    if kind == "json":
        body = _dump(draw(_json_value()))
    elif kind == "fields" and op.fields:
        chosen = draw(st.lists(st.sampled_from(op.fields), max_size=len(op.fields), unique=True))
        body = _dump({f: draw(_json_value()) for f in chosen})
    elif kind == "text":
        body = draw(_text()).encode("utf-8", errors="replace")
    elif kind == "bytes":
        body = draw(st.binary(max_size=200))
    token = draw(st.sampled_from([None, "wrong-token", "", *TOKENS.values()]))
    method = draw(st.sampled_from([op.method] * 8 + ["PATCH", "OPTIONS", "DELETE"]))
    return {"method": method, "path": path, "params": params, "body": body, "token": token,
            "content_type": draw(st.sampled_from(_TYPES)), "accept": draw(st.sampled_from(_ACCEPT))}


def _dump(value: Any) -> bytes:
    import json

    return json.dumps(value, allow_nan=True).encode()


def fingerprint(client: Client) -> tuple[str, ...]:
    """A cheap fingerprint of the whole store (admin SPARQL query)."""
    reply = client.sparql(FINGERPRINT, token=TOKENS["admin"])
    if reply.status != 200:
        return ("unavailable", str(reply.status))
    row = reply.json()["results"]["bindings"][0]
    return tuple(row.get(k, {}).get("value", "0") for k in ("n", "subjects", "length"))


def run(requests: int = 10_000, *, workdir: Path, seed_value: int = 0) -> CheckResult:
    """Send `requests` generated requests; count 5xx, crashes and state-changing rejections."""
    result = CheckResult("bad input (property-based fuzz of every route)")
    started = time.perf_counter()
    store = workdir / "fuzz-store"
    seed_store(store, 200)
    holder: dict[str, ServerProcess] = {"server": start_server(store, env=server_env())}
    clients = {"client": Client(holder["server"].url, timeout=60)}
    ops = operations(clients["client"])
    changed = 0
    state = {"before": fingerprint(clients["client"])}

    @seed(seed_value)
    @settings(max_examples=requests, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(st.data())
    def fuzz(data: st.DataObject) -> None:
        nonlocal changed
        client = clients["client"]
        req = data.draw(_request(ops))
        headers = {"Accept": req["accept"]} if req["accept"] else {}
        reply = client.request(req["method"], req["path"], token=req["token"],
                               params=req["params"], body=req["body"],
                               content_type=req["content_type"], headers=headers)
        result.requests += 1
        where = f"{req['method']} {req['path'][:80]}"
        if reply.status == 0 or reply.status >= 500:
            result.errors += 1
            result.fail(f"{where} -> {reply.status}: {reply.text[:160]}")
        if not holder["server"].alive():
            result.fail(f"the server died after {where}")
            holder["server"] = start_server(store, env=server_env())
            clients["client"] = Client(holder["server"].url, timeout=60)
            state["before"] = fingerprint(clients["client"])
            return
        if req["method"] in ("GET", "HEAD", "OPTIONS"):
            return
        after = fingerprint(client)
        if 400 <= reply.status < 500 and after != state["before"]:
            changed += 1
            result.errors += 1
            result.fail(f"{where} was rejected ({reply.status}) but the store changed")
        state["before"] = after

    fuzz()
    result.cycles = 1
    result.figures = {"routes": len(ops), "rejected but changed the store": changed}
    alive = holder["server"].alive()
    holder["server"].stop()
    if not alive:
        result.fail("the server was not running at the end")
    if result.requests < requests:
        result.fail(f"only {result.requests} of {requests} requests were sent")
    result.seconds = time.perf_counter() - started
    return result

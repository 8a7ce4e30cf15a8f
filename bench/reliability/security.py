"""Security: tokens on every write route, project isolation by every route, injection, abuse.

Isolation is checked with a secret planted in project B: no response to a project-A token may
contain it, whatever the route or SPARQL trick, and oracle queries (that would return a marker
only if B's data were visible) must return nothing. Queries never contain the full secret, so
an error message that echoes the query cannot cause a false alarm.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from bench.reliability.client import TOKENS, Client, Reply, server_env
from bench.reliability.dataset import seed_store
from bench.reliability.fuzz import fingerprint, operations
from bench.reliability.result import CheckResult
from bench.server import ServerProcess, start_server

__all__ = ["run"]

_B_GRAPH = "https://jido.ai/graph/project/proj-b/long-term"
_B_SESSIONS = "https://jido.ai/graph/project/proj-b/sessions"
_A_GRAPH = "https://jido.ai/graph/project/proj-a/long-term"
_MARK = 'CONCAT("xq", "zleak")'  # the marker "xqzleak" appears only in a produced row


class _Probe:
    def __init__(self, server: ServerProcess, result: CheckResult) -> None:
        self.server = server
        self.client = Client(server.url, timeout=120)
        self.result = result

    def send(self, what: str, operation: str, *args: Any, expect: set[int] | None = None,
             forbid: tuple[str, ...] = (), **kwargs: Any) -> Reply:
        """Call `Client.<operation>(*args, **kwargs)`; record what is wrong with the reply."""
        reply: Reply = getattr(self.client, operation)(*args, **kwargs)
        self.result.requests += 1
        problem = ""
        if reply.status == 0 or reply.status >= 500:
            problem = f"{reply.status} {reply.text[:120]}"
        elif expect is not None and reply.status not in expect:
            problem = f"status {reply.status}, expected {sorted(expect)}: {reply.text[:120]}"
        elif any(secret in reply.text for secret in forbid):
            problem = f"status {reply.status} and the response holds project B's data"
        if problem:
            self.result.errors += 1
            self.result.fail(f"{what}: {problem}")
        return reply


def _write_routes(probe: _Probe, secret_id: str) -> None:
    """Every write route refuses a missing, wrong or too-weak token."""
    ops = [o for o in operations(probe.client) if o.write]
    session = probe.client.request("POST", "/v1/sessions", token=TOKENS["a_write"],
                                   json_body={"project": "proj-a", "session_id": "sec-s1"})
    before = fingerprint(probe.client)  # after the session record is written
    probe.result.note(f"{len(ops)} write routes; session for them: {session.status}")
    for op in ops:
        path = (op.path.replace("{project}", "proj-a").replace("{session_id}", "sec-s1")
                .replace("{memory_id}", secret_id).replace("{key}", "active_file"))
        weak = TOKENS["write"] if op.path.startswith("/admin") else TOKENS["read"]
        for label, token in (("no token", None), ("wrong token", "not-a-token"),
                             ("read-only token", weak)):
            # A valid body: the refusal must come from the token, not from validation.
            body = "INSERT DATA { <urn:x> <urn:y> 1 }" if op.path == "/update" else op.example
            ctype = ("application/sparql-update" if op.path == "/update" else
                     "text/turtle" if op.path == "/store" else "application/json")
            if op.path == "/store":
                body = "<urn:x> <urn:y> 1 ."
            params = {"graph": _A_GRAPH} if op.path == "/store" else None
            probe.send(f"{op.method} {op.path} with {label}", "request", op.method, path,
                       token=token, body=body, content_type=ctype, params=params,
                       expect={401, 403})
    if fingerprint(probe.client) != before:
        probe.result.errors += 1
        probe.result.fail("the store changed while write routes refused every request")


def _isolation(probe: _Probe, secret: str, secret_id: str, port: int) -> None:
    """A proj-a token sees nothing of proj-b by any route."""
    a, aw = TOKENS["a_read"], TOKENS["a_write"]
    hide = (secret, "xqzleak")
    probe.send("GET a proj-b memory with a proj-a token", "request", "GET",
               f"/v1/projects/proj-b/memories/{secret_id}", token=a, expect={403, 404},
               forbid=hide)
    probe.send("recall in proj-b with a proj-a token", "recall", "proj-b", "bravo", token=a,
               expect={403}, forbid=hide)
    probe.send("recall B's words in proj-a", "recall", "proj-a", "bravo secret", token=a,
               forbid=hide)
    probe.send("remember into proj-b with a proj-a write token", "remember", "proj-b",
               "intrusion", token=aw, expect={403})
    probe.send("forget a proj-b memory with a proj-a write token", "request", "POST",
               f"/v1/projects/proj-b/memories/{secret_id}/forget", token=aw,
               json_body={"reason": "x"}, expect={403, 404})
    oracle = 'FILTER(CONTAINS(STR(?o), "bravo-sec"))'
    queries = {
        "default graph": f"SELECT ({_MARK} AS ?x) ?o WHERE {{ ?s ?p ?o {oracle} }}",
        "GRAPH ?g": f"SELECT ({_MARK} AS ?x) WHERE {{ GRAPH ?g {{ ?s ?p ?o {oracle} }} }}",
        "GRAPH <B>": f"SELECT ({_MARK} AS ?x) WHERE {{ GRAPH <{_B_GRAPH}> {{ ?s ?p ?o }} }}",
        "FROM <B>": f"SELECT ({_MARK} AS ?x) FROM <{_B_GRAPH}> WHERE {{ ?s ?p ?o }}",
        "FROM NAMED <B>": f"SELECT ({_MARK} AS ?x) FROM NAMED <{_B_GRAPH}> "
                          f"WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
        "FROM <A> FROM NAMED <B>": f"SELECT ({_MARK} AS ?x) FROM <{_A_GRAPH}> FROM NAMED "
                                   f"<{_B_GRAPH}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
        "B sessions graph": f"SELECT ({_MARK} AS ?x) WHERE {{ GRAPH <{_B_SESSIONS}> "
                            f"{{ ?s ?p ?o }} }}",
        "union of all": f"SELECT ({_MARK} AS ?x) WHERE {{ {{ ?s ?p ?o }} UNION "
                        f"{{ GRAPH ?g {{ ?s ?p ?o }} }} {oracle} }}",
        "SERVICE loop-back": f"SELECT ({_MARK} AS ?x) WHERE {{ SERVICE <http://127.0.0.1:{port}"
                             f"/sparql> {{ GRAPH ?g {{ ?s ?p ?o {oracle} }} }} }}",
        "SERVICE SILENT": f"SELECT ({_MARK} AS ?x) WHERE {{ SERVICE SILENT <http://127.0.0.1:"
                          f"{port}/sparql> {{ ?s ?p ?o }} }}",
        "EXISTS in FILTER": f"SELECT ({_MARK} AS ?x) WHERE {{ BIND(1 AS ?one) FILTER EXISTS "
                            f"{{ GRAPH <{_B_GRAPH}> {{ ?s ?p ?o }} }} }}",
        "ASK": f"ASK {{ GRAPH ?g {{ ?s ?p ?o {oracle} }} }}",
        "DESCRIBE": "DESCRIBE ?m WHERE { GRAPH ?g { ?m ?p ?o } }",
        "CONSTRUCT": "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }",
    }
    for label, query in queries.items():
        reply = probe.send(f"SPARQL {label} with a proj-a token", "sparql", query, token=a,
                           forbid=hide)
        if label == "ASK" and reply.status == 200 and "true" in reply.text:
            probe.result.errors += 1
            probe.result.fail("SPARQL ASK with a proj-a token proves project B's data exists")
    everything = "SELECT * WHERE { { ?s ?p ?o } UNION { GRAPH ?g { ?s ?p ?o } } }"
    for name in ("default-graph-uri", "named-graph-uri"):
        probe.send(f"SPARQL {name}=B with a proj-a token", "sparql", everything, token=a,
                   params=[(name, _B_GRAPH)], forbid=hide)
    for store_params in ({"graph": _B_GRAPH}, {"graph": _B_SESSIONS}, {"default": ""}):
        probe.send(f"graph store GET {store_params} with a proj-a token", "request", "GET",
                   "/store", token=a, params=store_params,
                   headers={"Accept": "application/n-quads"}, forbid=hide)
    copy = (f"INSERT {{ GRAPH <{_A_GRAPH}> {{ ?s ?p ?o }} }} WHERE {{ GRAPH <{_B_GRAPH}> "
            f"{{ ?s ?p ?o }} }}")
    probe.send("SPARQL update copying B into A with a proj-a write token", "update", copy,
               token=aw, expect={401, 403})
    probe.send("read A after the copy attempt", "sparql",
               f"SELECT ?o WHERE {{ GRAPH <{_A_GRAPH}> {{ ?s ?p ?o }} }}", token=a, forbid=hide)


_INJECTIONS = ["\" } ; DROP ALL ; #", "') } UNION { GRAPH ?g { ?s ?p ?o } } #", "\\\" ?s ?p ?o",
               "*", "\"* OR 1=1 --", "content: NEAR(a b)", "bravo-sec*", "}}}}}}}}", "%",
               "' ; DELETE WHERE { ?s ?p ?o } ; '", "\x00", "a\" OR \"1\"=\"1", "^$|.*"]


def _injection(probe: _Probe, secret: str) -> None:
    """SPARQL and keyword-search injection through every helper parameter changes nothing."""
    before = fingerprint(probe.client)
    a = TOKENS["a_read"]
    for text in _INJECTIONS:
        probe.send(f"recall query {text!r}", "recall", "proj-a", text, token=a,
                   forbid=(secret,))
        probe.send(f"recall types [{text!r}]", "recall", "proj-a", "x", token=a, types=[text],
                   expect={400}, forbid=(secret,))
        probe.send(f"memory id {text!r}", "request", "GET",
                   "/v1/projects/proj-a/memories/" + _quote(text), token=a,
                   expect={400, 403, 404, 405}, forbid=(secret,))
        probe.send(f"project id {text!r}", "recall", _quote(text) or "x", "y",
                   token=TOKENS["admin"], expect={400, 403, 404, 405}, forbid=(secret,))
    if fingerprint(probe.client) != before:
        probe.result.errors += 1
        probe.result.fail("injection attempts changed the store")


def _quote(text: str) -> str:
    import urllib.parse

    return urllib.parse.quote(text, safe="")


def _abuse(probe: _Probe, limit: int) -> None:
    """A huge body and deeply nested queries get a 4xx, and the server stays up."""
    w = TOKENS["write"]
    huge = b"#" * (limit * 2)
    probe.send("huge SPARQL update body", "request", "POST", "/update", token=w, body=huge,
               content_type="application/sparql-update", expect={400, 413})
    probe.send("huge remember body", "request", "POST", "/v1/projects/proj-a/memories", token=w,
               body=b'{"content": "' + huge + b'"}', content_type="application/json",
               expect={400, 413})
    for depth in (10_000, 100_000):
        nested = "SELECT * WHERE " + "{" * depth + "}" * depth
        probe.send(f"query nested {depth:,} deep", "sparql", nested, token=TOKENS["read"],
                   expect={400, 413})
        expr = "SELECT * WHERE { FILTER(" + "(" * depth + "1" + ")" * depth + ") }"
        probe.send(f"FILTER nested {depth:,} deep", "sparql", expr, token=TOKENS["read"],
                   expect={400, 413})
        update = "INSERT DATA " + "{" * depth + "}" * depth
        probe.send(f"update nested {depth:,} deep", "update", update, token=w,
                   expect={400, 413})
        body = ('{"content": ' + "[" * depth + "]" * depth + "}").encode()
        probe.send(f"JSON body nested {depth:,} deep", "request", "POST",
                   "/v1/projects/proj-a/memories", token=w, body=body,
                   content_type="application/json", expect={400, 413})
    probe.send("health after the abuse", "request", "GET", "/health", expect={200})
    if not probe.server.alive():
        probe.result.fail("the server went down under huge or deeply nested input")


def run(*, workdir: Path, body_limit: int = 4 * 1024 * 1024) -> CheckResult:
    """Run every security check against one server with tokens and no anonymous reads."""
    result = CheckResult("security (tokens, isolation, injection, abuse)")
    started = time.perf_counter()
    store = workdir / "security-store"
    seed_store(store, 200)
    env = {**server_env(), "KG_MAX_BODY_BYTES": str(body_limit)}
    server = start_server(store, env=env)
    probe = _Probe(server, result)
    try:
        secret = f"bravo-secret-{uuid.uuid4().hex}"
        made = probe.send("plant B's secret", "remember", "proj-b", secret,
                          token=TOKENS["b_write"], session="sec-b", expect={201})
        probe.send("plant A's memory", "remember", "proj-a", "alpha visible note",
                   token=TOKENS["a_write"], session="sec-a", expect={201})
        secret_id = made.json()["id"] if made.status == 201 else "missing"
        _write_routes(probe, secret_id)
        _isolation(probe, secret, secret_id, server.port)
        _injection(probe, secret)
        _abuse(probe, body_limit)
        result.cycles = 1
    finally:
        server.stop()
    result.seconds = time.perf_counter() - started
    return result

"""A runner for the W3C SPARQL 1.1 Protocol / Graph Store / Service Description manifests.

It reads the manifests (copied into tests/data/w3c, see SOURCE.txt there), sends
each test's ht:Request list to a real server on loopback and checks each ht:Response the way
the manifests describe: status class or code, result format and boolean, Content-Type, an
isomorphic graph body, and the Location template of graph creation.
"""

from __future__ import annotations

import http.client
import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rdflib import RDFS, BNode, Graph, Namespace, URIRef
from rdflib.collection import Collection
from rdflib.compare import isomorphic

__all__ = ["Check", "W3cTest", "load_tests", "record", "run_test", "score_lines", "suite_root"]

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
HT = Namespace("http://www.w3.org/2011/http#")
CNT = Namespace("http://www.w3.org/2011/content#")
UT = Namespace("http://www.w3.org/2009/sparql/tests/test-update#")
HTS = "http://www.w3.org/2011/http-statusCodes#"
_CODES = {"OK": 200, "Created": 201, "NoContent": 204, "NotFound": 404}
_RESULTS: dict[str, dict[str, bool]] = defaultdict(dict)
ROOT = Path(__file__).resolve().parents[2]


def suite_root() -> Path:
    """The W3C manifests directory kept in the repository (tests/data/w3c)."""
    return ROOT / "tests" / "data" / "w3c"


@dataclass
class W3cTest:
    """One manifest entry: its name, the graphs to load, and its requests."""

    suite: str
    name: str
    requests: list[URIRef | BNode]
    graph: Graph
    data: list[tuple[Path, str]] = field(default_factory=list)


@dataclass
class Check:
    """The outcome of one test."""

    ok: bool
    problems: list[str]


def load_tests(suite: str) -> list[W3cTest]:
    """Return the tests of 'protocol' or 'graph-store-protocol', in manifest order."""
    folder = suite_root() / suite
    manifest = Graph().parse(folder / "manifest.ttl", format="turtle")
    files = [folder / "manifest.ttl"]
    for include in manifest.objects(None, MF.include):
        files = [Path(str(item).removeprefix("file://"))
                 for item in Collection(manifest, include)]  # type: ignore[arg-type]
    tests: list[W3cTest] = []
    for path in files:
        graph = Graph().parse(path, format="turtle")
        for entries in graph.objects(None, MF.entries):
            for entry in Collection(graph, entries):  # type: ignore[arg-type]
                action = graph.value(entry, MF.action)
                requests = list(Collection(graph, graph.value(action, HT.requests)))  # type: ignore[arg-type]
                data = [(folder / Path(str(graph.value(d, UT.graph))).name,
                         str(graph.value(d, RDFS.label)))
                        for d in graph.objects(entry, UT.graphData)]
                name = str(entry).rsplit("#", 1)[-1]
                tests.append(W3cTest(suite, name, requests, graph, data))  # type: ignore[arg-type]
    return tests


def _send(port: int, method: str, path: str, headers: dict[str, str],
          body: bytes | None) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for key, value in headers.items():
            connection.putheader(key, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def run_test(test: W3cTest, *, port: int, token: str, path_map: dict[str, str]) -> Check:
    """Send a test's requests in order and check every response."""
    graph, problems = test.graph, []
    variables: dict[str, str] = {}
    auth = {"Authorization": f"Bearer {token}"}
    for k, request in enumerate(test.requests):
        path = str(graph.value(request, HT.absolutePath))
        for old, new in path_map.items():
            if path.startswith(old):
                path = new + path[len(old):]
                break
        headers = dict(auth)
        for header in _list(graph, graph.value(request, HT.headers)):
            name, value = graph.value(header, HT.fieldName), graph.value(header, HT.fieldValue)
            headers[str(name)] = str(value)
        body_node = graph.value(request, HT.body)
        body = None
        if body_node is not None:
            chars = str(graph.value(body_node, CNT.chars))
            encoding = str(graph.value(body_node, CNT.characterEncoding) or "UTF-8")
            body = chars.encode("utf-16" if encoding.upper() == "UTF-16" else "utf-8")
        for name, value in variables.items():
            path = path.replace(name, value)
            body = body.replace(name.encode(), value.encode()) if body else body
        method = str(graph.value(request, HT.methodName))
        status, got_headers, payload = _send(port, method, path, headers, body)
        where = f"request {k + 1} ({method} {path[:80]})"
        problems += _check(graph, graph.value(request, HT.resp), status, got_headers, payload,
                           where, variables)
    return Check(not problems, problems)


def _list(graph: Graph, node: Any) -> list[Any]:
    return list(Collection(graph, node)) if node is not None else []


def _check(graph: Graph, response: Any, status: int, headers: dict[str, str], body: bytes,
           where: str, variables: dict[str, str]) -> list[str]:
    problems = []
    expected = [str(s).removeprefix(HTS) for s in graph.objects(response, MF.expectedStatus)]
    if expected and not any(_status_matches(e, status) for e in expected):
        problems.append(f"{where}: status {status}, expected {expected}: {body[:200]!r}")
        return problems
    location = graph.value(response, MF.expectedLocation)
    if location is not None:
        if "location" not in headers:
            problems.append(f"{where}: no Location header")
        else:
            variables[str(location)] = headers["location"]
    fmt = graph.value(response, MF.expectedFormat)
    content_type = headers.get("content-type", "")
    if fmt is not None:
        problems += _check_format(str(fmt), content_type, body, where)
    boolean = graph.value(response, MF.expectedBoolean)
    if boolean is not None and _boolean(content_type, body) != bool(boolean.toPython()):
        problems.append(f"{where}: boolean {body[:200]!r}, expected {boolean}")
    for header in _list(graph, graph.value(response, HT.headers)):
        name = str(graph.value(header, HT.fieldName)).lower()
        want = str(graph.value(header, HT.fieldValue))
        if _normalise(headers.get(name, "")) != _normalise(want):
            problems.append(f"{where}: {name} is {headers.get(name)!r}, expected {want!r}")
    expected_body = graph.value(response, HT.body)
    if expected_body is not None:
        want_graph = Graph().parse(data=str(graph.value(expected_body, CNT.chars)), format="turtle")
        got_graph = Graph().parse(data=body.decode(), format="turtle")
        if not isomorphic(want_graph, got_graph):
            problems.append(f"{where}: graph differs: {body.decode()[:400]}")
    return problems


def _status_matches(expected: str, status: int) -> bool:
    match = re.fullmatch(r"StatusCode(\d)xx", expected)
    if match:
        return status // 100 == int(match.group(1))
    return _CODES.get(expected) == status


def _normalise(content_type: str) -> str:
    return content_type.replace(" ", "").lower()


def _check_format(fmt: str, content_type: str, body: bytes, where: str) -> list[str]:
    media = content_type.split(";")[0].strip()
    allowed = {
        "boolean": {"application/sparql-results+json", "application/sparql-results+xml"},
        "tabular": {"application/sparql-results+json", "application/sparql-results+xml",
                    "text/csv", "text/tab-separated-values"},
        "RDF": {"application/rdf+xml", "text/turtle", "application/n-triples"},
    }[fmt]
    if media not in allowed:
        return [f"{where}: {media} is not a {fmt} format {sorted(allowed)}"]
    try:
        if media.endswith("json"):
            json.loads(body)
        elif media.endswith("xml"):
            ET.fromstring(body)
        elif fmt == "RDF":
            Graph().parse(data=body.decode(), format={"text/turtle": "turtle",
                                                      "application/n-triples": "nt"}[media])
    except Exception as exc:
        return [f"{where}: the {media} body does not parse: {exc}"]
    return []


def _boolean(content_type: str, body: bytes) -> bool | None:
    if "json" in content_type:
        value = json.loads(body).get("boolean")
        return value if isinstance(value, bool) else None
    root = ET.fromstring(body)
    found = root.find("{http://www.w3.org/2005/sparql-results#}boolean")
    return None if found is None else found.text == "true"


def record(suite: str, name: str, ok: bool) -> None:
    """Remember one test's outcome for the score lines."""
    _RESULTS[suite][name] = ok


def score_lines() -> list[str]:
    """One 'W3C <suite>: passed/total' line per suite that ran."""
    return [f"W3C {suite}: {sum(r.values())}/{len(r)} passed"
            for suite, r in sorted(_RESULTS.items())]

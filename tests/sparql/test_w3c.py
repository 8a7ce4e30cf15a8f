"""The W3C SPARQL 1.1 Protocol, Graph Store Protocol and Service Description suites, on loopback."""

from __future__ import annotations

import urllib.request

import pytest
from rdflib import RDF, Graph, Namespace, URIRef

from tests.conftest import RunningServer
from tests.sparql import w3c
from tests.sparql.conftest import ADMIN

PROTOCOL = w3c.load_tests("protocol")
GRAPH_STORE = w3c.load_tests("graph-store-protocol")
SD = Namespace("http://www.w3.org/ns/sparql-service-description#")


def _call(server: RunningServer, method: str, path: str, body: bytes | None = None,
          content_type: str | None = None) -> int:
    request = urllib.request.Request(f"{server.url}{path}", data=body, method=method,
                                     headers={"Authorization": f"Bearer {ADMIN}"})
    if content_type:
        request.add_header("Content-Type", content_type)
    with urllib.request.urlopen(request, timeout=30) as response:
        return int(response.status)


def _reset(server: RunningServer, test: w3c.W3cTest) -> None:
    """Start every test from an empty store holding only the test's ut:graphData."""
    _call(server, "POST", "/update", b"DROP ALL", "application/sparql-update")
    for path, graph in test.data:
        _call(server, "PUT", f"/store?graph={graph}", path.read_bytes(), "application/n-triples")


def test_manifests_hold_the_expected_number_of_tests() -> None:
    assert (len(PROTOCOL), len(GRAPH_STORE)) == (34, 13)


def test_service_description_checks_are_the_manifest_entries() -> None:
    manifest = Graph().parse(w3c.suite_root() / "service-description" / "manifest.ttl")
    entries = {str(s).rsplit("#", 1)[1]
               for s in manifest.subjects(RDF.type, w3c.MF.ServiceDescriptionTest)}
    assert entries == {"returns-rdf", "has-endpoint-triple", "conforms-to-schema"}


@pytest.mark.parametrize("test", PROTOCOL, ids=lambda t: t.name)
def test_protocol(test: w3c.W3cTest, sparql_server: RunningServer) -> None:
    _reset(sparql_server, test)
    check = w3c.run_test(test, port=sparql_server.port, token=ADMIN,
                         path_map={"/sparql/": "/sparql/"})
    w3c.record("SPARQL 1.1 Protocol", test.name, check.ok)
    assert check.ok, "\n".join(check.problems)


@pytest.mark.parametrize("test", GRAPH_STORE, ids=lambda t: t.name)
def test_graph_store_protocol(test: w3c.W3cTest, sparql_server: RunningServer) -> None:
    _reset(sparql_server, test)
    check = w3c.run_test(test, port=sparql_server.port, token=ADMIN, path_map={"/gsp": "/store"})
    w3c.record("SPARQL 1.1 Graph Store Protocol", test.name, check.ok)
    assert check.ok, "\n".join(check.problems)


def _description(server: RunningServer) -> tuple[str, str, Graph]:
    endpoint = f"{server.url}/sparql"
    request = urllib.request.Request(endpoint, headers={"Accept": "text/turtle"})
    with urllib.request.urlopen(request, timeout=10) as response:
        media_type = response.headers.get_content_type()
        body = response.read().decode()
    return endpoint, media_type, Graph().parse(data=body, format="turtle")


def _record_sd(name: str, ok: bool) -> None:
    w3c.record("SPARQL 1.1 Service Description", name, ok)
    assert ok


def test_service_description_returns_rdf(sparql_server: RunningServer) -> None:
    _, media_type, graph = _description(sparql_server)
    _record_sd("returns-rdf", media_type == "text/turtle" and len(graph) > 0)


def test_service_description_has_endpoint_triple(sparql_server: RunningServer) -> None:
    endpoint, _, graph = _description(sparql_server)
    _record_sd("has-endpoint-triple", (None, SD.endpoint, URIRef(endpoint)) in graph)


def test_service_description_conforms_to_schema(sparql_server: RunningServer) -> None:
    """sd:Service with IRI sd:endpoint, known languages, IRI formats, a typed dataset."""
    _, _, graph = _description(sparql_server)
    services = list(graph.subjects(RDF.type, SD.Service))
    languages = {SD.SPARQL10Query, SD.SPARQL11Query, SD.SPARQL11Update}
    ok = len(services) == 1
    for service in services:
        ok &= all(isinstance(e, URIRef) for e in graph.objects(service, SD.endpoint))
        ok &= set(graph.objects(service, SD.supportedLanguage)) <= languages
        ok &= bool(set(graph.objects(service, SD.supportedLanguage)))
        ok &= all(isinstance(f, URIRef) for f in graph.objects(service, SD.resultFormat))
        for dataset in graph.objects(service, SD.defaultDataset):
            ok &= (dataset, RDF.type, SD.Dataset) in graph
            ok &= all((g, RDF.type, SD.Graph) in graph
                      for g in graph.objects(dataset, SD.defaultGraph))
    _record_sd("conforms-to-schema", bool(ok))

"""Real clients against a real server on loopback: SPARQLWrapper, rdflib, comunica, the OWL API."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import Graph, Literal, URIRef
from rdflib.plugins.stores.sparqlstore import SPARQLUpdateStore
from SPARQLWrapper import CSV, JSON, N3, TSV, XML, SPARQLWrapper

from kg.graphs import long_term
from tests.conftest import ROOT, RunningServer, start_server
from tests.sparql.conftest import WRITER, server_env

NODE_BIN = ROOT / "tools" / "node" / "node_modules" / ".bin"
JARS = ROOT / ".cache" / "owlapi" / "jars"
MEMORY_GRAPH = long_term("demo").value
SELECT = "SELECT ?s ?o WHERE { GRAPH ?g { ?s <http://example.org/name> ?o } } ORDER BY ?o"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server with CORS open and a small memory graph in project 'demo'."""
    running = start_server(tmp_path_factory.mktemp("clients"),
                           extra_env=server_env(cors_origins=["*"]))
    body = (
        "@prefix jido: <https://jido.ai/ontology#> .\n"
        "<https://jido.ai/data/memory/m1> a jido:Fact ; "
        "<http://example.org/name> \"alpha\" ; jido:content \"The sky is blue\" .\n"
        "<https://jido.ai/data/memory/m2> <http://example.org/name> \"beta\" .\n"
    )
    request = urllib.request.Request(
        f"{running.url}/store?graph={MEMORY_GRAPH}", data=body.encode(), method="PUT",
        headers={"Content-Type": "text/turtle", "Authorization": f"Bearer {WRITER}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 201
    yield running
    running.stop()


@pytest.mark.parametrize("fmt", [JSON, XML, CSV, TSV])
def test_sparqlwrapper_select_in_every_format(server: RunningServer, fmt: str) -> None:
    client = SPARQLWrapper(f"{server.url}/sparql")
    client.setQuery(SELECT)
    client.setReturnFormat(fmt)
    result = client.query().convert()
    if fmt == JSON:
        assert [b["o"]["value"] for b in result["results"]["bindings"]] == ["alpha", "beta"]
    elif fmt == XML:
        assert [n.firstChild.data for n in result.getElementsByTagName("literal")] == [
            "alpha", "beta"]
    else:
        text = result.decode()
        assert "alpha" in text and "beta" in text


@pytest.mark.parametrize("fmt", [JSON, XML])
def test_sparqlwrapper_ask(server: RunningServer, fmt: str) -> None:
    client = SPARQLWrapper(f"{server.url}/sparql")
    client.setQuery("ASK { GRAPH ?g { ?s <http://example.org/name> \"alpha\" } }")
    client.setReturnFormat(fmt)
    result = client.query().convert()
    value = result["boolean"] if fmt == JSON else (
        result.getElementsByTagName("boolean")[0].firstChild.data == "true")
    assert value is True


@pytest.mark.parametrize("fmt", ["turtle", "n3", "xml", "json-ld", "nt"])
def test_sparqlwrapper_construct_in_every_format(server: RunningServer, fmt: str) -> None:
    client = SPARQLWrapper(f"{server.url}/sparql")
    client.setQuery("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }")
    client.setReturnFormat({"turtle": "turtle", "n3": N3, "xml": XML, "json-ld": "json-ld",
                            "nt": N3}[fmt])
    if fmt == "nt":
        client.addCustomHttpHeader("Accept", "application/n-triples")
    result = client.query().convert()
    graph = result if isinstance(result, Graph) else Graph().parse(
        data=result, format="nt" if fmt == "nt" else "turtle")
    assert (URIRef("https://jido.ai/data/memory/m1"), URIRef("http://example.org/name"),
            Literal("alpha")) in graph


def test_rdflib_update_store_reads_and_writes_a_graph(server: RunningServer) -> None:
    store = SPARQLUpdateStore(
        query_endpoint=f"{server.url}/sparql", update_endpoint=f"{server.url}/update",
        auth=None, headers={"Authorization": f"Bearer {WRITER}"},
    )
    graph = Graph(store, identifier=URIRef("http://example.org/rdflib"))
    graph.add((URIRef("http://example.org/x"), URIRef("http://example.org/name"),
               Literal("gamma")))
    assert set(graph.objects(URIRef("http://example.org/x"), None)) == {Literal("gamma")}
    memory = Graph(store, identifier=URIRef(MEMORY_GRAPH))
    assert len(memory) == 4
    graph.remove((None, None, None))
    assert len(graph) == 0


def test_comunica_queries_the_endpoint(server: RunningServer) -> None:
    command = [str(NODE_BIN / "comunica-sparql"), f"sparql@{server.url}/sparql",
               "-t", "application/sparql-results+json", SELECT]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "NODE_NO_WARNINGS": "1"})
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["results"]["bindings"]
    assert sorted(r["o"]["value"] for r in rows) == ["alpha", "beta"]


def test_owl_api_loads_the_ontology_and_a_memory_graph_over_http(
    server: RunningServer, tmp_path: Path
) -> None:
    assert (JARS / "owlapi-distribution-5.1.9.jar").is_file(), "run `make owl-jars` first"
    classpath = f"{JARS}/*"
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path),
                    str(ROOT / "tools" / "owlcheck" / "OwlHttpLoad.java")], check=True,
                   timeout=120)
    urls = [f"{server.url}/ontology", f"{server.url}/store?graph={MEMORY_GRAPH}"]
    result = subprocess.run(["java", "-cp", f"{tmp_path}:{classpath}", "OwlHttpLoad", *urls],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report[urls[0]]["axioms"] > 100
    assert report[urls[1]]["axioms"] >= 4


def test_large_results_are_gzipped_and_cors_headers_sent(server: RunningServer) -> None:
    query = "SELECT * WHERE { VALUES ?n { " + " ".join(map(str, range(5000))) + " } }"
    request = urllib.request.Request(
        f"{server.url}/sparql", data=query.encode(), method="POST",
        headers={"Content-Type": "application/sparql-query", "Accept-Encoding": "gzip",
                 "Origin": "https://app.example"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        assert response.headers["Access-Control-Allow-Origin"] == "*"
        rows = json.loads(gzip.decompress(response.read()))["results"]["bindings"]
    assert len(rows) == 5000

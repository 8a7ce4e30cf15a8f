"""Large results stream, in every format, and a limit reached mid-stream is an error clients see.

Real `jido-kg serve` processes on loopback. Streaming is shown causally, not by timing: the
result's last row comes from a SERVICE endpoint the test holds back (tests/sparql/gate.py)
until the client has parsed the first chunk, so a server that serialised the whole result
before sending would never let the first chunk through.
"""

from __future__ import annotations

import csv
import gzip
import http.client
import io
import json
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyoxigraph
import pytest
import rdflib
import rdflib.query
from SPARQLWrapper import JSON, TURTLE, SPARQLWrapper

from tests.conftest import RunningServer, start_server
from tests.sparql.conftest import ADMIN, WRITER, server_env
from tests.sparql.gate import LAST_ROW, Gate

BIG, MEDIUM = 100_000, 5_000
EX = "http://example.org/"
ALL = "SELECT ?s ?p ?o WHERE { ?s ?p ?o }"
MEDIUM_SELECT = f"SELECT ?s ?o WHERE {{ ?s <{EX}medium> ?o }}"
MEDIUM_CONSTRUCT = f"CONSTRUCT {{ ?s <{EX}medium> ?o }} WHERE {{ ?s <{EX}medium> ?o }}"
CROSS_JOIN = "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }"
CAP = 5_000
# Rows the gate sends before it holds back: more than the read-ahead of Oxigraph's SERVICE
# client (it reads the remote answer ahead when it starts, and would wait for it there).
GATE_ROWS = 3_000
MARKER = b"!!! jido-kg: this result is cut short and incomplete ("

RESULTS = {"application/sparql-results+json": pyoxigraph.QueryResultsFormat.JSON,
           "application/sparql-results+xml": pyoxigraph.QueryResultsFormat.XML,
           "text/csv": pyoxigraph.QueryResultsFormat.CSV,
           "text/tab-separated-values": pyoxigraph.QueryResultsFormat.TSV}
GRAPHS = {"text/turtle": pyoxigraph.RdfFormat.TURTLE,
          "application/n-triples": pyoxigraph.RdfFormat.N_TRIPLES,
          "application/n-quads": pyoxigraph.RdfFormat.N_QUADS,
          "application/trig": pyoxigraph.RdfFormat.TRIG,
          "application/ld+json": pyoxigraph.RdfFormat.JSON_LD,
          "application/rdf+xml": pyoxigraph.RdfFormat.RDF_XML}
RDFLIB_RESULTS = {"application/sparql-results+json": "json",
                  "application/sparql-results+xml": "xml",
                  "text/tab-separated-values": "tsv"}
RDFLIB_GRAPHS = {"text/turtle": "turtle", "application/n-triples": "nt",
                 "application/n-quads": "nquads", "application/trig": "trig",
                 "application/ld+json": "json-ld", "application/rdf+xml": "xml"}


def _medium_object(i: int) -> str:
    """Literals and IRIs that exercise every format's escaping."""
    return [f'"plain {i} with \\"quotes\\", commas, \\ttabs and \\nnewlines"',
            f'"caf\u00e9 {i} \u65e5\u672c"@fr', f'"{i}"^^<http://www.w3.org/2001/XMLSchema#integer>',
            f"<{EX}o/{i}?a=1&b=<2>>".replace("<2>", "%3C2%3E"), f'"<tag> & {{json}} {i}"'][i % 5]


def data() -> str:
    """The test data as N-Triples: BIG plain triples and MEDIUM varied ones."""
    big = "".join(f'<{EX}s{i}> <{EX}p{i % 7}> "v{i}" .\n' for i in range(BIG))
    medium = "".join(f"<{EX}m{i}> <{EX}medium> {_medium_object(i)} .\n" for i in range(MEDIUM))
    return big + medium


def _serve(directory: Path, **settings: object) -> RunningServer:
    server = start_server(directory, extra_env=server_env(**settings))
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    connection.request("PUT", "/store?default", body=data().encode(),
                       headers={"Authorization": f"Bearer {WRITER}",
                                "Content-Type": "application/n-triples"})
    assert connection.getresponse().status in (201, 204)
    return server


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server holding the test data (default limits)."""
    server = _serve(tmp_path_factory.mktemp("big"))
    yield server
    server.process.kill()  # a test's abandoned query must not hold a graceful stop up
    server.stop()


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server holding the test data that serves at most CAP rows."""
    server = _serve(tmp_path_factory.mktemp("capped"), max_result_rows=str(CAP))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def local() -> pyoxigraph.Store:
    """The same data in process: the answers the streamed ones must equal."""
    store = pyoxigraph.Store()
    store.load(data().encode(), format=pyoxigraph.RdfFormat.N_TRIPLES)
    return store


def _open(server: RunningServer, query: str, *, method: str = "GET", accept: str = "",
          headers: dict[str, str] | None = None, timeout: float = 120,
          ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """Send a query; return the connection and the response, its body still unread."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    sent = {"Accept": accept or "application/sparql-results+json", **(headers or {})}
    if method == "GET":
        connection.request("GET", f"/sparql?query={quote(query)}", headers=sent)
    else:
        connection.request("POST", "/sparql", body=query.encode(),
                           headers={**sent, "Content-Type": "application/sparql-query"})
    return connection, connection.getresponse()


def _leading_rows(data: bytes) -> list[dict[str, Any]]:
    """The complete rows at the start of a SPARQL JSON document (closed after its last one)."""
    head, separator, _ = data.rpartition(b"},{")
    assert separator, data[:200]
    rows: list[dict[str, Any]] = json.loads(head + b"}]}}")["results"]["bindings"]
    return rows


def _read_cut(response: http.client.HTTPResponse) -> bytes:
    """Read a body that must end cut short; return its last bytes (the body is not kept)."""
    tail = b""
    with pytest.raises(http.client.IncompleteRead) as cut:
        while True:
            piece = response.read(1 << 16)
            assert piece, "the body ended as if it were complete"
            tail = (tail + piece)[-4096:]
    return (tail + cut.value.partial)[-4096:]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_large_select_streams_before_its_last_row_exists(big: RunningServer,
                                                           method: str) -> None:
    with Gate(rows=GATE_ROWS, wait=30) as gate:
        query = f"SELECT ?s ?p ?o WHERE {{ {{ ?s ?p ?o }} UNION {{ SERVICE <{gate.url}> " \
                "{ ?s ?p ?o } } }"
        connection, response = _open(big, query, method=method,
                                     headers={"Authorization": f"Bearer {ADMIN}"})
        assert response.status == 200
        assert response.getheader("Transfer-Encoding") == "chunked"
        assert response.getheader("Content-Length") is None
        first = response.read1(1 << 16)
        rows = _leading_rows(first)  # the first bytes parse: whole rows, in order
        assert rows and all(set(row) == {"s", "p", "o"} for row in rows)
        gate.release.set()  # only now can the server produce the last row
        body = first + response.read()
    connection.close()
    assert gate.released_in_time, "the first chunk only came once the result was complete"
    bindings = json.loads(body)["results"]["bindings"]
    assert len(bindings) == BIG + MEDIUM + GATE_ROWS + 1
    assert LAST_ROW in {row["s"]["value"] for row in bindings}


def _solutions(body: bytes, media_type: str) -> set[tuple[str, ...]]:
    if media_type == "text/csv":
        return {tuple(row) for row in csv.reader(io.StringIO(body.decode(), newline=""))}
    parsed = pyoxigraph.parse_query_results(body, format=RESULTS[media_type])
    assert isinstance(parsed, pyoxigraph.QuerySolutions)
    names = [v.value for v in parsed.variables]
    return {tuple(str(row[name]) for name in names) for row in parsed}


def _triples(body: bytes, media_type: str) -> set[tuple[str, str, str]]:
    return {(str(q.subject), str(q.predicate), str(q.object))
            for q in pyoxigraph.parse(body, format=GRAPHS[media_type])}


@pytest.mark.parametrize(("media_type", "method", "encoding"), [
    *((t, "GET", "") for t in [*RESULTS, *GRAPHS]),
    ("application/sparql-results+json", "POST", ""),
    ("text/turtle", "POST", ""),
    ("application/sparql-results+xml", "GET", "gzip"),
    ("application/n-triples", "POST", "gzip"),
])
def test_every_format_streams_the_same_answer(big: RunningServer, local: pyoxigraph.Store,
                                              media_type: str, method: str,
                                              encoding: str) -> None:
    is_graph = media_type in GRAPHS
    query = MEDIUM_CONSTRUCT if is_graph else MEDIUM_SELECT
    connection, response = _open(big, query, method=method, accept=media_type,
                                 headers={"Accept-Encoding": encoding} if encoding else None)
    assert response.status == 200
    assert response.getheader("Content-Type", "").startswith(media_type)
    assert response.getheader("Transfer-Encoding") == "chunked"
    assert response.getheader("Content-Encoding") == (encoding or None)
    body = response.read()
    connection.close()
    if encoding:
        body = gzip.decompress(body)
    result = local.query(query)
    if is_graph:
        assert isinstance(result, pyoxigraph.QueryTriples)
        expected = pyoxigraph.serialize(result, format=GRAPHS[media_type])
        assert expected is not None
        assert _triples(body, media_type) == _triples(expected, media_type)
        assert len(_triples(body, media_type)) == MEDIUM
    else:
        assert isinstance(result, pyoxigraph.QuerySolutions)
        expected = result.serialize(format=RESULTS[media_type])
        assert expected is not None
        assert _solutions(body, media_type) == _solutions(expected, media_type)
        assert len(_solutions(body, media_type)) >= MEDIUM


@pytest.mark.parametrize("media_type", ["application/n-triples", "text/turtle"])
def test_a_graph_store_get_streams_the_whole_graph(big: RunningServer, local: pyoxigraph.Store,
                                                   media_type: str) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", big.port, timeout=120)
    connection.request("GET", "/store?default", headers={"Accept": media_type})
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Content-Type", "").startswith(media_type)
    assert response.getheader("Transfer-Encoding") == "chunked"  # not held whole first
    body = response.read()
    connection.close()
    expected = local.dump(format=GRAPHS[media_type], from_graph=pyoxigraph.DefaultGraph())
    assert expected is not None
    assert _triples(body, media_type) == _triples(expected, media_type)
    assert len(_triples(body, media_type)) == BIG + MEDIUM


def test_describe_streams_the_same_answer(big: RunningServer, local: pyoxigraph.Store) -> None:
    query = f"DESCRIBE ?s WHERE {{ ?s <{EX}medium> ?o }}"
    connection, response = _open(big, query, accept="application/n-triples")
    assert response.status == 200
    assert response.getheader("Transfer-Encoding") == "chunked"
    body = response.read()
    connection.close()
    result = local.query(query)
    assert isinstance(result, pyoxigraph.QueryTriples)
    expected = pyoxigraph.serialize(result, format=pyoxigraph.RdfFormat.N_TRIPLES)
    assert expected is not None
    streamed = _triples(body, "application/n-triples")
    assert streamed == _triples(expected, "application/n-triples")
    assert len(streamed) == MEDIUM


def _rdflib_fails(partial: bytes, media_type: str) -> bool:
    try:
        if media_type in RDFLIB_GRAPHS:
            rdflib.Dataset().parse(data=partial, format=RDFLIB_GRAPHS[media_type])
        else:
            rdflib.query.Result.parse(io.BytesIO(partial), format=RDFLIB_RESULTS[media_type])
    except Exception:  # each parser raises its own kind
        return True
    return False


def _pyoxigraph_fails(partial: bytes, media_type: str) -> bool:
    try:
        if media_type in GRAPHS:
            list(pyoxigraph.parse(partial, format=GRAPHS[media_type]))
        else:
            parsed = pyoxigraph.parse_query_results(partial, format=RESULTS[media_type])
            assert isinstance(parsed, pyoxigraph.QuerySolutions)
            list(parsed)
    except SyntaxError:
        return True
    return False


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("media_type", [*RESULTS, *GRAPHS])
def test_the_row_limit_reached_mid_stream_is_an_error_clients_see(
        capped: RunningServer, media_type: str, method: str) -> None:
    query = "CONSTRUCT WHERE { ?s ?p ?o }" if media_type in GRAPHS else ALL
    request = _urllib_request(capped, query, method=method, accept=media_type)
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead) as cut:
            response.read()
    partial = cut.value.partial
    assert partial.endswith(b"!!!\n</jido-kg-result-cut-short>\n")
    assert MARKER + b"result_too_large: the result has more than 5000" in partial[-400:]
    if media_type == "text/csv":
        return  # CSV has no syntax to break: a CSV reader sees the marker as a last row
    assert _pyoxigraph_fails(partial, media_type)
    if media_type in RDFLIB_RESULTS or media_type in RDFLIB_GRAPHS:
        assert _rdflib_fails(partial, media_type)


def _urllib_request(server: RunningServer, query: str, *, method: str,
                    accept: str) -> urllib.request.Request:
    """A urllib request for a query by GET or by a direct POST."""
    if method == "GET":
        return urllib.request.Request(f"{server.url}/sparql?query={quote(query)}",
                                      headers={"Accept": accept})
    return urllib.request.Request(f"{server.url}/sparql", data=query.encode(), method="POST",
                                  headers={"Accept": accept,
                                           "Content-Type": "application/sparql-query"})


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize(("query", "fmt"), [(ALL, JSON), ("CONSTRUCT WHERE { ?s ?p ?o }",
                                                           TURTLE)])
def test_sparqlwrapper_raises_on_a_cut_result(capped: RunningServer, query: str, fmt: str,
                                              method: str) -> None:
    client = SPARQLWrapper(f"{capped.url}/sparql")
    client.setQuery(query)
    client.setReturnFormat(fmt)
    client.setMethod(method)
    with pytest.raises(http.client.IncompleteRead):
        client.query().convert()


def test_the_row_limit_before_the_first_byte_is_a_json_400(capped: RunningServer) -> None:
    numbers = " ".join(map(str, range(100)))
    query = f"SELECT ?a WHERE {{ VALUES ?a {{ {numbers} }} VALUES ?b {{ {numbers} }} }}"
    connection, response = _open(capped, query, accept="text/csv")
    body = response.read()
    connection.close()
    assert response.status == 400
    assert response.getheader("Content-Type") == "application/json"
    assert json.loads(body)["error"]["code"] == "result_too_large"


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_time_limit_mid_stream_cuts_a_streaming_query(big: RunningServer,
                                                           method: str) -> None:
    query = f"/sparql?timeout=1&query={quote(CROSS_JOIN)}"
    connection = http.client.HTTPConnection("127.0.0.1", big.port, timeout=60)
    if method == "GET":
        connection.request("GET", query, headers={"Accept": "application/sparql-results+json"})
    else:
        connection.request("POST", "/sparql?timeout=1", body=CROSS_JOIN.encode(),
                           headers={"Content-Type": "application/sparql-query"})
    response = connection.getresponse()
    assert response.status == 200
    tail = _read_cut(response)
    connection.close()
    assert MARKER + b"query_timeout" in tail


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_the_time_limit_cuts_a_stream_whose_evaluation_stalls(big: RunningServer,
                                                              method: str) -> None:
    with Gate(rows=GATE_ROWS, wait=60) as gate:
        query = f"SELECT ?s ?p ?o WHERE {{ {{ ?s ?p ?o }} UNION {{ SERVICE <{gate.url}> " \
                "{ ?s ?p ?o } } }"
        connection = http.client.HTTPConnection("127.0.0.1", big.port, timeout=60)
        headers = {"Authorization": f"Bearer {ADMIN}"}
        if method == "GET":
            connection.request("GET", f"/sparql?timeout=2&query={quote(query)}", headers=headers)
        else:
            connection.request("POST", "/sparql?timeout=2", body=query.encode(),
                               headers={**headers, "Content-Type": "application/sparql-query"})
        response = connection.getresponse()
        assert response.status == 200
        tail = _read_cut(response)  # the gate holds the last row back until the test ends
        connection.close()
    assert MARKER + b"query_timeout" in tail


def test_a_client_that_leaves_mid_stream_frees_its_query(tmp_path: Path) -> None:
    """One runaway slot: were the abandoned query still running, every query would get 503."""
    server = _serve(tmp_path / "store", max_runaway_queries="1", threads="1")
    try:
        connection, response = _open(server, CROSS_JOIN, method="POST",
                                     headers={"Accept": "text/csv"})
        assert response.status == 200
        assert response.read1(1 << 16)
        connection.close()
        statuses = []
        for _ in range(300):
            connection, response = _open(server, "ASK {}", method="POST")
            response.read()
            connection.close()
            statuses.append(response.status)
            if response.status == 200:
                break
        assert statuses[-1] == 200, statuses
    finally:
        server.stop()


def test_http_1_0_clients_get_the_stream_up_to_the_close(big: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", big.port), timeout=60) as sock:
        sock.sendall(f"GET /sparql?query={quote(MEDIUM_SELECT)} HTTP/1.0\r\n"
                     "Accept: application/sparql-results+json\r\n\r\n".encode())
        received = bytearray()
        while chunk := sock.recv(1 << 16):
            received += chunk
    head, _, body = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"Transfer-Encoding" not in head and b"Content-Length" not in head
    assert b"Connection: close" in head
    assert len(json.loads(body)["results"]["bindings"]) == MEDIUM

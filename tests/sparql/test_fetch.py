"""A SERVICE or LOAD whose fetch fails is the remote's failure: 502 in the error shape.

As admin (allowed to fetch anywhere) on a real server: a closed port and port 1 (which the
fetching client refuses outright) before the first byte, and a remote that drops its answer
halfway through a result that is already streaming (tests/sparql/gate.py).
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer, start_server
from tests.sparql.conftest import ADMIN, WRITER, server_env
from tests.sparql.gate import Gate
from tests.sparql.http import Answer, call

ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server holding 20,000 triples: more than one chunk of any result format."""
    running = start_server(tmp_path_factory.mktemp("store"), extra_env=server_env())
    lines = "".join(f'<http://example.org/s{i}> <http://example.org/p> "v{i}" .\n'
                    for i in range(20_000))
    answer = call(f"{running.url}/store?default", method="PUT", body=lines.encode(),
                  headers={"Authorization": f"Bearer {WRITER}",
                           "Content-Type": "application/n-triples"})
    assert answer.status in (201, 204)
    yield running
    running.stop()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once it is closed


def _targets() -> list[str]:
    return ["http://127.0.0.1:1/", f"http://127.0.0.1:{_closed_port()}/"]


def _query(server: RunningServer, text: str, method: str) -> Answer:
    headers = {**ADMIN_HEADERS, "Accept": "application/sparql-results+json"}
    if method == "GET":
        return call(f"{server.url}/sparql?query={quote(text)}", headers=headers)
    return call(f"{server.url}/sparql", method="POST", body=text.encode(),
                headers={**headers, "Content-Type": "application/sparql-query"})


def _is_upstream_error(answer: Answer) -> None:
    assert (answer.status, answer.error_code) == (502, "upstream_error"), answer.body[:300]
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["details"]["reason"]


@pytest.mark.parametrize("target", _targets(), ids=["port-1", "closed-port"])
def test_load_from_an_unreachable_remote_is_a_502(server: RunningServer, target: str) -> None:
    answer = call(f"{server.url}/update", method="POST", body=f"LOAD <{target}>".encode(),
                  headers={**ADMIN_HEADERS, "Content-Type": "application/sparql-update"})
    _is_upstream_error(answer)
    silent = call(f"{server.url}/update", method="POST",
                  body=f"LOAD SILENT <{target}>".encode(),
                  headers={**ADMIN_HEADERS, "Content-Type": "application/sparql-update"})
    assert silent.status == 204  # SILENT: the failure is ignored, as the standard says


@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("target", _targets(), ids=["port-1", "closed-port"])
@pytest.mark.parametrize("form", ["SELECT *", "ASK"])
def test_service_to_an_unreachable_remote_is_a_502(server: RunningServer, target: str,
                                                   method: str, form: str) -> None:
    _is_upstream_error(_query(server, f"{form} {{ SERVICE <{target}> {{ ?s ?p ?o }} }}",
                              method))
    # The server goes on serving.
    assert _query(server, "ASK {}", method).json()["boolean"] is True


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_remote_that_fails_mid_stream_cuts_the_result(server: RunningServer,
                                                        method: str) -> None:
    with Gate(rows=3_000, drop=True, wait=30) as gate:
        query = "SELECT ?s ?p ?o WHERE { { ?s ?p ?o } UNION " \
                f"{{ SERVICE <{gate.url}> {{ ?s ?p ?o }} }} }}"
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        headers = {**ADMIN_HEADERS, "Accept": "application/sparql-results+json"}
        if method == "GET":
            connection.request("GET", f"/sparql?query={quote(query)}", headers=headers)
        else:
            connection.request("POST", "/sparql", body=query.encode(),
                               headers={**headers, "Content-Type": "application/sparql-query"})
        response = connection.getresponse()
        assert response.status == 200
        received = response.read1(1 << 16)
        gate.release.set()  # the remote fails only once the result is on its way
        with pytest.raises(http.client.IncompleteRead) as cut:
            while piece := response.read(1 << 16):
                received += piece
        connection.close()
    assert gate.released_in_time
    tail = (received + cut.value.partial)[-1000:]
    assert b"!!! jido-kg: this result is cut short and incomplete (upstream_error: " in tail

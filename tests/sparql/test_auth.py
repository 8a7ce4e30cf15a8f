"""Tokens: anonymous read can be off, writes need a token, scoped tokens see one project."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from kg.graphs import long_term, sessions
from tests.conftest import RunningServer, start_server
from tests.sparql.conftest import ADMIN, READER, SCOPED, WRITER, server_env
from tests.sparql.http import call

ACME, OTHER = long_term("acme").value, long_term("other").value
ALL_GRAPHS = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?g"


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A server without anonymous read, holding data of projects acme and other."""
    server = start_server(tmp_path_factory.mktemp("auth"),
                          extra_env=server_env(anonymous_read="false"))
    update = (f"INSERT DATA {{ GRAPH <{ACME}> {{ <http://m/1> <http://p> 'acme' }} "
              f"GRAPH <{OTHER}> {{ <http://m/2> <http://p> 'other' }} "
              f"<http://m/3> <http://p> 'default' }}")
    answer = call(f"{server.url}/update", method="POST", body=update.encode(),
                  headers={"Authorization": f"Bearer {ADMIN}",
                           "Content-Type": "application/sparql-update"})
    assert answer.status == 204
    yield server
    server.stop()


def _select(server: RunningServer, query: str, token: str | None, extra: str = "") -> list[str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = call(f"{server.url}/sparql?query={quote(query)}{extra}", headers=headers)
    assert answer.status == 200, answer.body
    return [next(iter(b.values()))["value"] for b in answer.json()["results"]["bindings"]]


def test_anonymous_read_can_be_turned_off(private: RunningServer) -> None:
    answer = call(f"{private.url}/sparql?query={quote('ASK {}')}")
    assert (answer.status, answer.error_code) == (401, "unauthenticated")
    assert answer.headers["www-authenticate"].startswith("Bearer")
    assert call(f"{private.url}/store?graph={ACME}").status == 401
    assert _select(private, "ASK {}".replace("ASK {}", "SELECT (1 AS ?x) {}"), READER) == ["1"]


def test_scoped_token_sees_only_its_project(private: RunningServer) -> None:
    assert set(_select(private, ALL_GRAPHS, READER)) >= {ACME, OTHER}
    assert _select(private, ALL_GRAPHS, SCOPED) == [ACME]
    # The default graph of a scoped token is the union of its project's graphs.
    assert _select(private, "SELECT ?o WHERE { ?s ?p ?o }", SCOPED) == ["acme"]
    # Naming another graph in the query finds nothing; naming it in the dataset is refused.
    assert _select(private, f"SELECT ?o WHERE {{ GRAPH <{OTHER}> {{ ?s ?p ?o }} }}", SCOPED) == []
    for query, extra in [
        (f"SELECT ?o FROM <{OTHER}> WHERE {{ ?s ?p ?o }}", ""),
        (f"SELECT ?o FROM NAMED <{OTHER}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}", ""),
        ("SELECT ?o WHERE { ?s ?p ?o }", f"&default-graph-uri={quote(OTHER)}"),
        ("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", f"&named-graph-uri={quote(OTHER)}"),
    ]:
        answer = call(f"{private.url}/sparql?query={quote(query)}{extra}",
                      headers={"Authorization": f"Bearer {SCOPED}"})
        assert (answer.status, answer.error_code) == (403, "forbidden"), query
    # Its own graphs may be named.
    own = f"SELECT ?o FROM <{ACME}> FROM <{sessions('acme').value}> WHERE {{ ?s ?p ?o }}"
    assert _select(private, own, SCOPED) == ["acme"]


def test_scoped_token_reads_only_its_graphs_from_the_store(private: RunningServer) -> None:
    headers = {"Authorization": f"Bearer {SCOPED}"}
    assert call(f"{private.url}/store?graph={quote(ACME)}", headers=headers).status == 200
    for path in (f"/store?graph={quote(OTHER)}", "/store?default", "/store"):
        answer = call(f"{private.url}{path}", headers=headers)
        assert (answer.status, answer.error_code) == (403, "forbidden"), path


@pytest.mark.parametrize("token", [SCOPED, READER])
def test_scoped_and_read_tokens_cannot_write(private: RunningServer, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    update = call(f"{private.url}/update", method="POST", body=f"DROP GRAPH <{ACME}>".encode(),
                  headers={**headers, "Content-Type": "application/sparql-update"})
    put = call(f"{private.url}/store?graph={quote(ACME)}", method="PUT",
               body=b"<http://a> <http://b> 1 .", headers={**headers,
                                                           "Content-Type": "text/turtle"})
    assert (update.status, put.status) == (403, 403)
    assert _select(private, f"SELECT ?o WHERE {{ GRAPH <{ACME}> {{ ?s ?p ?o }} }}",
                   WRITER) == ["acme"]


def test_cors_is_off_by_default(private: RunningServer) -> None:
    answer = call(f"{private.url}/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in answer.headers


def test_the_same_get_alternating_callers_gets_each_callers_answer(
        private: RunningServer) -> None:
    """Plans of GET queries are reused per request; never across callers (api.sparql)."""
    for _ in range(3):
        assert set(_select(private, ALL_GRAPHS, READER)) >= {ACME, OTHER}
        assert _select(private, ALL_GRAPHS, SCOPED) == [ACME]
        answer = call(f"{private.url}/sparql?query={quote(ALL_GRAPHS)}")
        assert (answer.status, answer.error_code) == (401, "unauthenticated")
        answer = call(f"{private.url}/sparql?query={quote(ALL_GRAPHS)}",
                      headers={"Authorization": "Bearer wrong"})
        assert (answer.status, answer.error_code) == (401, "unauthenticated")

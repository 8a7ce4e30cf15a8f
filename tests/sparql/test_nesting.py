"""Texts nested or chained past the guard's limits: a 400 in the error shape, the server on.

Each of these killed the whole server before (pyoxigraph overflows its thread's stack: a
segfault, not an exception), most of them with the nesting hidden from the old guard.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest

from kg.store.guard import DEFAULT_MAX_CHAIN, DEFAULT_MAX_NESTING
from tests.conftest import RunningServer
from tests.sparql.conftest import WRITER, server_env
from tests.sparql.http import Answer, call

QUERY = {"Content-Type": "application/sparql-query"}
WRITE = {"Authorization": f"Bearer {WRITER}"}


def behind_less_than(depth: int, *, before: str = "1<", after: str = "||2>1") -> str:
    """`ASK{FILTER(1<((((…1))))||2>1)}`: valid SPARQL nested `depth` levels behind a '<'."""
    return f"ASK{{FILTER({before}{'(' * depth}1{')' * depth}{after})}}"


def refused(answer: Answer, limit: int) -> None:
    """A 400 in the one error shape, naming the limit."""
    assert (answer.status, answer.error_code) == (400, "nesting_too_deep")
    assert str(limit) in answer.json()["error"]["message"]
    assert answer.json()["error"]["details"]["limit"] == limit


def serving(server: RunningServer, pids: list[int]) -> None:
    """No process died or was replaced, and a small query still answers."""
    assert server.process.poll() is None
    assert server.pids() == pids
    answer = call(f"{server.url}/sparql", method="POST", body=b"ASK { }", headers=QUERY)
    assert answer.status == 200
    assert answer.json()["boolean"] is True


@pytest.mark.parametrize(("before", "after"), [
    ("1<", "||2>1"),  # the '<' taken for an IRI start by the old guard
    ("1<", "&&2>1"),  # `<((((…&&2>` even matches IRIREF: pyoxigraph still reads less-than
    ("1<1&&'x>'=", ""),  # the IRIREF reading would open a string over the brackets
    ("1<1#> c\n+", ""),  # ... or a comment
])
def test_a_million_levels_behind_less_than_are_refused(
        server_factory: Callable[..., RunningServer], before: str, after: str) -> None:
    server = server_factory(extra_env=server_env())
    pids = server.pids()
    text = behind_less_than(1_000_000, before=before, after=after)
    answer = call(f"{server.url}/sparql", method="POST", body=text.encode(), headers=QUERY)
    refused(answer, DEFAULT_MAX_NESTING)
    serving(server, pids)


def test_over_the_cap_by_get_and_as_an_update(sparql_server: RunningServer) -> None:
    pids = sparql_server.pids()
    deep = behind_less_than(20_000)
    refused(call(f"{sparql_server.url}/sparql?query={quote(deep)}"), DEFAULT_MAX_NESTING)
    update = "INSERT { <http://x> <http://y> 1 } WHERE " + deep[3:]
    answer = call(f"{sparql_server.url}/update", method="POST", body=update.encode(),
                  headers={**WRITE, "Content-Type": "application/sparql-update"})
    refused(answer, DEFAULT_MAX_NESTING)
    form = call(f"{sparql_server.url}/sparql", method="POST",
                body=f"update={quote(update)}".encode(),
                headers={**WRITE, "Content-Type": "application/x-www-form-urlencoded"})
    refused(form, DEFAULT_MAX_NESTING)
    serving(sparql_server, pids)


def test_just_under_the_cap_is_answered(sparql_server: RunningServer) -> None:
    answer = call(f"{sparql_server.url}/sparql", method="POST",
                  body=behind_less_than(DEFAULT_MAX_NESTING - 2).encode(), headers=QUERY)
    assert answer.status == 200
    assert answer.json()["boolean"] is True


def test_a_million_chained_operators_are_refused(sparql_server: RunningServer) -> None:
    pids = sparql_server.pids()
    text = "ASK{FILTER(" + "true||" * 1_000_000 + "true)}"
    answer = call(f"{sparql_server.url}/sparql", method="POST", body=text.encode(),
                  headers=QUERY)
    refused(answer, DEFAULT_MAX_CHAIN)
    assert answer.json()["error"]["details"]["measure"] == "chain"
    serving(sparql_server, pids)


@pytest.mark.parametrize(("media_type", "body"), [
    ("text/turtle", "<a:s> <a:p> " + "<<( <a:s> <a:p> " * 1_000_000 + "<a:o>"
     + " )>>" * 1_000_000 + " ."),
    ("application/n-triples", "<a:s> <a:p> " + "<<( <a:s> <a:p> " * 1_000_000 + "<a:o>"
     + " )>>" * 1_000_000 + " ."),
])
def test_deep_rdf_bodies_are_refused(sparql_server: RunningServer, media_type: str,
                                     body: str) -> None:
    pids = sparql_server.pids()
    answer = call(f"{sparql_server.url}/store?graph=http://example.org/deep", method="PUT",
                  body=body.encode(), headers={**WRITE, "Content-Type": media_type})
    refused(answer, DEFAULT_MAX_NESTING)
    serving(sparql_server, pids)


def test_brackets_in_strings_iris_and_comments_do_not_count(
        sparql_server: RunningServer) -> None:
    noise = "(((((" * 20_000
    text = (f'ASK {{ FILTER("{noise}" != <http://x/{noise}>) # {noise}\n'
            f"FILTER(1<2) FILTER('''{noise}''' != '') }}")
    answer = call(f"{sparql_server.url}/sparql", method="POST", body=text.encode(),
                  headers=QUERY)
    assert answer.status == 200
    assert answer.json()["boolean"] is True

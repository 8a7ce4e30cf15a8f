"""Bad input: the right 4xx in the one JSON error shape, the store unchanged, the server up."""

from __future__ import annotations

import socket
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer
from tests.sparql.conftest import ADMIN, READER, WRITER
from tests.sparql.http import Answer, call

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }"
WRITE = {"Authorization": f"Bearer {WRITER}", "Content-Type": "application/sparql-update"}


def _count(server: RunningServer) -> int:
    answer = call(f"{server.url}/sparql?query={quote(COUNT)}")
    assert answer.status == 200
    return int(answer.json()["results"]["bindings"][0]["n"]["value"])


def _alive(server: RunningServer) -> None:
    assert server.process.poll() is None
    assert call(f"{server.url}/health").status == 200


@pytest.fixture(scope="module")
def seeded(sparql_server: RunningServer) -> RunningServer:
    update = b"INSERT DATA { GRAPH <http://example.org/g> { <http://a> <http://b> 1 } }"
    assert call(f"{sparql_server.url}/update", method="POST", body=update,
                headers=WRITE).status == 204
    return sparql_server


def _query(server: RunningServer, text: str, **kwargs: object) -> Answer:
    return call(f"{server.url}/sparql", method="POST", body=text.encode(),
                headers={"Content-Type": "application/sparql-query"}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("depth", [5_000, 50_000])
@pytest.mark.parametrize("how", ["query-direct", "query-form", "query-get", "update-direct",
                                 "update-form"])
def test_deep_nesting_is_refused(seeded: RunningServer, depth: int, how: str) -> None:
    before = _count(seeded)
    kind, _, style = how.partition("-")
    text = ("SELECT * WHERE " if kind == "query" else "INSERT { <http://x> <http://y> 1 } WHERE ")
    text += "{" * depth + "}" * depth
    headers = {"Authorization": f"Bearer {WRITER}"}
    if style == "direct":
        headers["Content-Type"] = f"application/sparql-{kind}"
        answer = call(f"{seeded.url}/sparql", method="POST", body=text.encode(), headers=headers)
    elif style == "form":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        answer = call(f"{seeded.url}/sparql", method="POST",
                      body=f"{kind}={quote(text)}".encode(), headers=headers)
    else:
        answer = call(f"{seeded.url}/sparql?query={quote(text)}")
    # Even a 300 KB GET URL reaches the app (the server's header cap is 2 MiB) and gets the
    # JSON error, not the WSGI server's plain-text 431.
    assert (answer.status, answer.error_code) == (400, "nesting_too_deep")
    _alive(seeded)
    assert _count(seeded) == before


@pytest.mark.parametrize("depth", [5_000, 50_000])
def test_deep_json_ld_body_is_refused(seeded: RunningServer, depth: int) -> None:
    body = '{"@id":"http://s","http://p":' + '{"http://p":' * depth + "1" + "}" * depth + "}"
    answer = call(f"{seeded.url}/store?graph=http://example.org/deep", method="PUT",
                  body=body.encode(), headers={"Authorization": f"Bearer {WRITER}",
                                               "Content-Type": "application/ld+json"})
    assert (answer.status, answer.error_code) == (400, "nesting_too_deep")
    _alive(seeded)


def test_service_and_load_of_loopback_are_refused(seeded: RunningServer) -> None:
    with socket.socket() as listener:  # a loopback target that would notice a fetch
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        target = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        answer = _query(seeded, f"SELECT * WHERE {{ SERVICE <{target}> {{ ?s ?p ?o }} }}")
        assert (answer.status, answer.error_code) == (403, "remote_access_denied")
        load = call(f"{seeded.url}/update", method="POST", headers=WRITE,
                    body=f"LOAD SILENT <{target}> INTO GRAPH <http://example.org/x>".encode())
        assert (load.status, load.error_code) == (403, "remote_access_denied")
        with pytest.raises(TimeoutError):
            listener.accept()
    # The words inside strings, comments and names are not keywords.
    ok = _query(seeded, 'SELECT ?service WHERE { BIND("SERVICE <http://x/>" AS ?service) } # LOAD')
    assert ok.status == 200


@pytest.mark.parametrize("before", [
    "FILTER(1<1&&'x>'=1)",  # the grammar's longest token reads `<1&&'x>`, then a string
    "FILTER(1<2#> '''\n)",  # ... or `<2#>`, then a long string
])
def test_service_hidden_from_the_longest_token_is_refused(seeded: RunningServer,
                                                          before: str) -> None:
    # pyoxigraph reads these '<' as less-than, so the SERVICE below is real and would be run.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        target = f"http://127.0.0.1:{listener.getsockname()[1]}/"
        answer = _query(seeded, f"ASK {{ {before} SERVICE <{target}> {{ ?s ?p ?o }} }}")
        assert (answer.status, answer.error_code) == (403, "remote_access_denied")
        with pytest.raises(TimeoutError):
            listener.accept()


@pytest.mark.parametrize(
    ("method", "path", "body", "headers", "status", "code"),
    [
        ("POST", "/sparql", b"SELECT * WHERE { ?s ?p", {"Content-Type": "application/sparql-query"},
         400, "malformed_query"),
        ("GET", "/sparql?query=ASK%7B%7D&query=ASK%7B%7D", None, {}, 400, "invalid_input"),
        ("POST", "/sparql", b"ASK {}", {"Content-Type": "text/plain"}, 415,
         "unsupported_media_type"),
        ("POST", "/sparql", b"ASK {}", {"Content-Type": ""}, 415, "unsupported_media_type"),
        ("POST", "/sparql", "ASK {}".encode("utf-16"),
         {"Content-Type": "application/sparql-query; charset=UTF-16"}, 415,
         "unsupported_media_type"),
        ("POST", "/sparql", b"ASK { FILTER(\"\xff\xfe\") }",
         {"Content-Type": "application/sparql-query"}, 400, "invalid_input"),
        ("GET", "/sparql?update=CLEAR%20ALL", None, {}, 400, "invalid_input"),
        ("GET", "/sparql?query=ASK%7B%7D&default-graph-uri=not%20an%20iri", None, {}, 400,
         "invalid_input"),
        ("GET", "/sparql?query=SELECT%20*%7B%7D", None, {"Accept": "text/turtle"}, 406,
         "not_acceptable"),
        ("PUT", "/sparql?query=ASK%7B%7D", None, {}, 405, "method_not_allowed"),
        ("POST", "/update", b"CLEAR ALL", {"Content-Type": "application/sparql-update"}, 401,
         "unauthenticated"),
        ("POST", "/update", b"CLEAR ALL", {"Content-Type": "application/sparql-update",
                                           "Authorization": "Bearer wrong"}, 401,
         "unauthenticated"),
        ("POST", "/update", b"CLEAR ALL", {"Content-Type": "application/sparql-update",
                                           "Authorization": f"Bearer {READER}"}, 403, "forbidden"),
        ("PUT", "/store?graph=http://example.org/g", b"<http://a> <http://b> 2 .",
         {"Content-Type": "text/turtle"}, 401, "unauthenticated"),
        ("DELETE", "/store?graph=http://example.org/g", None,
         {"Authorization": "Bearer wrong"}, 401, "unauthenticated"),
        ("PUT", "/store?graph=http://example.org/g", b"<http://a> <http://b> .",
         {"Content-Type": "text/turtle", "Authorization": f"Bearer {WRITER}"}, 400,
         "malformed_query"),
        ("PUT", "/store?graph=http://example.org/g", b"<a> <b> <c> .",
         {"Content-Type": "image/png", "Authorization": f"Bearer {WRITER}"}, 415,
         "unsupported_media_type"),
    ],
)
def test_bad_requests(seeded: RunningServer, method: str, path: str, body: bytes | None,
                      headers: dict[str, str], status: int, code: str) -> None:
    before = _count(seeded)
    answer = call(f"{seeded.url}{path}", method=method, body=body, headers=headers)
    assert (answer.status, answer.error_code) == (status, code)
    assert _count(seeded) == before
    _alive(seeded)


def test_200_mb_body_is_refused(seeded: RunningServer) -> None:
    before = _count(seeded)
    size = 200 * 1024 * 1024
    with socket.create_connection(("127.0.0.1", seeded.port), timeout=30) as sock:
        sock.sendall(
            f"POST /update HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ADMIN}\r\n"
            f"Content-Type: application/sparql-update\r\nContent-Length: {size}\r\n\r\n".encode()
        )
        chunk = b"#" * (1024 * 1024)
        try:
            for _ in range(200):
                sock.sendall(chunk)
        except OSError:
            pass  # the server may stop reading once it has answered
        head = sock.recv(65536).split(b"\r\n", 1)[0]
    assert b" 413 " in head
    _alive(seeded)
    assert _count(seeded) == before

"""The HTTP server itself, over real sockets on loopback: keep-alive, pipelining, bodies, limits.

These are the HTTP/1.1 duties `jido-kg serve` takes on itself (api/server.py, api/connection.py);
what the routes answer is tested in tests/sparql and tests/agent.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import signal
import socket
import time
from collections.abc import Callable
from urllib.parse import quote

import pytest

from tests.conftest import RunningServer

ASK = "ASK {}"


def _read_response(sock: socket.socket, buffer: bytearray) -> tuple[int, dict[str, str], bytes]:
    """Read one HTTP response (Content-Length framed) from `sock`, leaving extra bytes."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed mid-head: {bytes(buffer)!r}"
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    body = bytearray(rest)
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed mid-body"
        body += chunk
    buffer[:] = body[length:]
    return status, headers, bytes(body[:length])


def test_keep_alive_serves_many_requests_on_one_connection(live_server: RunningServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=10)
    for _ in range(50):
        connection.request("GET", f"/sparql?query={quote(ASK)}",
                           headers={"Accept": "application/sparql-results+json"})
        response = connection.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["boolean"] is True
    connection.request("GET", "/health")
    assert connection.getresponse().status == 200


def test_pipelined_requests_are_answered_in_order(live_server: RunningServer) -> None:
    paths = ["/health", f"/sparql?query={quote(ASK)}", "/nowhere", "/health"]
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as sock:
        sock.sendall(b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths))
        buffer = bytearray()
        statuses = [_read_response(sock, buffer)[0] for _ in paths]
    assert statuses == [200, 200, 404, 200]


def test_chunked_request_body_is_read_whole(live_server: RunningServer) -> None:
    body = b"ASK { FILTER(true) }"
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 4]), body[i:i + 4])
                      for i in range(0, len(body), 4)) + b"0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as sock:
        sock.sendall(b"POST /sparql HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                     b"Content-Type: application/sparql-query\r\n"
                     b"Accept: application/sparql-results+json\r\n\r\n" + chunks)
        status, _, answer = _read_response(sock, bytearray())
    assert status == 200
    assert json.loads(answer)["boolean"] is True


def test_expect_100_continue_is_honoured(live_server: RunningServer) -> None:
    body = b"query=" + quote(ASK).encode()
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as sock:
        sock.sendall(b"POST /sparql HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                     b"Content-Type: application/x-www-form-urlencoded\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        buffer = bytearray()
        interim, _, _ = _read_response(sock, buffer)
        sock.sendall(body)
        final, _, answer = _read_response(sock, buffer)
    assert (interim, final) == (100, 200)
    assert b"true" in answer


def test_head_has_length_but_no_body(live_server: RunningServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=10)
    connection.request("HEAD", "/health")
    response = connection.getresponse()
    assert response.status == 200
    assert int(response.headers["Content-Length"]) > 0
    assert response.read() == b""
    connection.request("GET", "/health")  # the connection is still in step
    assert connection.getresponse().status == 200


def test_oversized_head_and_garbage_get_json_errors(live_server: RunningServer) -> None:
    cases = [
        (b"GET /sparql?query=" + b"a" * (3 * 1024 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n",
         431, "request_head_too_large"),
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "bad_http_request"),
    ]
    for request, status, code in cases:
        with socket.create_connection(("127.0.0.1", live_server.port), timeout=10) as sock:
            # The server may answer and close before it has read everything.
            with contextlib.suppress(OSError):
                sock.sendall(request)
            got, headers, body = _read_response(sock, bytearray())
        assert (got, json.loads(body)["error"]["code"]) == (status, code)
        assert headers["content-type"] == "application/json"
        assert headers["connection"] == "close"
    connection = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=10)
    connection.request("GET", "/health")
    assert connection.getresponse().status == 200


def test_connections_over_the_limit_get_503_and_others_go_on(
        server_factory: Callable[..., RunningServer]) -> None:
    server = server_factory(extra_env={"KG_MAX_CONNECTIONS": "2"})
    held = [_answered_connection(server.port) for _ in range(2)]  # both counted now
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as extra:
        extra.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, body = _read_response(extra, bytearray())
    assert (status, json.loads(body)["error"]["code"]) == (503, "too_many_connections")
    held[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _read_response(held[0], bytearray())[0] == 200
    for sock in held:
        sock.close()
    _answered_connection(server.port).close()  # their threads end and free the slots


def _answered_connection(port: int) -> socket.socket:
    """A keep-alive connection the server has accepted and answered 200 on (retried while an
    earlier connection's thread is still ending: sleeps were not enough on a busy machine)."""
    deadline = time.monotonic() + 10
    while True:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        status = _read_response(sock, bytearray())[0]
        if status == 200:
            return sock
        sock.close()
        assert time.monotonic() < deadline, f"no connection slot was freed (last: {status})"
        time.sleep(0.05)


def test_idle_connections_are_closed_and_free_their_slot(
        server_factory: Callable[..., RunningServer]) -> None:
    server = server_factory(extra_env={"KG_MAX_CONNECTIONS": "1",
                                       "KG_KEEP_ALIVE_TIMEOUT": "0.5"})
    time.sleep(0.5)  # the start-up health check's connection has ended and freed the slot
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as idle:
        started = time.monotonic()
        assert idle.recv(10) == b""  # closed by the server, not by us
        assert 0.4 <= time.monotonic() - started < 5
    time.sleep(0.2)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/health")
    assert connection.getresponse().status == 200


@pytest.mark.parametrize("target", [
    "/health",  # answered by the app: the connection has a thread of its own
    f"/sparql?query={quote(ASK)}",  # a query: the connection is parked in the poller
])
def test_sigterm_closes_idle_keep_alive_connections(live_server: RunningServer,
                                                    target: str) -> None:
    idle = socket.create_connection(("127.0.0.1", live_server.port), timeout=10)
    idle.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert _read_response(idle, bytearray())[0] == 200
    started = time.monotonic()
    live_server.process.send_signal(signal.SIGTERM)
    assert live_server.process.wait(timeout=15) == 0
    assert time.monotonic() - started < 5  # not held up by the idle connection
    assert idle.recv(10) == b""
    idle.close()

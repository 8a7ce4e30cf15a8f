"""The poller (api/poller.py), over real sockets on a real server: parked keep-alive connections.

A connection's GET queries are answered by the one polling thread; anything else moves the
connection to a thread of its own; a long query must not hold up the other connections.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from urllib.parse import quote

from flask import Flask

from api.server import HttpServer, bind
from kg.settings import MEMORY_STORE, Settings
from tests.conftest import RunningServer
from tests.test_http_server import _read_response

POINT = "SELECT * WHERE { ?s ?p ?o } LIMIT 1"
# Counts 40 million rows of a VALUES product: seconds of evaluation, with no data at all.
_VALUES = " ".join(str(i) for i in range(1000))
_FORTY = " ".join(str(i) for i in range(40))
LONG = ("SELECT (COUNT(*) AS ?n) WHERE { VALUES ?x {" + _VALUES + "} VALUES ?y {" + _VALUES
        + "} VALUES ?z {" + _FORTY + "} }")


def _get(path: str, query: str) -> bytes:
    return (f"GET {path}?query={quote(query)} HTTP/1.1\r\nHost: x\r\n"
            "Accept: application/sparql-results+json\r\n\r\n").encode()


def test_a_long_query_does_not_hold_up_the_other_connections(live_server: RunningServer) -> None:
    long = socket.create_connection(("127.0.0.1", live_server.port), timeout=120)
    point = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=60)
    point.request("GET", f"/sparql?query={quote(POINT)}")  # parked after its first answer
    first = point.getresponse()
    assert first.status == 200, first.read()
    first.read()
    answered = threading.Event()

    def run_long() -> None:
        long.sendall(_get("/sparql", LONG))
        status, _, body = _read_response(long, bytearray())
        assert status == 200, body
        answered.set()

    thread = threading.Thread(target=run_long)
    thread.start()
    latencies: list[float] = []
    while not answered.is_set():  # point queries all through the long one
        started = time.monotonic()
        point.request("GET", f"/sparql?query={quote(POINT)}")
        response = point.getresponse()
        assert response.status == 200, response.read()
        response.read()
        latencies.append(time.monotonic() - started)
    thread.join(timeout=120)
    long.close()
    # Had the poller answered both connections in turn, a point query sent while the long
    # one ran would have waited the seconds it took.
    assert len(latencies) >= 10, latencies
    assert max(latencies) < 1.0, sorted(latencies)[-5:]


def test_a_request_for_the_app_moves_the_connection_to_a_thread_in_order(
        live_server: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", live_server.port), timeout=30) as sock:
        buffer = bytearray()
        sock.sendall(_get("/sparql", "ASK {}"))  # answered by the poller
        status, _, body = _read_response(sock, buffer)
        assert (status, json.loads(body)["boolean"]) == (200, True)
        form = f"query={quote('ASK { FILTER(false) }')}".encode()
        # Pipelined: a query, a POST (the app's: the connection gets its thread) and a query.
        sock.sendall(_get("/sparql", "ASK {}")
                     + b"POST /sparql HTTP/1.1\r\nHost: x\r\nAccept: application/sparql-"
                     b"results+json\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                     + f"Content-Length: {len(form)}\r\n\r\n".encode() + form
                     + _get("/health", "") + _get("/sparql", "ASK {}"))
        answers = [_read_response(sock, buffer) for _ in range(4)]
    assert [a[0] for a in answers] == [200, 200, 200, 200]
    assert [json.loads(a[2]).get("boolean") for a in answers] == [True, False, None, True]


def test_the_server_counts_connections_with_threads_for_the_poller_to_spin(app: Flask) -> None:
    listener = bind("127.0.0.1", 0)
    server = HttpServer(Settings(store=MEMORY_STORE), listener, app=app)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    port = server.address[1]
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as parked:
            buffer = bytearray()
            parked.sendall(_get("/sparql", "ASK {}"))  # the poller's: no thread
            assert _read_response(parked, buffer)[0] == 200
            assert server.threaded == 0
            with socket.create_connection(("127.0.0.1", port), timeout=30) as moved:
                form = f"query={quote('ASK {}')}".encode()
                moved.sendall(b"POST /sparql HTTP/1.1\r\nHost: x\r\nContent-Type: application/"
                              b"x-www-form-urlencoded\r\n"
                              + f"Content-Length: {len(form)}\r\n\r\n".encode() + form)
                assert _read_response(moved, bytearray())[0] == 200
                assert server.threaded == 1  # the app's request gave it a thread
            deadline = time.monotonic() + 10
            while server.threaded:  # its thread ends once the client has closed
                assert time.monotonic() < deadline, "the closed connection's thread was counted"
                time.sleep(0.01)
            parked.sendall(_get("/sparql", "ASK {}"))
            assert _read_response(parked, buffer)[0] == 200
    finally:
        server.stop()
        server.drain(5)
        serving.join(timeout=10)

"""A remote server that is down or frozen: a clear 503-class error in time, no partial write,
and the same store object working again once the server is back."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from pyoxigraph import Literal, NamedNode, Quad

from api.errors import status_for
from kg.errors import KgError, StoreUnavailableError
from tests.remote.conftest import OxigraphServer

G = NamedNode("https://example.org/g")
P = NamedNode("https://example.org/p")


def quads(n: int, start: int = 0) -> list[Quad]:
    return [Quad(NamedNode(f"https://example.org/s{i}"), P, Literal(i), G)
            for i in range(start, start + n)]


def test_server_down_then_back_on_the_same_port(
    oxigraph_factory: Callable[[], OxigraphServer],
) -> None:
    server = oxigraph_factory()
    store = server.store(timeout=2.0, retries=2, backoff=0.05)
    store.add(quads(3))
    server.stop()
    began = time.monotonic()
    with pytest.raises(StoreUnavailableError) as refused:
        store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")
    assert time.monotonic() - began < 2.5
    assert server.url in refused.value.message and "refused" in refused.value.message
    assert status_for(refused.value) == 503
    with pytest.raises(StoreUnavailableError):
        store.add(quads(5, start=100))
    server.start()
    # The same object recovers: no reconnect call, stale pooled sockets are replaced.
    assert len(list(store.quads(graph=G))) == 3
    store.add(quads(2, start=10))
    assert len(list(store.quads(graph=G))) == 5


def test_frozen_server_times_out_within_the_deadline_and_writes_nothing(
    oxigraph_factory: Callable[[], OxigraphServer],
) -> None:
    server = oxigraph_factory()
    store = server.store(timeout=1.0, retries=3, backoff=0.05)
    store.add(quads(2))
    server.pause()
    try:
        began = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"did not answer within 1 s"):
            store.query("SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }")
        assert time.monotonic() - began < 1.5  # retries stay inside the one deadline
        began = time.monotonic()
        with pytest.raises(StoreUnavailableError):
            store.add(quads(15, start=50))
        assert time.monotonic() - began < 1.5
    finally:
        server.resume()
    # The write that timed out reached the frozen server's socket: it may run once the server
    # thaws, but as one INSERT DATA it lands whole or not at all, never half.
    time.sleep(0.3)
    count = len(list(store.quads(graph=G)))
    assert count in (2, 17)
    store.add(quads(1, start=200))
    assert len(list(store.quads(graph=G))) == count + 1


def test_an_update_failing_half_way_leaves_nothing_behind(
    oxigraph_factory: Callable[[], OxigraphServer],
) -> None:
    server = oxigraph_factory()
    store = server.store(timeout=2.0)
    store.add(quads(2))
    # The first operation succeeds, the second fails at run time (the graph exists already):
    # one request is one transaction, so the first is rolled back too.
    with pytest.raises(KgError):
        store.update(f"INSERT DATA {{ GRAPH {G} {{ <https://example.org/new> {P} 1 }} }} ; "
                     f"CREATE GRAPH {G}")
    assert len(list(store.quads(graph=G))) == 2


def test_unreachable_port_fails_fast_with_the_url() -> None:
    from kg.store.remote import RemoteStore
    from kg.store.sparql_client import SparqlClient
    from tests.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/query"
    store = RemoteStore(url, client=SparqlClient(timeout=1.0, retries=1, backoff=0.01))
    with pytest.raises(StoreUnavailableError, match=r"127\.0\.0\.1"):
        store.named_graphs()

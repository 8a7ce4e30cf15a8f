"""What reaches the network: reads are retried after a broken connection, writes never; a
stopped or frozen service is a ServiceUnreachableError / ServiceTimeoutError naming its URL;
the bearer token is sent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator

import pytest

from kg.client import MemoryClient, ServiceTimeoutError, ServiceUnreachableError
from kg.errors import QueryTimeoutError, StoreUnavailableError
from kg.shortterm import SessionNotFoundError
from tests.client.conftest import TOKEN_ENV
from tests.client.proxy import FlakyProxy
from tests.conftest import RunningServer


def test_a_read_is_retried_through_dropped_connections(service_server: RunningServer,
                                                       writer: MemoryClient) -> None:
    writer.start_session("retry1", project="retries")
    with FlakyProxy(service_server.port, drop=2) as proxy, \
            MemoryClient(proxy.url, token="w-token", retries=2, backoff=0.01) as client:
        assert client.session("retry1").id == "retry1"
        assert proxy.targets() == ["GET /v1/sessions/retry1"] * 3
    # recall is a POST that only reads: retried as well.
    with FlakyProxy(service_server.port, drop=1) as proxy, \
            MemoryClient(proxy.url, token="w-token", backoff=0.01) as client:
        assert client.recall("retries", "anything") == []
        assert proxy.targets() == ["POST /v1/projects/retries/recall"] * 2


def test_a_read_that_keeps_failing_raises_unreachable_after_its_retries(
    service_server: RunningServer,
) -> None:
    with FlakyProxy(service_server.port, drop=10) as proxy, \
            MemoryClient(proxy.url, retries=3, backoff=0.01) as client:
        with pytest.raises(ServiceUnreachableError) as raised:
            client.list_messages("retry2")
        assert proxy.targets() == ["GET /v1/sessions/retry2/messages"] * 4
    assert proxy.url in raised.value.message and "after 4 attempts" in raised.value.message
    assert raised.value.details["attempts"] == 4


def test_a_write_is_sent_once_and_not_retried(service_server: RunningServer,
                                              writer: MemoryClient) -> None:
    with FlakyProxy(service_server.port, drop=1) as proxy, \
            MemoryClient(proxy.url, token="w-token", retries=5, backoff=0.01) as client:
        with pytest.raises(ServiceUnreachableError) as raised:
            client.start_session("written-once", project="retries")
        assert proxy.targets() == ["POST /v1/sessions"]
        assert "may or may not have been applied" in raised.value.message
        # The next write goes through: the failure was the connection's, not the client's.
        assert client.start_session("written-next", project="retries").id == "written-next"
    with pytest.raises(SessionNotFoundError):
        writer.session("written-once")  # the dropped request never reached the service


def test_the_bearer_token_is_sent(service_server: RunningServer) -> None:
    with FlakyProxy(service_server.port, drop=0) as proxy, \
            MemoryClient(proxy.url, token="w-token") as client:
        client.start_session("token1", project="retries")
        head = proxy.heads[0].lower()
    assert b"\r\nauthorization: bearer w-token" in head
    assert b"\r\naccept: application/json" in head


def test_a_stopped_service_is_unreachable_for_reads_and_writes(
    server_factory: Callable[..., RunningServer],
) -> None:
    server = server_factory(extra_env=TOKEN_ENV)
    with MemoryClient(server.url, token="w-token", retries=2, backoff=0.01) as client:
        client.start_session("stopped1", project="stopped")  # a pooled keep-alive connection
        server.stop()
        with pytest.raises(ServiceUnreachableError) as read:
            client.session("stopped1")
        with pytest.raises(ServiceUnreachableError) as write:
            client.remember("stopped", "lost")
    assert isinstance(read.value, StoreUnavailableError)  # callers may catch either
    assert server.url in read.value.message and "connection refused" in read.value.message
    assert read.value.details == {"url": server.url, "target": "GET /v1/sessions/stopped1",
                                  "attempts": 3}
    assert server.url in write.value.message
    assert write.value.details["attempts"] == 1


def test_a_frozen_service_is_a_timeout_and_is_not_retried(
    server_factory: Callable[..., RunningServer],
) -> None:
    server = server_factory(extra_env=TOKEN_ENV)
    with FlakyProxy(server.port, drop=0) as proxy, \
            MemoryClient(proxy.url, token="w-token", timeout=0.5, retries=3) as client:
        client.start_session("frozen1", project="frozen")
        frozen = server.pids()  # the supervisor and its worker: accepted, never answered
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        try:
            with pytest.raises(ServiceTimeoutError) as raised:
                client.session("frozen1")
        finally:
            for pid in frozen:
                os.kill(pid, signal.SIGCONT)
        assert proxy.targets() == ["POST /v1/sessions"]  # one connection: no second attempt
        assert client.session("frozen1").id == "frozen1"
    assert isinstance(raised.value, QueryTimeoutError)
    assert proxy.url in raised.value.message and "0.5 s" in raised.value.message


@contextlib.contextmanager
def hold_the_only_connection(port: int) -> Iterator[socket.socket]:
    """A served keep-alive connection, once the server has let go of start-up's /health one."""
    deadline = time.monotonic() + 30
    while True:
        held = socket.create_connection(("127.0.0.1", port))
        held.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        if held.recv(65536).startswith(b"HTTP/1.1 200"):
            break
        held.close()  # refused: the earlier connection is still being closed
        assert time.monotonic() < deadline, "the server kept refusing a first connection"
        time.sleep(0.05)
    with held:
        yield held


def test_a_service_at_its_connection_limit_is_retried_for_reads_only(
    server_factory: Callable[..., RunningServer],
) -> None:
    server = server_factory(extra_env={**TOKEN_ENV, "KG_MAX_CONNECTIONS": "1"})
    # One idle keep-alive connection fills the limit: every other one is answered 503.
    with hold_the_only_connection(server.port), FlakyProxy(server.port, drop=0) as proxy, \
            MemoryClient(proxy.url, token="w-token", retries=2, backoff=0.01) as client:
        with pytest.raises(StoreUnavailableError) as read:
            client.session("busy1")
        assert proxy.targets() == ["GET /v1/sessions/busy1"] * 3
        with pytest.raises(StoreUnavailableError):
            client.start_session("busy1", project="busy")
        assert proxy.targets()[3:] == ["POST /v1/sessions"]
    # The refusal's 503; or, should its close reset the connection first, the unreachable error.
    assert read.value.code in ("too_many_connections", "service_unreachable")

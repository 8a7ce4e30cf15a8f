"""The catch-up thread on a real Oxigraph server: it outlives the server going away, and the
memory service starts it only on the remote backend."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kg.longterm import LongTermMemory
from kg.memory_service import MemoryService
from kg.recall import KeywordIndex
from kg.recall.catch_up import IndexCatchUp
from kg.settings import Settings
from tests.remote.conftest import OxigraphServer


def wait_for(condition: Callable[[], bool], *, within: float = 15.0) -> bool:
    """Poll `condition` until it holds or `within` seconds passed."""
    deadline = time.monotonic() + within
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_the_thread_survives_the_server_going_away_and_catches_up_after(
    oxigraph_factory: Callable[[], OxigraphServer], caplog: pytest.LogCaptureFixture,
) -> None:
    server = oxigraph_factory()
    writer = LongTermMemory(server.store())
    reader_store = server.store(timeout=1.0, connect_timeout=0.5, retries=0)
    index = KeywordIndex(None)
    catch_up = IndexCatchUp(reader_store, LongTermMemory(reader_store), index, interval=0.05)
    catch_up.start()
    try:
        writer.remember("Before the outage", project="p1", session="s1")
        assert wait_for(lambda: index.project_counts() == {"p1": 1})
        with caplog.at_level(logging.DEBUG, logger="kg.recall.catch_up"):
            server.stop()
            assert wait_for(lambda: catch_up.failures >= 3)
            server.start()
            writer.remember("After the outage", project="p1", session="s1")
            assert wait_for(lambda: index.project_counts() == {"p1": 2})
            assert wait_for(lambda: catch_up.failures == 0)
        messages = [r.getMessage() for r in caplog.records]
        assert messages.count("recall index catch-up failed; it is retried until it works") == 1
        assert any(m.startswith("recall index catch-up works again") for m in messages)
    finally:
        catch_up.stop()
        index.close()


@pytest.mark.parametrize("backend", ["remote", "embedded"])
def test_the_service_catches_up_only_on_the_remote_backend(
    oxigraph: OxigraphServer, tmp_path: Path, backend: str,
) -> None:
    remote = {"backend": "remote", "remote_dialect": "oxigraph",
              "remote_query_url": f"{oxigraph.url}/query",
              "remote_update_url": f"{oxigraph.url}/update"}
    oxigraph.store().update("DROP ALL")
    settings = Settings(store=str(tmp_path / "store"), index=":memory:",
                        **(remote if backend == "remote" else {}))  # type: ignore[arg-type]
    service = MemoryService.open(settings)
    try:
        if backend == "embedded":
            assert service.catch_up is None
            return
        assert service.catch_up is not None and service.catch_up.running
        other = LongTermMemory(oxigraph.store())  # another instance on the same server
        other.remember("Feature flags live in Unleash", project="acme", session="s1")
        assert wait_for(lambda: [h.memory.content for h in service.recall(
            "acme", "feature flags", mode="text")] == ["Feature flags live in Unleash"])
    finally:
        service.close()
    assert service.catch_up is None or not service.catch_up.running

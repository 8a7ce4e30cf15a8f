"""Start-up with an existing recall index: served at once, rebuilt in the background if stale."""

from __future__ import annotations

import time
from pathlib import Path

from kg.longterm import LongTermMemory
from kg.memory_service import MemoryService
from kg.settings import Settings
from kg.store import EmbeddedStore


def _recalled(service: MemoryService, query: str) -> list[str]:
    return [hit.memory.content for hit in service.recall("p", query, mode="text")]


def test_stale_index_is_rebuilt_in_the_background(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"), index_check="background")
    service = MemoryService.open(settings)  # no index yet: built before open() returns
    service.remember("p", "the build uses hatchling")
    assert _recalled(service, "hatchling") == ["the build uses hatchling"]
    service.close()

    # Another writer (no index listener) changes the store behind the index's back.
    store = EmbeddedStore(tmp_path / "store")
    LongTermMemory(store).remember("deploys go through the blue-green pipeline",
                                   project="p", session="s")
    store.close()

    reopened = MemoryService.open(settings)
    try:
        deadline = time.monotonic() + 30
        while not _recalled(reopened, "pipeline") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _recalled(reopened, "pipeline") == ["deploys go through the blue-green pipeline"]
        assert _recalled(reopened, "hatchling") == ["the build uses hatchling"]
    finally:
        reopened.close()


def test_startup_mode_checks_before_open_returns(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"), index_check="startup")
    MemoryService.open(settings).close()
    store = EmbeddedStore(tmp_path / "store")
    LongTermMemory(store).remember("caches live in redis", project="p", session="s")
    store.close()
    reopened = MemoryService.open(settings)
    try:
        assert _recalled(reopened, "redis") == ["caches live in redis"]
    finally:
        reopened.close()

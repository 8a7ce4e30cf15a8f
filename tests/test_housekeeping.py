"""The serving process's housekeeping: write buffers flushed to disk on a timer."""

from __future__ import annotations

import time
from pathlib import Path

from pyoxigraph import NamedNode, Quad

from api.housekeeping import Housekeeper
from kg.store import EmbeddedStore


def _tables(path: Path) -> set[str]:
    return {p.name for p in path.glob("*.sst")}


def test_a_flush_turns_written_quads_into_table_files(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    try:
        before = _tables(tmp_path / "store")
        store.add([Quad(NamedNode(f"urn:s:{i}"), NamedNode("urn:p"), NamedNode("urn:o"),
                        NamedNode("urn:g")) for i in range(100)])
        Housekeeper(store, interval=0.05).run_once()
        assert _tables(tmp_path / "store") - before  # the write buffers went to disk
        assert len(store) == 100
    finally:
        store.close()


def test_the_timer_flushes_and_stops(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    keeper = Housekeeper(store, interval=0.05).start()
    try:
        before = _tables(tmp_path / "store")
        store.add([Quad(NamedNode("urn:s"), NamedNode("urn:p"), NamedNode("urn:o"))])
        deadline = time.monotonic() + 10
        while not _tables(tmp_path / "store") - before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _tables(tmp_path / "store") - before
    finally:
        keeper.stop()
        store.close()


def test_interval_zero_starts_no_thread(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    try:
        keeper = Housekeeper(store, interval=0).start()
        keeper.stop()  # nothing to join
        assert not keeper._thread.is_alive()
    finally:
        store.close()

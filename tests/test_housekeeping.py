"""The serving process's housekeeping: allocator limits at start-up, write buffers flushed."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyoxigraph import NamedNode, Quad

from api.housekeeping import Housekeeper, limit_process_memory
from kg.store import EmbeddedStore

ROOT = Path(__file__).resolve().parents[1]

# Eight threads allocate at once, then glibc's malloc_info counts the arenas it made.
_ARENAS = """
import ctypes, re, sys, tempfile, threading
from api.housekeeping import limit_process_memory
limit = int(sys.argv[1])
if limit:
    limit_process_memory(malloc_arenas=limit, sqlite_heap_mb=0)
ready, go = threading.Barrier(9), threading.Event()
def work():
    ready.wait(); go.wait()
    for _ in range(2000):
        bytes(bytearray(4096))
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
ready.wait(); go.set()
for t in threads: t.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    stream = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(len(re.findall(r'<heap nr="', open(out.name).read())))
"""


# A 1 MiB block is freed and asked for again; prints how many more bytes glibc then maps.
_MAPPED = """
import ctypes, sys
from api.housekeeping import limit_process_memory
limit_process_memory(malloc_arenas=0, sqlite_heap_mb=0, mmap_threshold_kb=int(sys.argv[1]))
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info
libc.free(libc.malloc(1 << 20))
before = libc.mallinfo2().hblkhd
block = libc.malloc(1 << 20)
print(libc.mallinfo2().hblkhd - before)
"""


def _mapped_after_reuse(threshold_kb: int) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    result = subprocess.run([sys.executable, "-c", _MAPPED, str(threshold_kb)], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=60, check=True)
    return int(result.stdout.split()[-1])


def _quads(count: int, tag: str) -> list[Quad]:
    return [Quad(NamedNode(f"urn:s:{tag}:{i}"), NamedNode("urn:p"),
                 NamedNode(f"urn:o:{tag}:{i}:" + "x" * 200), NamedNode("urn:g"))
            for i in range(count)]


def _wait(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def _arenas(limit: int) -> int:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    result = subprocess.run([sys.executable, "-c", _ARENAS, str(limit)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    return int(result.stdout.split()[-1])


@pytest.fixture
def sqlite_limit() -> Iterator[None]:
    """Put SQLite's process-wide soft heap limit back as it was."""
    db = sqlite3.connect(":memory:")
    before = db.execute("PRAGMA soft_heap_limit").fetchone()[0]
    yield
    db.execute(f"PRAGMA soft_heap_limit = {before}")
    db.close()


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


def test_the_arena_limit_holds_eight_allocating_threads_to_two_arenas() -> None:
    assert _arenas(0) > 2  # glibc's default gives each new thread its own arena
    assert _arenas(2) == 2


def test_an_explicit_malloc_arena_max_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_process_memory(malloc_arenas=2, sqlite_heap_mb=0, mmap_threshold_kb=0) == {}


def test_the_sqlite_heap_limit_is_set_for_every_connection(sqlite_limit: None) -> None:
    applied = limit_process_memory(malloc_arenas=0, sqlite_heap_mb=8, mmap_threshold_kb=0)
    assert applied == {"sqlite_heap_mb": 8}
    other = sqlite3.connect(":memory:")
    try:
        assert other.execute("PRAGMA soft_heap_limit").fetchone()[0] == 8 * 1024 * 1024
    finally:
        other.close()


def test_a_grown_write_ahead_log_is_flushed_before_the_interval(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    keeper = Housekeeper(store, interval=3600, flush_bytes=64 * 1024, check=0.02).start()
    try:
        before = _tables(tmp_path / "store")
        store.add(_quads(2000, "a"))  # ~1 MB of log: far past 64 KiB
        assert _wait(lambda: keeper.flushes >= 1)
        assert _tables(tmp_path / "store") - before  # the write buffers went to disk
    finally:
        keeper.stop()
        store.close()


def test_a_small_write_waits_for_the_interval(tmp_path: Path) -> None:
    store = EmbeddedStore(tmp_path / "store")
    keeper = Housekeeper(store, interval=3600, flush_bytes=64 * 1024 * 1024, check=0.02).start()
    try:
        before = _tables(tmp_path / "store")
        store.add(_quads(10, "b"))
        time.sleep(0.5)  # 25 checks
        assert keeper.flushes == 0
        assert _tables(tmp_path / "store") == before
    finally:
        keeper.stop()
        store.close()


def test_a_store_without_a_directory_is_flushed_by_time_only() -> None:
    store = EmbeddedStore(None)
    keeper = Housekeeper(store, interval=0.05, flush_bytes=1)
    try:
        assert keeper.wal_bytes() is None
        assert not keeper.due(0.01)
        assert keeper.due(0.05)
    finally:
        store.close()


def test_a_fixed_mmap_threshold_maps_a_reused_large_block() -> None:
    # glibc's sliding threshold rises to 1 MiB when the first mapped block is freed, so the
    # second one comes from the heap (and stays there when freed); a fixed one maps it again.
    assert _mapped_after_reuse(0) == 0
    assert _mapped_after_reuse(128) >= 1 << 20

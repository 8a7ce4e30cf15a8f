"""`jido-kg restore`: refuses to overwrite data without --force, swaps in a working store."""

from __future__ import annotations

from pathlib import Path

from bench.reliability.backup import restore
from bench.reliability.dataset import inspect_store
from kg.store import EmbeddedStore
from tests.conftest import RunningServer, start_server

TRIPLE = "<urn:a> <urn:p> \"backed up\" <urn:g> .\n"


def _store_with(path: Path, nquads: str) -> None:
    from pyoxigraph import RdfFormat

    store = EmbeddedStore(path)
    try:
        store.load(data=nquads, format=RdfFormat.N_QUADS)
    finally:
        store.close()


def _backup(source: Path, target: Path) -> None:
    store = EmbeddedStore(source)
    try:
        store.backup(target)
    finally:
        store.close()


def test_restore_into_new_directory_then_refuse_then_force(tmp_path: Path) -> None:
    _store_with(tmp_path / "src", TRIPLE)
    _backup(tmp_path / "src", tmp_path / "bk")
    done = restore(tmp_path / "bk", tmp_path / "dst")
    assert done.returncode == 0, done.stderr
    assert "restored 1 quads" in done.stderr
    _store_with(tmp_path / "dst", "<urn:b> <urn:p> \"newer\" <urn:g> .\n")
    refused = restore(tmp_path / "bk", tmp_path / "dst")
    assert refused.returncode != 0 and "--force" in refused.stderr
    assert inspect_store(tmp_path / "dst").quads == 2  # untouched
    forced = restore(tmp_path / "bk", tmp_path / "dst", force=True)
    assert forced.returncode == 0, forced.stderr
    assert inspect_store(tmp_path / "dst").quads == 1
    assert not [p for p in tmp_path.iterdir() if ".restore-" in p.name]  # no staging left


def test_restore_refuses_a_store_a_server_holds(tmp_path: Path) -> None:
    _store_with(tmp_path / "src", TRIPLE)
    _backup(tmp_path / "src", tmp_path / "bk")
    server: RunningServer = start_server(tmp_path / "live")
    try:
        done = restore(tmp_path / "bk", tmp_path / "live", force=True)
        assert done.returncode != 0 and "already open" in done.stderr
    finally:
        server.stop()


def test_restore_of_something_that_is_not_a_store_leaves_target_alone(tmp_path: Path) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "CURRENT").write_text("garbage")
    _store_with(tmp_path / "dst", TRIPLE)
    done = restore(tmp_path / "junk", tmp_path / "dst", force=True)
    assert done.returncode != 0
    assert inspect_store(tmp_path / "dst").quads == 1

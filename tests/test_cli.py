"""The jido-kg command against real on-disk stores and a real server on loopback."""

from __future__ import annotations

import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path

import rdflib

from kg.store import EmbeddedStore
from tests.conftest import ROOT, RunningServer, free_port, jido_kg_command

GOOD = """@prefix ex: <https://example.org/> .
ex:a ex:p "one" .
ex:b ex:p "two" .
"""
BAD = """@prefix ex: <https://example.org/> .
ex:c ex:p "three" .
ex:d ex:p "unterminated .
ex:e ex:p "five" .
"""


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the CLI and capture its output."""
    return subprocess.run([*jido_kg_command(), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def count(store_dir: Path) -> int:
    """Number of quads in an on-disk store (opened and released)."""
    s = EmbeddedStore(store_dir)
    try:
        return len(s)
    finally:
        s.close()


def test_help_explains_every_command() -> None:
    out = run("--help").stdout
    for command in ("serve", "load", "dump", "backup", "check-ontology"):
        assert command in out
    serve_help = run("serve", "--help").stdout
    assert "--store" in serve_help and "KG_PORT" in serve_help


def test_load_then_dump_round_trip(tmp_path: Path) -> None:
    (tmp_path / "good.ttl").write_text(GOOD)
    store = tmp_path / "store"
    r = run("load", str(tmp_path / "good.ttl"), "--store", str(store),
            "--graph", "https://example.org/g")
    assert r.returncode == 0, r.stderr
    assert "loaded 2 quads" in r.stderr
    dumped = run("dump", "--store", str(store), "--graph", "https://example.org/g")
    graph = rdflib.Graph().parse(data=dumped.stdout, format="turtle")
    assert len(graph) == 2


def test_malformed_file_names_file_and_line_and_loads_nothing(tmp_path: Path) -> None:
    (tmp_path / "good.ttl").write_text(GOOD)
    (tmp_path / "bad.ttl").write_text(BAD)
    store = tmp_path / "store"
    r = run("load", str(tmp_path / "good.ttl"), str(tmp_path / "bad.ttl"), "--store", str(store))
    assert r.returncode == 2
    assert "bad.ttl" in r.stderr and "line 3" in r.stderr and "nothing was loaded" in r.stderr
    assert "Traceback" not in r.stderr
    assert count(store) == 0


def test_unknown_extension_is_explained(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text(GOOD)
    r = run("load", str(tmp_path / "data.txt"), "--store", str(tmp_path / "s"))
    assert r.returncode == 2 and "--format" in r.stderr


def test_backup_is_a_usable_copy(tmp_path: Path) -> None:
    (tmp_path / "good.ttl").write_text(GOOD)
    store = tmp_path / "store"
    assert run("load", str(tmp_path / "good.ttl"), "--store", str(store)).returncode == 0
    r = run("backup", str(tmp_path / "copy"), "--store", str(store))
    assert r.returncode == 0, r.stderr
    assert count(tmp_path / "copy") == 2
    again = run("backup", str(tmp_path / "copy"), "--store", str(store))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_serve_answers_protege_style_rdf_xml_on_loopback(live_server: RunningServer) -> None:
    request = urllib.request.Request(f"{live_server.url}/ontology",
                                     headers={"Accept": "application/rdf+xml"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("application/rdf+xml")
        body = response.read()
    graph = rdflib.Graph().parse(data=body, format="xml")
    assert (rdflib.URIRef("https://jido.ai/ontology"), rdflib.RDF.type,
            rdflib.OWL.Ontology) in graph


def test_second_server_on_the_same_store_fails_clearly(
    live_server: RunningServer, server_factory: Callable[..., RunningServer]
) -> None:
    r = run("serve", "--store", str(live_server.store_dir), "--port", str(free_port()),
            timeout=30)
    assert r.returncode == 2
    assert "already open in another process" in r.stderr
    assert "Traceback" not in r.stderr


def test_load_into_a_store_held_by_a_server_fails_clearly(
    live_server: RunningServer, tmp_path: Path
) -> None:
    (tmp_path / "good.ttl").write_text(GOOD)
    r = run("load", str(tmp_path / "good.ttl"), "--store", str(live_server.store_dir))
    assert r.returncode == 2 and "already open" in r.stderr and "Traceback" not in r.stderr


def test_port_in_use_is_explained(live_server: RunningServer, tmp_path: Path) -> None:
    r = run("serve", "--store", str(tmp_path / "other"), "--port", str(live_server.port),
            timeout=30)
    assert r.returncode == 2 and "already in use" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "other").exists()  # the port is bound before the store is made


def test_sigterm_stops_the_server_cleanly_and_releases_the_store(
    live_server: RunningServer,
) -> None:
    live_server.process.terminate()
    _, err = live_server.process.communicate(timeout=15)
    assert live_server.process.returncode == 0, err.decode()
    assert b"Traceback" not in err
    assert count(live_server.store_dir) > 0  # the lock is released and the ontology is there

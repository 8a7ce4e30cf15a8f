"""Copying a whole store embedded → remote → embedded through the CLI keeps every quad."""

from __future__ import annotations

from pathlib import Path

import pyoxigraph
from click.testing import CliRunner
from pyoxigraph import BlankNode, CanonicalizationAlgorithm, Dataset, Literal, NamedNode, Quad

from api.cli import cli
from kg.store import EmbeddedStore
from kg.system_knowledge import ensure_ontology
from tests.remote.conftest import OxigraphServer

G = NamedNode("https://example.org/g")
P = NamedNode("https://example.org/p")


def canonical(quads: list[Quad]) -> Dataset:
    dataset = Dataset(quads)
    dataset.canonicalize(CanonicalizationAlgorithm.UNSTABLE)
    return dataset


def test_migrate_to_remote_and_back(oxigraph: OxigraphServer, tmp_path: Path) -> None:
    source = EmbeddedStore(tmp_path / "source")
    ensure_ontology(source)  # OWL lists: blank nodes that must stay linked across batches
    source.add([Quad(NamedNode(f"https://example.org/s{i}"), P, Literal(f"v{i}\n\"}}"), G)
                for i in range(1_234)])
    shared = BlankNode()
    source.add([Quad(shared, P, Literal(1)), Quad(NamedNode("https://example.org/x"), P, shared)])
    before = list(source.quads())
    source.close()
    remote = oxigraph.store()
    remote.update("DROP ALL")
    runner = CliRunner()
    options = ["--query-url", f"{oxigraph.url}/query", "--update-url", f"{oxigraph.url}/update",
               "--graph-store-url", f"{oxigraph.url}/store", "--dialect", "oxigraph",
               "--batch-size", "500"]
    out = runner.invoke(cli, ["migrate", "to-remote", "--store", str(tmp_path / "source"),
                              *options])
    assert out.exit_code == 0, out.output
    assert f"copied {len(before)} quads in 3 graph(s)" in out.output
    assert canonical(list(remote.quads())) == canonical(before)
    back = runner.invoke(cli, ["migrate", "from-remote", "--store", str(tmp_path / "copy"),
                               *options])
    assert back.exit_code == 0, back.output
    copy = EmbeddedStore(tmp_path / "copy")
    assert canonical(list(copy.quads())) == canonical(before)
    copy.close()
    # backup() on the remote store writes an embedded store directory too.
    remote.backup(tmp_path / "backup")
    restored = EmbeddedStore(tmp_path / "backup")
    assert len(list(restored.quads())) == len(before)
    restored.close()
    assert pyoxigraph  # the parser used by the CLI is the same library

"""The embedded store: opening, locking, atomic writes, the nesting guard, ontology loading."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Quad, QuerySolutions

from kg.errors import QuerySyntaxError, StoreLockedError, ValidationError
from kg.graphs import SYSTEM_KNOWLEDGE
from kg.resources import ontology_path
from kg.store import EmbeddedStore, Store
from kg.store.guard import NestingTooDeepError, check_nesting
from kg.system_knowledge import ensure_ontology, ontology_quads

G = NamedNode("https://example.org/g")
P = NamedNode("https://example.org/p")


def _q(i: int) -> Quad:
    return Quad(NamedNode(f"https://example.org/s{i}"), P, Literal(i), G)


def test_embedded_store_implements_the_interface() -> None:
    assert isinstance(EmbeddedStore(None), Store)


def test_add_query_and_substitutions() -> None:
    s = EmbeddedStore(None)
    s.add([_q(1), _q(2)])
    rows = s.query(
        "SELECT ?s ?o WHERE { GRAPH ?g { ?s ?p ?o } }",
        substitutions={"s": NamedNode("https://example.org/s2")},
    )
    assert isinstance(rows, QuerySolutions)
    assert [r["o"] for r in rows] == [Literal(2)]


def test_remove_is_one_transaction_and_exact() -> None:
    s = EmbeddedStore(None)
    s.add(_q(i) for i in range(5))
    s.remove([_q(1), _q(3)])
    assert sorted(int(q.object.value) for q in s.quads(graph=G)) == [0, 2, 4]


def test_malformed_query_is_a_kg_error() -> None:
    with pytest.raises(QuerySyntaxError, match="malformed SPARQL"):
        EmbeddedStore(None).query("SELECT WHERE {")


@pytest.mark.parametrize("depth", [5_000, 50_000])
def test_deep_nesting_is_refused_before_parsing(depth: int) -> None:
    s = EmbeddedStore(None)
    with pytest.raises(NestingTooDeepError):
        s.query("SELECT * WHERE " + "{" * depth + "}" * depth)
    with pytest.raises(NestingTooDeepError):
        s.update("INSERT { <a:b> <a:b> <a:b> } WHERE " + "{" * depth + "}" * depth)


def test_nesting_guard_ignores_brackets_in_strings_iris_and_comments() -> None:
    noisy = '"{{{{" \'(((\' """ {{{ """ <http://x/{{{> # {{{{{{\n'
    check_nesting("SELECT * WHERE { " + noisy * 500 + " }", limit=2)
    with pytest.raises(NestingTooDeepError):
        check_nesting("{{{", limit=2)


def test_second_open_of_a_directory_is_refused_clearly(tmp_path: Path) -> None:
    first = EmbeddedStore(tmp_path / "s")
    with pytest.raises(StoreLockedError, match="already open"):
        EmbeddedStore(tmp_path / "s")
    first.close()


def test_ensure_ontology_is_idempotent_across_restarts(tmp_path: Path) -> None:
    s = EmbeddedStore(tmp_path / "s")
    assert ensure_ontology(s) is True
    n = len(list(s.quads(graph=SYSTEM_KNOWLEDGE)))
    assert n == len(ontology_quads()) > 100
    assert ensure_ontology(s) is False
    s.close()
    reopened = EmbeddedStore(tmp_path / "s")
    assert ensure_ontology(reopened) is False
    assert len(list(reopened.quads(graph=SYSTEM_KNOWLEDGE))) == n
    reopened.close()


def test_a_new_ontology_version_replaces_the_old(tmp_path: Path) -> None:
    s = EmbeddedStore(None)
    ensure_ontology(s)
    changed = tmp_path / "jido.ttl"
    shutil.copy(ontology_path(), changed)
    text = changed.read_text(encoding="utf-8").replace('owl:versionInfo "1.0.0"',
                                                       'owl:versionInfo "1.0.1"')
    changed.write_text(text, encoding="utf-8")
    assert ensure_ontology(s, path=changed) is True
    versions = {q.object.value for q in s.quads(
        predicate=NamedNode("http://www.w3.org/2002/07/owl#versionInfo"), graph=SYSTEM_KNOWLEDGE)}
    assert versions == {"1.0.1"}
    assert len(list(s.quads(graph=SYSTEM_KNOWLEDGE))) == len(ontology_quads(changed))


def test_unprojected_substitution_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="projection"):
        EmbeddedStore(None).query("SELECT ?o WHERE { ?s ?p ?o }",
                                  substitutions={"s": NamedNode("https://example.org/s")})

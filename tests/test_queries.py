"""Consistency of every queries/*.rq: a header (purpose, bound variables), it parses and runs
with its bound variables substituted, and every jido: term it uses is declared in the ontology."""

from __future__ import annotations

import re
from pathlib import Path

import pyoxigraph
import pytest
from pyoxigraph import Literal, NamedNode, RdfFormat, Variable

from kg.namespaces import JIDO, RDF
from kg.resources import ontology_path, queries_dir

QUERIES = sorted(queries_dir().glob("*.rq"))
_VARIABLE = re.compile(r"\?([A-Za-z_][A-Za-z0-9_]*)")
_JIDO_TERM = re.compile(r"\bjido:([A-Za-z_][A-Za-z0-9_-]*)")


def header(path: Path) -> str:
    lines = path.read_text(encoding="utf-8").splitlines()
    block = []
    for line in lines:
        if not line.startswith("#"):
            break
        block.append(line.lstrip("# ").rstrip())
    return " ".join(block)


def bound_variables(path: Path) -> list[str]:
    text = header(path)
    return _VARIABLE.findall(text.split("Bound variables:", 1)[1]) if (
        "Bound variables:" in text) else []


@pytest.fixture(scope="module")
def declared() -> set[str]:
    store = pyoxigraph.Store()
    store.load(path=str(ontology_path()), format=RdfFormat.TURTLE)
    return {q.subject.value for q in store.quads_for_pattern(None, RDF["type"], None)
            if isinstance(q.subject, NamedNode)}


def test_there_are_queries() -> None:
    names = {p.stem for p in QUERIES}
    assert {"facts_about", "decisions_in_order", "related_memories", "project_conventions",
            "errors_for_module", "decisions_with_alternatives", "lessons_for_error",
            "memories_in_session", "recent_memories", "contains_scan"} <= names


@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.name)
def test_header_names_purpose_and_bound_variables(path: Path) -> None:
    text = header(path)
    assert "Purpose:" in text, f"{path.name}: header comment lacks 'Purpose:'"
    assert "Bound variables:" in text, f"{path.name}: header comment lacks 'Bound variables:'"


@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.name)
def test_parses_and_runs_with_its_substitutions(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    for name in bound_variables(path):
        assert f"?{name}" in body, f"{path.name}: header names ?{name}, the query never uses it"
    dummy = {Variable(n): NamedNode(f"https://example.org/{n}") for n in bound_variables(path)}
    result = pyoxigraph.Store().query(text, substitutions=dummy or None)
    list(result) if not isinstance(result, pyoxigraph.QueryBoolean) else bool(result)


@pytest.mark.parametrize("path", QUERIES, ids=lambda p: p.name)
def test_every_jido_term_is_declared(path: Path, declared: set[str]) -> None:
    body = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                     if not line.lstrip().startswith("#"))
    unknown = {t for t in _JIDO_TERM.findall(body) if JIDO[t].value not in declared}
    assert not unknown, f"{path.name} uses undeclared terms: {sorted(unknown)}"


def test_substitution_is_a_value_not_text() -> None:
    text = (queries_dir() / "errors_for_module.rq").read_text(encoding="utf-8")
    evil = Literal('"} . ?x ?y ?z } #')
    rows = list(pyoxigraph.Store().query(text, substitutions={
        Variable("moduleName"): evil, Variable("at"): Literal("2025-01-01T00:00:00Z"),
        Variable("includeSuperseded"): Literal(False)}))
    assert rows == []

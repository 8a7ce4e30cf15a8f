"""SPARQL text built only from typed terms: term serialisation, value binding, data updates.

The remote backend cannot hand `substitutions` to a server, so it binds them into the query
text. Values never enter as raw strings: every term goes through pyoxigraph's own N-Triples
serialiser (escaped quotes, newlines, braces, unicode) and lands in a `VALUES` block at the start
of the query pattern, which is how pyoxigraph seeds substituted variables too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Triple

from kg.errors import ValidationError
from kg.store.base import GraphName, Term

__all__ = ["bind_values", "data_update", "graph_text", "query_form", "term_text"]

_VARNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_:\-]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AS = re.compile(r"\bAS\s*\Z", re.IGNORECASE)
_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})


def term_text(term: Term) -> str:
    """Serialise a term as SPARQL text (N-Triples escaping); blank nodes cannot be named."""
    if isinstance(term, NamedNode | Literal):
        return str(term)
    if isinstance(term, Triple):
        # pyoxigraph prints a triple bare; SPARQL 1.2 spells a triple term <<( s p o )>>.
        return f"<<( {term_text(term.subject)} {term_text(term.predicate)} "\
               f"{term_text(term.object)} )>>"
    if isinstance(term, BlankNode):
        raise ValidationError(
            "a blank node cannot be bound into a query sent to a remote SPARQL server "
            "(in SPARQL text a blank-node label is a fresh variable)"
        )
    raise ValidationError(f"not an RDF term: {term!r}")


def graph_text(graph: GraphName) -> str:
    """Serialise a graph name for a GRAPH clause (named nodes only)."""
    if isinstance(graph, NamedNode):
        return str(graph)
    raise ValidationError(f"a remote SPARQL server cannot address the graph {graph}")


def data_update(keyword: str, quads: Iterable[Quad], *, default_graph: NamedNode | None = None
                ) -> str:
    """Build one `INSERT DATA` / `DELETE DATA` update from quads (grouped by graph)."""
    groups: dict[str, list[str]] = {}
    for quad in quads:
        graph = quad.graph_name
        if isinstance(graph, DefaultGraph):
            key = "" if default_graph is None else str(default_graph)
        else:
            key = str(graph)
        # Blank nodes keep their labels: within one INSERT DATA they stay one node each.
        line = f"{_data_term(quad.subject)} {quad.predicate} {_data_term(quad.object)} ."
        groups.setdefault(key, []).append(line)
    parts = []
    for key, lines in groups.items():
        body = "\n".join(lines)
        parts.append(body if key == "" else f"GRAPH {key} {{\n{body}\n}}")
    return f"{keyword} {{\n" + "\n".join(parts) + "\n}"


def _data_term(term: Term) -> str:
    if isinstance(term, BlankNode):
        return str(term)
    if isinstance(term, Triple):
        return f"<<( {_data_term(term.subject)} {term.predicate} {_data_term(term.object)} )>>"
    return term_text(term)


@dataclass
class _Outline:
    """Where the parts of a query sit at the top level (outside strings, IRIs, comments)."""

    form: str = ""
    form_end: int = 0
    groups: list[tuple[int, int]] = field(default_factory=list)
    words: list[tuple[int, str]] = field(default_factory=list)
    projection_star: bool = False
    projected: set[str] = field(default_factory=set)


def bind_values(sparql: str, substitutions: Mapping[str, Term]) -> str:
    """Return the query with each variable bound to its term, as pyoxigraph's substitutions do."""
    if not substitutions:
        return sparql
    names = list(substitutions)
    for name in names:
        if not _VARNAME.match(name):
            raise ValidationError(f"not a SPARQL variable name: {name!r}")
    row = " ".join(term_text(substitutions[n]) for n in names)
    values = f" VALUES ({' '.join('?' + n for n in names)}) {{ ({row}) }} "
    outline = _outline(sparql)
    if outline.form == "SELECT" and not outline.projection_star:
        missing = [n for n in names if n not in outline.projected]
        if missing:
            raise ValidationError(
                f"a substituted variable must be projected (or SELECT *): ?{missing[0]}",
                details={"variables": missing},
            )
    after = [g for g in outline.groups if g[0] > outline.form_end]
    if not outline.form or not after:
        raise ValidationError("cannot bind values: the query has no WHERE pattern")
    start, end = after[0]
    if outline.form == "CONSTRUCT":
        where = [p for p, w in outline.words if w == "WHERE" and outline.form_end < p < start]
        if where:
            # Short form CONSTRUCT WHERE { T }: spell the template out, then bind the pattern.
            template = sparql[start:end + 1]
            return (sparql[:where[0]] + template + " WHERE {" + values
                    + sparql[start + 1:])
        if len(after) < 2:
            raise ValidationError("cannot bind values: the query has no WHERE pattern")
        start, end = after[1]
    inner = sparql[start + 1:end]
    if re.match(r"\s*(#[^\n]*\n\s*)*SELECT\b", inner, re.IGNORECASE):
        # A sub-select must be alone in its group: wrap it in one more group.
        return sparql[:start + 1] + values + "{" + inner + "}" + sparql[end:]
    return sparql[:start + 1] + values + sparql[start + 1:]


def query_form(sparql: str) -> str:
    """Return the query form keyword (SELECT, ASK, CONSTRUCT, DESCRIBE), or "" if none."""
    return _outline(sparql).form


def _outline(text: str) -> _Outline:
    """Scan the top level of a query: the form keyword, its projection, the `{…}` groups."""
    out = _Outline()
    depth = parens = 0
    opened = -1
    in_projection = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "{":
            if depth == 0:
                opened = i
                in_projection = False
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and opened >= 0:
                out.groups.append((opened, i))
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "<":
            # IRIs hold no spaces, quotes or braces; a '<' followed by one is an operator.
            end = i + 1
            while end < n and text[end] not in '> \t\r\n{}"<':
                end += 1
            if end < n and text[end] == ">":
                i = end
        elif c in "\"'":
            i = _skip_string(text, i)
        elif c in "?$":
            name = _NAME.match(text, i + 1)
            if name is not None:
                aliased = parens > 0 and _AS.search(text, max(0, i - 16), i) is not None
                if depth == 0 and in_projection and (parens == 0 or aliased):
                    # `?v` or `(expr AS ?v)` in the projection.
                    out.projected.add(name.group(0))
                i = name.end() - 1
        elif depth == 0 and c == "(":
            parens += 1
        elif depth == 0 and c == ")":
            parens -= 1
        elif depth == 0 and c == "*" and in_projection and parens == 0:
            out.projection_star = True
        elif depth == 0 and (c.isalpha() or c == "_") and (i == 0 or not text[i - 1].isalnum()):
            word_match = _WORD.match(text, i)
            assert word_match is not None
            word_text = word_match.group(0).upper()
            out.words.append((i, word_text))
            if word_text in _FORMS and not out.form:
                out.form = word_text
                out.form_end = word_match.end()
                in_projection = word_text == "SELECT"
            elif word_text in {"WHERE", "FROM"}:
                in_projection = False
            i = word_match.end() - 1
        i += 1
    return out


def _skip_string(text: str, start: int) -> int:
    """Return the index of the last character of the string literal starting at `start`."""
    quote = text[start]
    delimiter = quote * 3 if text.startswith(quote * 3, start) else quote
    i = start + len(delimiter)
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(delimiter, i):
            return i + len(delimiter) - 1
        i += 1
    return n

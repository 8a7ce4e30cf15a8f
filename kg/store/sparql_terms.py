"""SPARQL text built only from typed terms: term serialisation, value binding, data updates.

The remote backend cannot hand `substitutions` to a server, so it binds them into the query
text. Values never enter as raw strings: every term goes through pyoxigraph's own N-Triples
serialiser (escaped quotes, newlines, braces, unicode) and lands in a `VALUES` block at the start
of the query pattern, which is how pyoxigraph seeds substituted variables too.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Triple

from kg.errors import ValidationError
from kg.store.base import GraphName, Term
from kg.store.lexer import string_end

__all__ = ["bind_values", "data_update", "graph_text", "scope_graphs", "term_json",
           "term_text"]

_VARNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_:\-]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_AS = re.compile(r"\bAS\s*\Z", re.IGNORECASE)
_FORMS = frozenset({"SELECT", "ASK", "CONSTRUCT", "DESCRIBE"})
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"


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


def term_json(term: Term) -> dict[str, object]:
    """Serialise a term as a SPARQL 1.1 JSON results binding (blank nodes cannot be named)."""
    if isinstance(term, NamedNode):
        return {"type": "uri", "value": term.value}
    if isinstance(term, Literal):
        value: dict[str, object] = {"type": "literal", "value": term.value}
        if term.language:
            value["xml:lang"] = term.language
        elif term.datatype.value != _XSD_STRING:
            value["datatype"] = term.datatype.value
        return value
    if isinstance(term, Triple):
        return {"type": "triple", "value": {"subject": term_json(term.subject),
                                            "predicate": term_json(term.predicate),
                                            "object": term_json(term.object)}}
    return {"type": "bnode", "value": term_text(term)}  # term_text raises for blank nodes


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
            i = string_end(text, i) - 1
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


def scope_graphs(sparql: str, hidden: Sequence[NamedNode], *, update: bool = False) -> str:
    """Rewrite `GRAPH` patterns for a server whose GRAPH needs help (Virtuoso).

    `GRAPH ?g { P }` becomes `{ GRAPH ?g { P } FILTER(?g NOT IN (hidden…)) }` and
    `GRAPH <c> { P }` becomes `{ VALUES ?__kg_gN { <c> } GRAPH ?__kg_gN { P } }`: the same
    solutions, minus the hidden graphs. In an update only WHERE patterns are rewritten
    (`DELETE WHERE { T }` is spelled `DELETE { T } WHERE { T }` first).
    """
    names = itertools.count(1)
    if not update:
        return _scope(sparql, 0, len(sparql), hidden, names)
    outline = _outline(sparql)
    parts: list[str] = []
    done = 0
    for start, end in outline.groups:
        before = [(p, w) for p, w in outline.words if p < start]
        if not before or before[-1][1] != "WHERE":
            continue
        pattern = _scope(sparql, start, end + 1, hidden, names)
        where = before[-1][0]
        if len(before) >= 2 and before[-2][1] == "DELETE" and \
                not any(before[-2][0] < g < where for g, _ in outline.groups):
            parts.append(sparql[done:where] + sparql[start:end + 1] + " WHERE " + pattern)
        else:
            parts.append(sparql[done:start] + pattern)
        done = end + 1
    return "".join(parts) + sparql[done:]


def _scope(text: str, start: int, end: int, hidden: Sequence[NamedNode],
           names: Iterator[int]) -> str:
    out: list[str] = []
    done = i = start
    while i < end:
        skipped = _skip_token(text, i)
        if skipped != i:
            i = skipped + 1
            continue
        word = _WORD.match(text, i) if text[i].isalpha() else None
        if word is None or (i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:")):
            i += 1
            continue
        i = word.end()
        if word.group(0).upper() != "GRAPH":
            continue
        term = _GRAPH_TERM.match(text, i)
        if term is None:
            continue
        open_at = term.end() - 1
        close_at = _matching_brace(text, open_at, end)
        if close_at < 0:
            continue
        body = _scope(text, open_at, close_at + 1, hidden, names)
        name = term.group(1)
        if name[0] in "?$":
            excluded = ", ".join(str(g) for g in hidden)
            wrapped = f"{{ GRAPH {name} {body} FILTER({name} NOT IN ({excluded})) }}" \
                if hidden else f"GRAPH {name} {body}"
        else:
            var = f"?__kg_g{next(names)}"
            wrapped = f"{{ VALUES {var} {{ {name} }} GRAPH {var} {body} }}"
        out.append(text[done:word.start()] + wrapped)
        done = i = close_at + 1
    return "".join(out) + text[done:end]


# What follows GRAPH in a pattern: a variable, an IRI or a prefixed name, then the group.
_GRAPH_TERM = re.compile(
    r"\s*([?$][A-Za-z0-9_]+|<[^<>\"{}|^`\\\s]*>|[A-Za-z0-9_\-.]*:[^\s{}]*)\s*\{")


def _skip_token(text: str, i: int) -> int:
    """Return the last index of a comment, string, IRI or variable starting at `i`, else `i`."""
    c = text[i]
    if c == "#":
        found = text.find("\n", i)
        return len(text) - 1 if found < 0 else found
    if c in "\"'":
        return string_end(text, i) - 1
    if c == "<":
        iri = re.match(r"<[^<>\"{}|^`\\\s]*>", text[i:])
        return i + iri.end() - 1 if iri else i
    if c in "?$":
        name = _NAME.match(text, i + 1)
        return name.end() - 1 if name else i
    return i


def _matching_brace(text: str, open_at: int, end: int) -> int:
    depth = 0
    i = open_at
    while i < end:
        skipped = _skip_token(text, i)
        if skipped != i:
            i = skipped + 1
            continue
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1

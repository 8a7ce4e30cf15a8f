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
from kg.store.lexer import Token, tokenize

__all__ = ["bind_values", "data_update", "graph_text", "scope_graphs", "term_json",
           "term_text"]

_VARNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
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
    first = next(tokenize(sparql, start=start + 1, end=end), None)
    if first is not None and first.is_keyword("SELECT"):
        # A sub-select must be alone in its group: wrap it in one more group.
        return sparql[:start + 1] + values + "{" + sparql[start + 1:end] + "}" + sparql[end:]
    return sparql[:start + 1] + values + sparql[start + 1:]


def _outline(text: str) -> _Outline:
    """Scan the top level of a query: the form keyword, its projection, the `{…}` groups."""
    out = _Outline()
    depth = parens = 0
    opened = -1
    in_projection = False
    previous: Token | None = None
    for token in tokenize(text):
        t = token.text
        if _is(token, "{"):
            if depth == 0:
                opened, in_projection = token.start, False
            depth += 1
        elif _is(token, "}"):
            depth -= 1
            if depth == 0 and opened >= 0:
                out.groups.append((opened, token.start))
        elif depth > 0:
            pass
        elif token.kind == "var":
            aliased = parens > 0 and previous is not None and previous.is_keyword("AS")
            if in_projection and (parens == 0 or aliased):
                out.projected.add(t[1:])  # `?v` or `(expr AS ?v)` in the projection
        elif token.kind == "punct":
            parens += (t == "(") - (t == ")")
            out.projection_star |= t == "*" and in_projection and parens == 0
        elif token.kind == "word":
            word = t.upper()
            out.words.append((token.start, word))
            if word in _FORMS and not out.form:
                out.form, out.form_end = word, token.end
                in_projection = word == "SELECT"
            elif word in ("WHERE", "FROM"):
                in_projection = False
        previous = token
    return out


def _is(token: Token, punct: str) -> bool:
    return token.kind == "punct" and token.text == punct


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
    done = start
    tokens = list(tokenize(text, start=start, end=end))
    k = 0
    while k < len(tokens):
        graph, k = tokens[k], k + 1
        if not graph.is_keyword("GRAPH") or k + 1 >= len(tokens) or not _is(tokens[k + 1], "{"):
            continue
        term = tokens[k]
        if term.kind not in ("var", "iri") and not (term.kind == "word" and ":" in term.text):
            continue
        close = _matching_brace(tokens, k + 1)
        if close < 0:
            continue
        close_at = tokens[close].start
        body = _scope(text, tokens[k + 1].start, close_at + 1, hidden, names)
        name = text[term.start:term.end]
        if term.kind == "var":
            excluded = ", ".join(str(g) for g in hidden)
            wrapped = f"{{ GRAPH {name} {body} FILTER({name} NOT IN ({excluded})) }}" \
                if hidden else f"GRAPH {name} {body}"
        else:
            var = f"?__kg_g{next(names)}"
            wrapped = f"{{ VALUES {var} {{ {name} }} GRAPH {var} {body} }}"
        out.append(text[done:graph.start] + wrapped)
        done, k = close_at + 1, close + 1
    return "".join(out) + text[done:end]


def _matching_brace(tokens: list[Token], open_at: int) -> int:
    """The index of the token closing the `{` at `open_at` (-1 if it is never closed)."""
    depth = 0
    for k in range(open_at, len(tokens)):
        if _is(tokens[k], "{"):
            depth += 1
        elif _is(tokens[k], "}"):
            depth -= 1
            if depth == 0:
                return k
    return -1

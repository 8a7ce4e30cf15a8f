"""Hypothesis strategies for SPARQL queries whose nesting is known by construction.

A query is built inside out: a core, then a spine of wrappers, each one bracket deeper, in the
context it opens (a group pattern, an expression or a term). Strings, IRIs, comments and
prefixed names full of brackets, quotes and `#` are strewn in between; they must not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hypothesis import strategies as st

__all__ = ["PREFIXES", "Piece", "iris", "queries", "strings"]

Context = Literal["pattern", "expression", "term"]
PREFIXES = "PREFIX ex: <http://ex.org/>\n"


@dataclass(frozen=True)
class Piece:
    """SPARQL text and the deepest bracket nesting inside it."""

    text: str
    depth: int


_NOISE = ["(", ")", "{", "}", "[", "]", "<", ">", "<<", "#", " ", "a", "|", "&&"]


@st.composite
def strings(draw: st.DrawFn) -> str:
    """A string literal of any of the four forms, full of brackets, quotes and escapes."""
    quote = draw(st.sampled_from(["'", '"', "'''", '"""']))
    q = quote[0]
    other = '"' if q == "'" else "'"
    pieces = [*_NOISE, other, f"\\{q}", "\\\\", "\\n", "\\u0028"]
    if len(quote) == 3:
        pieces += [f"{q} ", f"{q}{q} ", "\n"]  # up to two quotes, never three, never last
    body = "".join(draw(st.lists(st.sampled_from(pieces), max_size=8)))
    return f"{quote}{body}{quote}"


@st.composite
def iris(draw: st.DrawFn) -> str:
    """An absolute IRI with brackets and quotes in it (all legal IRI characters)."""
    chars = ["(", ")", "'", "a", "-", ".", "~", "%41", "!", "$", "&", "*", "+", ",", ";", "=",
             ":", "@", "\\u0028"]
    path = "".join(draw(st.lists(st.sampled_from(chars), max_size=6)))
    fragment = "".join(draw(st.lists(st.sampled_from(chars), max_size=4)))
    return f"<http://ex.org/{path}" + (f"#{fragment}" if draw(st.booleans()) else "") + ">"


_NAMES = ["ex:a\\(b", "ex:\\#x", "ex:a\\'b\\)", "ex:x-y.z", "ex:", "ex:a%28"]
_COMMENTS = ["# ((( {{{ [[[ '\n", '# <<( " \n', "#\n"]


@st.composite
def _leaf(draw: st.DrawFn) -> str:
    """A value usable in an expression."""
    value: str = draw(st.one_of(
        st.sampled_from(["?x", "1", "2.5", "true", "?y"]),
        strings(), iris(), st.sampled_from(_NAMES),
        strings().map(lambda s: s + "@en"),
        st.just('"1"^^<http://www.w3.org/2001/XMLSchema#integer>'),
    ))
    return value


@st.composite
def _term(draw: st.DrawFn) -> str:
    """A value usable as a triple's object or in a collection."""
    value: str = draw(st.one_of(st.sampled_from(["1", "?o", "[]", "()"]), strings(), iris(),
                                st.sampled_from(_NAMES)))
    return value


@st.composite
def _gap(draw: st.DrawFn) -> str:
    """Space, or a comment full of brackets."""
    gap: str = draw(st.sampled_from([" ", "\n", *_COMMENTS]))
    return gap


def _core(context: Context) -> st.SearchStrategy[Piece]:
    if context == "pattern":
        return st.builds(lambda o: Piece(f"?s ?p {o} .", 0), _term())
    if context == "expression":
        return st.builds(lambda v: Piece(v, 0), _leaf())
    return st.builds(lambda v: Piece(v, 0), _term())


_MAX_COLLECTIONS, _MAX_TERMS = 6, 40
# Wrappers: (context outside, text before, context inside, text after, brackets they open).
_WRAPPERS: list[tuple[Context, str, Context, str, int]] = [
    ("pattern", "{ ", "pattern", " }", 1),
    ("pattern", "OPTIONAL { ", "pattern", " }", 1),
    ("pattern", "FILTER EXISTS { ", "pattern", " }", 1),
    ("pattern", "{ ?s ?p ?o } UNION { ", "pattern", " }", 1),
    ("pattern", "MINUS { ", "pattern", " }", 1),
    ("pattern", "GRAPH ?g { ", "pattern", " }", 1),
    ("pattern", "FILTER(", "expression", ")", 1),
    ("pattern", "FILTER (", "expression", ") ", 1),
    ("pattern", "?s <http://ex.org/p> [ ex:p ", "term", " ] .", 1),
    ("pattern", "?s ex:p ( ", "term", " ) .", 1),
    ("expression", "(", "expression", ")", 1),
    ("expression", "STR(", "expression", ")", 1),
    ("expression", "IF(true, ", "expression", ", 1)", 1),
    ("expression", "COALESCE(", "expression", ", 1)", 1),
    ("expression", "1<(", "expression", ")", 1),  # no space: '<' then '(' is less-than
    ("expression", "1<1&&'x>'=(", "expression", ")", 1),  # IRIREF would match `<1&&'x>`
    ("expression", "1<2#> c\n+(", "expression", ")", 1),  # ... and `<2#>`
    ("expression", "!(", "expression", ")", 1),
    ("expression", "?x IN (", "expression", ", 1)", 1),
    ("expression", "EXISTS { ", "pattern", " }", 1),
    ("term", "[ ex:p ", "term", " ]", 1),
    ("term", "( 1 ", "term", " 2 )", 1),
]


def _collection(wrapper: tuple[Context, str, Context, str, int]) -> bool:
    return wrapper[2] == "term" and "( " in wrapper[1]


@st.composite
def _spine(draw: st.DrawFn, length: int) -> Piece:
    kinds = []
    context: Context = "pattern"
    collections = 0
    for done in range(length):
        # pyoxigraph's time grows with the cube of nested collections and blank nodes (80
        # collections: 14 s, 240 blank nodes: 0.7 s); the deep spines are groups and expressions.
        choices = [w for w in _WRAPPERS if w[0] == context
                   and (collections < _MAX_COLLECTIONS or not _collection(w))
                   and (length - done <= _MAX_TERMS or w[2] != "term" or w[0] == "term")]
        wrapper = draw(st.sampled_from(choices))
        kinds.append(wrapper)
        context = wrapper[2]
        collections += _collection(wrapper)
    piece = draw(_core(context))
    for _, before, inside, after, opens in reversed(kinds):
        gap_a, gap_b = draw(_gap()), draw(_gap())
        noise = ""
        if inside == "expression" and draw(st.booleans()):
            # Another operand first; '||' and '&&' may precede any comparison.
            noise = draw(_leaf()) + draw(st.sampled_from([" || ", "&&", "||", " && "]))
        elif inside == "pattern" and draw(st.booleans()):
            noise = f"?s ex:q {draw(_term())} . "
        text = before + gap_a + noise + piece.text + gap_b + after
        piece = Piece(text, piece.depth + opens)
    return piece


@st.composite
def queries(draw: st.DrawFn, *, depths: st.SearchStrategy[int]) -> Piece:
    """`ASK { ... }` nested as deep as `depths` draws (plus the group itself)."""
    body = draw(_spine(draw(depths)))
    return Piece(f"{PREFIXES}ASK {{ {body.text} }}", body.depth + 1)

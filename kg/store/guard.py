"""The nesting guard: how deep pyoxigraph would recurse on a text, measured before it parses it.

pyoxigraph parses and evaluates on the calling thread's stack; a text nested or chained deep
enough overflows it and kills the whole process (a segfault, not an exception). Brackets of
every kind nest (`(`, `{`, `[`, `<<`); operators (`||`, `+`, `/`, `!` ...), FILTERs, BINDs and
group elements chain into equally deep trees. The guard measures both over the terminals of
kg.store.lexer, so brackets inside strings, IRIs and comments do not count.

pyoxigraph picks the meaning of `<` by context, not by the longest token: right after a value
inside an expression it is less-than even where IRIREF matches (`FILTER(1<2&&'x>'=(...))` is a
comparison and a string), and outside expressions `<` up to the next `>` is an IRI or an error.
The guard reads `<` the same way, so what it counts is what pyoxigraph recurses into.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from kg.errors import ValidationError
from kg.store.lexer import COMMENT, IRI, LANGTAG, NAME, NUMBER, STRING, VAR, WORD

__all__ = ["DEFAULT_MAX_CHAIN", "DEFAULT_MAX_NESTING", "NestingTooDeepError", "Shape",
           "check_nesting", "check_rdf_nesting", "measure"]

# pyoxigraph overflows an 8 MiB stack near 800 nested `FILTER NOT EXISTS {` (about 10 KiB a
# level) and near 2,600 chained BINDs or MINUS groups (3 KiB each); real queries stay far below.
DEFAULT_MAX_NESTING = 256
DEFAULT_MAX_CHAIN = 1_000
_CACHEABLE = 16_384

# What the last token read tells about the next one.
_OPERAND, _WORD, _DATA_NEXT, _VALUES = 1, 2, 4, 8
# What an open bracket holds: data (no operators), an expression, a group, a sub-select's clauses.
_DATA, _EXPR, _GROUP, _SUB = 1, 2, 4, 8

_KEYWORD = "(?i:FILTER|BIND|VALUES|SELECT|DATA|INSERT|DELETE|CONSTRUCT)(?![A-Za-z0-9_])"
_PUNCT = (r"(?:[.;,=]|!=|>=|\^\^|>(?!>)|\\[\s\S]|(?i:DISTINCT|REDUCED)(?![A-Za-z0-9_])"
          r"|[^\s(){}\[\]<>'\"#\\|/^*+\-!?&A-Za-z])")
# `()` and `[]` are single terminals (NIL, ANON), not nesting.
_NIL = r"\(\s*+\)|\[\s*+\]"
# Outside expressions pyoxigraph reads `<` up to the next `>` as an IRI, or stops with an error.
_ANGLE = r"<(?!<)[^>]*+>?"


def _run(*, iri: str, number: str) -> re.Pattern[str]:
    """A run of tokens that change nothing the guard counts; markers tell what came last."""
    return re.compile(
        f"(?:\\s++|{COMMENT}|(?:{STRING}{iri}|{number}|{NAME}|{LANGTAG}|{_NIL}|a(?![A-Za-z0-9_]))"
        f"(?P<o>)"
        f"|{VAR}(?P<v>)|{_PUNCT}(?P<n>)|(?!{_KEYWORD}){WORD}(?P<w>))*+"
    )


_PATTERN_RUN = _run(iri=f"|{_ANGLE}", number=f"-?{NUMBER}")  # a '-' here only signs a number
_EXPR_RUN = _run(iri="", number=NUMBER)  # '<' stops the run: IRI or less-than


def _data_run(angle: str, *, levels: int) -> re.Pattern[str]:
    inert = f"\\s++|{COMMENT}|{STRING}|{angle}|>(?!>)|\\\\[\\s\\S]|[^\\s#'\"<>(){{}}\\[\\]\\\\]++"
    for _ in range(levels):  # groups within groups, `levels` deep
        inert = (f"{inert}|\\((?:{inert})*+\\)|\\[(?:{inert})*+\\]|\\{{(?:{inert})*+\\}}"
                 f"|<<(?:{inert})*+>>")
    return re.compile(f"(?:{inert})*+")


# Inside INSERT DATA, templates, VALUES blocks and RDF documents nothing but brackets counts:
# groups up to _FLAT levels deep are skipped by one match while they fit under the limit.
_FLAT = 3
_DATA_RUNS = {(syntax, levels): _data_run(angle, levels=levels)
              for syntax, angle in (("sparql", _ANGLE), ("rdf", f"{IRI}|<(?!<)"))
              for levels in range(_FLAT + 1)}
_IRI = re.compile(IRI)
_QUOTE_OR_HASH = re.compile("['#]")
_KEYWORD_AT = re.compile(_KEYWORD)
_CALL = re.compile(f"(?:\\s++|{COMMENT})*+(?:{IRI}|{NAME})(?:\\s++|{COMMENT})*+\\(")
_CHAIN2 = frozenset({"||", "&&"})
_CHAIN1 = frozenset("|/^*+-!?")


class NestingTooDeepError(ValidationError):
    """A query, update or RDF document nested deeper than the server accepts."""

    code = "nesting_too_deep"


@dataclass(frozen=True, slots=True)
class Shape:
    """How far a text makes pyoxigraph recurse (the scan stops once it passes a limit)."""

    depth: int  # brackets open at once (groups skipped whole inside data are not counted)
    chain: int  # the deepest tree of brackets, operators and group elements
    divergent: bool  # a less-than was read where IRIREF matches text holding `'` or `#`


def check_nesting(text: str, *, limit: int = DEFAULT_MAX_NESTING,
                  max_chain: int = DEFAULT_MAX_CHAIN) -> None:
    """Raise NestingTooDeepError if a SPARQL query or update nests or chains past the limits."""
    if len(text) <= limit and len(text) <= max_chain:
        return  # every level and every link takes a character at least: nothing to measure
    # The library runs the same few query files all the time: remember their shape. A big
    # text is checked by the endpoint and again by the store: remember the last few by hash
    # (str caches it; Python's hash is keyed per process, so collisions cannot be forged).
    if len(text) <= _CACHEABLE:
        shape = _cached(text, limit, max_chain)
    else:
        key = (len(text), hash(text), limit, max_chain)
        shape = _recent.get(key) or measure(text, limit=limit, max_chain=max_chain)
        if len(_recent) >= 8:
            _recent.clear()
        _recent[key] = shape
    _verdict(shape, limit, max_chain)


def check_rdf_nesting(text: str, *, limit: int = DEFAULT_MAX_NESTING) -> None:
    """Raise NestingTooDeepError if an RDF document (Turtle family, JSON-LD) nests past `limit`."""
    _verdict(measure(text, limit=limit, syntax="rdf"), limit, None)


def measure(text: str, *, limit: int | None = None, max_chain: int | None = None,
            syntax: Literal["sparql", "rdf"] = "sparql") -> Shape:
    """Measure a SPARQL text (or an RDF document); stop early past `limit` or `max_chain`."""
    scan = _Scan(text, syntax=syntax, limit=limit, max_chain=max_chain)
    scan.run()
    return Shape(scan.depth, scan.chain, scan.divergent)


_recent: dict[tuple[int, int, int, int], Shape] = {}


@lru_cache(maxsize=512)
def _cached(text: str, limit: int, max_chain: int) -> Shape:
    return measure(text, limit=limit, max_chain=max_chain)


def _verdict(shape: Shape, limit: int, max_chain: int | None) -> None:
    if shape.depth > limit:
        raise NestingTooDeepError(
            f"the text nests brackets more than {limit} levels deep (the limit is {limit})",
            details={"limit": limit},
        )
    if max_chain is not None and shape.chain > max_chain:
        raise NestingTooDeepError(
            f"the query chains operators, FILTERs, BINDs and group elements into a tree more "
            f"than {max_chain} levels deep (the limit is {max_chain}); use VALUES or IN lists",
            details={"limit": max_chain, "measure": "chain"},
        )


class _Exceeded(Exception):
    """The scan passed a limit: the verdict is known, the rest need not be read."""


class _Level:
    """One open bracket (or the top level): what it holds and what it chained so far."""

    __slots__ = ("child", "count", "kind")

    def __init__(self, kind: int) -> None:
        self.kind, self.count, self.child = kind, 0, 0


class _Scan:
    """One left-to-right reading of a text, as pyoxigraph tokenizes it."""

    def __init__(self, text: str, *, syntax: str, limit: int | None, max_chain: int | None
                 ) -> None:
        self.text, self.syntax = text, syntax
        self.limit = limit if limit is not None else len(text) + 1
        self.max_chain = max_chain if max_chain is not None else 1 << 62
        self.stack = [_Level(_DATA if syntax == "rdf" else _SUB)]
        self.depth = self.chain = self.path = 0  # path: the open levels and what they chained
        self.divergent = False

    def run(self) -> None:
        """Read to the end, or until a limit is passed."""
        try:
            self._read()
            while len(self.stack) > 1:
                self._close()
            top = self.stack[0]
            self._bound(top.count + top.child)
        except _Exceeded:
            pass

    def _read(self) -> None:
        text, end, stack = self.text, len(self.text), self.stack
        at = flags = 0
        while True:
            level = stack[-1]
            if level.kind & _DATA:
                room = max(min(_FLAT, self.limit - len(stack) + 1), 0)
                at = _end(_DATA_RUNS[self.syntax, room], text, at)
            else:
                found = (_EXPR_RUN if level.kind & _EXPR else _PATTERN_RUN).match(text, at)
                assert found is not None  # a run may be empty: it always matches
                if found.end() > at:
                    flags, at = _after_run(found, flags), found.end()
            if at >= end:
                return
            c = text[at]
            if c in "([{":
                flags = self._open(c, flags)
                at += 1
            elif c in ")]}" or text.startswith(">>", at):
                self._close()
                at, flags = at + (2 if c == ">" else 1), _OPERAND | flags & _VALUES
            elif c == "<":
                at, flags = self._angle(at, level, flags)
            elif text[at:at + 2] in _CHAIN2 or c in _CHAIN1:
                self._chained(level)
                at, flags = at + (2 if text[at:at + 2] in _CHAIN2 else 1), 0
            elif (keyword := _KEYWORD_AT.match(text, at)) is not None:
                at, flags = self._keyword(keyword.group().upper(), keyword.end(), level)
            else:
                at, flags = at + 1, 0  # a lone '&' or the like: pyoxigraph stops here

    def _keyword(self, word: str, at: int, level: _Level) -> tuple[int, int]:
        flags = _OPERAND | _WORD
        if word in ("FILTER", "BIND", "VALUES") and level.kind & _GROUP:
            self._chained(level)  # FILTERs AND together, BINDs extend, VALUES join
        if word == "VALUES":
            flags |= _VALUES
        elif word == "SELECT" and level.kind & _GROUP:
            level.kind |= _SUB  # a sub-select: its clauses hold expressions
        elif word in ("DATA", "INSERT", "DELETE", "CONSTRUCT"):
            flags |= _DATA_NEXT
        elif word == "FILTER" and (call := _CALL.match(self.text, at)) is not None:
            self._open("(", _WORD)  # FILTER <f>(...) or FILTER ex:f(...): a function call
            return call.end(), 0
        return at, flags

    def _angle(self, at: int, level: _Level, flags: int) -> tuple[int, int]:
        """'<' where the runs stopped: '<<' anywhere, or an IRI or less-than in an expression."""
        text = self.text
        if level.kind & _EXPR and flags & _OPERAND:
            iri = _IRI.match(text, at)
            if iri is not None and _QUOTE_OR_HASH.search(text, at, iri.end()):
                self.divergent = True  # the grammar's longest token would hide code here
            return at + (2 if text.startswith("<=", at) else 1), 0
        if level.kind & _EXPR and (iri := _IRI.match(text, at)) is not None:
            return iri.end(), _OPERAND
        if text.startswith("<<", at):
            self._open("<", flags)
            return at + 2, 0
        return at + 1, 0  # neither IRI nor operator: pyoxigraph stops here

    def _open(self, bracket: str, flags: int) -> int:
        stack = self.stack
        outer = stack[-1].kind
        if outer & _DATA:
            kind = _DATA
        elif bracket == "{":
            if outer & _GROUP:
                self._chained(stack[-1])  # group elements join one by one
            kind = _DATA if flags & (_DATA_NEXT | _VALUES) else _GROUP
        elif bracket == "(" and (outer & (_EXPR | _SUB) or flags & _WORD):
            kind = _EXPR  # FILTER(, BIND(, f(, (... AS ?v), GROUP BY (...) ...
        else:
            kind = 0  # a collection, a path group, '[', '<<'
        stack.append(_Level(kind))
        self.path += 1
        self._bound(self.path)
        if len(stack) - 1 > self.depth:
            self.depth = len(stack) - 1
            if self.depth > self.limit:
                raise _Exceeded
        return flags & _VALUES if bracket == "(" else 0

    def _close(self) -> None:
        stack = self.stack
        if len(stack) == 1:
            return  # more closing than opening: pyoxigraph stops here
        inner = stack.pop()
        self.path -= 1 + inner.count
        outer = stack[-1]
        outer.child = max(outer.child, 1 + inner.count + inner.child)
        self._bound(self.path + outer.child)

    def _chained(self, level: _Level) -> None:
        if not level.kind & _DATA:
            level.count += 1
            self.path += 1
            self._bound(self.path)

    def _bound(self, chain: int) -> None:
        if chain > self.chain:
            self.chain = chain
            if chain > self.max_chain:
                raise _Exceeded


def _end(run: re.Pattern[str], text: str, at: int) -> int:
    found = run.match(text, at)
    assert found is not None  # a run may be empty: it always matches
    return found.end()


def _after_run(found: re.Match[str], flags: int) -> int:
    """The flags after a run of tokens: what its last token was, what it cleared."""
    operand, var, other, word = (found.start(g) for g in ("o", "v", "n", "w"))
    last = max(operand, var, other, word)
    if last < 0:
        return flags  # only spaces and comments
    new = _OPERAND | _WORD if last == word else _OPERAND if last in (operand, var) else 0
    if flags & _VALUES and max(operand, other, word) < 0:
        new |= _VALUES  # VALUES ?a ?b { ...: only variables before the data block
    return new

"""The one SPARQL tokenizer: its terminals as compiled patterns, the token stream, clause helpers.

Every check that reads SPARQL text before pyoxigraph does goes through these patterns: the
nesting guard (kg.store.guard), the SERVICE/LOAD check, the FROM scan, the USING rewrite and the
remote backend's rewrites (kg.store.sparql_terms). `tokenize` follows the SPARQL 1.1 grammar's
terminals: `<` starts an IRI only when IRIREF matches (no space, `<>"{}|^`\\` up to `>`; `\\u`
escapes allowed, as pyoxigraph allows them), otherwise it is an operator.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

from kg.errors import ValidationError

__all__ = [
    "COMMENT",
    "IRI",
    "LANGTAG",
    "NAME",
    "NUMBER",
    "STRING",
    "VAR",
    "WORD",
    "Token",
    "TokenKind",
    "dataset_clauses",
    "mentions_keyword",
    "prefixes",
    "query_form",
    "resolve",
    "tokenize",
    "with_using",
]

TokenKind = Literal["iri", "word", "var", "string", "number", "langtag", "punct"]

# Character classes of the grammar (PN_CHARS_BASE, PN_CHARS_U, PN_CHARS, VARNAME's tail).
_BASE = ("A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff"
         "\u200c-\u200d\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd"
         "\U00010000-\U000effff")
_U = _BASE + "_"
_TAIL = "0-9\u00b7\u0300-\u036f\u203f-\u2040"
_CHARS = _U + "\\-" + _TAIL
_PLX = r"%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PREFIX = f"[{_BASE}](?:[{_CHARS}.]*[{_CHARS}])?"
_LOCAL = f"(?:[{_U}:0-9]|{_PLX})(?:(?:[{_CHARS}.:]|{_PLX})*(?:[{_CHARS}:]|{_PLX}))?"
_IRI_CHAR = '[^\\x00-\\x20<>"{}|^`\\\\]'
_UCHAR = r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})"


def _long(q: str) -> str:
    # Up to two quotes may precede any other character; an unclosed one runs to the end.
    body = f"[^{q}\\\\]*+(?:(?:\\\\[\\s\\S]|{q}(?!{q * 2}))[^{q}\\\\]*+)*+"
    return f"{q * 3}{body}(?:{q * 3}|[\\s\\S]*+)"


def _short(q: str) -> str:
    # An unclosed short string ends at the line end, where pyoxigraph stops with an error.
    return f"{q}[^{q}\\\\\\r\\n]*+(?:\\\\[^\\r\\n][^{q}\\\\\\r\\n]*+)*+{q}?"


# The terminals, as pattern source for the scanners built from them (atomic: no backtracking).
STRING = f"(?>{_long(chr(39))}|{_long(chr(34))}|{_short(chr(39))}|{_short(chr(34))})"
IRI = f"(?><{_IRI_CHAR}*+(?:{_UCHAR}{_IRI_CHAR}*+)*+>)"
COMMENT = r"#[^\r\n]*+"
VAR = f"(?>[?$][{_U}0-9][{_U}{_TAIL}]*+)"
NAME = f"(?>(?:{_PREFIX})?:(?:{_LOCAL})?|_:[{_U}0-9](?:[{_CHARS}.]*[{_CHARS}])?)"
WORD = "(?>[A-Za-z][A-Za-z0-9_]*+)"
NUMBER = r"(?>(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++)(?:[eE][+-]?[0-9]++)?)"
LANGTAG = r"(?>@[a-zA-Z]++(?:-[a-zA-Z0-9]++)*+(?:--[a-zA-Z]++)?)"

_TOKEN = re.compile(
    f"(?P<space>\\s++|{COMMENT})|(?P<string>{STRING})|(?P<iri>{IRI})|(?P<var>{VAR})"
    f"|(?P<number>{NUMBER})|(?P<word>{NAME}|{WORD})|(?P<langtag>{LANGTAG})"
    r"|(?P<punct><<|>>|<=|>=|!=|&&|\|\||\^\^|\\[\s\S]|[\s\S])"
)


@dataclass(frozen=True, slots=True)
class Token:
    """One lexical token: its kind, its text (an IRI without brackets) and where it lies."""

    kind: TokenKind
    text: str
    start: int
    end: int

    def is_keyword(self, *names: str) -> bool:
        """Tell whether this is one of the keywords `names` (case-insensitive)."""
        return self.kind == "word" and self.text.upper() in names


def tokenize(text: str, *, start: int = 0, end: int | None = None) -> Iterator[Token]:
    """Yield the tokens of SPARQL text (or of `text[start:end]`), skipping spaces and comments."""
    stop = len(text) if end is None else end
    match = _TOKEN.match
    at = start
    while at < stop:
        found = match(text, at, stop)
        assert found is not None  # the last alternative matches any character
        kind = found.lastgroup
        at = found.end()
        if kind == "space":
            continue
        if kind == "iri":
            yield Token("iri", text[found.start() + 1:at - 1], found.start(), at)
        else:
            yield Token(kind, found.group(), found.start(), at)  # type: ignore[arg-type]


def prefixes(tokens: list[Token]) -> dict[str, str]:
    """Return the PREFIX declarations of the prologue(s) as {prefix: namespace IRI}."""
    found: dict[str, str] = {}
    for k, token in enumerate(tokens[:-2]):
        if token.is_keyword("PREFIX") and tokens[k + 1].kind == "word":
            name, iri = tokens[k + 1].text, tokens[k + 2]
            if name.endswith(":") and iri.kind == "iri":
                found[name[:-1]] = iri.text
    return found


def resolve(token: Token, declared: dict[str, str], base: str | None) -> str | None:
    """Return the absolute IRI an IRI or prefixed-name token denotes, or None if it cannot."""
    if token.kind == "iri":
        return urljoin(base, token.text) if base else token.text
    if token.kind == "word" and ":" in token.text:
        prefix, local = token.text.split(":", 1)
        if prefix in declared:
            return declared[prefix] + local.replace("\\", "")
    return None


def mentions_keyword(text: str, *names: str) -> bool:
    """Tell cheaply whether any keyword in `names` (upper case) may occur in `text` at all.

    False is certain (no token can be one of them), so a caller may skip tokenizing; True only
    means the text has to be tokenized to know.
    """
    # upper() of the whole text contains upper() of each of its tokens (it maps per character).
    folded = text.upper()
    return any(name in folded for name in names)


def query_form(text: str) -> str | None:
    """Return SELECT, ASK, CONSTRUCT or DESCRIBE for a query (None if no form keyword is found)."""
    for token in tokenize(text):
        if token.is_keyword("SELECT", "ASK", "CONSTRUCT", "DESCRIBE"):
            return token.text.upper()
    return None


def dataset_clauses(text: str, *, base: str | None = None) -> tuple[list[str], list[str]]:
    """Return the IRIs of a query's FROM and FROM NAMED clauses (outside any group)."""
    tokens = list(tokenize(text))
    declared = prefixes(tokens)
    default: list[str] = []
    named: list[str] = []
    depth = 0
    k = 0
    while k < len(tokens):
        token = tokens[k]
        if token.text == "{" and token.kind == "punct":
            depth += 1
        elif token.text == "}" and token.kind == "punct":
            depth -= 1
        elif depth == 0 and token.is_keyword("FROM") and k + 1 < len(tokens):
            is_named = tokens[k + 1].is_keyword("NAMED")
            target_at = k + 2 if is_named else k + 1
            if target_at < len(tokens):
                iri = resolve(tokens[target_at], declared, base)
                (named if is_named else default).append(iri or tokens[target_at].text)
            k = target_at
        k += 1
    return default, named


def with_using(text: str, *, default: list[str], named: list[str]) -> str:
    """Apply the protocol's using-graph-uri/using-named-graph-uri to every INSERT/DELETE ... WHERE.

    Raises ValidationError when the update names its own dataset (USING or WITH), as the SPARQL
    1.1 Protocol requires.
    """
    if not default and not named:
        return text
    tokens = list(tokenize(text))
    if any(t.is_keyword("USING", "WITH") for t in tokens):
        raise ValidationError(
            "using-graph-uri/using-named-graph-uri cannot be combined with USING or WITH "
            "in the update itself",
            details={"code": "dataset_conflict"},
        )
    clause = " ".join([*(f"USING <{iri}>" for iri in default),
                       *(f"USING NAMED <{iri}>" for iri in named)])
    cuts: list[int] = []
    depth = 0
    for k, token in enumerate(tokens):
        if token.text == "{" and token.kind == "punct":
            depth += 1
        elif token.text == "}" and token.kind == "punct":
            depth -= 1
        elif depth == 0 and token.is_keyword("WHERE") and k > 0 and tokens[k - 1].text == "}":
            # Only a WHERE after an INSERT/DELETE template; the DELETE WHERE short form has none.
            cuts.append(token.start)
    for at in reversed(cuts):
        text = f"{text[:at]}{clause} {text[at:]}"
    return text


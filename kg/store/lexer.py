"""A small SPARQL tokenizer for the checks that must run before pyoxigraph sees user text.

It is not a parser: it tells keywords from IRIs, prefixed names, variables, strings and
comments, which is all the SERVICE/LOAD guard, the FROM scan and the USING rewrite need.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

from kg.errors import ValidationError

__all__ = [
    "Token",
    "TokenKind",
    "dataset_clauses",
    "mentions_keyword",
    "prefixes",
    "query_form",
    "resolve",
    "string_end",
    "tokenize",
    "with_using",
]

TokenKind = Literal["iri", "word", "var", "string", "punct"]

# Characters of keywords, prefixed names and numbers (PN_CHARS plus ':' '.' '%' '\\').
_WORD_EXTRA = frozenset("_-:.%\\")


@dataclass(frozen=True, slots=True)
class Token:
    """One lexical token: its kind, its text (an IRI without brackets) and where it starts."""

    kind: TokenKind
    text: str
    start: int

    def is_keyword(self, *names: str) -> bool:
        """Tell whether this is one of the keywords `names` (case-insensitive)."""
        return self.kind == "word" and self.text.upper() in names


def tokenize(text: str) -> Iterator[Token]:
    """Yield the tokens of SPARQL text; comments and whitespace are skipped."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif c == "<":
            end = i + 1
            while end < n and text[end] not in "<>\"{}|^`\\ \t\r\n":
                end += 1
            if end < n and text[end] == ">":
                yield Token("iri", text[i + 1 : end], i)
                i = end + 1
            else:
                yield Token("punct", c, i)
                i += 1
        elif c in "\"'":
            end = string_end(text, i)
            yield Token("string", text[i:end], i)
            i = end
        elif c in "?$" and i + 1 < n and _is_word_char(text[i + 1]):
            end = i + 1
            while end < n and _is_word_char(text[end]):
                end += 1
            yield Token("var", text[i:end], i)
            i = end
        elif _is_word_char(c) or c == ":":
            end = i
            while end < n and (_is_word_char(text[end]) or text[end] in _WORD_EXTRA):
                end += 1
            # A trailing '.' ends a triple; it is not part of the name.
            while end > i + 1 and text[end - 1] == ".":
                end -= 1
            yield Token("word", text[i:end], i)
            i = end
        else:
            yield Token("punct", c, i)
            i += 1


def prefixes(tokens: list[Token]) -> dict[str, str]:
    """Return the PREFIX declarations of the prologue(s) as {prefix: namespace IRI}."""
    found: dict[str, str] = {}
    for k, token in enumerate(tokens[:-2]):
        if token.is_keyword("PREFIX", "@PREFIX") and tokens[k + 1].kind == "word":
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
        if token.kind == "punct" and token.text == "{":
            depth += 1
        elif token.kind == "punct" and token.text == "}":
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
        if token.kind == "punct" and token.text == "{":
            depth += 1
        elif token.kind == "punct" and token.text == "}":
            depth -= 1
        elif depth == 0 and token.is_keyword("WHERE") and k > 0 and tokens[k - 1].text == "}":
            # Only a WHERE after an INSERT/DELETE template; the DELETE WHERE short form has none.
            cuts.append(token.start)
    for at in reversed(cuts):
        text = f"{text[:at]}{clause} {text[at:]}"
    return text


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_" or ord(c) > 0x7F


def string_end(text: str, start: int) -> int:
    """Return the index just past the string literal starting at `start`."""
    quote = text[start]
    long = text.startswith(quote * 3, start)
    delimiter = quote * 3 if long else quote
    i = start + len(delimiter)
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(delimiter, i):
            return i + len(delimiter)
        if not long and text[i] in "\r\n":
            return i
        i += 1
    return n

"""Reading the literal a SPARQL token (or token run) writes, as a typed pyoxigraph Literal."""

from __future__ import annotations

import re

from pyoxigraph import Literal, NamedNode

from kg.namespaces import XSD
from kg.store.lexer import Token, resolve

__all__ = ["literal_at"]

# ECHAR of the grammar; \u and \U escapes are also read here (pyoxigraph reads them anywhere).
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([tbnrf\"'\\]))")
_ECHAR = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", '"': '"', "'": "'", "\\": "\\"}


def literal_at(tokens: list[Token], k: int, *, declared: dict[str, str],
               base: str | None) -> tuple[Literal, int] | None:
    """The literal starting at token `k` and the index after it, or None if none starts there."""
    token = tokens[k]
    sign = ""
    if token.kind == "punct" and token.text in "+-" and k + 1 < len(tokens) \
            and tokens[k + 1].kind == "number" and tokens[k + 1].start == token.end:
        sign, k, token = token.text, k + 1, tokens[k + 1]
    if token.kind == "number":
        text = sign + token.text
        kind = "double" if "e" in text.lower() else "decimal" if "." in text else "integer"
        return Literal(text, datatype=XSD[kind]), k + 1
    if token.is_keyword("TRUE", "FALSE"):
        return Literal(token.text.lower(), datatype=XSD["boolean"]), k + 1
    if token.kind != "string":
        return None
    value = _unquote(token.text)
    after = tokens[k + 1] if k + 1 < len(tokens) else None
    if after is not None and after.kind == "langtag":
        return Literal(value, language=after.text[1:]), k + 2
    if after is not None and after.text == "^^" and k + 2 < len(tokens):
        iri = resolve(tokens[k + 2], declared, base)
        if iri is None:
            return None
        return Literal(value, datatype=NamedNode(iri)), k + 3
    return Literal(value), k + 1


def _unquote(text: str) -> str:
    quote = 3 if text[:3] in ('"""', "'''") else 1
    body = text[quote:-quote] if len(text) >= 2 * quote else text[quote:]
    return _ESCAPE.sub(_unescape, body)


def _unescape(found: re.Match[str]) -> str:
    code = found.group(1) or found.group(2)
    return chr(int(code, 16)) if code else _ECHAR[found.group(3)]

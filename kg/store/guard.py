"""Cheap checks on SPARQL text that must run before pyoxigraph parses it."""

from __future__ import annotations

from functools import lru_cache

from kg.errors import ValidationError
from kg.store.lexer import string_end

__all__ = ["DEFAULT_MAX_NESTING", "NestingTooDeepError", "check_nesting"]

# pyoxigraph's recursive parser overflows a normal thread stack near 5,000 nested groups and
# kills the whole process (a segfault, not an exception); real queries stay far below this.
DEFAULT_MAX_NESTING = 256

_OPEN = frozenset("{([")
_CLOSE = frozenset("})]")


class NestingTooDeepError(ValidationError):
    """A query or update nested deeper than the server accepts."""

    code = "nesting_too_deep"


def check_nesting(text: str, *, limit: int = DEFAULT_MAX_NESTING) -> None:
    """Raise NestingTooDeepError if brackets (outside strings, IRIs, comments) nest past `limit`."""
    # The library runs the same few query files all the time: remember their depth.
    depth = _cached_depth(text, limit) if len(text) <= _CACHEABLE else _max_depth(text, limit)
    if depth > limit:
        raise NestingTooDeepError(
            f"the SPARQL text nests groups more than {limit} levels deep",
            details={"limit": limit},
        )


_CACHEABLE = 16_384


@lru_cache(maxsize=512)
def _cached_depth(text: str, limit: int) -> int:
    return _max_depth(text, limit)


def _max_depth(text: str, limit: int) -> int:
    """Return the deepest bracket nesting, stopping early once it passes `limit`."""
    deepest = 0
    depth = 0
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif c in _CLOSE:
            depth -= 1
        elif c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif c == "<":
            # An IRI has no spaces; a '<' followed by a space is the less-than operator.
            end = i + 1
            while end < n and text[end] not in "> \t\r\n":
                end += 1
            if end < n and text[end] == ">":
                i = end
        elif c in "\"'":
            i = string_end(text, i) - 1
        i += 1
    return deepest

"""Checking user query text and choosing its search words (never parsed as query syntax)."""

from __future__ import annotations

from kg.errors import ValidationError
from kg.recall.analyzer import WORD

__all__ = [
    "MAX_QUERY_BYTES",
    "MAX_QUERY_TOKENS",
    "STOP_WORDS",
    "InvalidQueryError",
    "query_tokens",
    "require_words",
    "validate_query",
]

MAX_QUERY_BYTES = 1000
MAX_QUERY_TOKENS = 64

# Words that carry no topic: BM25 would give them a little weight, enough to pull in noise.
_STOP_TEXT = (
    """a about above after again against all am an and any are as at be been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me might more most must my myself no nor not now of off on once only or other our
    ours ourselves out over own same shall she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """
)
# What the word pattern leaves of a contraction or possessive ("Mel's" → "mel", "s"; "hadn't" →
# "hadn", "t"; "I'll" → "i", "ll"): nearly every memory has them, no topic does.
_FRAGMENTS = "s t d ll m re ve"
STOP_WORDS = frozenset(_STOP_TEXT.split()) | frozenset(_FRAGMENTS.split())


class InvalidQueryError(ValidationError):
    """Recall query text that is empty, too long or has no searchable word."""

    code = "invalid_query"


def validate_query(text: object) -> str:
    """Return `text` if it is a non-empty string of at most 1,000 UTF-8 bytes."""
    if not isinstance(text, str):
        raise InvalidQueryError(f"query must be a string, got {type(text).__name__}")
    size = len(text.encode("utf-8", errors="surrogatepass"))
    if size > MAX_QUERY_BYTES:
        raise InvalidQueryError(
            f"query is {size} bytes; the limit is {MAX_QUERY_BYTES}",
            details={"field": "query", "bytes": size, "limit": MAX_QUERY_BYTES},
        )
    if not text.strip():
        raise InvalidQueryError("query is empty", details={"field": "query"})
    return text


def query_tokens(text: str) -> list[str]:
    """The distinct lower-cased words of `text`; stop words dropped unless nothing is left."""
    words = list(dict.fromkeys(w.lower() for w in WORD.findall(text)))
    content = [w for w in words if w not in STOP_WORDS]
    return (content or words)[:MAX_QUERY_TOKENS]


def require_words(tokens: list[str]) -> None:
    """Raise InvalidQueryError if a query left no searchable word."""
    if not tokens:
        raise InvalidQueryError(
            "query has no searchable word (letters or digits)", details={"field": "query"}
        )

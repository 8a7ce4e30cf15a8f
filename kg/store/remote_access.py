"""SERVICE and LOAD make the server fetch URLs (SSRF): refuse them unless a target is allowed.

The check reads tokens, so `SERVICE` inside a string, a comment, an IRI, a variable name or a
prefixed name (`ex:service`) does not count, while every real SERVICE or LOAD keyword does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from urllib.parse import urljoin, urlsplit

from kg.errors import PermissionDeniedError
from kg.store.guard import measure
from kg.store.lexer import Token, mentions_keyword, prefixes, resolve, tokenize

__all__ = ["RemoteAccessDeniedError", "check_remote_access", "remote_targets"]


class RemoteAccessDeniedError(PermissionDeniedError):
    """A SERVICE or LOAD whose target is not on the administrator's allow-list."""

    code = "remote_access_denied"


def remote_targets(text: str, *, base: str | None = None) -> list[tuple[str, str | None]]:
    """Return (keyword, absolute target IRI or None) for every SERVICE and LOAD in `text`."""
    if not mentions_keyword(text, "SERVICE", "LOAD"):
        return []  # certain, and far cheaper than tokenizing a 50 MB INSERT DATA
    tokens = list(tokenize(text))
    declared = prefixes(tokens)
    found: list[tuple[str, str | None]] = []
    for k, token in enumerate(tokens):
        if token.is_keyword("BASE") and k + 1 < len(tokens) and tokens[k + 1].kind == "iri":
            # The text's own BASE resolves what follows it, as pyoxigraph resolves it.
            base = urljoin(base, tokens[k + 1].text) if base else tokens[k + 1].text
        elif token.is_keyword("SERVICE", "LOAD"):
            target = _target(tokens, k + 1)
            iri = resolve(target, declared, base) if target is not None else None
            found.append((token.text.upper(), iri))
    return found


def check_remote_access(
    text: str, *, allowed: Sequence[str], base: str | None = None,
    local: Collection[str] = (),
) -> None:
    """Raise RemoteAccessDeniedError unless every SERVICE/LOAD target starts with an allowed IRI.

    A SERVICE whose target is exactly one of `local` is answered in-process, not fetched (the
    recall SERVICE, kg.sparql.recall_service), so it passes.
    """
    if not mentions_keyword(text, "SERVICE", "LOAD"):
        return
    if measure(text).divergent:
        # pyoxigraph may read a '<' as less-than where the tokens read an IRI, and so see a
        # SERVICE or LOAD that the tokens put inside a string or a comment.
        raise RemoteAccessDeniedError(
            "SERVICE and LOAD are refused in a text where a less-than right after a value "
            "also reads as an IRI holding a quote or '#': put a space after that '<'",
            details={"keyword": None, "target": None, "allowed": list(allowed)},
        )
    for keyword, iri in remote_targets(text, base=base):
        if keyword == "SERVICE" and iri is not None and iri in local:
            continue
        if iri is None or not _allowed(iri, allowed):
            shown = iri if iri is not None else "a variable or unresolvable name"
            raise RemoteAccessDeniedError(
                f"{keyword} {shown} is refused: this endpoint does not fetch remote data "
                "unless the administrator allow-lists the target (KG_FETCH_ALLOWLIST)",
                details={"keyword": keyword, "target": iri, "allowed": list(allowed)},
            )


def _target(tokens: list[Token], at: int) -> Token | None:
    while at < len(tokens) and tokens[at].is_keyword("SILENT"):
        at += 1
    return tokens[at] if at < len(tokens) else None


def _allowed(iri: str, allowed: Sequence[str]) -> bool:
    parts = urlsplit(iri)
    # User-info and '..' segments could climb out of an allowed prefix; refuse them outright.
    if not parts.scheme or "@" in parts.netloc or ".." in parts.path.split("/"):
        return False
    return any(iri == prefix or (prefix.endswith("/") and iri.startswith(prefix))
               for prefix in allowed)

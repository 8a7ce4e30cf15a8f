"""Content negotiation with q-values, shared by every route that has several representations."""

from __future__ import annotations

from collections.abc import Sequence

from flask import request

from api.errors import NotAcceptableError

__all__ = ["negotiate"]


def negotiate(offers: Sequence[str]) -> str:
    """Return the offered media type the client prefers most, or raise NotAcceptableError (406)."""
    header = request.headers.get("Accept", "").strip()
    if not header:
        return offers[0]
    best = request.accept_mimetypes.best_match(offers)
    if best is None:
        raise NotAcceptableError(
            f"none of the media types in Accept: {header[:200]} can be produced here",
            details={"available": list(offers)},
        )
    return best

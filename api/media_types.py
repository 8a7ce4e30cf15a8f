"""The media types of SPARQL results and RDF graphs, and q-value negotiation over them."""

from __future__ import annotations

from functools import lru_cache

from flask import request
from pyoxigraph import QueryResultsFormat, RdfFormat
from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header

from api.errors import NotAcceptableError, UnsupportedMediaTypeError

__all__ = [
    "GRAPH_TYPES",
    "RESULT_TYPES",
    "accepted",
    "best_offer",
    "content_type",
    "negotiate_graph",
    "negotiate_results",
    "rdf_format_of",
]

# The first entry is the default for a client that accepts anything.
RESULT_TYPES: dict[str, QueryResultsFormat] = {
    "application/sparql-results+json": QueryResultsFormat.JSON,
    "application/sparql-results+xml": QueryResultsFormat.XML,
    "text/csv": QueryResultsFormat.CSV,
    "text/tab-separated-values": QueryResultsFormat.TSV,
    "application/json": QueryResultsFormat.JSON,
    "application/xml": QueryResultsFormat.XML,
    "text/xml": QueryResultsFormat.XML,
}
GRAPH_TYPES: dict[str, RdfFormat] = {
    "text/turtle": RdfFormat.TURTLE,
    "application/n-triples": RdfFormat.N_TRIPLES,
    "application/n-quads": RdfFormat.N_QUADS,
    "application/trig": RdfFormat.TRIG,
    "application/ld+json": RdfFormat.JSON_LD,
    "application/rdf+xml": RdfFormat.RDF_XML,
    "application/x-turtle": RdfFormat.TURTLE,
    "text/plain": RdfFormat.N_TRIPLES,
    "application/xml": RdfFormat.RDF_XML,
}
# Formats a body may be sent in (graph store, multipart parts).
_PARSEABLE: dict[str, RdfFormat] = {**GRAPH_TYPES, "text/n3": RdfFormat.N3}


def accepted() -> MIMEAccept:
    """The request's Accept header with media-type parameters (charset=...) dropped."""
    return _accepted(request.headers.get("Accept", ""))


def best_offer(offers: list[str]) -> str | None:
    """The offer the client prefers (the first offer when there is no Accept header)."""
    return _best_offer(request.headers.get("Accept", ""), tuple(offers))


# Clients send the same few Accept headers over and over; parsing and matching one costs more
# than running a small query, so both are remembered per header value (bounded).
@lru_cache(maxsize=256)
def _accepted(header: str) -> MIMEAccept:
    parsed = parse_accept_header(header, MIMEAccept)
    return MIMEAccept([(v.split(";")[0].strip(), q) for v, q in parsed])


@lru_cache(maxsize=1024)
def _best_offer(header: str, offers: tuple[str, ...]) -> str | None:
    if not header.strip():
        return offers[0]
    accept = _accepted(header)
    best = accept.best_match(offers)
    return best if best is not None and accept[best] > 0 else None


def negotiate_results(*, required: bool = True,
                      accept: str | None = None) -> tuple[str, QueryResultsFormat] | None:
    """Pick the SPARQL results format the client prefers (406 if required and none fits).

    `accept` is the Accept header value; None reads it from the current request.
    """
    header = _header(accept)
    best = _best_offer(header, _RESULT_OFFERS)
    if best is None:
        if required:
            raise _not_acceptable(list(RESULT_TYPES), header)
        return None
    return best, RESULT_TYPES[best]


def negotiate_graph(*, triples_only: bool = False,
                    accept: str | None = None) -> tuple[str, RdfFormat]:
    """Pick the RDF format the client prefers (406 if none fits); `accept` as above."""
    header = _header(accept)
    offers = _TRIPLE_OFFERS if triples_only else _GRAPH_OFFERS
    best = _best_offer(header, offers)
    if best is None:
        raise _not_acceptable(list(offers), header)
    return best, GRAPH_TYPES[best]


def rdf_format_of(mimetype: str) -> RdfFormat:
    """Return the RDF format of a request body's media type (415 if it is not RDF we parse)."""
    fmt = _PARSEABLE.get(mimetype.lower())
    if fmt is None:
        raise UnsupportedMediaTypeError(
            f"cannot read RDF sent as {mimetype or 'no Content-Type'}",
            details={"supported": sorted(_PARSEABLE)},
        )
    return fmt


def content_type(media_type: str) -> str:
    """Return the Content-Type header value for a media type (UTF-8 for text formats)."""
    return f"{media_type}; charset=utf-8"


_RESULT_OFFERS = tuple(RESULT_TYPES)
_GRAPH_OFFERS = tuple(GRAPH_TYPES)
_TRIPLE_OFFERS = tuple(m for m, f in GRAPH_TYPES.items() if not f.supports_datasets)


def _header(accept: str | None) -> str:
    return request.headers.get("Accept", "") if accept is None else accept


def _not_acceptable(offers: list[str], header: str) -> NotAcceptableError:
    return NotAcceptableError(
        f"none of the media types in Accept: {header[:200]} can be produced here",
        details={"available": offers},
    )

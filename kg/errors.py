"""The one exception hierarchy of the kg library and its one table of HTTP statuses.

`api` answers each error with its status (api.errors); kg.client turns answers back into errors.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HTTP_STATUS",
    "AuthenticationError",
    "ConflictError",
    "KgError",
    "NotFoundError",
    "OntologyCheckError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "QuerySyntaxError",
    "QueryTimeoutError",
    "StoreError",
    "StoreLockedError",
    "StoreUnavailableError",
    "UpstreamError",
    "ValidationError",
    "http_status",
]


class KgError(Exception):
    """Base of every error kg raises on purpose; carries a stable machine-readable code."""

    code: str = "kg_error"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})


class ValidationError(KgError):
    """Input that breaks a documented rule (type, range, length, format)."""

    code = "invalid_input"


class QuerySyntaxError(ValidationError):
    """SPARQL (or RDF) text that does not parse."""

    code = "malformed_query"


class NotFoundError(KgError):
    """A named thing (session, memory, graph, file) does not exist."""

    code = "not_found"


class ConflictError(KgError):
    """The request is valid but clashes with the current state."""

    code = "conflict"


class AuthenticationError(KgError):
    """No credentials, or credentials that are not valid."""

    code = "unauthenticated"


class PermissionDeniedError(KgError):
    """Valid credentials that do not allow this operation or scope."""

    code = "forbidden"


class PayloadTooLargeError(KgError):
    """A body, query or result larger than the configured cap."""

    code = "payload_too_large"


class StoreError(KgError):
    """The store failed in a way that is not the caller's fault."""

    code = "store_error"


class StoreLockedError(StoreError):
    """Another process holds the write lock on the store directory."""

    code = "store_locked"


class StoreUnavailableError(StoreError):
    """The store cannot be reached now (remote down, too many runaway queries)."""

    code = "store_unavailable"


class QueryTimeoutError(StoreError):
    """A query ran past its time limit."""

    code = "query_timeout"


class UpstreamError(KgError):
    """A remote the store had to fetch from (SERVICE, LOAD) failed or could not be reached."""

    code = "upstream_error"


class OntologyCheckError(KgError):
    """The ontology check found problems or could not run."""

    code = "ontology_check_failed"


# Most specific first: the first class in an error's MRO found here decides its status. The
# service answers with it (api.errors adds its own HTTP-only errors); kg.client reads it backwards.
HTTP_STATUS: dict[type[KgError], int] = {
    ValidationError: 400,
    AuthenticationError: 401,
    PermissionDeniedError: 403,
    NotFoundError: 404,
    ConflictError: 409,
    PayloadTooLargeError: 413,
    QueryTimeoutError: 504,
    UpstreamError: 502,
    StoreUnavailableError: 503,
    StoreError: 500,
    KgError: 500,
}


def http_status(error: KgError | type[KgError]) -> int:
    """The HTTP status of a kg error, given as a class or an instance."""
    cls = error if isinstance(error, type) else type(error)
    for base in cls.__mro__:
        if base in HTTP_STATUS:
            return HTTP_STATUS[base]
    return 500

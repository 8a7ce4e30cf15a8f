"""The client's own errors, and the service's JSON error answers turned back into kg errors.

An answer `{"error": {"status", "code", "message", "details"}}` becomes the kg class whose
`code` it names when that class has the same HTTP status (kg.errors.HTTP_STATUS, the table the
service answers with); otherwise the most general class of the status, carrying the server's
code. Errors of the service's own HTTP layer (api.memory.InvalidRequestError, 415, 405) thus
arrive as their kg base class: ValidationError with code `invalid_request`, KgError.
"""

from __future__ import annotations

import json
from typing import Any

# Loaded so that an answer's code finds its class in any process: these modules define the
# service's remaining kg errors (kg.memory_service, which the records need, brings the rest).
import kg.memory_service
import kg.sparql.entailment
import kg.sparql.recall_request
import kg.store.execution
import kg.store.remote_access  # noqa: F401
from kg.errors import (
    HTTP_STATUS,
    KgError,
    QueryTimeoutError,
    StoreUnavailableError,
    http_status,
)

__all__ = [
    "ServiceTimeoutError",
    "ServiceUnreachableError",
    "UnexpectedResponseError",
    "error_from_answer",
    "kg_error_classes",
]


class ServiceUnreachableError(StoreUnavailableError):
    """The memory service cannot be reached (refused, reset, closed before it answered)."""

    code = "service_unreachable"


class ServiceTimeoutError(QueryTimeoutError):
    """The memory service did not answer within the client's timeout."""

    code = "service_timeout"


class UnexpectedResponseError(KgError):
    """An answer that is not what the memory API sends (a proxy's page, another service)."""

    code = "unexpected_response"


# The most general class of each status: the table lists the specific ones first.
_BY_STATUS: dict[int, type[KgError]] = {status: cls for cls, status in HTTP_STATUS.items()}


def error_from_answer(status: int, body: bytes, *, url: str) -> KgError:
    """The kg error of an HTTP error answer from `url`."""
    payload = _error_payload(body)
    if payload is None:
        text = body.decode("utf-8", errors="replace").strip()[:200]
        cls = _BY_STATUS.get(status, KgError)
        error = cls(f"HTTP {status} from {url}: {text or 'no body'}",
                    details={"url": url, "status": status})
        error.code = f"http_{status}"
        return error
    code = str(payload.get("code") or f"http_{status}")
    message = str(payload.get("message") or f"HTTP {status}")
    raw_details = payload.get("details")
    details = dict(raw_details) if isinstance(raw_details, dict) else {}
    cls = _class_of(code, status)
    error = cls(message, details=details)
    if error.code != code:
        error.code = code  # the server's own word, e.g. invalid_request for a bad body
    return error


def _error_payload(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    inner = data.get("error") if isinstance(data, dict) else None
    return inner if isinstance(inner, dict) else None


def _class_of(code: str, status: int) -> type[KgError]:
    for cls in kg_error_classes():
        if cls.code == code and http_status(cls) == status:
            return cls
    return _BY_STATUS.get(status, KgError)


def kg_error_classes() -> list[type[KgError]]:
    """Every KgError subclass of the kg library loaded now (kg.client imports their modules)."""
    found: list[type[KgError]] = []
    pending = [KgError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("kg."):
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return found

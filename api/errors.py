"""The one JSON error shape and the one place kg errors become HTTP statuses."""

from __future__ import annotations

import json
import logging
from typing import Any

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from kg.errors import HTTP_STATUS, AuthenticationError, KgError

__all__ = [
    "MethodNotAllowedError",
    "NotAcceptableError",
    "UnsupportedMediaTypeError",
    "error_body",
    "error_response",
    "register_error_handlers",
    "status_for",
]

log = logging.getLogger(__name__)


class NotAcceptableError(KgError):
    """No representation the client accepts (HTTP 406)."""

    code = "not_acceptable"


class UnsupportedMediaTypeError(KgError):
    """A request body in a media type the route does not take (HTTP 415)."""

    code = "unsupported_media_type"


class MethodNotAllowedError(KgError):
    """An HTTP method the route does not take (HTTP 405)."""

    code = "method_not_allowed"


# kg's one table (kg.errors.HTTP_STATUS) plus the errors only HTTP has.
_STATUS: dict[type[KgError], int] = {
    NotAcceptableError: 406,
    UnsupportedMediaTypeError: 415,
    MethodNotAllowedError: 405,
    **HTTP_STATUS,
}


def status_for(error: KgError) -> int:
    """Return the HTTP status of a kg error."""
    for cls in type(error).__mro__:
        if cls in _STATUS:
            return _STATUS[cls]
    return 500


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> Response:
    """Build the JSON error body `{"error": {status, code, message, details}}`."""
    response = jsonify(_error(status, code, message, details))
    response.status_code = status
    return response


def error_body(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> bytes:
    """The same JSON error body as bytes, for answers given before any Flask app runs."""
    return json.dumps(_error(status, code, message, details)).encode()


def _error(status: int, code: str, message: str,
           details: dict[str, Any] | None) -> dict[str, Any]:
    return {"error": {"status": status, "code": code, "message": message,
                      "details": details or {}}}


def _http_code(exc: HTTPException) -> str:
    name = (exc.name or "error").lower().replace(" ", "_").replace("-", "_")
    return name.replace("'", "")


def register_error_handlers(app: Flask) -> None:
    """Make every error, ours or Werkzeug's, leave in the one JSON shape."""

    @app.errorhandler(KgError)
    def _kg_error(exc: KgError) -> Response:
        status = status_for(exc)
        if status >= 500:
            log.error("%s: %s", type(exc).__name__, exc.message)
        response = error_response(status, exc.code, exc.message, exc.details)
        if isinstance(exc, AuthenticationError):
            response.headers["WWW-Authenticate"] = 'Bearer realm="jido-kg"'
        return response

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Response:
        status = exc.code or 500
        response = error_response(status, _http_code(exc), exc.description or exc.name)
        if status == 405 and exc.response is None:
            allowed = getattr(exc, "valid_methods", None)
            if allowed:
                response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> Response:
        log.exception("unhandled error")
        return error_response(500, "internal_error", "an unexpected error occurred")

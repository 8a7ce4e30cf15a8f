"""HTTP concerns around every route: the request body cap, CORS and gzip of large responses."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from flask import Flask, Response, request

from kg.settings import Settings

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

__all__ = ["GZIP_MIN_BYTES", "finish_in_flask", "install"]

# Below this a response goes out as is: compressing small bodies costs more than it saves.
GZIP_MIN_BYTES = 64 * 1024
# Level 1: most of the size gain for a fraction of the CPU (results are repetitive text).
_GZIP_LEVEL = 1
_CORS_METHODS = "GET, HEAD, POST, PUT, DELETE, OPTIONS"
_CORS_HEADERS = "Accept, Authorization, Content-Type"


def install(app: Flask, settings: Settings) -> None:
    """Cap request bodies (413) and add the CORS and gzip after-request hooks."""
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.config["MAX_FORM_MEMORY_SIZE"] = settings.max_body_bytes
    origins = frozenset(settings.cors_origins)

    @app.after_request
    def _cors(response: Response) -> Response:
        origin = request.headers.get("Origin")
        if origin and ("*" in origins or origin in origins):
            response.headers["Access-Control-Allow-Origin"] = "*" if "*" in origins else origin
            response.headers["Access-Control-Allow-Methods"] = _CORS_METHODS
            response.headers["Access-Control-Allow-Headers"] = _CORS_HEADERS
            response.headers["Access-Control-Expose-Headers"] = "Location, Content-Type"
            response.headers["Access-Control-Max-Age"] = "600"
            if "*" not in origins:
                response.vary.add("Origin")
        return response

    @app.after_request
    def _gzip(response: Response) -> Response:
        if (
            response.direct_passthrough
            or response.status_code < 200
            or response.status_code in (204, 304)
            or "Content-Encoding" in response.headers
            or "gzip" not in request.headers.get("Accept-Encoding", "").lower()
            or request.method == "HEAD"
        ):
            return response
        body = response.get_data()
        if len(body) < GZIP_MIN_BYTES:
            return response
        response.set_data(gzip.compress(body, compresslevel=_GZIP_LEVEL))
        response.headers["Content-Encoding"] = "gzip"
        response.vary.add("Accept-Encoding")
        return response


def finish_in_flask(app: Flask, environ: WSGIEnvironment, start_response: StartResponse, *,
                    error: Exception | None = None, make: Callable[[], Response] | None = None,
                    on_failure: Callable[[], object] | None = None) -> Iterable[bytes]:
    """Finish, as Flask's dispatch would (error handlers, after-request hooks), a response
    made outside it: the view's error for `error`, else `make()`; `on_failure` runs first if
    that fails."""
    with app.request_context(environ):
        try:
            if error is not None:
                rv: Response = app.handle_user_exception(error)  # type: ignore[assignment]
            else:
                assert make is not None
                rv = make()
            response = app.finalize_request(rv)
        except Exception as exc:
            if on_failure is not None:
                on_failure()
            response = app.handle_exception(exc)
        return response(environ, start_response)

"""The memory HTTP API under /v1: thin views over the MemoryService, described by ROUTES.

Every body is parsed into a pydantic model (application/json only), every result leaves as a
response model, every error in the one JSON shape. Session routes (api.memory.sessions) are
scoped to the session's project, memory routes (api.memory.long_term) to the project in the
path; reads need read access to the project, everything else write access (api.auth, the same
rules as the SPARQL endpoint).
"""

from __future__ import annotations

from flask import Flask

from api.memory import long_term, sessions  # noqa: F401  (their views register on import)
from api.memory.views import KEY, ROUTES, InvalidRequestError, blueprint, memory_service
from api.openapi import document_routes
from kg.memory_service import MemoryService

__all__ = ["ROUTES", "InvalidRequestError", "blueprint", "install", "memory_service"]


def install(app: Flask, service: MemoryService) -> None:
    """Attach the service, register the blueprint and describe its routes."""
    app.extensions[KEY] = service
    app.register_blueprint(blueprint)
    document_routes(app, ROUTES)

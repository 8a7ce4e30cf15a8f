"""GET /health: is the service up, and on what."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from api.services import services

__all__ = ["blueprint"]

blueprint = Blueprint("health", __name__)


@blueprint.get("/health")
def health() -> Response:
    """Report liveness, the store backend and the ontology version."""
    s = services()
    return jsonify(
        {
            "status": "ok",
            "store": repr(s.store),
            "ontology_version": s.ontology.header().get("versionInfo", ""),
        }
    )

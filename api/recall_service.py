"""The recall SERVICE at the HTTP edge: run each recall block for its caller; serve /recall.

kg.sparql.recall_service reads the blocks and writes their hits; here each block's project is
checked against the caller's token (403 before any recall runs) and the app's MemoryService
recalls. GET /recall answers the vocabulary (ontology/recall.ttl) as Turtle.
"""

from __future__ import annotations

from functools import cache

from flask import Blueprint, Response
from pyoxigraph import NamedNode

from api.auth import Principal
from api.memory import memory_service
from kg.errors import PermissionDeniedError
from kg.memory import memory_iri
from kg.resources import ontology_path
from kg.sparql.recall_service import RecallRequest, expand, recall_blocks

__all__ = ["blueprint", "expand_recall", "vocabulary"]

blueprint = Blueprint("recall_vocabulary", __name__)


def expand_recall(text: str, principal: Principal, *, base: str | None) -> str:
    """`text` with every recall block replaced by its hits, for this caller."""
    blocks = recall_blocks(text, base=base)
    if not blocks:
        return text
    for block in blocks:
        if not principal.may_access(block.request.project):
            raise PermissionDeniedError(
                f"this token may not recall from project {block.request.project!r}",
                details={"project": block.request.project[:200]})
    service = memory_service()

    def run(request: RecallRequest) -> list[tuple[NamedNode, float]]:
        hits = service.recall(request.project, request.query, types=list(request.types) or None,
                              min_confidence=request.min_confidence, limit=request.limit,
                              mode=request.mode, as_of=request.as_of)
        return [(memory_iri(h.memory.id), h.score) for h in hits]

    return expand(text, blocks, run)


@cache
def vocabulary() -> bytes:
    """The recall vocabulary as Turtle (ontology/recall.ttl)."""
    return ontology_path("recall.ttl").read_bytes()


@blueprint.route("/recall", methods=["GET", "HEAD"])
def recall_vocabulary() -> Response:
    """Serve the recall: vocabulary (https://jido.ai/recall#) as Turtle."""
    return Response(vocabulary(), mimetype="text/turtle")

"""One memory's page: properties, evidence, session, chain, related memories, Turtle; and the
forms that correct it (forget with a reason and replacement; purge for admins)."""

from __future__ import annotations

from urllib.parse import urlencode

from flask import Response, redirect, request, url_for
from pyoxigraph import NamedNode

from api.auth import current_principal
from api.explore.access import check_form
from api.explore.blueprint import blueprint, memory_graph, page, project_access
from api.memory import memory_service
from kg.errors import KgError, ValidationError
from kg.memory import Memory
from kg.recall import QueryHelpers, RelatedMemory

__all__ = ["RELATED_LIMIT"]

RELATED_LIMIT = 12


def _memory(project: str, memory_id: str) -> Memory:
    return memory_service().long_term.get(memory_id, project=project, include_retired=True)


def _related(project: str, memory: Memory) -> list[RelatedMemory]:
    engine = memory_service().recall_engine
    if engine is None:
        return []
    try:
        return QueryHelpers(engine).related_memories(project, memory.id, depth=1,
                                                     limit=RELATED_LIMIT,
                                                     include_superseded=True)
    except KgError:
        return []  # related memories are extra: the page stands without them


def _sources(memory: Memory) -> dict[str, list[tuple[str, str]]]:
    reads = memory_graph()
    found: dict[str, list[tuple[str, str]]] = {}
    for evidence in memory.evidence:
        if evidence.source and evidence.source not in found:
            found[evidence.source] = reads.properties(NamedNode(evidence.source))
    return found


@blueprint.get("/<project>/memories/<memory_id>")
def memory_page(project: str, memory_id: str) -> Response:
    """Everything about one memory, and (for write tokens) the form to forget it."""
    project_access(project)
    memory = _memory(project, memory_id)
    reads = memory_graph()
    principal = current_principal()
    query_url = url_for("ui.index") + "?" + urlencode(
        {"query": reads.triples_query(project, memory)})
    return page(
        "memory.html", project=project, memory=memory, chain=reads.chain(project, memory),
        replaces=reads.replaces(project, memory), related=_related(project, memory),
        sources=_sources(memory), turtle=reads.turtle(project, memory), query_url=query_url,
        may_write=principal.can_write and principal.may_access(project)
        and memory.retired_at is None,
        may_purge=principal.is_admin, done=request.args.get("done"),
    )


@blueprint.post("/<project>/memories/<memory_id>/forget")
def forget(project: str, memory_id: str) -> Response:
    """Retire the memory with the form's reason (and replacement), then show it again."""
    project_access(project, write=True)
    check_form()
    reason = request.form.get("reason", "").strip()
    if not reason:
        raise ValidationError("say why the memory is forgotten", details={"field": "reason"})
    replacement = request.form.get("replacement", "").strip() or None
    memory_service().forget(project, memory_id, reason=reason, replacement_id=replacement)
    target = url_for("explore.memory_page", project=project, memory_id=memory_id,
                     done="forgotten")
    return redirect(target, code=303)  # type: ignore[return-value]


@blueprint.get("/<project>/memories/<memory_id>/purge")
def purge_form(project: str, memory_id: str) -> Response:
    """Ask an admin to confirm a hard delete."""
    project_access(project, admin=True)
    return page("purge.html", project=project, memory=_memory(project, memory_id))


@blueprint.post("/<project>/memories/<memory_id>/purge")
def purge(project: str, memory_id: str) -> Response:
    """Delete the memory, its evidence and every link to it for good (admin, confirmed)."""
    project_access(project, admin=True)
    check_form()
    if request.form.get("confirm") != memory_id:
        raise ValidationError("type the memory's id to confirm the purge",
                              details={"field": "confirm"})
    memory_service().long_term.purge_memory(memory_id, project=project)
    target = url_for("explore.project_list", project=project, purged=memory_id)
    return redirect(target, code=303)  # type: ignore[return-value]

"""The long-term memory routes of the memory API: remember, list, namespaces, get, forget,
recall."""

from __future__ import annotations

from typing import Any

from flask import Response, request

from api import models as m
from api.memory.views import (
    PROJECT,
    body_of,
    check_project,
    int_arg,
    json_arg,
    json_response,
    memory_service,
    route,
)
from api.openapi import RouteSpec
from kg.terms import MemoryType, parse_term

__all__: list[str] = []


@route(RouteSpec("POST", PROJECT + "/memories", "remember", "Remember (write a memory)",
                  "long-term memory", m.MemoryOut, m.RememberRequest, status=201, write=True))
def remember(project: str) -> Response:
    """Write a long-term memory into the project (or put a key-value item)."""
    check_project(project, write=True)
    body = body_of(m.RememberRequest)
    options: dict[str, Any] = {
        "memory_type": body.type, "confidence": body.confidence,
        "source_type": body.source_type, "session_id": body.session_id, "agent": body.agent,
        "rationale": body.rationale,
    }
    if body.namespace is not None and body.key is not None and body.value is not None:
        entry = memory_service().put_item(project, body.namespace, body.key, body.value,
                                          content=body.content, **options)
        return json_response(m.memory_out(entry.memory, entry.item), 201)
    assert body.content is not None  # RememberRequest requires content without a value
    memory = memory_service().remember(project, body.content, **options)
    return json_response(m.memory_out(memory), 201)


@route(RouteSpec("GET", PROJECT + "/memories", "listMemories",
                  "The project's current memories, newest first", "long-term memory",
                  m.MemoryList, errors=(400, 401, 403, 500), query={
                      "type": {"type": "string", "description": "Only memories of this type."},
                      "namespace_prefix": {"type": "string", "description":
                                           "Only key-value items in or below this namespace "
                                           "path ('' for every item)."},
                      "namespace": {"type": "string", "description":
                                    "With key: only the item at this address."},
                      "key": {"type": "string"},
                      "filter": {"type": "string", "description":
                                 "Items only: a JSON object of value conditions (LangGraph's "
                                 "store filter)."},
                      "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
                      "offset": {"type": "integer", "minimum": 0},
                  }))
def list_memories(project: str) -> Response:
    """List the project's current memories, newest first (a page)."""
    check_project(project, write=False)
    raw_type = request.args.get("type")
    page = memory_service().list_memories(
        project, memory_type=None if raw_type is None else parse_term(MemoryType, raw_type),
        namespace_prefix=request.args.get("namespace_prefix"),
        namespace=request.args.get("namespace"), key=request.args.get("key"),
        value_filter=json_arg("filter"), limit=int_arg("limit", 20),
        offset=int_arg("offset", 0),
    )
    return json_response(m.memory_list_out(page))


@route(RouteSpec("GET", PROJECT + "/namespaces", "listNamespaces",
                  "The namespace paths of the project's key-value items", "long-term memory",
                  m.NamespaceList, errors=(400, 401, 403, 500), query={
                      "prefix": {"type": "string", "description":
                                 "Only namespaces in or below this path."}}))
def list_namespaces(project: str) -> Response:
    """List the distinct namespace paths of the project's current items, sorted."""
    check_project(project, write=False)
    found = memory_service().item_namespaces(project, prefix=request.args.get("prefix", ""))
    return json_response(m.NamespaceList(namespaces=found))


@route(RouteSpec("GET", PROJECT + "/memories/{memory_id}", "getMemory", "One memory",
                  "long-term memory", m.MemoryOut))
def get_memory(project: str, memory_id: str) -> Response:
    """Read one memory of the project."""
    check_project(project, write=False)
    service = memory_service()
    memory = service.get_memory(project, memory_id)
    return json_response(m.memory_out(memory, service.item_of(project, memory_id)))


@route(RouteSpec("POST", PROJECT + "/memories/{memory_id}/forget", "forget",
                  "Forget (retire) a memory", "long-term memory", m.MemoryOut, m.ForgetRequest,
                  write=True, errors=(400, 401, 403, 404, 409)))
def forget(project: str, memory_id: str) -> Response:
    """Retire a memory; it stays in history with its reason."""
    check_project(project, write=True)
    body = body_of(m.ForgetRequest)
    service = memory_service()
    memory = service.forget(
        project, memory_id, reason=body.reason, replacement_id=body.replacement_id
    )
    return json_response(m.memory_out(memory, service.item_of(project, memory_id)))


@route(RouteSpec("POST", PROJECT + "/recall", "recall", "Recall memories", "long-term memory",
                  m.RecallResponse, m.RecallRequest))
def recall(project: str) -> Response:
    """Find the project's memories relevant to a query."""
    check_project(project, write=False)
    body = body_of(m.RecallRequest)
    if body.namespace_prefix is not None:
        found = memory_service().recall_items(
            project, body.query, namespace_prefix=body.namespace_prefix,
            value_filter=body.filter, limit=body.limit, offset=body.offset, mode=body.mode,
        )
        return json_response(m.RecallResponse(hits=[m.recall_hit_out(h, h.item) for h in found]))
    hits = memory_service().recall(
        project, body.query, types=body.types, min_confidence=body.min_confidence,
        limit=body.limit, mode=body.mode, as_of=body.as_of,
    )
    return json_response(m.RecallResponse(hits=[m.recall_hit_out(h) for h in hits]))

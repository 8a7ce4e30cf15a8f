"""The memory HTTP API under /v1: thin views over the MemoryService, described by ROUTES.

Every body is parsed into a pydantic model (application/json only), every result leaves as a
response model, every error in the one JSON shape. Session routes are scoped to the session's
project, memory routes to the project in the path; reads need read access to the project,
everything else write access (api.auth, the same rules as the SPARQL endpoint).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Blueprint, Flask, Response, current_app, request
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from api import models as m
from api.auth import require
from api.errors import UnsupportedMediaTypeError
from api.openapi import RouteSpec, document_routes, flask_rule
from kg.errors import ValidationError
from kg.memory_service import API_SESSION, MemoryService
from kg.terms import (
    ContextKey,
    MemoryType,
    UnknownContextKeyError,
    parse_term,
    validate_identifier,
)

__all__ = ["ROUTES", "InvalidRequestError", "blueprint", "install", "memory_service"]

_KEY = "jido_kg_memory"
B = TypeVar("B", bound=BaseModel)
blueprint = Blueprint("memory", __name__)
ROUTES: list[RouteSpec] = []
_SESSION = "/v1/sessions/{session_id}"
_PROJECT = "/v1/projects/{project}"


class InvalidRequestError(ValidationError):
    """A body that is not valid JSON or does not match the operation's schema."""

    code = "invalid_request"


def install(app: Flask, service: MemoryService) -> None:
    """Attach the service, register the blueprint and describe its routes."""
    app.extensions[_KEY] = service
    app.register_blueprint(blueprint)
    document_routes(app, ROUTES)


def memory_service() -> MemoryService:
    """The MemoryService of the app handling the request."""
    found = current_app.extensions[_KEY]
    assert isinstance(found, MemoryService)
    return found


def _route(spec: RouteSpec) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    ROUTES.append(spec)

    def decorator(view: Callable[..., Response]) -> Callable[..., Response]:
        blueprint.add_url_rule(
            flask_rule(spec.path), spec.operation_id, view, methods=[spec.method]
        )
        return view

    return decorator


def _body(model: type[B]) -> B:
    if not request.is_json:
        raise UnsupportedMediaTypeError(
            "the body must be application/json",
            details={"content_type": request.content_type or ""},
        )
    try:
        return model.model_validate_json(request.get_data() or b"null")
    except PydanticValidationError as e:
        errors = [
            {"loc": [str(p) for p in err["loc"]], "msg": err["msg"], "type": err["type"]}
            for err in e.errors(include_url=False, include_input=False)
        ]
        raise InvalidRequestError(
            f"invalid {model.__name__}: {errors[0]['msg'] if errors else 'bad body'}",
            details={"errors": errors},
        ) from None


def _json(model: BaseModel, status: int = 200) -> Response:
    response = current_app.response_class(
        model.model_dump_json(), status=status, mimetype="application/json"
    )
    return response


def _project_of(session_id: str, *, write: bool) -> None:
    # Authenticate before looking the session up, so an anonymous caller cannot probe ids;
    # then check the session's own project against the token's scope.
    require("write" if write else "read")
    project = memory_service().session_project(session_id)
    require("write" if write else "read", project=project or API_SESSION)


def _project(project: str, *, write: bool) -> None:
    validate_identifier(project, name="project id")
    require("write" if write else "read", project=project)


def _key(raw: str) -> ContextKey:
    return parse_term(ContextKey, raw, error=UnknownContextKeyError)


def _int_arg(name: str, default: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidRequestError(f"{name} must be an integer, got {raw[:50]!r}",
                                  details={"field": name}) from None


def _json_arg(name: str) -> Any:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidRequestError(f"{name} must be JSON text", details={"field": name}) from None


# -- sessions ---------------------------------------------------------------------------------


@_route(RouteSpec("POST", "/v1/sessions", "startSession", "Start a session", "sessions",
                  m.SessionOut, m.SessionStart, status=201, write=True,
                  errors=(400, 401, 403, 409)))
def start_session() -> Response:
    """Start a short-term session in a project."""
    body = _body(m.SessionStart)
    _project(body.project, write=True)
    session = memory_service().start_session(
        body.session_id, project=body.project, agent=body.agent
    )
    return _json(m.session_out(session), 201)


@_route(RouteSpec("GET", _SESSION, "getSession", "A session and its sizes", "sessions",
                  m.SessionOut))
def get_session(session_id: str) -> Response:
    """Describe a session."""
    _project_of(session_id, write=False)
    return _json(m.session_out(memory_service().session(session_id)))


@_route(RouteSpec("POST", _SESSION + "/pause", "pauseSession", "Pause a session", "sessions",
                  m.SessionOut, write=True, errors=(400, 401, 403, 404, 409)))
def pause_session(session_id: str) -> Response:
    """Pause an active session (it refuses new input until resumed)."""
    _project_of(session_id, write=True)
    return _json(m.session_out(memory_service().pause_session(session_id)))


@_route(RouteSpec("POST", _SESSION + "/resume", "resumeSession", "Resume a paused session",
                  "sessions", m.SessionOut, write=True, errors=(400, 401, 403, 404, 409)))
def resume_session(session_id: str) -> Response:
    """Resume a paused session."""
    _project_of(session_id, write=True)
    return _json(m.session_out(memory_service().resume_session(session_id)))


@_route(RouteSpec("POST", _SESSION + "/close", "closeSession",
                  "Close a session and promote its memories", "sessions", m.SessionClosed,
                  write=True))
def close_session(session_id: str) -> Response:
    """Close a session; its promotion run's outcome is returned."""
    _project_of(session_id, write=True)
    session, report = memory_service().close_session(session_id)
    return _json(m.SessionClosed(session=m.session_out(session), promotion=m.promotion_out(report)))


@_route(RouteSpec("GET", _SESSION + "/snapshot", "snapshotSession",
                  "A session's short-term state as data", "sessions", m.SessionSnapshot))
def snapshot_session(session_id: str) -> Response:
    """Return the session's snapshot; the session stays open here."""
    _project_of(session_id, write=False)
    return _json(m.SessionSnapshot(snapshot=memory_service().snapshot_session(session_id)))


@_route(RouteSpec("POST", _SESSION + "/handoff", "handOffSession",
                  "Release a session, unpromoted, for another instance", "sessions",
                  m.SessionSnapshot, write=True))
def hand_off_session(session_id: str) -> Response:
    """Snapshot the session and drop it here (restore it with POST /v1/session-snapshots)."""
    _project_of(session_id, write=True)
    return _json(m.SessionSnapshot(snapshot=memory_service().hand_off_session(session_id)))


@_route(RouteSpec("POST", "/v1/session-snapshots", "restoreSession",
                  "Continue a session from a snapshot", "sessions", m.SessionOut,
                  m.SessionSnapshot, status=201, write=True, errors=(400, 401, 403, 409)))
def restore_session() -> Response:
    """Open a session here from a snapshot taken on this or another instance."""
    require("write")  # authenticate before looking at the body
    body = _body(m.SessionSnapshot)
    project = body.snapshot.get("project")
    _project(project if isinstance(project, str) else "", write=True)
    return _json(m.session_out(memory_service().restore_session(body.snapshot)), 201)


# -- working context --------------------------------------------------------------------------


@_route(RouteSpec("GET", _SESSION + "/context", "listContext", "The whole working context",
                  "working context", m.ContextList))
def list_context(session_id: str) -> Response:
    """List the working context's items."""
    _project_of(session_id, write=False)
    items, tokens, max_tokens = memory_service().list_context(session_id)
    return _json(
        m.ContextList(items=[m.context_item_out(i) for i in items], tokens=tokens,
                      max_tokens=max_tokens)
    )


@_route(RouteSpec("GET", _SESSION + "/context/{key}", "getContextItem",
                  "One working-context item", "working context", m.ContextItemOut))
def get_context_item(session_id: str, key: str) -> Response:
    """Read one working-context item (counts as an access)."""
    _project_of(session_id, write=False)
    return _json(m.context_item_out(memory_service().get_context_item(session_id, _key(key))))


@_route(RouteSpec("PUT", _SESSION + "/context/{key}", "putContextItem",
                  "Set a working-context item", "working context", m.ContextItemOut,
                  m.ContextItemPut, write=True, errors=(400, 401, 403, 404, 409)))
def put_context_item(session_id: str, key: str) -> Response:
    """Add or replace a working-context item."""
    _project_of(session_id, write=True)
    ckey = _key(key)
    body = _body(m.ContextItemPut)
    item = memory_service().put_context_item(
        session_id, ckey, body.value, source=body.source, confidence=body.confidence,
        memory_type=body.type,
    )
    return _json(m.context_item_out(item))


@_route(RouteSpec("DELETE", _SESSION + "/context/{key}", "deleteContextItem",
                  "Remove a working-context item", "working context", None, status=204,
                  write=True, errors=(400, 401, 403, 404, 409)))
def delete_context_item(session_id: str, key: str) -> Response:
    """Remove a working-context item."""
    _project_of(session_id, write=True)
    memory_service().delete_context_item(session_id, _key(key))
    return Response(status=204)


# -- conversation, responses, pending memories, promotion, assembly --------------------------


@_route(RouteSpec("GET", _SESSION + "/messages", "listMessages", "The conversation buffer",
                  "conversation", m.MessageList))
def list_messages(session_id: str) -> Response:
    """List the conversation, oldest first."""
    _project_of(session_id, write=False)
    messages, tokens = memory_service().list_messages(session_id)
    return _json(m.MessageList(messages=[m.message_out(x) for x in messages], tokens=tokens))


@_route(RouteSpec("POST", _SESSION + "/messages", "addMessage", "Append a message",
                  "conversation", m.MessageOut, m.MessageIn, status=201, write=True,
                  errors=(400, 401, 403, 404, 409)))
def add_message(session_id: str) -> Response:
    """Append a message (also captured as an episode)."""
    _project_of(session_id, write=True)
    body = _body(m.MessageIn)
    message = memory_service().add_message(session_id, body.role, body.content, item=body.item)
    return _json(m.message_out(message), 201)


@_route(RouteSpec("POST", _SESSION + "/messages/pop", "popMessage",
                  "Remove the newest message", "conversation", m.MessagePopped, write=True,
                  errors=(400, 401, 403, 404, 409)))
def pop_message(session_id: str) -> Response:
    """Remove and return the newest message (null when the conversation is empty)."""
    _project_of(session_id, write=True)
    message = memory_service().pop_message(session_id)
    return _json(m.MessagePopped(message=None if message is None else m.message_out(message)))


@_route(RouteSpec("DELETE", _SESSION + "/messages", "clearMessages",
                  "Empty the conversation buffer", "conversation", None, status=204,
                  write=True, errors=(400, 401, 403, 404, 409)))
def clear_messages(session_id: str) -> Response:
    """Remove every message of the conversation (captured episodes stay)."""
    _project_of(session_id, write=True)
    memory_service().clear_messages(session_id)
    return Response(status=204)


@_route(RouteSpec("POST", _SESSION + "/responses", "processResponse",
                  "Capture an LLM reply and infer working context", "conversation",
                  m.ResponseOut, m.ResponseIn, write=True, errors=(400, 401, 403, 404, 409)))
def process_response(session_id: str) -> Response:
    """Capture an assistant reply and infer working context from it."""
    _project_of(session_id, write=True)
    content = _body(m.ResponseIn).content
    return _json(m.ResponseOut(inferred=memory_service().process_response(session_id, content)))


@_route(RouteSpec("GET", _SESSION + "/pending", "listPending", "Memories ready for promotion",
                  "pending memories", m.PendingList,
                  query={"threshold": {"type": "number", "minimum": 0, "maximum": 1}}))
def list_pending(session_id: str) -> Response:
    """List the staged memories at or above the threshold (default 0.6)."""
    _project_of(session_id, write=False)
    raw = request.args.get("threshold", "0.6")
    try:
        threshold = float(raw)
    except ValueError:
        raise InvalidRequestError(f"threshold must be a number, got {raw!r}") from None
    items = memory_service().list_pending(session_id, threshold=threshold)
    return _json(m.PendingList(items=[m.pending_out(i) for i in items]))


@_route(RouteSpec("POST", _SESSION + "/pending", "addPending", "Stage a memory for promotion",
                  "pending memories", m.PendingOut, m.PendingIn, status=201, write=True,
                  errors=(400, 401, 403, 404, 409)))
def add_pending(session_id: str) -> Response:
    """Stage a memory (an agent decision unless an importance score is given)."""
    _project_of(session_id, write=True)
    body = _body(m.PendingIn)
    item = memory_service().add_pending(
        session_id, body.content, memory_type=body.type, confidence=body.confidence,
        source_type=body.source_type, rationale=body.rationale,
        importance_score=body.importance_score,
    )
    return _json(m.pending_out(item), 201)


@_route(RouteSpec("POST", _SESSION + "/promotions", "runPromotion", "Run promotion now",
                  "promotion", m.PromotionOut, write=True))
def run_promotion(session_id: str) -> Response:
    """Promote the session's ready memories to long-term memory."""
    _project_of(session_id, write=True)
    return _json(m.promotion_out(memory_service().promote(session_id)))


@_route(RouteSpec("POST", _SESSION + "/context-assembly", "assembleContext",
                  "Assemble the memory context for the next LLM call", "context assembly",
                  m.ContextAssemblyResponse, m.ContextAssemblyRequest))
def assemble_context(session_id: str) -> Response:
    """Build the budgeted memory context and its system prompt (reads only)."""
    _project_of(session_id, write=False)
    body = _body(m.ContextAssemblyRequest)
    turn = memory_service().assemble_context(
        session_id, query_hint=body.query_hint, token_budget=body.token_budget,
        include_memories=body.include_memories, base_prompt=body.base_prompt,
    )
    return _json(m.assembly_out(turn))


# -- long-term memory: remember / recall / forget ---------------------------------------------


@_route(RouteSpec("POST", _PROJECT + "/memories", "remember", "Remember (write a memory)",
                  "long-term memory", m.MemoryOut, m.RememberRequest, status=201, write=True))
def remember(project: str) -> Response:
    """Write a long-term memory into the project (or put a key-value item)."""
    _project(project, write=True)
    body = _body(m.RememberRequest)
    options: dict[str, Any] = {
        "memory_type": body.type, "confidence": body.confidence,
        "source_type": body.source_type, "session_id": body.session_id, "agent": body.agent,
        "rationale": body.rationale,
    }
    if body.namespace is not None and body.key is not None and body.value is not None:
        entry = memory_service().put_item(project, body.namespace, body.key, body.value,
                                          content=body.content, **options)
        return _json(m.memory_out(entry.memory, entry.item), 201)
    assert body.content is not None  # RememberRequest requires content without a value
    memory = memory_service().remember(project, body.content, **options)
    return _json(m.memory_out(memory), 201)


@_route(RouteSpec("GET", _PROJECT + "/memories", "listMemories",
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
    _project(project, write=False)
    raw_type = request.args.get("type")
    page = memory_service().list_memories(
        project, memory_type=None if raw_type is None else parse_term(MemoryType, raw_type),
        namespace_prefix=request.args.get("namespace_prefix"),
        namespace=request.args.get("namespace"), key=request.args.get("key"),
        value_filter=_json_arg("filter"), limit=_int_arg("limit", 20),
        offset=_int_arg("offset", 0),
    )
    return _json(m.memory_list_out(page))


@_route(RouteSpec("GET", _PROJECT + "/namespaces", "listNamespaces",
                  "The namespace paths of the project's key-value items", "long-term memory",
                  m.NamespaceList, errors=(400, 401, 403, 500), query={
                      "prefix": {"type": "string", "description":
                                 "Only namespaces in or below this path."}}))
def list_namespaces(project: str) -> Response:
    """List the distinct namespace paths of the project's current items, sorted."""
    _project(project, write=False)
    found = memory_service().item_namespaces(project, prefix=request.args.get("prefix", ""))
    return _json(m.NamespaceList(namespaces=found))


@_route(RouteSpec("GET", _PROJECT + "/memories/{memory_id}", "getMemory", "One memory",
                  "long-term memory", m.MemoryOut))
def get_memory(project: str, memory_id: str) -> Response:
    """Read one memory of the project."""
    _project(project, write=False)
    service = memory_service()
    memory = service.get_memory(project, memory_id)
    return _json(m.memory_out(memory, service.item_of(project, memory_id)))


@_route(RouteSpec("POST", _PROJECT + "/memories/{memory_id}/forget", "forget",
                  "Forget (retire) a memory", "long-term memory", m.MemoryOut, m.ForgetRequest,
                  write=True, errors=(400, 401, 403, 404, 409)))
def forget(project: str, memory_id: str) -> Response:
    """Retire a memory; it stays in history with its reason."""
    _project(project, write=True)
    body = _body(m.ForgetRequest)
    service = memory_service()
    memory = service.forget(
        project, memory_id, reason=body.reason, replacement_id=body.replacement_id
    )
    return _json(m.memory_out(memory, service.item_of(project, memory_id)))


@_route(RouteSpec("POST", _PROJECT + "/recall", "recall", "Recall memories", "long-term memory",
                  m.RecallResponse, m.RecallRequest))
def recall(project: str) -> Response:
    """Find the project's memories relevant to a query."""
    _project(project, write=False)
    body = _body(m.RecallRequest)
    if body.namespace_prefix is not None:
        found = memory_service().recall_items(
            project, body.query, namespace_prefix=body.namespace_prefix,
            value_filter=body.filter, limit=body.limit, offset=body.offset, mode=body.mode,
        )
        return _json(m.RecallResponse(hits=[m.recall_hit_out(h, h.item) for h in found]))
    hits = memory_service().recall(
        project, body.query, types=body.types, min_confidence=body.min_confidence,
        limit=body.limit, mode=body.mode, as_of=body.as_of,
    )
    return _json(m.RecallResponse(hits=[m.recall_hit_out(h) for h in hits]))

"""The session routes of the memory API: sessions, working context, conversation, pending
memories, promotion and context assembly."""

from __future__ import annotations

from flask import Response, request

from api import models as m
from api.auth import require
from api.memory.views import (
    SESSION,
    InvalidRequestError,
    body_of,
    check_project,
    check_session_project,
    context_key,
    json_response,
    memory_service,
    route,
)
from api.openapi import RouteSpec

__all__: list[str] = []


@route(RouteSpec("POST", "/v1/sessions", "startSession", "Start a session", "sessions",
                  m.SessionOut, m.SessionStart, status=201, write=True,
                  errors=(400, 401, 403, 409)))
def start_session() -> Response:
    """Start a short-term session in a project."""
    body = body_of(m.SessionStart)
    check_project(body.project, write=True)
    session = memory_service().start_session(
        body.session_id, project=body.project, agent=body.agent
    )
    return json_response(m.session_out(session), 201)


@route(RouteSpec("GET", SESSION, "getSession", "A session and its sizes", "sessions",
                  m.SessionOut))
def get_session(session_id: str) -> Response:
    """Describe a session."""
    check_session_project(session_id, write=False)
    return json_response(m.session_out(memory_service().session(session_id)))


@route(RouteSpec("POST", SESSION + "/pause", "pauseSession", "Pause a session", "sessions",
                  m.SessionOut, write=True, errors=(400, 401, 403, 404, 409)))
def pause_session(session_id: str) -> Response:
    """Pause an active session (it refuses new input until resumed)."""
    check_session_project(session_id, write=True)
    return json_response(m.session_out(memory_service().pause_session(session_id)))


@route(RouteSpec("POST", SESSION + "/resume", "resumeSession", "Resume a paused session",
                  "sessions", m.SessionOut, write=True, errors=(400, 401, 403, 404, 409)))
def resume_session(session_id: str) -> Response:
    """Resume a paused session."""
    check_session_project(session_id, write=True)
    return json_response(m.session_out(memory_service().resume_session(session_id)))


@route(RouteSpec("POST", SESSION + "/close", "closeSession",
                  "Close a session and promote its memories", "sessions", m.SessionClosed,
                  write=True))
def close_session(session_id: str) -> Response:
    """Close a session; its promotion run's outcome is returned."""
    check_session_project(session_id, write=True)
    session, report = memory_service().close_session(session_id)
    return json_response(m.SessionClosed(session=m.session_out(session),
                                         promotion=m.promotion_out(report)))


@route(RouteSpec("GET", SESSION + "/snapshot", "snapshotSession",
                  "A session's short-term state as data", "sessions", m.SessionSnapshot))
def snapshot_session(session_id: str) -> Response:
    """Return the session's snapshot; the session stays open here."""
    check_session_project(session_id, write=False)
    return json_response(m.SessionSnapshot(snapshot=memory_service().snapshot_session(session_id)))


@route(RouteSpec("POST", SESSION + "/handoff", "handOffSession",
                  "Release a session, unpromoted, for another instance", "sessions",
                  m.SessionSnapshot, write=True))
def hand_off_session(session_id: str) -> Response:
    """Snapshot the session and drop it here (restore it with POST /v1/session-snapshots)."""
    check_session_project(session_id, write=True)
    return json_response(m.SessionSnapshot(snapshot=memory_service().hand_off_session(session_id)))


@route(RouteSpec("POST", "/v1/session-snapshots", "restoreSession",
                  "Continue a session from a snapshot", "sessions", m.SessionOut,
                  m.SessionSnapshot, status=201, write=True, errors=(400, 401, 403, 409)))
def restore_session() -> Response:
    """Open a session here from a snapshot taken on this or another instance."""
    require("write")  # authenticate before looking at the body
    body = body_of(m.SessionSnapshot)
    project = body.snapshot.get("project")
    check_project(project if isinstance(project, str) else "", write=True)
    return json_response(m.session_out(memory_service().restore_session(body.snapshot)), 201)


# -- working context --------------------------------------------------------------------------


@route(RouteSpec("GET", SESSION + "/context", "listContext", "The whole working context",
                  "working context", m.ContextList))
def list_context(session_id: str) -> Response:
    """List the working context's items."""
    check_session_project(session_id, write=False)
    items, tokens, max_tokens = memory_service().list_context(session_id)
    return json_response(
        m.ContextList(items=[m.context_item_out(i) for i in items], tokens=tokens,
                      max_tokens=max_tokens)
    )


@route(RouteSpec("GET", SESSION + "/context/{key}", "getContextItem",
                  "One working-context item", "working context", m.ContextItemOut))
def get_context_item(session_id: str, key: str) -> Response:
    """Read one working-context item (counts as an access)."""
    check_session_project(session_id, write=False)
    item = memory_service().get_context_item(session_id, context_key(key))
    return json_response(m.context_item_out(item))


@route(RouteSpec("PUT", SESSION + "/context/{key}", "putContextItem",
                  "Set a working-context item", "working context", m.ContextItemOut,
                  m.ContextItemPut, write=True, errors=(400, 401, 403, 404, 409)))
def put_context_item(session_id: str, key: str) -> Response:
    """Add or replace a working-context item."""
    check_session_project(session_id, write=True)
    ckey = context_key(key)
    body = body_of(m.ContextItemPut)
    item = memory_service().put_context_item(
        session_id, ckey, body.value, source=body.source, confidence=body.confidence,
        memory_type=body.type,
    )
    return json_response(m.context_item_out(item))


@route(RouteSpec("DELETE", SESSION + "/context/{key}", "deleteContextItem",
                  "Remove a working-context item", "working context", None, status=204,
                  write=True, errors=(400, 401, 403, 404, 409)))
def delete_context_item(session_id: str, key: str) -> Response:
    """Remove a working-context item."""
    check_session_project(session_id, write=True)
    memory_service().delete_context_item(session_id, context_key(key))
    return Response(status=204)


# -- conversation, responses, pending memories, promotion, assembly --------------------------


@route(RouteSpec("GET", SESSION + "/messages", "listMessages", "The conversation buffer",
                  "conversation", m.MessageList))
def list_messages(session_id: str) -> Response:
    """List the conversation, oldest first."""
    check_session_project(session_id, write=False)
    messages, tokens = memory_service().list_messages(session_id)
    return json_response(m.MessageList(messages=[m.message_out(x) for x in messages],
                                       tokens=tokens))


@route(RouteSpec("POST", SESSION + "/messages", "addMessage", "Append a message",
                  "conversation", m.MessageOut, m.MessageIn, status=201, write=True,
                  errors=(400, 401, 403, 404, 409)))
def add_message(session_id: str) -> Response:
    """Append a message (also captured as an episode)."""
    check_session_project(session_id, write=True)
    body = body_of(m.MessageIn)
    message = memory_service().add_message(session_id, body.role, body.content, item=body.item)
    return json_response(m.message_out(message), 201)


@route(RouteSpec("POST", SESSION + "/messages/pop", "popMessage",
                  "Remove the newest message", "conversation", m.MessagePopped, write=True,
                  errors=(400, 401, 403, 404, 409)))
def pop_message(session_id: str) -> Response:
    """Remove and return the newest message (null when the conversation is empty)."""
    check_session_project(session_id, write=True)
    message = memory_service().pop_message(session_id)
    return json_response(m.MessagePopped(
        message=None if message is None else m.message_out(message)))


@route(RouteSpec("DELETE", SESSION + "/messages", "clearMessages",
                  "Empty the conversation buffer", "conversation", None, status=204,
                  write=True, errors=(400, 401, 403, 404, 409)))
def clear_messages(session_id: str) -> Response:
    """Remove every message of the conversation (captured episodes stay)."""
    check_session_project(session_id, write=True)
    memory_service().clear_messages(session_id)
    return Response(status=204)


@route(RouteSpec("POST", SESSION + "/responses", "processResponse",
                  "Capture an LLM reply and infer working context", "conversation",
                  m.ResponseOut, m.ResponseIn, write=True, errors=(400, 401, 403, 404, 409)))
def process_response(session_id: str) -> Response:
    """Capture an assistant reply and infer working context from it."""
    check_session_project(session_id, write=True)
    content = body_of(m.ResponseIn).content
    inferred = memory_service().process_response(session_id, content)
    return json_response(m.ResponseOut(inferred=inferred))


@route(RouteSpec("GET", SESSION + "/pending", "listPending", "Memories ready for promotion",
                  "pending memories", m.PendingList,
                  query={"threshold": {"type": "number", "minimum": 0, "maximum": 1}}))
def list_pending(session_id: str) -> Response:
    """List the staged memories at or above the threshold (default 0.6)."""
    check_session_project(session_id, write=False)
    raw = request.args.get("threshold", "0.6")
    try:
        threshold = float(raw)
    except ValueError:
        raise InvalidRequestError(f"threshold must be a number, got {raw!r}") from None
    items = memory_service().list_pending(session_id, threshold=threshold)
    return json_response(m.PendingList(items=[m.pending_out(i) for i in items]))


@route(RouteSpec("POST", SESSION + "/pending", "addPending", "Stage a memory for promotion",
                  "pending memories", m.PendingOut, m.PendingIn, status=201, write=True,
                  errors=(400, 401, 403, 404, 409)))
def add_pending(session_id: str) -> Response:
    """Stage a memory (an agent decision unless an importance score is given)."""
    check_session_project(session_id, write=True)
    body = body_of(m.PendingIn)
    item = memory_service().add_pending(
        session_id, body.content, memory_type=body.type, confidence=body.confidence,
        source_type=body.source_type, rationale=body.rationale,
        importance_score=body.importance_score,
    )
    return json_response(m.pending_out(item), 201)


@route(RouteSpec("POST", SESSION + "/promotions", "runPromotion", "Run promotion now",
                  "promotion", m.PromotionOut, write=True))
def run_promotion(session_id: str) -> Response:
    """Promote the session's ready memories to long-term memory."""
    check_session_project(session_id, write=True)
    return json_response(m.promotion_out(memory_service().promote(session_id)))


@route(RouteSpec("POST", SESSION + "/context-assembly", "assembleContext",
                  "Assemble the memory context for the next LLM call", "context assembly",
                  m.ContextAssemblyResponse, m.ContextAssemblyRequest))
def assemble_context(session_id: str) -> Response:
    """Build the budgeted memory context and its system prompt (reads only)."""
    check_session_project(session_id, write=False)
    body = body_of(m.ContextAssemblyRequest)
    turn = memory_service().assemble_context(
        session_id, query_hint=body.query_hint, token_budget=body.token_budget,
        include_memories=body.include_memories, base_prompt=body.base_prompt,
    )
    return json_response(m.assembly_out(turn))



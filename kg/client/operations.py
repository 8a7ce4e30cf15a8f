"""Each memory API operation as data: its HTTP call and the decoder of its answer.

MemoryClient and AsyncMemoryClient send the same operations, so the wire format (paths,
bodies, which calls only read) is written once, here. Reads are retried by the transport:
every GET, and the two POSTs that only read — recall and context assembly (the service asks
read access for both). A retried read may count an access twice (a context item, a recalled
memory), nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import ValidationError as PydanticValidationError

from kg.client import decoding
from kg.client.errors import UnexpectedResponseError
from kg.client.records import SessionInfo
from kg.context import TurnContext
from kg.longterm.items import ItemHit, MemoryEntry, MemoryPage
from kg.memory import Memory
from kg.memory_service import Hit, PromotionReport
from kg.shortterm import ContextItem, Message, PendingItem, Role
from kg.terms import ContextKey, ContextSource, MemoryType, SourceType

__all__ = [
    "Call",
    "Operation",
    "add_message",
    "add_pending",
    "assemble_context",
    "clear_messages",
    "close_session",
    "delete_context_item",
    "forget",
    "get_context_item",
    "get_memory",
    "hand_off_session",
    "item_namespaces",
    "list_context",
    "list_memories",
    "list_messages",
    "list_pending",
    "pause_session",
    "pop_message",
    "process_response",
    "promote",
    "put_context_item",
    "put_item",
    "recall",
    "recall_items",
    "remember",
    "restore_session",
    "resume_session",
    "session",
    "snapshot_session",
    "start_session",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Call:
    """One HTTP request of the memory API."""

    method: str
    path: str  # percent-encoded, from the service's root
    body: Mapping[str, Any] | None = None
    params: Mapping[str, str] | None = None
    read: bool = False  # only reads are retried

    @property
    def target(self) -> str:
        """`METHOD /path`, for messages."""
        return f"{self.method} {self.path}"


@dataclass(frozen=True, slots=True)
class Operation(Generic[T]):
    """A call and how to read its answer."""

    call: Call
    decode: Callable[[Any], T]

    def result(self, payload: Any, *, url: str) -> T:
        """The decoded answer; UnexpectedResponseError if it is not the API's shape."""
        try:
            return self.decode(payload)
        except (PydanticValidationError, KeyError, TypeError, ValueError, AttributeError) as e:
            raise UnexpectedResponseError(
                f"{url} answered {self.call.target} with something that is not the memory "
                f"API's answer: {str(e).splitlines()[0]}",
                details={"url": url, "target": self.call.target},
            ) from e


def _seg(value: str) -> str:
    return quote(str(value), safe="")


def _session(session_id: str, tail: str = "") -> str:
    return f"/v1/sessions/{_seg(session_id)}{tail}"


def _project(project: str, tail: str) -> str:
    return f"/v1/projects/{_seg(project)}{tail}"


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the options left at None (the server's defaults apply)."""
    return {name: _json(value) for name, value in fields.items() if value is not None}


def _json(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return value


def _key(key: ContextKey | str) -> str:
    return key.value if isinstance(key, ContextKey) else key


# -- sessions ---------------------------------------------------------------------------


def start_session(session_id: str | None, *, project: str,
                  agent: str | None) -> Operation[SessionInfo]:
    """POST /v1/sessions."""
    body = _body(session_id=session_id, project=project, agent=agent)
    return Operation(Call("POST", "/v1/sessions", body), decoding.session_info)


def session(session_id: str) -> Operation[SessionInfo]:
    """GET /v1/sessions/{id}."""
    return Operation(Call("GET", _session(session_id), read=True), decoding.session_info)


def pause_session(session_id: str) -> Operation[SessionInfo]:
    """POST /v1/sessions/{id}/pause."""
    return Operation(Call("POST", _session(session_id, "/pause")), decoding.session_info)


def resume_session(session_id: str) -> Operation[SessionInfo]:
    """POST /v1/sessions/{id}/resume."""
    return Operation(Call("POST", _session(session_id, "/resume")), decoding.session_info)


def close_session(session_id: str) -> Operation[tuple[SessionInfo, PromotionReport]]:
    """POST /v1/sessions/{id}/close."""
    return Operation(Call("POST", _session(session_id, "/close")), decoding.closed_session)


def snapshot_session(session_id: str) -> Operation[dict[str, Any]]:
    """GET /v1/sessions/{id}/snapshot."""
    call = Call("GET", _session(session_id, "/snapshot"), read=True)
    return Operation(call, decoding.snapshot)


def hand_off_session(session_id: str) -> Operation[dict[str, Any]]:
    """POST /v1/sessions/{id}/handoff."""
    return Operation(Call("POST", _session(session_id, "/handoff")), decoding.snapshot)


def restore_session(data: Mapping[str, Any]) -> Operation[SessionInfo]:
    """POST /v1/session-snapshots."""
    call = Call("POST", "/v1/session-snapshots", {"snapshot": dict(data)})
    return Operation(call, decoding.session_info)


# -- working context, conversation, pending memories, promotion, assembly ---------------


def list_context(session_id: str) -> Operation[tuple[list[ContextItem], int, int]]:
    """GET /v1/sessions/{id}/context."""
    call = Call("GET", _session(session_id, "/context"), read=True)
    return Operation(call, decoding.context_list)


def get_context_item(session_id: str, key: ContextKey | str) -> Operation[ContextItem]:
    """GET /v1/sessions/{id}/context/{key}."""
    path = _session(session_id, f"/context/{_seg(_key(key))}")
    return Operation(Call("GET", path, read=True), decoding.context_item)


def put_context_item(
    session_id: str, key: ContextKey | str, value: Any, *, source: ContextSource | str,
    confidence: float, memory_type: MemoryType | str | None,
) -> Operation[ContextItem]:
    """PUT /v1/sessions/{id}/context/{key}."""
    path = _session(session_id, f"/context/{_seg(_key(key))}")
    # `value` is sent even when None: null is a value the working context can hold.
    body = {"value": value, **_body(source=source, confidence=float(confidence),
                                    type=memory_type)}
    return Operation(Call("PUT", path, body), decoding.context_item)


def delete_context_item(session_id: str, key: ContextKey | str) -> Operation[None]:
    """DELETE /v1/sessions/{id}/context/{key}."""
    path = _session(session_id, f"/context/{_seg(_key(key))}")
    return Operation(Call("DELETE", path), decoding.nothing)


def list_messages(session_id: str) -> Operation[tuple[list[Message], int]]:
    """GET /v1/sessions/{id}/messages."""
    call = Call("GET", _session(session_id, "/messages"), read=True)
    return Operation(call, decoding.message_list)


def add_message(session_id: str, role: Role | str, content: str, *,
                item: Mapping[str, Any] | None = None) -> Operation[Message]:
    """POST /v1/sessions/{id}/messages."""
    body = _body(role=role, content=content, item=None if item is None else dict(item))
    return Operation(Call("POST", _session(session_id, "/messages"), body), decoding.message)


def pop_message(session_id: str) -> Operation[Message | None]:
    """POST /v1/sessions/{id}/messages/pop."""
    call = Call("POST", _session(session_id, "/messages/pop"))
    return Operation(call, decoding.popped_message)


def clear_messages(session_id: str) -> Operation[None]:
    """DELETE /v1/sessions/{id}/messages."""
    return Operation(Call("DELETE", _session(session_id, "/messages")), decoding.nothing)


def process_response(session_id: str, content: str) -> Operation[dict[str, str]]:
    """POST /v1/sessions/{id}/responses."""
    call = Call("POST", _session(session_id, "/responses"), _body(content=content))
    return Operation(call, decoding.inferred)


def add_pending(
    session_id: str, content: str, *, memory_type: MemoryType | str, confidence: float,
    source_type: SourceType | str, rationale: str | None, importance_score: float | None,
) -> Operation[PendingItem]:
    """POST /v1/sessions/{id}/pending."""
    body = _body(content=content, type=memory_type, confidence=float(confidence),
                 source_type=source_type, rationale=rationale,
                 importance_score=None if importance_score is None
                 else float(importance_score))
    return Operation(Call("POST", _session(session_id, "/pending"), body),
                     decoding.pending_item)


def list_pending(session_id: str, *, threshold: float) -> Operation[list[PendingItem]]:
    """GET /v1/sessions/{id}/pending?threshold=…."""
    call = Call("GET", _session(session_id, "/pending"),
                params={"threshold": repr(float(threshold))}, read=True)
    return Operation(call, decoding.pending_list)


def promote(session_id: str) -> Operation[PromotionReport]:
    """POST /v1/sessions/{id}/promotions."""
    return Operation(Call("POST", _session(session_id, "/promotions")), decoding.promotion)


def assemble_context(
    session_id: str, *, query_hint: str | None, token_budget: int, include_memories: bool,
    base_prompt: str,
) -> Operation[TurnContext]:
    """POST /v1/sessions/{id}/context-assembly (a read)."""
    body = _body(query_hint=query_hint, token_budget=token_budget,
                 include_memories=include_memories, base_prompt=base_prompt)
    call = Call("POST", _session(session_id, "/context-assembly"), body, read=True)
    return Operation(call, decoding.turn_context)


# -- long-term memory -------------------------------------------------------------------


def remember(
    project: str, content: str, *, memory_type: MemoryType | str, confidence: float,
    source_type: SourceType | str, session_id: str | None, agent: str | None,
    rationale: str | None,
) -> Operation[Memory]:
    """POST /v1/projects/{p}/memories."""
    body = _body(content=content, type=memory_type, confidence=float(confidence),
                 source_type=source_type, session_id=session_id, agent=agent,
                 rationale=rationale)
    return Operation(Call("POST", _project(project, "/memories"), body), decoding.memory)


def put_item(
    project: str, namespace: str, key: str, value: Mapping[str, Any], *, content: str | None,
    memory_type: MemoryType | str, confidence: float, source_type: SourceType | str,
    session_id: str | None, agent: str | None, rationale: str | None,
) -> Operation[MemoryEntry]:
    """POST /v1/projects/{p}/memories with an item's namespace, key and value."""
    body = _body(namespace=namespace, key=key, value=dict(value), content=content,
                 type=memory_type, confidence=float(confidence), source_type=source_type,
                 session_id=session_id, agent=agent, rationale=rationale)
    return Operation(Call("POST", _project(project, "/memories"), body), decoding.entry)


def list_memories(
    project: str, *, memory_type: MemoryType | str | None, namespace_prefix: str | None,
    namespace: str | None, key: str | None, value_filter: Mapping[str, Any] | None,
    limit: int, offset: int,
) -> Operation[MemoryPage]:
    """GET /v1/projects/{p}/memories?…."""
    params = {name: str(_json(value)) for name, value in {
        "type": memory_type, "namespace_prefix": namespace_prefix, "namespace": namespace,
        "key": key, "limit": limit, "offset": offset}.items() if value is not None}
    if value_filter is not None:
        params["filter"] = json.dumps(dict(value_filter), ensure_ascii=False)
    call = Call("GET", _project(project, "/memories"), params=params, read=True)
    return Operation(call, decoding.memory_page)


def item_namespaces(project: str, *, prefix: str) -> Operation[list[str]]:
    """GET /v1/projects/{p}/namespaces?prefix=…."""
    call = Call("GET", _project(project, "/namespaces"), params={"prefix": prefix}, read=True)
    return Operation(call, decoding.namespace_list)


def recall_items(
    project: str, query: str, *, namespace_prefix: str, value_filter: Mapping[str, Any] | None,
    limit: int, offset: int, mode: str,
) -> Operation[list[ItemHit]]:
    """POST /v1/projects/{p}/recall with a namespace_prefix (a read)."""
    body = _body(query=query, namespace_prefix=namespace_prefix,
                 filter=None if value_filter is None else dict(value_filter), limit=limit,
                 offset=offset, mode=mode)
    return Operation(Call("POST", _project(project, "/recall"), body, read=True),
                     decoding.item_hits)


def get_memory(project: str, memory_id: str) -> Operation[Memory]:
    """GET /v1/projects/{p}/memories/{id}."""
    path = _project(project, f"/memories/{_seg(memory_id)}")
    return Operation(Call("GET", path, read=True), decoding.memory)


def forget(project: str, memory_id: str, *, reason: str | None,
           replacement_id: str | None) -> Operation[Memory]:
    """POST /v1/projects/{p}/memories/{id}/forget."""
    path = _project(project, f"/memories/{_seg(memory_id)}/forget")
    body = _body(reason=reason, replacement_id=replacement_id)
    return Operation(Call("POST", path, body), decoding.memory)


def recall(
    project: str, query: str, *, types: Sequence[MemoryType | str] | None,
    min_confidence: float, limit: int, mode: str, as_of: datetime | None,
) -> Operation[list[Hit]]:
    """POST /v1/projects/{p}/recall (a read)."""
    body = _body(query=query, types=None if types is None else list(types),
                 min_confidence=float(min_confidence), limit=limit, mode=mode, as_of=as_of)
    return Operation(Call("POST", _project(project, "/recall"), body, read=True),
                     decoding.hits)

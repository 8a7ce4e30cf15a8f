"""The memory API's JSON answers turned into the records MemoryService returns.

Fields the HTTP API does not carry get a fixed stand-in, named in each function: a decoded
record equals MemoryService's except there. Times travel as ISO datetimes (to the
microsecond) and come back as kg keeps them: POSIX seconds or UTC datetimes.
"""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter

from kg.client.records import RemoteHit, SessionInfo
from kg.context import Budget, MemoryContext, TokenCounts, TurnContext
from kg.longterm.items import Item, ItemHit, MemoryEntry, MemoryPage
from kg.memory import Memory
from kg.memory_service import Hit, PromotionReport
from kg.shortterm import ContextItem, Message, PendingItem

__all__ = [
    "NOT_CARRIED_TIME",
    "closed_session",
    "context_item",
    "context_list",
    "entry",
    "hits",
    "inferred",
    "item_hits",
    "memory",
    "memory_page",
    "message",
    "message_list",
    "namespace_list",
    "nothing",
    "pending_item",
    "pending_list",
    "popped_message",
    "promotion",
    "session_info",
    "snapshot",
    "turn_context",
]

# The stand-in for a POSIX time the HTTP API does not carry (ContextItem.first_seen, …).
NOT_CARRIED_TIME = 0.0

_MEMORY = TypeAdapter(Memory)
_CONTEXT_ITEM = TypeAdapter(ContextItem)
_PENDING_ITEM = TypeAdapter(PendingItem)
_MESSAGE = TypeAdapter(Message)
_SESSION_INFO = TypeAdapter(SessionInfo)


def nothing(data: Any) -> None:
    """The empty answer of a 204."""


def memory(data: Any) -> Memory:
    """A Memory; valid_from, valid_until and last_accessed are None, evidence (): not carried."""
    found = _MEMORY.validate_python(data)
    # pydantic's own UTC tzinfo, made datetime.UTC as in the records kg builds.
    times: dict[str, Any] = {f.name: getattr(found, f.name) for f in fields(found)
                             if isinstance(getattr(found, f.name), datetime)}
    return replace(found, **{name: value.astimezone(UTC) for name, value in times.items()})


def hits(data: Any) -> list[Hit]:
    """Recall hits, best first (RemoteHit: memory and score)."""
    return [RemoteHit(memory=memory(h["memory"]), score=float(h["score"])) for h in data["hits"]]


def entry(data: Any) -> MemoryEntry:
    """A MemoryEntry: the memory (as `memory`) and its item when it is filed as one."""
    item = None
    if data.get("key") is not None:
        value = data["value"]
        if not isinstance(value, dict):
            raise TypeError("an item's value is not an object")
        item = Item(str(data["namespace"]), str(data["key"]), value)
    return MemoryEntry(memory(data), item)


def memory_page(data: Any) -> MemoryPage:
    """A page of the memory listing, newest first."""
    offset = data["next_offset"]
    return MemoryPage([entry(m) for m in data["memories"]],
                      None if offset is None else int(offset))


def namespace_list(data: Any) -> list[str]:
    """Namespace paths of key-value items, sorted."""
    return [str(n) for n in data["namespaces"]]


def item_hits(data: Any) -> list[ItemHit]:
    """Recalled key-value items, best first."""
    found = []
    for hit in data["hits"]:
        memory, item = entry(hit["memory"])
        if item is None:
            raise TypeError("an item recall hit without its item")
        found.append(ItemHit(memory, item, float(hit["score"])))
    return found


def session_info(data: Any) -> SessionInfo:
    """The summary of a session."""
    return _SESSION_INFO.validate_python(
        {**data, "id": data["session_id"], "created_at": _seconds(data["created_at"])}
    )


def closed_session(data: Any) -> tuple[SessionInfo, PromotionReport]:
    """A closed session and the promotion run its closing made."""
    return session_info(data["session"]), promotion(data["promotion"])


def snapshot(data: Any) -> dict[str, Any]:
    """A session snapshot (opaque, versioned data)."""
    found = data["snapshot"]
    if not isinstance(found, dict):
        raise TypeError("snapshot is not an object")
    return found


def promotion(data: Any) -> PromotionReport:
    """A PromotionReport."""
    return PromotionReport(promoted=tuple(str(i) for i in data["promoted"]),
                           skipped=int(data["skipped"]), details=dict(data["details"]))


def context_item(data: Any) -> ContextItem:
    """A ContextItem; first_seen and last_accessed are NOT_CARRIED_TIME: not carried."""
    kind = data["type"] if "type" in data else data["suggested_type"]  # see pending_item
    return _CONTEXT_ITEM.validate_python(
        {**data, "suggested_type": kind, "first_seen": NOT_CARRIED_TIME,
         "last_accessed": NOT_CARRIED_TIME}
    )


def context_list(data: Any) -> tuple[list[ContextItem], int, int]:
    """The working context's items, their tokens and the budget."""
    return ([context_item(i) for i in data["items"]], int(data["tokens"]),
            int(data["max_tokens"]))


def message(data: Any) -> Message:
    """A conversation Message."""
    return _MESSAGE.validate_python({**data, "timestamp": _seconds(data["timestamp"])})


def popped_message(data: Any) -> Message | None:
    """The message removed from the end of the conversation, or None."""
    found = data["message"]
    return None if found is None else message(found)


def message_list(data: Any) -> tuple[list[Message], int]:
    """The conversation, oldest first, and its tokens."""
    return [message(m) for m in data["messages"]], int(data["tokens"])


def inferred(data: Any) -> dict[str, str]:
    """What the response processor inferred: context key → value."""
    return {str(k): str(v) for k, v in data["inferred"].items()}


def pending_item(data: Any) -> PendingItem:
    """A PendingItem; evidence (), created_at NOT_CARRIED_TIME, access_count 0: not carried."""
    # `type` since the field's rename at the HTTP edge; `memory_type` from servers before it.
    kind = data["type"] if "type" in data else data["memory_type"]
    return _PENDING_ITEM.validate_python(
        {**data, "memory_type": kind, "evidence": (), "created_at": NOT_CARRIED_TIME,
         "access_count": 0}
    )


def pending_list(data: Any) -> list[PendingItem]:
    """Staged memories, highest importance first."""
    return [pending_item(i) for i in data["items"]]


def turn_context(data: Any) -> TurnContext:
    """A TurnContext; its context's project is None: not carried."""
    counts = data["token_counts"]
    context = MemoryContext(
        session_id=str(data["session_id"]),
        project=None,
        conversation=[message(m) for m in data["conversation"]],
        working_context=dict(data["working_context"]),
        long_term_memories=[memory(m) for m in data["long_term_memories"]],
        system_context="",  # MemoryService.assemble_context never sets one
        token_counts=TokenCounts(**{f.name: int(counts[f.name]) for f in fields(TokenCounts)}),
        budget=Budget(**{f.name: int(data["budget"][f.name]) for f in fields(Budget)}),
    )
    return TurnContext(str(data["prompt"]), context)


def _seconds(value: Any) -> float:
    """POSIX seconds of an ISO datetime."""
    if not isinstance(value, str):
        raise TypeError(f"expected an ISO datetime, got {value!r}")
    return datetime.fromisoformat(value).timestamp()

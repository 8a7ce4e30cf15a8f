"""Records from the client and from MemoryService made comparable: what HTTP does not carry at
the client's stand-ins, and what differs between two stores (ids, clock times) fixed.
"""

from __future__ import annotations

from dataclasses import is_dataclass, replace
from datetime import UTC, datetime
from typing import Any

from kg.client import SessionInfo
from kg.client.decoding import NOT_CARRIED_TIME
from kg.context import MemoryContext, TurnContext
from kg.memory import Memory
from kg.memory_service import PromotionReport
from kg.shortterm import ContextItem, Message, PendingItem, Session

__all__ = ["EPOCH", "as_carried", "normal"]

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def as_carried(record: Any) -> Any:
    """A MemoryService record with the fields HTTP does not carry at the client's stand-ins."""
    if isinstance(record, Memory):
        return replace(record, valid_from=None, valid_until=None, last_accessed=None, evidence=())
    if isinstance(record, ContextItem):
        return replace(record, first_seen=NOT_CARRIED_TIME, last_accessed=NOT_CARRIED_TIME)
    if isinstance(record, PendingItem):
        return replace(record, evidence=(), created_at=NOT_CARRIED_TIME, access_count=0)
    return record


def normal(value: Any) -> Any:
    """`value` with what differs between two stores (ids, clock times) set to constants."""
    if isinstance(value, Session):
        return normal(SessionInfo.of(value))
    if isinstance(value, list):
        return [normal(v) for v in value]
    if isinstance(value, tuple) and not is_dataclass(value):
        return tuple(normal(v) for v in value)
    value = as_carried(value)
    if isinstance(value, Memory):
        # Access counts are flushed by a timer on each side: not the record's content.
        return replace(value, id="", timestamp=EPOCH, recorded_at=EPOCH, access_count=0,
                       retired_at=None if value.retired_at is None else EPOCH)
    if isinstance(value, PendingItem):
        return replace(value, id="")
    if isinstance(value, Message):
        return replace(value, timestamp=0.0)
    if isinstance(value, SessionInfo):
        return replace(value, created_at=0.0)
    if isinstance(value, TurnContext):
        return replace(value, context=normal(value.context))
    if isinstance(value, MemoryContext):
        return replace(value, project=None, conversation=normal(value.conversation),
                       long_term_memories=normal(value.long_term_memories))
    if isinstance(value, PromotionReport):
        details = {**value.details, "created": len(value.details["created"]),
                   "merged": len(value.details["merged"])}
        return (len(value.promoted), value.skipped, details)
    return value

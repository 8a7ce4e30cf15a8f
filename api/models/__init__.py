"""Pydantic models of the memory HTTP API's request and response bodies (one per concept)."""

from __future__ import annotations

from api.models.context import (
    ContextAssemblyRequest,
    ContextAssemblyResponse,
    ContextItemOut,
    ContextItemPut,
    ContextList,
    TokenCountsOut,
    assembly_out,
    context_item_out,
)
from api.models.conversation import (
    MessageIn,
    MessageList,
    MessageOut,
    MessagePopped,
    ResponseIn,
    ResponseOut,
    message_out,
)
from api.models.error import ErrorBody, ErrorResponse
from api.models.memory import (
    ForgetRequest,
    MemoryList,
    MemoryOut,
    NamespaceList,
    RecallHitOut,
    RecallRequest,
    RecallResponse,
    RememberRequest,
    memory_list_out,
    memory_out,
    recall_hit_out,
)
from api.models.pending import PendingIn, PendingList, PendingOut, pending_out
from api.models.session import (
    PromotionOut,
    SessionClosed,
    SessionOut,
    SessionSnapshot,
    SessionStart,
    promotion_out,
    session_out,
)

__all__ = [
    "ContextAssemblyRequest",
    "ContextAssemblyResponse",
    "ContextItemOut",
    "ContextItemPut",
    "ContextList",
    "ErrorBody",
    "ErrorResponse",
    "ForgetRequest",
    "MemoryList",
    "MemoryOut",
    "MessageIn",
    "MessageList",
    "MessageOut",
    "MessagePopped",
    "NamespaceList",
    "PendingIn",
    "PendingList",
    "PendingOut",
    "PromotionOut",
    "RecallHitOut",
    "RecallRequest",
    "RecallResponse",
    "RememberRequest",
    "ResponseIn",
    "ResponseOut",
    "SessionClosed",
    "SessionOut",
    "SessionSnapshot",
    "SessionStart",
    "TokenCountsOut",
    "assembly_out",
    "context_item_out",
    "memory_list_out",
    "memory_out",
    "message_out",
    "pending_out",
    "promotion_out",
    "recall_hit_out",
    "session_out",
]

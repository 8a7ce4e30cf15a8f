"""Short-term memory: fast, per-session, in-process structures (MISSION §2).

A SessionManager holds isolated Sessions; each owns a WorkingContext (semantic scratchpad),
PendingMemories (staging for promotion), an AccessLog (usage tracking), a ConversationBuffer
(token-budget message FIFO) and a WorkingMemory (ACT-R activation over embeddings).
"""

from __future__ import annotations

from kg.shortterm.access_log import AccessEntry, AccessKey, AccessLog, AccessStats
from kg.shortterm.conversation_buffer import ConversationBuffer, Message, Role
from kg.shortterm.errors import (
    ContextBudgetExceededError,
    ContextKeyNotFoundError,
    InvalidContentError,
    InvalidContextValueError,
    InvalidEmbeddingError,
    InvalidSnapshotError,
    MessageTooLargeError,
    PendingItemNotFoundError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStateError,
)
from kg.shortterm.pending_memories import PendingItem, PendingMemories
from kg.shortterm.session import Session, SessionConfig
from kg.shortterm.session_manager import SessionHook, SessionHookError, SessionManager
from kg.shortterm.working_context import ContextItem, WorkingContext, infer_memory_type
from kg.shortterm.working_memory import WorkingMemory, WorkingMemoryItem

__all__ = [
    "AccessEntry",
    "AccessKey",
    "AccessLog",
    "AccessStats",
    "ContextBudgetExceededError",
    "ContextItem",
    "ContextKeyNotFoundError",
    "ConversationBuffer",
    "InvalidContentError",
    "InvalidContextValueError",
    "InvalidEmbeddingError",
    "InvalidSnapshotError",
    "Message",
    "MessageTooLargeError",
    "PendingItem",
    "PendingItemNotFoundError",
    "PendingMemories",
    "Role",
    "Session",
    "SessionConfig",
    "SessionExistsError",
    "SessionHook",
    "SessionHookError",
    "SessionManager",
    "SessionNotFoundError",
    "SessionStateError",
    "WorkingContext",
    "WorkingMemory",
    "WorkingMemoryItem",
    "infer_memory_type",
]

"""Errors specific to short-term memory; all derive from the kg hierarchy in `kg.errors`."""

from __future__ import annotations

from kg.errors import ConflictError, NotFoundError, ValidationError

__all__ = [
    "ContextBudgetExceededError",
    "ContextKeyNotFoundError",
    "InvalidContentError",
    "InvalidContextValueError",
    "InvalidEmbeddingError",
    "InvalidSnapshotError",
    "MessageTooLargeError",
    "PendingItemNotFoundError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionStateError",
]


class InvalidContentError(ValidationError):
    """Content that is not a string (or an empty one where text is required)."""

    code = "invalid_content"


class InvalidContextValueError(ValidationError):
    """A working-context value that cannot be stored as JSON (so could not be snapshotted)."""

    code = "invalid_context_value"


class ContextBudgetExceededError(ValidationError):
    """A put that would take the working context past max_tokens; nothing was changed."""

    code = "context_budget_exceeded"


class ContextKeyNotFoundError(NotFoundError):
    """A valid context key that holds no item in this working context."""

    code = "context_key_not_found"


class MessageTooLargeError(ValidationError):
    """A message that alone exceeds the conversation buffer's token budget."""

    code = "message_too_large"


class InvalidEmbeddingError(ValidationError):
    """An embedding that is empty, not finite, of zero norm or of the wrong dimension."""

    code = "invalid_embedding"


class InvalidSnapshotError(ValidationError):
    """Snapshot data that is malformed or inconsistent; nothing was restored."""

    code = "invalid_snapshot"


class PendingItemNotFoundError(NotFoundError):
    """No pending implicit item has the given id."""

    code = "pending_item_not_found"


class SessionNotFoundError(NotFoundError):
    """No open session has the given id."""

    code = "session_not_found"


class SessionExistsError(ConflictError):
    """A session with this id is already open."""

    code = "session_exists"


class SessionStateError(ConflictError):
    """The session's status does not allow the operation (e.g. writing to a paused session)."""

    code = "session_state"

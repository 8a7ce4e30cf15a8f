"""The errors long-term memory raises (subclasses of the kg hierarchy, so `api` maps them)."""

from __future__ import annotations

from kg.errors import ConflictError, KgError, NotFoundError, ValidationError

__all__ = [
    "InvalidMemoryError",
    "MemoryNotFoundError",
    "MemoryRetiredError",
    "RecallUnavailableError",
]


class InvalidMemoryError(ValidationError):
    """A remember/forget argument that breaks a documented rule; `details["field"]` names it."""

    code = "invalid_memory"


class MemoryNotFoundError(NotFoundError):
    """No memory with this id is visible in the project (or at the `as_of` time asked)."""

    code = "memory_not_found"


class MemoryRetiredError(ConflictError):
    """The memory was already forgotten (superseded); it cannot be forgotten again."""

    code = "memory_retired"


class RecallUnavailableError(KgError):
    """The memory tools were set up without a recall engine."""

    code = "recall_unavailable"

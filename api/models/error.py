"""The one error body of the memory HTTP API."""

from __future__ import annotations

from typing import Any

from api.models.base import OutputModel

__all__ = ["ErrorBody", "ErrorResponse"]


class ErrorBody(OutputModel):
    """The inside of every error response."""

    status: int
    code: str
    message: str
    details: dict[str, Any]


class ErrorResponse(OutputModel):
    """`{"error": {...}}`: the one error shape of the service."""

    error: ErrorBody

"""The base models and constrained field types every request and response body builds on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = ["Identifier", "InputModel", "OutputModel", "Score", "Text", "utc_datetime"]

Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class InputModel(BaseModel):
    """A request body: strict types, and an unknown field is an error."""

    # Unknown fields are an error: a typo ("confidance") must not be silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True)


class OutputModel(BaseModel):
    """A response body: exactly the declared fields."""

    model_config = ConfigDict(extra="forbid")


def utc_datetime(seconds: float) -> datetime:
    """The UTC datetime of a POSIX timestamp (how kg records times)."""
    return datetime.fromtimestamp(seconds, tz=UTC)

"""The base models and constrained field types every request and response body builds on."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "MEMORY_TYPE_ALIAS",
    "Identifier",
    "InputModel",
    "OutputModel",
    "Score",
    "Text",
    "memory_type_field",
    "utc_datetime",
]

Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=100_000)]
Score = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]

# A memory's type is `type` at every edge; `memory_type` (the spelling of the first request
# bodies) stays accepted in requests as an alias.
MEMORY_TYPE_ALIAS = "memory_type"


def memory_type_field(default: Any, description: str) -> Any:
    """A request field named `type` that also accepts the `memory_type` alias."""
    return Field(
        default=default,
        validation_alias=AliasChoices("type", MEMORY_TYPE_ALIAS),
        description=f"{description} `{MEMORY_TYPE_ALIAS}` is accepted as an alias of `type`; "
        "a body with both is rejected (400 invalid_request).",
        json_schema_extra={"x-aliases": [MEMORY_TYPE_ALIAS]},
    )


class InputModel(BaseModel):
    """A request body: strict types, and an unknown field is an error."""

    # Unknown fields are an error: a typo ("confidance") must not be silently ignored.
    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        # A field with alias choices (`type` / `memory_type`) is given under one of them; with
        # both, pydantic alone would call the second an unknown field: name both instead.
        if isinstance(data, dict):
            for info in cls.model_fields.values():
                alias = info.validation_alias
                if isinstance(alias, AliasChoices):
                    given = [c for c in alias.choices if isinstance(c, str) and c in data]
                    if len(given) > 1:
                        others = " or ".join(repr(g) for g in given[1:])
                        raise PydanticCustomError(
                            "conflicting_alias",
                            "{message}",
                            {"message": f"send either {given[0]!r} or its alias {others}, "
                                        "not both"},
                        )
        return data


class OutputModel(BaseModel):
    """A response body: exactly the declared fields."""

    model_config = ConfigDict(extra="forbid")


def utc_datetime(seconds: float) -> datetime:
    """The UTC datetime of a POSIX timestamp (how kg records times)."""
    return datetime.fromtimestamp(seconds, tz=UTC)

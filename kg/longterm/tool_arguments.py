"""Pydantic models of the memory tools' arguments, with the exact error messages an LLM sees."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from kg.longterm.memories import MAX_CONTENT_BYTES, MAX_REASON_BYTES
from kg.terms import MemoryType

__all__ = [
    "MAX_QUERY_BYTES",
    "MEMORY_TYPE_ALIAS",
    "ForgetArgs",
    "RecallArgs",
    "RememberArgs",
]

MAX_QUERY_BYTES = 1_000
# The tools name a memory's type `type`; `memory_type` (the Python spelling) is accepted too.
MEMORY_TYPE_ALIAS = "memory_type"
_TYPE_FIELD = AliasChoices("type", MEMORY_TYPE_ALIAS)
_TYPES = ", ".join(t.value for t in MemoryType)


def _fail(code: str, message: str) -> PydanticCustomError:
    # The message goes through a placeholder so braces in user text are never formatted.
    return PydanticCustomError(code, "{message}", {"message": message})


def _text(value: object, field: str, limit: int, *, required: bool = True) -> str:
    if not isinstance(value, str):
        raise _fail("not_a_string", f"{field} must be a string, got {_kind(value)}")
    if required and not value.strip():
        raise _fail("empty", f"{field} must not be empty")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise _fail("too_long", f"{field} is {size:,} bytes; the limit is {limit:,}")
    return value


def _number(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise _fail("not_a_number", f"{field} must be a number, got {value!r}")
    return float(value)


def _memory_type(value: object) -> MemoryType:
    if isinstance(value, str):
        try:
            return MemoryType(value)
        except ValueError:
            pass
    raise _fail("invalid_type", f"invalid memory type {value!r}; expected one of: {_TYPES}")


def _reject_both_spellings(data: Any) -> Any:
    if isinstance(data, dict) and "type" in data and MEMORY_TYPE_ALIAS in data:
        raise PydanticCustomError(
            "conflicting_alias", "{message}",
            {"message": f"send either 'type' or its alias '{MEMORY_TYPE_ALIAS}', not both",
             "field": "type"},
        )
    return data


def _kind(value: object) -> str:
    return {type(None): "null", bool: "boolean", int: "number", float: "number", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


class RememberArgs(BaseModel):
    """remember(content, type="fact", confidence=0.8, rationale=None).

    `memory_type` is accepted as an alias of `type`.
    """

    model_config = ConfigDict(extra="forbid")

    content: str
    type: MemoryType = Field(default=MemoryType.FACT, validation_alias=_TYPE_FIELD)
    confidence: float = 0.8
    rationale: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        return _reject_both_spellings(data)

    @field_validator("content", mode="before")
    @classmethod
    def _content(cls, value: object) -> str:
        return _text(value, "content", MAX_CONTENT_BYTES)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: object) -> MemoryType:
        return MemoryType.FACT if value is None else _memory_type(value)

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: object) -> float:
        if value is None:
            return 0.8
        number = _number(value, "confidence")
        return min(1.0, max(0.0, number))  # clamped, as the original tool did

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, value: object) -> str | None:
        return None if value is None else _text(value, "rationale", MAX_CONTENT_BYTES,
                                                required=False)


class RecallArgs(BaseModel):
    """recall(query, mode="hybrid", type=None, min_confidence=0.5, limit=10).

    `memory_type` is accepted as an alias of `type`.
    """

    model_config = ConfigDict(extra="forbid")

    query: str
    mode: Literal["text", "semantic", "hybrid", "rerank"] = "hybrid"
    type: MemoryType | None = Field(default=None, validation_alias=_TYPE_FIELD)
    min_confidence: float = 0.5
    limit: int = Field(default=10)

    @model_validator(mode="before")
    @classmethod
    def _one_spelling(cls, data: Any) -> Any:
        return _reject_both_spellings(data)

    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: object) -> str:
        return _text(value, "query", MAX_QUERY_BYTES)

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: object) -> str:
        if value is None:
            return "hybrid"
        if value not in ("text", "semantic", "hybrid", "rerank"):
            raise _fail("invalid_mode", f"invalid mode {value!r}; expected one of: "
                                        "text, semantic, hybrid, rerank")
        return str(value)

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: object) -> MemoryType | None:
        return None if value is None else _memory_type(value)

    @field_validator("min_confidence", mode="before")
    @classmethod
    def _min_confidence(cls, value: object) -> float:
        if value is None:
            return 0.5
        number = _number(value, "min_confidence")
        if not 0.0 <= number <= 1.0:
            raise _fail("out_of_range", f"min_confidence must be between 0 and 1, got {value!r}")
        return number

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, value: object) -> int:
        if value is None:
            return 10
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise _fail("not_an_integer", f"limit must be an integer, got {value!r}")
        if not 1 <= value <= 50:
            raise _fail("out_of_range", f"limit must be between 1 and 50, got {value}")
        return value


class ForgetArgs(BaseModel):
    """forget(memory_id, reason, replacement_id=None)."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str
    reason: str
    replacement_id: str | None = None

    @field_validator("memory_id", mode="before")
    @classmethod
    def _memory_id(cls, value: object) -> str:
        return _text(value, "memory_id", 128)

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: object) -> str:
        return _text(value, "reason", MAX_REASON_BYTES)

    @field_validator("replacement_id", mode="before")
    @classmethod
    def _replacement(cls, value: object) -> str | None:
        return None if value is None else _text(value, "replacement_id", 128)


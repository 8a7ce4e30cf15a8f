"""The memory tools an LLM can call — remember, recall, forget — and the executor behind them.

`TOOL_DEFINITIONS` are Anthropic-style (`name`, `description`, `input_schema`); `openai_tools()`
wraps the same schemas for OpenAI's `tools=`. `MemoryToolExecutor.execute(name, arguments,
context=...)` validates the arguments at the edge and returns `{"ok": true, "result": …}` or
`{"ok": false, "error": {"code", "message", "field"}}`; on an error nothing is written.

A memory's type is `type` in arguments and results, as at every edge of the service. The
schemas publish only that spelling; `memory_type` (the Python keyword) is accepted as an alias
in the arguments of remember and recall, and a call giving both is an `invalid_argument` error.

    >>> [tool["name"] for tool in TOOL_DEFINITIONS]
    ['remember', 'recall', 'forget']
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import pydantic

from kg.errors import KgError
from kg.longterm.errors import RecallUnavailableError
from kg.longterm.memories import MAX_CONTENT_BYTES, MAX_REASON_BYTES, LongTermMemory
from kg.longterm.tool_arguments import MAX_QUERY_BYTES, ForgetArgs, RecallArgs, RememberArgs
from kg.longterm.triples import make_evidence
from kg.memory import Memory
from kg.terms import MemoryType

__all__ = [
    "TOOL_DEFINITIONS",
    "MemoryToolExecutor",
    "RecallEngine",
    "RecallHit",
    "ToolContext",
    "openai_tools",
]

_log = logging.getLogger(__name__)
_TYPES = [t.value for t in MemoryType]

TOOL_DEFINITIONS: list[dict[str, Any]] = [
    {
        "name": "remember",
        "description": (
            "Store something worth keeping across sessions of this project: a fact, decision, "
            "convention, lesson learned, risk, etc. Remembering the same thing again updates "
            "the existing memory instead of adding a copy."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "content": {"type": "string", "minLength": 1,
                            "description": f"What to remember (at most {MAX_CONTENT_BYTES:,} "
                                           "bytes of UTF-8)."},
                "type": {"type": "string", "enum": _TYPES, "default": "fact",
                         "description": "The kind of memory."},
                "confidence": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.8,
                               "description": "How sure you are, 0 to 1 (clamped)."},
                "rationale": {"type": "string",
                              "description": f"Why this is worth remembering (at most "
                                             f"{MAX_CONTENT_BYTES:,} bytes)."},
            },
            "required": ["content"],
            "additionalProperties": False,
        },
    },
    {
        "name": "recall",
        "description": (
            "Search this project's long-term memory. Returns the most relevant current "
            "memories with their ids, types, confidence and scores."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1,
                          "description": f"What to look for (at most {MAX_QUERY_BYTES:,} "
                                         "bytes)."},
                "mode": {"type": "string", "enum": ["text", "semantic", "hybrid", "rerank"],
                         "default": "hybrid",
                         "description": "Keyword, embedding or both; rerank: the best hybrid "
                                        "candidates reordered by a small model (slower)."},
                "type": {"type": "string", "enum": _TYPES,
                         "description": "Only memories of this kind."},
                "min_confidence": {"type": "number", "minimum": 0, "maximum": 1,
                                   "default": 0.5, "description": "Lowest confidence returned."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                          "description": "How many memories at most."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    },
    {
        "name": "forget",
        "description": (
            "Retire a memory that is wrong or outdated. It is kept for provenance but no longer "
            "recalled; name the memory that replaces it, if any."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "memory_id": {"type": "string", "description": "The id recall returned."},
                "reason": {"type": "string", "minLength": 1,
                           "description": f"Why it no longer holds (at most "
                                          f"{MAX_REASON_BYTES} bytes)."},
                "replacement_id": {"type": "string",
                                   "description": "The id of the memory that supersedes it."},
            },
            "required": ["memory_id", "reason"],
            "additionalProperties": False,
        },
    },
]


def openai_tools() -> list[dict[str, Any]]:
    """The same tools in OpenAI's function-calling shape."""
    return [
        {"type": "function", "function": {"name": t["name"], "description": t["description"],
                                          "parameters": t["input_schema"]}}
        for t in TOOL_DEFINITIONS
    ]


class RecallHit(Protocol):
    """One recall result (the recall engine's type satisfies this)."""

    @property
    def memory(self) -> Memory:
        """The memory found."""
        ...

    @property
    def score(self) -> float:
        """Its relevance."""
        ...


class RecallEngine(Protocol):
    """What the recall tool needs from `kg.recall`."""

    def recall(
        self,
        project: str,
        query: str,
        *,
        types: Sequence[MemoryType] | None,
        min_confidence: float,
        limit: int,
        mode: str,
        as_of: datetime | None,
    ) -> Sequence[RecallHit]:
        """The best current memories of `project` for `query`."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who is calling: the project and session the memory belongs to, and the provenance IRI."""

    project: str
    session: str
    agent: str | None = None
    source: str | None = None  # IRI of the message or tool call, recorded as evidence


class MemoryToolExecutor:
    """Runs remember/recall/forget calls against a LongTermMemory and a recall engine."""

    def __init__(
        self, memory: LongTermMemory, *, recall_engine: RecallEngine | None = None
    ) -> None:
        self.memory = memory
        self.recall_engine = recall_engine

    def execute(self, name: str, arguments: Mapping[str, Any] | str | None, *,
                context: ToolContext) -> dict[str, Any]:
        """Run one tool call and return its structured result (never raises for bad input)."""
        handler = {"remember": self._remember, "recall": self._recall,
                   "forget": self._forget}.get(name)
        if handler is None:
            return _error("unknown_tool", f"unknown tool {name!r}; expected one of: "
                                          "remember, recall, forget", "name")
        try:
            args = _arguments(arguments)
            return {"ok": True, "result": handler(args, context)}
        except _BadArguments as e:
            return _error("invalid_argument", e.message, e.field)
        except pydantic.ValidationError as e:
            return _validation_error(e)
        except KgError as e:
            field = e.details.get("field")
            return _error(e.code, e.message, field if isinstance(field, str) else None)
        except Exception:
            _log.exception("memory tool %s failed", name)
            return _error("internal_error", f"the {name} tool failed unexpectedly", None)

    def _remember(self, raw: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        args = RememberArgs.model_validate(raw)
        evidence = [make_evidence(source=context.source)] if context.source else []
        outcome = self.memory.remember(
            args.content, project=context.project, session=context.session, type=args.type,
            confidence=args.confidence, agent=context.agent, rationale=args.rationale,
            evidence=evidence,
        )
        return {"memory_id": outcome.memory.id, "created": outcome.created,
                **_summary(outcome.memory)}

    def _recall(self, raw: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        args = RecallArgs.model_validate(raw)
        if self.recall_engine is None:
            raise RecallUnavailableError("recall is not available: no recall engine is configured")
        hits = self.recall_engine.recall(
            context.project, args.query, types=[args.type] if args.type else None,
            min_confidence=args.min_confidence, limit=args.limit, mode=args.mode, as_of=None,
        )
        return {"memories": [{"memory_id": h.memory.id, "score": round(h.score, 4),
                              **_summary(h.memory)} for h in hits[: args.limit]]}

    def _forget(self, raw: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        args = ForgetArgs.model_validate(raw)
        memory = self.memory.forget(args.memory_id, project=context.project, reason=args.reason,
                                    replacement_id=args.replacement_id)
        return {"memory_id": memory.id, "forgotten": True,
                "replacement_id": memory.superseded_by}


def _summary(memory: Memory) -> dict[str, Any]:
    return {"type": memory.type.value, "content": memory.content,
            "confidence": memory.confidence, "level": memory.level.value,
            "recorded_at": memory.recorded_at.isoformat()}


class _BadArguments(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):  # OpenAI sends the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as e:
            raise _BadArguments(f"arguments are not valid JSON: {e.msg}") from None
    if not isinstance(arguments, Mapping):
        raise _BadArguments("arguments must be a JSON object")
    return dict(arguments)


def _validation_error(exc: pydantic.ValidationError) -> dict[str, Any]:
    first = exc.errors(include_url=False)[0]
    ctx = first.get("ctx") or {}
    field = ".".join(str(part) for part in first["loc"]) or ctx.get("field") or None
    kind = first["type"]
    if kind == "missing":
        message = f"{field} is required"
    elif kind == "extra_forbidden":
        message = f"unexpected argument {field!r}"
    elif "message" in ctx:
        message = str(ctx["message"])
    else:
        message = f"{field}: {first['msg']}"
    return _error("invalid_argument", message, field)


def _error(code: str, message: str, field: str | None) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "field": field}}

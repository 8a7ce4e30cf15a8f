"""The controlled vocabulary of jido-kg (MISSION §2): one source of truth for code and ontology.

Every enum value is the word used on the wire (JSON, tool arguments, query parameters); every
member that has an ontology counterpart maps to it through `.iri`. `tests/shortterm/
test_terms_ontology.py` checks these mappings against `ontology/jido.ttl`.

>>> MemoryType.TRADE_OFF.iri.value
'https://jido.ai/ontology#TradeOff'
>>> confidence_to_level(0.8), ConfidenceLevel.LOW.confidence
(<ConfidenceLevel.HIGH: 'high'>, 0.3)
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import TypeVar

from pyoxigraph import NamedNode

from kg.errors import ValidationError
from kg.namespaces import JIDO

__all__ = [
    "SESSION_ID_PATTERN",
    "AccessType",
    "ConfidenceLevel",
    "ContextKey",
    "ContextSource",
    "InvalidConfidenceError",
    "InvalidIdentifierError",
    "InvalidScoreError",
    "InvalidSessionIdError",
    "MemoryType",
    "SessionStatus",
    "SourceType",
    "SuggestedBy",
    "UnknownContextKeyError",
    "UnknownTermError",
    "confidence_to_level",
    "level_to_confidence",
    "parse_term",
    "validate_confidence",
    "validate_identifier",
    "validate_score",
    "validate_session_id",
]

# Used with fullmatch(), not match() + `$`: Python's `$` also matches before a trailing "\n",
# which would let "abc\n" through as a session id.
SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")


class UnknownTermError(ValidationError):
    """A value that is not a member of the vocabulary it was given for."""

    code = "unknown_term"


class UnknownContextKeyError(UnknownTermError):
    """A working-context key that is not one of the ContextKey values."""

    code = "unknown_context_key"


class InvalidScoreError(ValidationError):
    """A number that must be a finite real in [0, 1] (a confidence or an importance score)."""

    code = "invalid_score"


class InvalidConfidenceError(InvalidScoreError):
    """A confidence outside [0, 1], NaN, or not a number."""

    code = "invalid_confidence"


class InvalidIdentifierError(ValidationError):
    """An identifier (project, agent, user) that does not match `^[A-Za-z0-9_-]{1,128}$`."""

    code = "invalid_identifier"


class InvalidSessionIdError(InvalidIdentifierError):
    """A session id that does not match `^[A-Za-z0-9_-]{1,128}$`."""

    code = "invalid_session_id"


def _camel(value: str) -> str:
    return "".join(part.capitalize() for part in value.split("_"))


class MemoryType(StrEnum):
    """The 22 MemoryItem subclasses of the Jido ontology."""

    FACT = "fact"
    ASSUMPTION = "assumption"
    HYPOTHESIS = "hypothesis"
    DISCOVERY = "discovery"
    RISK = "risk"
    UNKNOWN = "unknown"
    DECISION = "decision"
    ARCHITECTURAL_DECISION = "architectural_decision"
    IMPLEMENTATION_DECISION = "implementation_decision"
    ALTERNATIVE = "alternative"
    TRADE_OFF = "trade_off"
    CONVENTION = "convention"
    CODING_STANDARD = "coding_standard"
    ARCHITECTURAL_CONVENTION = "architectural_convention"
    AGENT_RULE = "agent_rule"
    PROCESS_CONVENTION = "process_convention"
    ERROR = "error"
    BUG = "bug"
    FAILURE = "failure"
    INCIDENT = "incident"
    ROOT_CAUSE = "root_cause"
    LESSON_LEARNED = "lesson_learned"

    @property
    def class_name(self) -> str:
        """The local name of the ontology class, e.g. `TradeOff`."""
        return _camel(self.value)

    @property
    def iri(self) -> NamedNode:
        """The ontology class, e.g. `jido:TradeOff`."""
        return JIDO[self.class_name]


class ConfidenceLevel(StrEnum):
    """The jido:ConfidenceLevel individuals; the number is kept beside the level, never replaced."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def confidence(self) -> float:
        """The representative number of the level: 0.9, 0.6 or 0.3."""
        return _LEVEL_TO_CONFIDENCE[self]

    @property
    def iri(self) -> NamedNode:
        """The ontology individual, e.g. `jido:High`."""
        return JIDO[_camel(self.value)]


_LEVEL_TO_CONFIDENCE = {
    ConfidenceLevel.HIGH: 0.9,
    ConfidenceLevel.MEDIUM: 0.6,
    ConfidenceLevel.LOW: 0.3,
}


class SourceType(StrEnum):
    """The jido:SourceType individuals: where a memory came from."""

    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    EXTERNAL_DOCUMENT = "external_document"

    @property
    def iri(self) -> NamedNode:
        """The ontology individual, e.g. `jido:ExternalDocumentSource`."""
        return JIDO[_camel(self.value) + "Source"]


class ContextKey(StrEnum):
    """The semantic keys of the working context (seed 000 §1.1.1.5 plus conversation_summary)."""

    ACTIVE_FILE = "active_file"
    PROJECT_ROOT = "project_root"
    PRIMARY_LANGUAGE = "primary_language"
    FRAMEWORK = "framework"
    CURRENT_TASK = "current_task"
    USER_INTENT = "user_intent"
    DISCOVERED_PATTERNS = "discovered_patterns"
    ACTIVE_ERRORS = "active_errors"
    PENDING_QUESTIONS = "pending_questions"
    FILE_RELATIONSHIPS = "file_relationships"
    CONVERSATION_SUMMARY = "conversation_summary"


class ContextSource(StrEnum):
    """How a working-context item was obtained (seed 000 §1.2.1.3)."""

    INFERRED = "inferred"
    EXPLICIT = "explicit"
    TOOL = "tool"


class AccessType(StrEnum):
    """The kinds of access the access log records."""

    READ = "read"
    WRITE = "write"
    QUERY = "query"


class SuggestedBy(StrEnum):
    """Who staged a pending memory: pattern detection or an explicit agent decision."""

    IMPLICIT = "implicit"
    AGENT = "agent"


class SessionStatus(StrEnum):
    """Life-cycle states of a short-term session."""

    ACTIVE = "active"
    PAUSED = "paused"
    CLOSED = "closed"

    @property
    def iri(self) -> NamedNode:
        """The ontology individual, e.g. `jido:SessionPaused` (distinct from task statuses)."""
        return JIDO["Session" + _camel(self.value)]


E = TypeVar("E", bound=StrEnum)


def parse_term(
    enum_cls: type[E], value: object, *, error: type[UnknownTermError] = UnknownTermError
) -> E:
    """Return the member of `enum_cls` whose value is `value`, or raise `error` naming it."""
    if isinstance(value, str):
        try:
            return enum_cls(value)
        except ValueError:
            pass
    allowed = ", ".join(member.value for member in enum_cls)
    raise error(
        f"unknown {enum_cls.__name__} {value!r}; expected one of: {allowed}",
        details={"term": enum_cls.__name__, "value": repr(value)},
    )


def validate_score(value: object, *, name: str = "importance_score") -> float:
    """Return `value` as a float if it is a finite real in [0, 1], else raise InvalidScoreError."""
    return _unit_interval(value, name, InvalidScoreError)


def validate_confidence(value: object) -> float:
    """Return `value` as a float if it is a valid confidence, else raise InvalidConfidenceError."""
    return _unit_interval(value, "confidence", InvalidConfidenceError)


def _unit_interval(value: object, name: str, error: type[InvalidScoreError]) -> float:
    # bool is an int subclass; True as a confidence is almost certainly a caller bug.
    if (type(value) is float or type(value) is int) and 0.0 <= value <= 1.0:  # NaN fails here
        return float(value)
    raise error(
        f"{name} must be a number in [0, 1], got {value!r}",
        details={"field": name, "value": repr(value)},
    )


def confidence_to_level(confidence: float) -> ConfidenceLevel:
    """Map a confidence to its level: high ≥ 0.8, medium ≥ 0.5, low < 0.5."""
    value = validate_confidence(confidence)
    if value >= 0.8:
        return ConfidenceLevel.HIGH
    if value >= 0.5:
        return ConfidenceLevel.MEDIUM
    return ConfidenceLevel.LOW


def level_to_confidence(level: ConfidenceLevel | str) -> float:
    """Map a level to its representative confidence: high 0.9, medium 0.6, low 0.3."""
    return parse_term(ConfidenceLevel, level).confidence


def validate_identifier(value: object, *, name: str = "identifier") -> str:
    """Return `value` if it matches `^[A-Za-z0-9_-]{1,128}$`, else raise InvalidIdentifierError."""
    return _identifier(value, name, InvalidIdentifierError)


def validate_session_id(value: object) -> str:
    """Return `value` if it is a valid session id, else raise InvalidSessionIdError."""
    return _identifier(value, "session id", InvalidSessionIdError)


def _identifier(value: object, name: str, error: type[InvalidIdentifierError]) -> str:
    if isinstance(value, str) and SESSION_ID_PATTERN.fullmatch(value):
        return value
    raise error(
        f"invalid {name} {value!r}: must match ^[A-Za-z0-9_-]{{1,128}}$",
        details={"field": name, "value": repr(value)},
    )

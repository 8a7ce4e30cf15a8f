"""kg.terms: the controlled vocabulary (seed 000 §1.1.2).

Mapping of seed 000 §1.1.2:
- 'memory_type values are valid atoms matching Jido ontology' → test_memory_types_are_the_22
  (+ test_terms_ontology.py for the ontology side)
- 'confidence_level values map correctly' → test_confidence_to_level_boundaries
- 'source_type values match Jido SourceType individuals' → test_source_type_iris
- 'context_key exhaustiveness' → test_context_keys_are_exactly_the_mission_list
- 'pending_item struct ...' → tests/shortterm/test_pending_memories.py
- 'access_entry struct creation with timestamp' → test_access_log.py::test_record_sets_timestamp
- 'confidence_to_level/1 boundary values' → test_confidence_to_level_boundaries
- 'level_to_confidence/1' → test_level_to_confidence
"""

from __future__ import annotations

import math

import pytest

from kg.errors import ValidationError
from kg.terms import (
    ConfidenceLevel,
    ContextKey,
    InvalidConfidenceError,
    InvalidSessionIdError,
    MemoryType,
    SessionStatus,
    SourceType,
    UnknownTermError,
    confidence_to_level,
    level_to_confidence,
    parse_term,
    validate_session_id,
)

MISSION_TYPES = [
    "fact",
    "assumption",
    "hypothesis",
    "discovery",
    "risk",
    "unknown",
    "decision",
    "architectural_decision",
    "implementation_decision",
    "alternative",
    "trade_off",
    "convention",
    "coding_standard",
    "architectural_convention",
    "agent_rule",
    "process_convention",
    "error",
    "bug",
    "failure",
    "incident",
    "root_cause",
    "lesson_learned",
]


def test_memory_types_are_the_22() -> None:
    assert [m.value for m in MemoryType] == MISSION_TYPES


@pytest.mark.parametrize(
    ("member", "local"),
    [
        (MemoryType.TRADE_OFF, "TradeOff"),
        (MemoryType.LESSON_LEARNED, "LessonLearned"),
        (MemoryType.ARCHITECTURAL_DECISION, "ArchitecturalDecision"),
        (MemoryType.ROOT_CAUSE, "RootCause"),
        (MemoryType.FACT, "Fact"),
    ],
)
def test_memory_type_iris(member: MemoryType, local: str) -> None:
    assert member.iri.value == "https://jido.ai/ontology#" + local


def test_source_type_iris() -> None:
    assert [s.iri.value.split("#")[1] for s in SourceType] == [
        "UserSource",
        "AgentSource",
        "ToolSource",
        "ExternalDocumentSource",
    ]


def test_confidence_and_status_iris() -> None:
    assert [c.iri.value.split("#")[1] for c in ConfidenceLevel] == ["High", "Medium", "Low"]
    assert SessionStatus.PAUSED.iri.value.endswith("#SessionPaused")


def test_context_keys_are_exactly_the_mission_list() -> None:
    assert {k.value for k in ContextKey} == {
        "active_file",
        "project_root",
        "primary_language",
        "framework",
        "current_task",
        "user_intent",
        "discovered_patterns",
        "active_errors",
        "pending_questions",
        "file_relationships",
        "conversation_summary",
    }


@pytest.mark.parametrize(
    ("value", "level"),
    [
        (1.0, "high"),
        (0.8, "high"),
        (0.7999, "medium"),
        (0.5, "medium"),
        (0.4999, "low"),
        (0.0, "low"),
    ],
)
def test_confidence_to_level_boundaries(value: float, level: str) -> None:
    assert confidence_to_level(value) is ConfidenceLevel(level)


def test_level_to_confidence() -> None:
    assert [level_to_confidence(x) for x in ("high", "medium", "low")] == [0.9, 0.6, 0.3]
    # The representative number maps back to its own level.
    assert all(confidence_to_level(level.confidence) is level for level in ConfidenceLevel)


@pytest.mark.parametrize("bad", [-0.01, 1.01, math.nan, math.inf, True, "0.5", None])
def test_confidence_out_of_range_is_rejected(bad: object) -> None:
    with pytest.raises(InvalidConfidenceError, match="confidence") as info:
        confidence_to_level(bad)  # type: ignore[arg-type]
    assert repr(bad) in str(info.value)
    assert isinstance(info.value, ValidationError)


def test_parse_term_names_the_value_and_the_choices() -> None:
    with pytest.raises(UnknownTermError, match=r"'tradeoff'.*trade_off"):
        parse_term(MemoryType, "tradeoff")
    assert parse_term(MemoryType, "trade_off") is MemoryType.TRADE_OFF


@pytest.mark.parametrize("bad", ["", "a b", "x" * 129, "abc\n", "é", "a/b", None, 12])
def test_invalid_session_ids(bad: object) -> None:
    with pytest.raises(InvalidSessionIdError) as info:
        validate_session_id(bad)
    assert repr(bad) in str(info.value)


def test_valid_session_ids() -> None:
    for good in ("a", "A-b_9", "x" * 128):
        assert validate_session_id(good) == good

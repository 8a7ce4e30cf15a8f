"""The long-term memory record shared by the writer, recall and the tools, and its listener."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from pyoxigraph import NamedNode

from kg.namespaces import DATA
from kg.terms import ConfidenceLevel, MemoryType, SourceType, confidence_to_level

__all__ = [
    "Evidence",
    "Memory",
    "MemoryListener",
    "agent_iri",
    "evidence_iri",
    "memory_iri",
    "project_iri",
    "session_iri",
]


def memory_iri(memory_id: str) -> NamedNode:
    """The IRI of a memory: `https://jido.ai/data/memory/<id>`."""
    return DATA[f"memory/{memory_id}"]


def session_iri(session_id: str) -> NamedNode:
    """The IRI of a work session."""
    return DATA[f"session/{session_id}"]


def agent_iri(agent_id: str) -> NamedNode:
    """The IRI of an agent."""
    return DATA[f"agent/{agent_id}"]


def project_iri(project_id: str) -> NamedNode:
    """The IRI of a project."""
    return DATA[f"project/{project_id}"]


def evidence_iri(evidence_id: str) -> NamedNode:
    """The IRI of a piece of evidence."""
    return DATA[f"evidence/{evidence_id}"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where a memory came from: a message or tool call, with an optional excerpt."""

    id: str
    text: str | None = None
    source: str | None = None  # IRI of the message / tool call (prov:wasDerivedFrom)
    recorded_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Memory:
    """One long-term memory as the library sees it (the graph holds the same as triples)."""

    id: str
    project: str
    session: str
    type: MemoryType
    content: str
    confidence: float
    source_type: SourceType
    timestamp: datetime  # jido:hasTimestamp: when it was asserted
    recorded_at: datetime  # jido:recordedAt: when the service wrote it
    agent: str | None = None
    rationale: str | None = None
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    retired_at: datetime | None = None
    retirement_reason: str | None = None
    superseded_by: str | None = None
    access_count: int = 0
    last_accessed: datetime | None = None
    evidence: Sequence[Evidence] = field(default_factory=tuple)

    @property
    def level(self) -> ConfidenceLevel:
        """The confidence level derived from the numeric confidence."""
        return confidence_to_level(self.confidence)

    @property
    def iri(self) -> NamedNode:
        """The memory's IRI."""
        return memory_iri(self.id)

    def is_current(self, at: datetime) -> bool:
        """True if the service held this memory at `at` and it held in the world then."""
        if self.recorded_at > at or (self.retired_at is not None and self.retired_at <= at):
            return False
        if self.valid_from is not None and self.valid_from > at:
            return False
        return self.valid_until is None or self.valid_until > at


class MemoryListener(Protocol):
    """Told of every long-term change after it is committed (the keyword index is one).

    A listener may also define `memories_accessed(counts)`, counts being (memory id, access
    count, last access) triples: access-count flushes then call it instead of re-reading each
    memory for `memory_written` (kg.longterm.memories)."""

    def memory_written(self, memory: Memory) -> None:
        """A memory was added or updated (dedup merge, access counts)."""

    def memory_retired(self, memory: Memory) -> None:
        """A memory was superseded (forget); `memory.retired_at` is set."""

    def memories_purged(self, project: str, memory_ids: Sequence[str] | None) -> None:
        """Memories were hard-deleted: the given ids, or the whole project when None."""

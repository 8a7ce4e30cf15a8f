"""Long-term memory: typed memories in per-project named graphs, promotion, and memory tools."""

from __future__ import annotations

from kg.longterm.errors import InvalidMemoryError, MemoryNotFoundError, MemoryRetiredError
from kg.longterm.memories import LongTermMemory, RememberOutcome
from kg.longterm.session_records import SessionRecords
from kg.longterm.triples import content_key, make_evidence, normalise_content

__all__ = [
    "InvalidMemoryError",
    "LongTermMemory",
    "MemoryNotFoundError",
    "MemoryRetiredError",
    "RememberOutcome",
    "SessionRecords",
    "content_key",
    "make_evidence",
    "normalise_content",
]

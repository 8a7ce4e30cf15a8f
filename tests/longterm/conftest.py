"""Fixtures for long-term memory: a real store, a LongTermMemory, and a tiny real recall engine."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyoxigraph
import pytest
from pyoxigraph import Quad, RdfFormat
from pyshacl import validate
from rdflib import Graph

from kg.graphs import SYSTEM_KNOWLEDGE
from kg.longterm import LongTermMemory
from kg.memory import Memory
from kg.resources import ontology_path, shapes_path
from kg.store import EmbeddedStore
from kg.terms import MemoryType


@pytest.fixture
def ltm(store: EmbeddedStore) -> Iterator[LongTermMemory]:
    """A LongTermMemory over the in-memory store that holds the ontology."""
    memory = LongTermMemory(store)
    yield memory
    memory.close()


@dataclass(frozen=True)
class Hit:
    """A recall hit."""

    memory: Memory
    score: float


class ScanRecallEngine:
    """A real (if naive) recall engine: scans current memories for the query's words."""

    def __init__(self, memory: LongTermMemory) -> None:
        self.memory = memory
        self.calls: list[dict[str, object]] = []

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
    ) -> list[Hit]:
        """Memories containing any query word, scored by the share of words they contain."""
        self.calls.append({"project": project, "query": query, "mode": mode, "limit": limit})
        words = set(query.casefold().split())
        hits = []
        for memory in self.memory.memories(project, as_of=as_of):
            if (types and memory.type not in types) or memory.confidence < min_confidence:
                continue
            found = words & set(memory.content.casefold().split())
            if found:
                hits.append(Hit(memory, len(found) / len(words)))
        hits.sort(key=lambda h: -h.score)
        chosen = hits[:limit]
        self.memory.note_recalled([h.memory.id for h in chosen], project=project)
        return chosen


def data_quads(store: EmbeddedStore) -> list[Quad]:
    """Every quad outside the system-knowledge graph."""
    return [q for q in store.quads() if q.graph_name != SYSTEM_KNOWLEDGE]


def export_turtle(store: EmbeddedStore, path: Path) -> Path:
    """Write every data quad as one Turtle graph (the named graphs merged)."""
    triples = [q.triple for q in data_quads(store)]
    path.write_bytes(pyoxigraph.serialize(triples, format=RdfFormat.TURTLE) or b"")
    return path


def shacl_report(store: EmbeddedStore) -> tuple[bool, str]:
    """Validate the data with the shapes, the ontology given as pySHACL's ont_graph."""
    triples = [q.triple for q in data_quads(store)]
    text = (pyoxigraph.serialize(triples, format=RdfFormat.N_TRIPLES) or b"").decode()
    data = Graph().parse(data=text, format="nt")
    conforms, _, report = validate(
        data,
        shacl_graph=Graph().parse(shapes_path(), format="turtle"),
        ont_graph=Graph().parse(ontology_path(), format="turtle"),
        inference="none",
        abort_on_first=False,
        allow_warnings=False,
    )
    return bool(conforms), str(report)


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """A UTC datetime."""
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


class Clock:
    """A settable clock for deterministic times."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

"""Memory ↔ quads: how a `kg.memory.Memory` is written as typed triples and read back.

Every quad is built from pyoxigraph terms; nothing here formats user text into SPARQL.
`changeset_update` renders quads only through pyoxigraph's own term serialisation (the same
technique `EmbeddedStore.remove` uses), so a remove-and-add runs as one atomic update.

>>> content_key("  Use   Flask ", MemoryType.FACT) == content_key("use flask", MemoryType.FACT)
True
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from pyoxigraph import DefaultGraph, Literal, NamedNode, Quad

from kg.memory import Evidence, Memory, evidence_iri, memory_iri, project_iri, session_iri
from kg.memory import agent_iri as agent_node
from kg.namespaces import DATA, JIDO, PROV, RDF, XSD
from kg.terms import ConfidenceLevel, MemoryType, SourceType

__all__ = [
    "changeset_update",
    "content_key",
    "datetime_literal",
    "evidence_quads",
    "make_evidence",
    "memories_from_quads",
    "memory_quads",
    "normalise_content",
    "parse_datetime",
]

_DATETIME = XSD["dateTime"]
_TYPE = RDF["type"]
_EVIDENCE_CLASS = JIDO["Evidence"]
_BY_CLASS = {member.iri: member for member in MemoryType}
_BY_SOURCE = {member.iri: member for member in SourceType}
_CLASS_IRIS = {member: member.iri for member in MemoryType}
_SOURCE_IRIS = {member: member.iri for member in SourceType}
_LEVEL_IRIS = {member: member.iri for member in ConfidenceLevel}
_MEMORY_PREFIX = str(DATA) + "memory/"


def normalise_content(text: str) -> str:
    """Casefold and collapse whitespace: the form two contents are compared in."""
    return " ".join(text.casefold().split())


def content_key(content: str, memory_type: MemoryType) -> str:
    """The jido:contentKey of a memory: sha256 of its normalised content and its type."""
    digest = hashlib.sha256(f"{memory_type.value}\x1f{normalise_content(content)}".encode())
    return "sha256:" + digest.hexdigest()


def datetime_literal(value: datetime) -> Literal:
    """An xsd:dateTime literal in UTC (naive datetimes are taken as UTC)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return Literal(aware.astimezone(UTC).isoformat(), datatype=_DATETIME)


def parse_datetime(term: object) -> datetime:
    """Read an xsd:dateTime literal back as an aware datetime."""
    if not isinstance(term, Literal):
        raise ValueError(f"expected an xsd:dateTime literal, got {term!r}")
    value = datetime.fromisoformat(term.value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def make_evidence(*, text: str | None = None, source: str | None = None) -> Evidence:
    """A new piece of evidence with a fresh id (source: IRI of the message or tool call)."""
    if source is not None:
        NamedNode(source)  # raises ValueError on an invalid IRI before anything is written
    return Evidence(id=uuid.uuid4().hex, text=text, source=source)


# Built once: NamedNode construction shows up in the per-remember profile.
_P = {
    name: JIDO[name]
    for name in [
        "content", "confidenceScore", "hasConfidence", "hasSourceType", "hasTimestamp",
        "recordedAt", "assertedIn", "appliesToProject", "accessCount", "contentKey",
        "assertedBy", "rationale", "validFrom", "validUntil", "lastAccessed", "retiredAt",
        "retirementReason", "supersededBy", "derivedFrom", "evidenceText",
    ]
}


def memory_quads(memory: Memory, *, key: str, graph: NamedNode) -> list[Quad]:
    """The quads of a memory (without its evidence nodes) in `graph`."""
    s = memory.iri
    p = _P
    recorded = datetime_literal(memory.recorded_at)
    stamp = recorded if memory.timestamp == memory.recorded_at else datetime_literal(
        memory.timestamp
    )
    quads = [
        Quad(s, _TYPE, _CLASS_IRIS[memory.type], graph),
        Quad(s, p["content"], Literal(memory.content), graph),
        Quad(s, p["confidenceScore"], Literal(float(memory.confidence)), graph),
        Quad(s, p["hasConfidence"], _LEVEL_IRIS[memory.level], graph),
        Quad(s, p["hasSourceType"], _SOURCE_IRIS[memory.source_type], graph),
        Quad(s, p["hasTimestamp"], stamp, graph),
        Quad(s, p["recordedAt"], recorded, graph),
        Quad(s, p["assertedIn"], session_iri(memory.session), graph),
        Quad(s, p["appliesToProject"], project_iri(memory.project), graph),
        Quad(s, p["accessCount"], Literal(memory.access_count), graph),
        Quad(s, p["contentKey"], Literal(key), graph),
    ]
    if memory.agent:
        quads.append(Quad(s, p["assertedBy"], agent_node(memory.agent), graph))
    if memory.rationale is not None:
        quads.append(Quad(s, p["rationale"], Literal(memory.rationale), graph))
    optional: tuple[tuple[str, datetime | str | None], ...] = (
        ("validFrom", memory.valid_from),
        ("validUntil", memory.valid_until),
        ("lastAccessed", memory.last_accessed),
        ("retiredAt", memory.retired_at),
        ("retirementReason", memory.retirement_reason),
    )
    for name, value in optional:
        if isinstance(value, datetime):
            quads.append(Quad(s, p[name], datetime_literal(value), graph))
        elif value is not None:
            quads.append(Quad(s, p[name], Literal(value), graph))
    if memory.superseded_by:
        quads.append(Quad(s, p["supersededBy"], memory_iri(memory.superseded_by), graph))
    return quads


def evidence_quads(
    evidence: Evidence, *, memory: NamedNode, session: str, graph: NamedNode
) -> list[Quad]:
    """The quads of one evidence node and the jido:derivedFrom link from its memory."""
    e = evidence_iri(evidence.id)
    quads = [
        Quad(memory, JIDO["derivedFrom"], e, graph),
        Quad(e, _TYPE, _EVIDENCE_CLASS, graph),
        Quad(e, PROV["wasGeneratedBy"], session_iri(session), graph),
    ]
    if evidence.text is not None:
        quads.append(Quad(e, JIDO["evidenceText"], Literal(evidence.text), graph))
    if evidence.source is not None:
        quads.append(Quad(e, PROV["wasDerivedFrom"], NamedNode(evidence.source), graph))
    if evidence.recorded_at is not None:
        quads.append(Quad(e, JIDO["hasTimestamp"], datetime_literal(evidence.recorded_at), graph))
    return quads


def memories_from_quads(quads: Iterable[Quad], *, project: str) -> list[Memory]:
    """Rebuild every memory (with its evidence) from the quads of one long-term graph."""
    by_subject: dict[str, dict[str, list[object]]] = defaultdict(lambda: defaultdict(list))
    for quad in quads:
        if isinstance(quad.subject, NamedNode):
            by_subject[quad.subject.value][quad.predicate.value].append(quad.object)
    memories = []
    for subject, props in by_subject.items():
        if not subject.startswith(_MEMORY_PREFIX):
            continue
        memory = _memory(subject[len(_MEMORY_PREFIX):], props, by_subject, project)
        if memory is not None:
            memories.append(memory)
    return memories


def _memory(
    memory_id: str,
    props: dict[str, list[object]],
    everything: dict[str, dict[str, list[object]]],
    project: str,
) -> Memory | None:
    types = [_BY_CLASS[t] for t in props.get(_TYPE.value, ()) if t in _BY_CLASS]  # type: ignore[index]
    if not types or not props.get(JIDO["content"].value):
        return None  # a bare IRI mentioned by another memory (supersededBy), not a memory

    def one(name: str) -> object | None:
        values = props.get(JIDO[name].value)
        return values[0] if values else None

    def text(name: str) -> str | None:
        value = one(name)
        return value.value if isinstance(value, Literal) else None

    def when(name: str) -> datetime | None:
        value = one(name)
        return parse_datetime(value) if value is not None else None

    def iri_id(name: str) -> str | None:
        value = one(name)
        return value.value.rsplit("/", 1)[-1] if isinstance(value, NamedNode) else None

    evidence = []
    for node in props.get(JIDO["derivedFrom"].value, ()):
        assert isinstance(node, NamedNode)
        evidence.append(_evidence(node, everything.get(node.value, {})))
    source = one("hasSourceType")
    confidence = one("confidenceScore")
    count = one("accessCount")
    recorded = when("recordedAt")
    assert recorded is not None and isinstance(confidence, Literal)
    return Memory(
        id=memory_id,
        project=project,
        session=iri_id("assertedIn") or "",
        type=types[0],
        content=text("content") or "",
        confidence=float(confidence.value),
        source_type=_BY_SOURCE.get(source, SourceType.AGENT)
        if isinstance(source, NamedNode) else SourceType.AGENT,
        timestamp=when("hasTimestamp") or recorded,
        recorded_at=recorded,
        agent=iri_id("assertedBy"),
        rationale=text("rationale"),
        valid_from=when("validFrom"),
        valid_until=when("validUntil"),
        retired_at=when("retiredAt"),
        retirement_reason=text("retirementReason"),
        superseded_by=iri_id("supersededBy"),
        access_count=int(count.value) if isinstance(count, Literal) else 0,
        last_accessed=when("lastAccessed"),
        evidence=tuple(sorted(evidence, key=_evidence_order)),
    )


def _evidence(node: NamedNode, props: dict[str, list[object]]) -> Evidence:
    text = props.get(JIDO["evidenceText"].value)
    source = props.get(PROV["wasDerivedFrom"].value)
    stamp = props.get(JIDO["hasTimestamp"].value)
    return Evidence(
        id=node.value.rsplit("/", 1)[-1],
        text=text[0].value if text and isinstance(text[0], Literal) else None,
        source=source[0].value if source and isinstance(source[0], NamedNode) else None,
        recorded_at=parse_datetime(stamp[0]) if stamp else None,
    )


def _evidence_order(evidence: Evidence) -> tuple[datetime, str]:
    return (evidence.recorded_at or datetime.min.replace(tzinfo=UTC), evidence.id)


def changeset_update(remove: Sequence[Quad], add: Sequence[Quad]) -> str:
    """One SPARQL update that removes then adds the given quads (rendered from typed terms)."""
    parts = []
    if remove:
        parts.append("DELETE DATA { " + " ".join(map(_pattern, remove)) + " }")
    if add:
        parts.append("INSERT DATA { " + " ".join(map(_pattern, add)) + " }")
    return " ;\n".join(parts)


def _pattern(quad: Quad) -> str:
    triple = f"{quad.subject} {quad.predicate} {quad.object} ."
    if isinstance(quad.graph_name, DefaultGraph):
        return triple
    return f"GRAPH {quad.graph_name} {{ {triple} }}"


"""Looks inside a store directory: does it open, what does it hold, is every memory complete."""

from __future__ import annotations

import hashlib
import io
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pyoxigraph import NamedNode, RdfFormat

from kg.namespaces import DATA, JIDO, RDF
from kg.store import EmbeddedStore

__all__ = ["REQUIRED", "Inspection", "inspect_store", "seed_store"]

# The triples every stored memory must have (ontology/shapes.ttl: sh:minCount 1).
REQUIRED = tuple(p.value for p in (
    RDF["type"], JIDO["content"], JIDO["confidenceScore"], JIDO["hasConfidence"],
    JIDO["hasSourceType"], JIDO["hasTimestamp"], JIDO["recordedAt"], JIDO["assertedIn"],
    JIDO["appliesToProject"], JIDO["contentKey"],
))
_MEMORY = str(DATA) + "memory/"
# Subjects written by the durability and soak checks' SPARQL updates.
PROBE_PREDICATE = NamedNode("urn:jido-kg:reliability:seq")


@dataclass
class Inspection:
    """What a store directory holds."""

    opened: bool
    error: str
    quads: int
    memories: dict[str, str]  # memory id -> content
    incomplete: dict[str, list[str]]  # memory id -> missing required predicates
    probes: set[str]  # subjects of reliability probe triples
    digest: str  # sha256 of the sorted N-Quads dump ("" unless asked)


def inspect_store(path: Path, *, digest: bool = False) -> Inspection:
    """Open the store (proving it opens), read its memories and probes, then release it."""
    try:
        store = EmbeddedStore(path)
    except Exception as exc:  # any failure to open is the finding, not a crash of the check
        return Inspection(False, f"{type(exc).__name__}: {exc}", 0, {}, {}, set(), "")
    try:
        props: dict[str, set[str]] = defaultdict(set)
        contents: dict[str, str] = {}
        for quad in store.quads():
            subject = str(getattr(quad.subject, "value", ""))
            if subject.startswith(_MEMORY):
                mid = subject[len(_MEMORY):]
                props[mid].add(quad.predicate.value)
                if quad.predicate.value == JIDO["content"].value:
                    contents[mid] = str(getattr(quad.object, "value", ""))
        # Evidence and supersededBy targets are memory-namespace IRIs only when they are
        # memories; a memory is whatever has a type or content.
        incomplete = {mid: [p for p in REQUIRED if p not in have]
                      for mid, have in props.items()
                      if (RDF["type"].value in have or JIDO["content"].value in have)
                      and any(p not in have for p in REQUIRED)}
        probes = {str(getattr(q.subject, "value", ""))
                  for q in store.quads(None, PROBE_PREDICATE, None, None)}
        text = ""
        if digest:
            out = io.BytesIO()
            store.dump(out, format=RdfFormat.N_QUADS)
            text = hashlib.sha256(b"\n".join(sorted(out.getvalue().splitlines()))).hexdigest()
        return Inspection(True, "", len(store), contents, incomplete, probes, text)
    finally:
        store.close()


def seed_store(path: Path, n: int, *, seed: int = 7) -> None:
    """Fill a new store directory with `n` generated memories (the benchmark generator's data)."""
    from bench.generator import build_store

    build_store(path, n, seed, progress=False)

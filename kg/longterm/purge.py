"""What a hard delete removes: every quad of a memory, a session or a project (MISSION §3).

Purge is for data-removal requests, so it reaches every trace of the scope: the memory's own
quads, its evidence nodes, links to it from other memories (jido:supersededBy), and for a
session also its record and the evidence it added to other sessions' memories.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import NamedNode, Quad

from kg.graphs import long_term, sessions
from kg.memory import memory_iri, session_iri
from kg.namespaces import JIDO
from kg.resources import query_text
from kg.store.base import Store

__all__ = ["memory_scope", "session_scope"]

_DERIVED_FROM = JIDO["derivedFrom"]


def memory_scope(store: Store, graph: NamedNode, memory_ids: Iterable[str]) -> list[Quad]:
    """Every quad in `graph` that belongs to, or points at, the given memories."""
    found: dict[str, Quad] = {}
    for memory_id in memory_ids:
        iri = memory_iri(memory_id)
        own = list(store.quads(iri, None, None, graph))
        for quad in own:
            found[str(quad)] = quad
            if quad.predicate == _DERIVED_FROM and isinstance(quad.object, NamedNode):
                found.update((str(q), q) for q in store.quads(quad.object, None, None, graph))
        found.update((str(q), q) for q in store.quads(None, None, iri, graph))
    return list(found.values())


def session_scope(store: Store, project: str, session_id: str) -> tuple[list[str], list[Quad]]:
    """The ids of a session's memories and every quad of the session's scope in the project."""
    graph = long_term(project)
    s = session_iri(session_id)
    bound = {"g": graph, "session": s}
    memory_ids = [
        row["m"].value.rsplit("/", 1)[-1]
        for row in store.query(query_text("session_memories"), substitutions=bound)  # type: ignore[union-attr]
    ]
    found = {str(q): q for q in memory_scope(store, graph, memory_ids)}
    for row in store.query(query_text("session_evidence"), substitutions=bound):  # type: ignore[union-attr]
        evidence = row["e"]
        found.update((str(q), q) for q in store.quads(evidence, None, None, graph))
        found.update((str(q), q) for q in store.quads(None, None, evidence, graph))
    record = sessions(project)
    found.update((str(q), q) for q in store.quads(s, None, None, record))
    found.update((str(q), q) for q in store.quads(None, None, s, record))
    return memory_ids, list(found.values())

"""The memory explorer's reads around one memory: supersession chain, neighbourhood, triples.

>>> from kg.store import EmbeddedStore
>>> from kg.longterm import LongTermMemory
>>> ltm = LongTermMemory(EmbeddedStore())
>>> old = ltm.remember("Use Flask", project="demo", session="s1").memory
>>> new = ltm.remember("Use Quart", project="demo", session="s1").memory
>>> _ = ltm.forget(old.id, project="demo", reason="async views", replacement_id=new.id)
>>> chain = MemoryGraph(ltm.store, ltm).chain("demo", new)
>>> [m.content for m in chain.older]
['Use Flask']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyoxigraph
from pyoxigraph import Literal, NamedNode, QuerySolutions, QueryTriples, RdfFormat

from kg.graphs import long_term
from kg.longterm import LongTermMemory
from kg.longterm.errors import MemoryNotFoundError
from kg.memory import Memory, memory_iri, session_iri
from kg.namespaces import DATA, JIDO, PROV, RDF, RDFS, XSD
from kg.resources import query_text
from kg.store.base import Store, Term
from kg.store.sparql_terms import bind_values

__all__ = ["PREFIXES", "Chain", "Edge", "MemoryGraph", "Neighbourhood", "Node"]

MAX_CHAIN = 20
# No prefix for data IRIs: Turtle would escape the '/' of every local name.
PREFIXES = {"jido": str(JIDO), "prov": str(PROV), "rdf": str(RDF), "rdfs": str(RDFS),
            "xsd": str(XSD)}
_KINDS = (("memory/", "memory"), ("session/", "session"), ("agent/", "agent"),
          ("evidence/", "evidence"), ("project/", "project"))


@dataclass(frozen=True, slots=True)
class Chain:
    """What replaced a memory (newer, nearest first) and what it replaced (older, nearest first)."""

    newer: list[Memory] = field(default_factory=list)
    older: list[Memory] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Node:
    """A node of the neighbourhood: its IRI, kind (memory, session, evidence …) and label."""

    iri: str
    kind: str
    label: str
    memory: Memory | None = None


@dataclass(frozen=True, slots=True)
class Edge:
    """A link between two nodes, named by its property's local name."""

    source: str
    relation: str
    target: str


@dataclass(frozen=True, slots=True)
class Neighbourhood:
    """A memory's neighbourhood: the memory first, then the nodes around it, and the edges."""

    nodes: list[Node]
    edges: list[Edge]


class MemoryGraph:
    """Graph reads around one memory of a project."""

    def __init__(self, store: Store, memories: LongTermMemory) -> None:
        self.store = store
        self.memories = memories

    def replaces(self, project: str, memory: Memory) -> list[Memory]:
        """The memories this one superseded (they name it with jido:supersededBy)."""
        rows = self._select("explore_replaces", g=long_term(project), memory=memory.iri)
        return [m for m in (self._memory(project, row["old"]) for row in rows) if m is not None]

    def chain(self, project: str, memory: Memory) -> Chain:
        """Follow jido:supersededBy forwards and backwards from the memory (cycles stop it)."""
        seen = {memory.id}
        newer: list[Memory] = []
        current = memory
        while current.superseded_by and len(newer) < MAX_CHAIN:
            found = self._memory(project, memory_iri(current.superseded_by))
            if found is None or found.id in seen:
                break
            seen.add(found.id)
            newer.append(found)
            current = found
        older: list[Memory] = []
        frontier = [memory]
        while frontier and len(older) < MAX_CHAIN:
            following: list[Memory] = []
            for node in frontier:
                for old in self.replaces(project, node):
                    if old.id not in seen:
                        seen.add(old.id)
                        older.append(old)
                        following.append(old)
            frontier = following
        return Chain(newer, older[:MAX_CHAIN])

    def neighbourhood(self, project: str, memory: Memory) -> Neighbourhood:
        """The memory's session, agent, evidence, sources, linked and same-session memories."""
        graph = long_term(project)
        nodes: dict[str, Node] = {memory.iri.value: Node(memory.iri.value, "memory",
                                                        memory.content, memory)}
        edges: list[Edge] = []
        for row in self._select("explore_neighbourhood", g=graph, memory=memory.iri):
            source, relation, target = row["from"], row["relation"], row["to"]
            for term in (source, target):
                if isinstance(term, NamedNode) and term.value not in nodes:
                    nodes[term.value] = self._node(project, term)
            if isinstance(source, NamedNode) and isinstance(target, NamedNode):
                edges.append(Edge(source.value, _local(relation), target.value))
        session = session_iri(memory.session)
        for row in self._select("explore_session_neighbours", g=graph, memory=memory.iri,
                                session=session):
            other = row["other"]
            if isinstance(other, NamedNode) and other.value not in nodes:
                nodes[other.value] = self._node(project, other)
                edges.append(Edge(other.value, "assertedIn", session.value))
        return Neighbourhood(list(nodes.values()), edges)

    def turtle(self, project: str, memory: Memory) -> str:
        """The memory's triples and its evidence's, as Turtle."""
        result = self.store.query(query_text("explore_memory_triples"),
                                  substitutions={"g": long_term(project), "memory": memory.iri})
        assert isinstance(result, QueryTriples)
        data = pyoxigraph.serialize(result, format=RdfFormat.TURTLE, prefixes=PREFIXES)
        return (data or b"").decode()

    def triples_query(self, project: str, memory: Memory) -> str:
        """The same CONSTRUCT with its values written in (for the query page)."""
        return bind_values(query_text("explore_memory_triples"),
                           {"g": long_term(project), "memory": memory.iri})

    def properties(self, node: NamedNode) -> list[tuple[str, str]]:
        """What the store says about a node (a message, a tool call): (property, value)."""
        rows = self._select("explore_node", node=node)
        return [(_local(row["p"]), _text(row["o"])) for row in rows]

    def _node(self, project: str, term: NamedNode) -> Node:
        kind = next((k for prefix, k in _KINDS if term.value.startswith(str(DATA) + prefix)),
                    "source")
        if kind == "memory":
            found = self._memory(project, term)
            if found is not None:
                return Node(term.value, kind, found.content, found)
        return Node(term.value, kind, term.value.rsplit("/", 1)[-1])

    def _memory(self, project: str, term: Term | None) -> Memory | None:
        if not isinstance(term, NamedNode) or not term.value.startswith(str(DATA) + "memory/"):
            return None
        try:
            return self.memories.get(term.value.rsplit("/", 1)[-1], project=project,
                                     include_retired=True)
        except MemoryNotFoundError:
            return None

    def _select(self, name: str, **bound: Term) -> list[dict[str, Term]]:
        result = self.store.query(query_text(name), substitutions=bound)
        assert isinstance(result, QuerySolutions)
        names = [v.value for v in result.variables]
        return [{n: row[n] for n in names if row[n] is not None} for row in result]


def _local(term: Term | None) -> str:
    if isinstance(term, NamedNode):
        return term.value.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
    return ""


def _text(term: Term | None) -> str:
    if isinstance(term, Literal | NamedNode):
        return term.value
    return str(term)

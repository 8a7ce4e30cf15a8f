"""Work-session, agent and project nodes in each project's `sessions` graph (MISSION §3).

A session record is a jido:WorkSession with sessionId, startedAt, endedAt (once closed),
hasStatus (SessionActive/Paused/Closed), appliesToProject and prov:wasAssociatedWith its agent.
(`jido:assertedBy` has domain jido:MemoryItem, which is disjoint with jido:WorkSession, so using
it on a session would make the data inconsistent; PROV-O's activity→agent link is the right one.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

from pyoxigraph import Literal, NamedNode, Quad

from kg.graphs import sessions
from kg.longterm.triples import changeset_update, datetime_literal
from kg.memory import agent_iri, project_iri, session_iri
from kg.namespaces import JIDO, PROV, RDF
from kg.store.base import Store
from kg.terms import SessionStatus, validate_identifier, validate_session_id

__all__ = ["SessionRecords", "identity_quads", "status_iri"]

_STATUS = {
    SessionStatus.ACTIVE: JIDO["SessionActive"],
    SessionStatus.PAUSED: JIDO["SessionPaused"],
    SessionStatus.CLOSED: JIDO["SessionClosed"],
}
_BY_IRI = {iri.value: status for status, iri in _STATUS.items()}
_HAS_STATUS = JIDO["hasStatus"]


def status_iri(status: SessionStatus) -> NamedNode:
    """The jido:SessionStatus individual of a status."""
    return _STATUS[status]


def identity_quads(project: str, agent: str | None) -> list[Quad]:
    """The jido:Project node (and jido:Agent node) of a project's `sessions` graph."""
    graph = sessions(project)
    p = project_iri(project)
    quads = [
        Quad(p, RDF["type"], JIDO["Project"], graph),
        Quad(p, JIDO["projectId"], Literal(project), graph),
    ]
    if agent is not None:
        a = agent_iri(agent)
        quads += [
            Quad(a, RDF["type"], JIDO["Agent"], graph),
            Quad(a, JIDO["agentId"], Literal(agent), graph),
        ]
    return quads


class SessionRecords:
    """Writes and updates session records; remembers which records already exist."""

    def __init__(self, store: Store, *, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = threading.Lock()
        self._known: set[tuple[str, str, str | None]] = set()

    def started(
        self, session_id: str, *, project: str, agent: str | None = None,
        at: datetime | None = None,
    ) -> None:
        """Write the session's record with status active (replacing an older record)."""
        self._set(session_id, project, agent, SessionStatus.ACTIVE, at, restart=True)

    def paused(self, session_id: str, *, project: str, agent: str | None = None,
               at: datetime | None = None) -> None:
        """Mark the session paused."""
        self._set(session_id, project, agent, SessionStatus.PAUSED, at)

    def resumed(self, session_id: str, *, project: str, agent: str | None = None,
                at: datetime | None = None) -> None:
        """Mark the session active again."""
        self._set(session_id, project, agent, SessionStatus.ACTIVE, at)

    def closed(self, session_id: str, *, project: str, agent: str | None = None,
               at: datetime | None = None) -> None:
        """Mark the session closed and set its endedAt."""
        self._set(session_id, project, agent, SessionStatus.CLOSED, at)

    def status(self, session_id: str, *, project: str) -> SessionStatus | None:
        """The recorded status of a session, or None if it has no record."""
        for quad in self.store.quads(session_iri(session_id), _HAS_STATUS, None, sessions(project)):
            return _BY_IRI.get(quad.object.value) if isinstance(quad.object, NamedNode) else None
        return None

    def missing_quads(
        self, session_id: str, *, project: str, agent: str | None, at: datetime
    ) -> list[Quad]:
        """What a memory write must add so its session, agent and project have nodes."""
        if (project, session_id, agent) in self._known:
            return []
        quads = identity_quads(project, agent)
        if self.status(session_id, project=project) is None:
            quads += self._session_node(session_id, project, agent, SessionStatus.ACTIVE, at)
        elif agent is not None:
            quads.append(self._association(session_id, project, agent))
        return quads

    def mark_known(self, session_id: str, *, project: str, agent: str | None) -> None:
        """Note (after a committed write) that these nodes exist."""
        with self._lock:
            self._known.add((project, session_id, agent))

    def forget_cache(self, *, project: str | None = None, session_id: str | None = None) -> None:
        """Drop cached knowledge after a purge or bulk import (all of it when no filter)."""
        with self._lock:
            self._known = {
                k for k in self._known
                if not ((project is None or k[0] == project)
                        and (session_id is None or k[1] == session_id))
            }

    def _set(self, session_id: str, project: str, agent: str | None, status: SessionStatus,
             at: datetime | None, *, restart: bool = False) -> None:
        validate_session_id(session_id)
        validate_identifier(project, name="project id")
        if agent is not None:
            validate_identifier(agent, name="agent id")
        when = at or self._clock()
        graph = sessions(project)
        s = session_iri(session_id)
        old = list(self.store.quads(s, None, None, graph))
        if not old:
            add = identity_quads(project, agent) + self._session_node(
                session_id, project, agent, status, when
            )
            self.store.add(add)
            return
        replaced = {_HAS_STATUS.value, JIDO["endedAt"].value}
        if restart:
            replaced |= {JIDO["startedAt"].value, PROV["wasAssociatedWith"].value}
        remove = [q for q in old if q.predicate.value in replaced]
        add = [Quad(s, _HAS_STATUS, _STATUS[status], graph)]
        if restart:
            add.append(Quad(s, JIDO["startedAt"], datetime_literal(when), graph))
        if status is SessionStatus.CLOSED:
            add.append(Quad(s, JIDO["endedAt"], datetime_literal(when), graph))
        if agent is not None:
            add += identity_quads(project, agent)
            add.append(self._association(session_id, project, agent))
        self.store.update(changeset_update(remove, add))

    @staticmethod
    def _association(session_id: str, project: str, agent: str) -> Quad:
        return Quad(session_iri(session_id), PROV["wasAssociatedWith"], agent_iri(agent),
                    sessions(project))

    @staticmethod
    def _session_node(session_id: str, project: str, agent: str | None,
                      status: SessionStatus, at: datetime) -> list[Quad]:
        graph = sessions(project)
        s = session_iri(session_id)
        quads = [
            Quad(s, RDF["type"], JIDO["WorkSession"], graph),
            Quad(s, JIDO["sessionId"], Literal(session_id), graph),
            Quad(s, JIDO["startedAt"], datetime_literal(at), graph),
            Quad(s, _HAS_STATUS, _STATUS[status], graph),
            Quad(s, JIDO["appliesToProject"], project_iri(project), graph),
        ]
        if status is SessionStatus.CLOSED:
            quads.append(Quad(s, JIDO["endedAt"], datetime_literal(at), graph))
        if agent is not None:
            quads.append(Quad(s, PROV["wasAssociatedWith"], agent_iri(agent), graph))
        return quads

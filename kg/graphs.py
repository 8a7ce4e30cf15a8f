"""The named-graph layout of the dataset, as documented in the README for SPARQL users."""

from __future__ import annotations

import re

from pyoxigraph import NamedNode

from kg.namespaces import GRAPH
from kg.terms import validate_identifier

__all__ = [
    "SYSTEM_KNOWLEDGE",
    "codebase",
    "conversation_history",
    "long_term",
    "project_graphs",
    "project_of_graph",
    "sessions",
]

SYSTEM_KNOWLEDGE = GRAPH["system-knowledge"]
_PROJECT_GRAPH_RE = re.compile(re.escape(str(GRAPH)) + r"project/([A-Za-z0-9_-]{1,128})/[a-z-]+")


def _project_graph(project: str, kind: str) -> NamedNode:
    return GRAPH[f"project/{validate_identifier(project, name='project id')}/{kind}"]


def long_term(project: str) -> NamedNode:
    """The graph of a project's promoted memories (shared by all its sessions)."""
    return _project_graph(project, "long-term")


def sessions(project: str) -> NamedNode:
    """The graph of a project's session records."""
    return _project_graph(project, "sessions")


def conversation_history(project: str) -> NamedNode:
    """The optional graph of a project's conversation messages."""
    return _project_graph(project, "conversation-history")


def codebase(project: str) -> NamedNode:
    """The optional graph describing a project's code."""
    return _project_graph(project, "codebase")


def project_graphs(project: str) -> list[NamedNode]:
    """Every graph that belongs to a project (what a project-scoped token may see)."""
    return [long_term(project), sessions(project), conversation_history(project), codebase(project)]


def project_of_graph(graph: NamedNode) -> str | None:
    """Return the project a graph belongs to, or None for graphs outside any project."""
    match = _PROJECT_GRAPH_RE.fullmatch(graph.value)
    return match.group(1) if match else None

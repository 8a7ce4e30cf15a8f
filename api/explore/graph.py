"""A memory's neighbourhood drawn as an SVG on the server: the memory in the middle, its
session, agent, evidence, sources and neighbouring memories on a circle around it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from flask import Response, url_for

from api.explore.blueprint import blueprint, memory_graph, page, project_access
from api.memory import memory_service
from kg.explore_graph import Edge, Node

__all__ = ["Placed", "layout"]

WIDTH = 960
HEIGHT = 640
RADIUS = 240
_ORDER = {"session": 0, "agent": 1, "evidence": 2, "source": 3, "project": 4, "memory": 5}


@dataclass(frozen=True, slots=True)
class Placed:
    """A node with its position, its short label and where it links to."""

    node: Node
    x: float
    y: float
    short: str
    href: str | None


@dataclass(frozen=True, slots=True)
class Line:
    """An edge between two placed nodes, with its label's position."""

    edge: Edge
    x1: float
    y1: float
    x2: float
    y2: float


def _short(text: str, limit: int = 26) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def layout(project: str, nodes: list[Node], edges: list[Edge]) -> tuple[list[Placed], list[Line]]:
    """The first node in the middle, the others evenly on a circle, grouped by kind."""
    cx, cy = WIDTH / 2, HEIGHT / 2
    centre, others = nodes[0], sorted(nodes[1:], key=lambda n: (_ORDER.get(n.kind, 9), n.iri))
    placed = [Placed(centre, cx, cy, _short(centre.label, 34), None)]
    for i, node in enumerate(others):
        angle = -math.pi / 2 + 2 * math.pi * i / max(1, len(others))
        href = (url_for("explore.graph", project=project, memory_id=node.memory.id)
                if node.memory is not None else None)
        placed.append(Placed(node, cx + RADIUS * math.cos(angle),
                             cy + RADIUS * 0.95 * math.sin(angle), _short(node.label), href))
    where = {p.node.iri: p for p in placed}
    lines = [_trimmed(e, where[e.source], where[e.target])
             for e in edges if e.source in where and e.target in where]
    return placed, lines


def _trimmed(edge: Edge, a: Placed, b: Placed, gap: float = 34.0) -> Line:
    """The edge from a's border to b's (not centre to centre, where the shapes would hide it)."""
    dx, dy = b.x - a.x, b.y - a.y
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    return Line(edge, a.x + ux * gap, a.y + uy * gap, b.x - ux * gap, b.y - uy * gap)


@blueprint.get("/<project>/memories/<memory_id>/graph")
def graph(project: str, memory_id: str) -> Response:
    """The memory's neighbourhood as an SVG, with the same links listed as text."""
    project_access(project)
    memory = memory_service().long_term.get(memory_id, project=project, include_retired=True)
    found = memory_graph().neighbourhood(project, memory)
    placed, lines = layout(project, found.nodes, found.edges)
    return page("graph.html", project=project, memory=memory, placed=placed, lines=lines,
                width=WIDTH, height=HEIGHT, labels={p.node.iri: p for p in placed})

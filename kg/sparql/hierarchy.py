"""The class and property hierarchy of the Jido ontology, closed under rdfs:subClassOf/…Property."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import pyoxigraph
from pyoxigraph import NamedNode, Quad, QuerySolutions

from kg.resources import ontology_path, query_text

__all__ = ["Hierarchy", "jido_hierarchy"]


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Strict (sub, super) pairs of classes and of properties, transitively closed."""

    classes: tuple[tuple[NamedNode, NamedNode], ...]
    properties: tuple[tuple[NamedNode, NamedNode], ...]
    _below: dict[tuple[str, str], tuple[NamedNode, ...]] = field(default_factory=dict)

    def subclasses(self, iri: str) -> tuple[NamedNode, ...]:
        """The strict subclasses of the class `iri` (empty if it has none)."""
        return self._under("class", iri)

    def subproperties(self, iri: str) -> tuple[NamedNode, ...]:
        """The strict subproperties of the property `iri` (empty if it has none)."""
        return self._under("property", iri)

    def _under(self, kind: str, iri: str) -> tuple[NamedNode, ...]:
        if not self._below:
            for name, pairs in (("class", self.classes), ("property", self.properties)):
                grouped: dict[str, list[NamedNode]] = {}
                for sub, sup in pairs:
                    grouped.setdefault(sup.value, []).append(sub)
                for sup_iri, subs in grouped.items():
                    self._below[(name, sup_iri)] = tuple(sorted(subs, key=lambda n: n.value))
        return self._below.get((kind, iri), ())


@cache
def jido_hierarchy() -> Hierarchy:
    """The hierarchy of ontology/jido.ttl, read once per process."""
    scratch = pyoxigraph.Store()
    scratch.extend(Quad(q.subject, q.predicate, q.object)
                   for q in pyoxigraph.parse(path=str(ontology_path())))
    rows = scratch.query(query_text("ontology_hierarchy"))
    assert isinstance(rows, QuerySolutions)
    found: dict[str, list[tuple[NamedNode, NamedNode]]] = {"class": [], "property": []}
    for row in rows:
        sub, sup = row["sub"], row["super"]
        assert isinstance(sub, NamedNode) and isinstance(sup, NamedNode)
        found[str(row["kind"].value)].append((sub, sup))
    return Hierarchy(tuple(found["class"]), tuple(found["property"]))

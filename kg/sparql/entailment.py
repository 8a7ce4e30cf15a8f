"""RDFS entailment on request: a query rewritten to answer as if every graph held the
rdfs:subClassOf / rdfs:subPropertyOf consequences of the Jido ontology (rules rdfs9, rdfs7).

Each triple pattern that such a consequence could match is replaced, in place, by a sub-select
that finds it through the asserted triples: `?m a jido:Decision` becomes

    { SELECT DISTINCT ?m WHERE { ?m a ?e . VALUES ?e { jido:Decision jido:Architectural… } } }

so a memory is found once however many matching classes it carries, as in the entailed graph.
A variable class or predicate is joined with VALUES of the (sub, super) pairs. Patterns that
cannot be rewritten faithfully (a blank node in an entailed triple, rdf:type or a
super-property inside a property path, annotations) are refused with a 400 rather than
answered wrongly. Without the parameter nothing is rewritten: plain SPARQL.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyoxigraph import NamedNode

from kg.sparql.hierarchy import Hierarchy, jido_hierarchy
from kg.sparql.pattern_reader import PatternReader
from kg.sparql.triple_pattern import PatternError, Term, Triple, Verb
from kg.store.guard import measure
from kg.store.lexer import Token, tokenize

__all__ = ["REGIMES", "EntailmentError", "entail", "regime"]

# The protocol parameter's values and the W3C regime each names.
REGIMES = {"rdfs": "http://www.w3.org/ns/entailment/RDFS"}
_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


class EntailmentError(PatternError):
    """An entailment request the endpoint cannot honour (unknown regime, unsupported pattern)."""

    code = "entailment_unsupported"


def regime(values: Sequence[str]) -> str | None:
    """The `entailment` parameter's value checked (None when absent); 400 if unknown."""
    if not values:
        return None
    if len(values) > 1:
        raise EntailmentError("send the entailment parameter once",
                              details={"parameter": "entailment"})
    if values[0] not in REGIMES:
        raise EntailmentError(
            f"unknown entailment regime {values[0][:40]!r}; this endpoint supports: "
            f"{', '.join(REGIMES)}", details={"parameter": "entailment", "supported": [*REGIMES]})
    return values[0]


def entail(text: str, *, base: str | None = None, hierarchy: Hierarchy | None = None) -> str:
    """`text` rewritten to answer under RDFS entailment with the Jido ontology."""
    if measure(text).divergent:
        raise EntailmentError(
            "entailment cannot read a text where a less-than right after a value also reads as "
            "an IRI holding a quote or '#': put a space after that '<'")
    tokens = list(tokenize(text))
    if any(t.is_keyword("INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE",
                        "COPY") for t in tokens):
        raise EntailmentError("entailment applies to queries, not to updates")
    rewriter = _Rewriter(text, tokens, base, hierarchy=hierarchy or jido_hierarchy())
    rewriter.walk()
    result = text
    for start, end, replacement in sorted(rewriter.edits, key=lambda e: e[0], reverse=True):
        result = f"{result[:start]}{replacement}{result[end:]}"
    return result


class _Rewriter(PatternReader):
    def __init__(self, text: str, tokens: list[Token], base: str | None, *,
                 hierarchy: Hierarchy) -> None:
        super().__init__(text, tokens, base)
        self.hierarchy = hierarchy
        self.fresh = 0
        self.prefix = "__entailed"
        while self.prefix in text:
            self.prefix += "_"

    def rewrite_subject(self, subject: Term, items: list[tuple[Verb, list[Term]]],
                        nested: list[Triple]) -> str | None:
        for triple in nested:
            if self._entailed(triple.verb, triple.object):
                raise EntailmentError(
                    "a blank-node property list or collection holds a pattern entailment "
                    f"changes ({self.source(triple.verb.start, triple.verb.end)[:60]}): "
                    "write its subject as a variable",
                    details={"position": self.tokens[triple.verb.start].start})
        kept: list[str] = []
        added: list[str] = []
        for verb, objects in items:
            plain = []
            for term in objects:
                if self._entailed(verb, term):
                    added.append(self._replacement(subject, verb, term))
                else:
                    plain.append(self.source(term.start, term.end))
            if plain:
                kept.append(f"{self.source(verb.start, verb.end)} {', '.join(plain)}")
        if not added:
            return None
        head = [f"{self.source(subject.start, subject.end)} {' ; '.join(kept)} ."] if kept else []
        return " ".join([*head, *added])

    # -- which patterns entailment changes -----------------------------------------------------

    def _entailed(self, verb: Verb, term: Term) -> bool:
        if verb.kind == "path":
            if verb.negated or any(self._widened(iri) for iri in verb.iris):
                raise EntailmentError(
                    "entailment does not reach into property paths with rdf:type, a negated "
                    f"property set or a super-property ({self.source(verb.start, verb.end)[:60]})"
                    ": write the step as its own triple pattern",
                    details={"position": self.tokens[verb.start].start})
            return False
        if verb.kind == "var":
            return True
        iri = verb.iris[0]
        if iri == _TYPE:
            return term.kind == "var" or (
                term.iri is not None and bool(self.hierarchy.subclasses(term.iri)))
        return bool(self.hierarchy.subproperties(iri))

    def _widened(self, iri: str) -> bool:
        return iri == _TYPE or bool(self.hierarchy.subproperties(iri))

    # -- the rewrite ---------------------------------------------------------------------------

    def _replacement(self, subject: Term, verb: Verb, term: Term) -> str:
        for part, name in ((subject, "subject"), (term, "object")):
            if part.kind in ("bnode", "node"):
                raise EntailmentError(
                    f"the {name} of an entailed pattern is a blank node "
                    f"({self.source(part.start, part.end)[:60]}): write it as a variable",
                    details={"position": self.tokens[part.start].start})
        s, o = self.source(subject.start, subject.end), self.source(term.start, term.end)
        if verb.kind == "var":
            p = self.source(verb.start, verb.end)
            if p[1:] in (s[1:] if subject.kind == "var" else None,
                         o[1:] if term.kind == "var" else None):
                raise EntailmentError(
                    f"entailment cannot rewrite a pattern whose predicate variable {p} is also "
                    "its subject or object", details={"position": self.tokens[verb.start].start})
            inner = self._any_predicate(s, p, o, term)
        elif verb.iris[0] == _TYPE and term.kind == "var":
            e = self._var()
            inner = (f"{{ {s} <{_TYPE}> {o} }} UNION {{ {s} <{_TYPE}> {e} . "
                     f"VALUES ({e} {o}) {{ {_pairs(self.hierarchy.classes)} }} }}")
        elif verb.iris[0] == _TYPE:
            assert term.iri is not None
            e = self._var()
            members = [NamedNode(term.iri), *self.hierarchy.subclasses(term.iri)]
            inner = f"{s} <{_TYPE}> {e} . VALUES {e} {{ {_list(members)} }}"
        else:
            e = self._var()
            members = [NamedNode(verb.iris[0]), *self.hierarchy.subproperties(verb.iris[0])]
            inner = f"{s} {e} {o} . VALUES {e} {{ {_list(members)} }}"
        names = [f"?{t.text[1:]}" for t in (self.tokens[subject.start], self.tokens[verb.start],
                                           self.tokens[term.start]) if t.kind == "var"]
        names = list(dict.fromkeys(names))
        if not names:
            return f"FILTER EXISTS {{ {inner} }}"
        return f"{{ SELECT DISTINCT {' '.join(names)} WHERE {{ {inner} }} }}"

    def _any_predicate(self, s: str, p: str, o: str, term: Term) -> str:
        e = self._var()
        pairs = _pairs(self.hierarchy.properties)
        branches = [f"{{ {s} {p} {o} }}", f"{{ {s} {e} {o} . VALUES ({e} {p}) {{ {pairs} }} }}"]
        if term.kind == "var":
            f = self._var()
            branches.append(f"{{ {s} <{_TYPE}> {f} . VALUES ({f} {o}) "
                            f"{{ {_pairs(self.hierarchy.classes)} }} BIND(<{_TYPE}> AS {p}) }}")
        elif term.iri is not None and self.hierarchy.subclasses(term.iri):
            f = self._var()
            branches.append(f"{{ {s} <{_TYPE}> {f} . VALUES {f} "
                            f"{{ {_list(self.hierarchy.subclasses(term.iri))} }} "
                            f"BIND(<{_TYPE}> AS {p}) }}")
        return " UNION ".join(branches)

    def _var(self) -> str:
        self.fresh += 1
        return f"?{self.prefix}{self.fresh}"


def _list(nodes: Sequence[NamedNode]) -> str:
    return " ".join(str(n) for n in nodes)


def _pairs(pairs: Sequence[tuple[NamedNode, NamedNode]]) -> str:
    return " ".join(f"({sub} {sup})" for sub, sup in pairs)


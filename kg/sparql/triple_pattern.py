"""The pieces of a triple pattern as the pattern reader sees them (token spans, not text)."""

from __future__ import annotations

from dataclasses import dataclass

from kg.errors import ValidationError

__all__ = ["PatternError", "Term", "Triple", "Verb"]


class PatternError(ValidationError):
    """A pattern the rewrite cannot read or cannot rewrite faithfully."""

    code = "entailment_unsupported"


@dataclass(frozen=True, slots=True)
class Term:
    """A subject or object: its kind (var, iri, literal, bnode, node) and its token span."""

    kind: str
    start: int
    end: int
    iri: str | None = None


@dataclass(frozen=True, slots=True)
class Verb:
    """A predicate: a variable, an IRI (`a` included) or a path, with the IRIs a path uses."""

    kind: str
    start: int
    end: int
    iris: tuple[str, ...] = ()
    negated: bool = False


@dataclass(frozen=True, slots=True)
class Triple:
    """One triple pattern of a subject's property list, with the object's place in its list."""

    subject: Term
    verb: Verb
    object: Term
    nested: bool  # inside a blank-node property list or collection

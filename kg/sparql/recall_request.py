"""One recall request of a recall SERVICE block, checked and typed from the block's triples."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pyoxigraph import Literal, NamedNode, Variable

from kg.errors import ValidationError
from kg.namespaces import XSD
from kg.terms import MemoryType

__all__ = ["INPUTS", "OUTPUTS", "RecallRequest", "RecallServiceError", "Value", "request_of"]

# The recall: terms a block may use: inputs take a literal (recall:type also a class IRI) ...
INPUTS = ("query", "project", "limit", "mode", "type", "minConfidence", "asOf")
# ... and outputs a variable, bound to the hit (memory IRI), its score and its 1-based rank.
OUTPUTS = ("hit", "score", "rank")
_REPEATABLE = {"type"}
_JIDO = "https://jido.ai/ontology#"
_NUMERIC = {XSD[n].value for n in ("integer", "decimal", "double", "float")}
_TEXT = {XSD["string"].value, "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"}

Value = Variable | Literal | NamedNode


class RecallServiceError(ValidationError):
    """A recall SERVICE block that cannot be run as written."""

    code = "invalid_recall_service"


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """The recall one block asks for, and the variables its hits bind."""

    project: str
    query: str
    hit: Variable
    score: Variable | None = None
    rank: Variable | None = None
    limit: int = 10
    mode: str = "hybrid"
    types: tuple[MemoryType, ...] = ()
    min_confidence: float = 0.0
    as_of: datetime | None = None


def request_of(pairs: list[tuple[str, Value]]) -> RecallRequest:
    """The request the (recall term, value) pairs of a block make; RecallServiceError if none."""
    values: dict[str, list[Value]] = {}
    for name, value in pairs:
        values.setdefault(name, []).append(value)
    for name, given in values.items():
        if len(given) > 1 and name not in _REPEATABLE:
            what = "names two projects" if name == "project" else f"gives recall:{name} twice"
            raise RecallServiceError(f"a recall block {what}; give it once",
                                     details={"term": name})
    for name in ("query", "project", "hit"):
        if name not in values:
            raise RecallServiceError(f"a recall block needs recall:{name}",
                                     details={"term": name})
    outputs = {name: _variable(name, values[name][0]) for name in OUTPUTS if name in values}
    if len({v.value for v in outputs.values()}) < len(outputs):
        raise RecallServiceError("recall:hit, recall:score and recall:rank need distinct variables")
    single = {name: _literal(name, given[0]) for name, given in values.items()
              if name in INPUTS and name != "type"}
    return RecallRequest(
        project=_text("project", single["project"]),
        query=_text("query", single["query"]),
        hit=outputs["hit"], score=outputs.get("score"), rank=outputs.get("rank"),
        limit=int(_number("limit", single["limit"], integer=True)) if "limit" in single else 10,
        mode=_text("mode", single["mode"]) if "mode" in single else "hybrid",
        types=tuple(_type(v) for v in values.get("type", [])),
        min_confidence=(_number("minConfidence", single["minConfidence"])
                        if "minConfidence" in single else 0.0),
        as_of=_instant(single["asOf"]) if "asOf" in single else None,
    )


def _variable(name: str, value: Value) -> Variable:
    if not isinstance(value, Variable):
        raise RecallServiceError(f"recall:{name} binds a variable, not {str(value)[:80]}",
                                 details={"term": name})
    return value


def _literal(name: str, value: Value) -> Literal:
    if not isinstance(value, Literal):
        shown = f"the variable {value}" if isinstance(value, Variable) else str(value)[:80]
        raise RecallServiceError(f"recall:{name} needs a literal, not {shown}",
                                 details={"term": name})
    return value


def _text(name: str, value: Literal) -> str:
    if value.datatype.value not in _TEXT:
        raise RecallServiceError(f"recall:{name} needs a string, not {str(value)[:80]}",
                                 details={"term": name})
    return value.value


def _number(name: str, value: Literal, *, integer: bool = False) -> float:
    kinds = {XSD["integer"].value} if integer else _NUMERIC
    try:
        if value.datatype.value in kinds:
            return int(value.value) if integer else float(value.value)
    except ValueError:
        pass
    raise RecallServiceError(
        f"recall:{name} needs {'an integer' if integer else 'a number'}, not {str(value)[:80]}",
        details={"term": name})


def _type(value: Value) -> MemoryType:
    if isinstance(value, NamedNode) and value.value.startswith(_JIDO):
        for member in MemoryType:
            if member.iri == value:
                return member
    if isinstance(value, Literal) and value.datatype.value in _TEXT:
        try:
            return MemoryType(value.value)
        except ValueError:
            pass
    raise RecallServiceError(
        f"recall:type is a memory type ('decision' or jido:Decision), not {str(value)[:80]}",
        details={"term": "type", "allowed": [m.value for m in MemoryType]})


def _instant(value: Literal) -> datetime:
    if value.datatype.value in (XSD["dateTime"].value, *_TEXT):
        try:
            return datetime.fromisoformat(value.value)
        except ValueError:
            pass
    raise RecallServiceError(
        f"recall:asOf needs an xsd:dateTime, not {str(value)[:80]}", details={"term": "asOf"})

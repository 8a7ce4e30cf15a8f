"""Value filters of key-value items: LangGraph's store filter, evaluated on the exact JSON values.

A filter maps a value's top-level field to what it must be: a JSON value compared for equality
(objects field by field, arrays element by element), or an object of operators — `$eq`, `$ne`,
`$gt`, `$gte`, `$lt`, `$lte` — the comparisons compared as numbers. These are the semantics of
langgraph's InMemoryStore, except that a field that is missing or not a number fails an ordering
comparison instead of raising.

>>> matches({"kind": "tea", "cups": 3}, {"kind": "tea", "cups": {"$gte": 2}})
True
>>> matches({"kind": "tea"}, {"cups": {"$gt": 1}})
False
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from kg.errors import ValidationError

__all__ = ["OPERATORS", "InvalidFilterError", "check_filter", "matches"]

_ORDERINGS: dict[str, Callable[[float, float], bool]] = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}
OPERATORS = ("$eq", "$ne", *_ORDERINGS)
MAX_DEPTH = 32


class InvalidFilterError(ValidationError):
    """A value filter that is not an object of fields, or names an unknown operator."""

    code = "invalid_filter"


def check_filter(value_filter: object) -> dict[str, Any]:
    """Return the filter if it is an object whose operators are all known, else raise."""
    if not isinstance(value_filter, dict):
        raise InvalidFilterError(
            f"a filter must be a JSON object, got {type(value_filter).__name__}",
            details={"field": "filter"},
        )
    _check(value_filter, depth=0)
    return value_filter


def _check(node: object, *, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidFilterError(f"a filter nests deeper than {MAX_DEPTH} levels",
                                 details={"field": "filter"})
    if isinstance(node, dict):
        if not all(isinstance(k, str) for k in node):
            raise InvalidFilterError("filter fields must be strings", details={"field": "filter"})
        if any(k.startswith("$") for k in node):
            unknown = sorted(k for k in node if k not in OPERATORS)
            if unknown:
                raise InvalidFilterError(
                    f"unknown filter operator {unknown[0]!r}; expected one of "
                    f"{', '.join(OPERATORS)}",
                    details={"field": "filter", "operator": unknown[0]},
                )
        for child in node.values():
            _check(child, depth=depth + 1)
    elif isinstance(node, list | tuple):
        for child in node:
            _check(child, depth=depth + 1)


def matches(value: Mapping[str, Any], value_filter: Mapping[str, Any]) -> bool:
    """True if the item value satisfies every condition of the (checked) filter."""
    return all(_compare(value.get(field), wanted) for field, wanted in value_filter.items())


def _compare(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(found, op, operand) for op, operand in wanted.items())
        if not isinstance(found, dict):
            return False
        return all(_compare(found.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (isinstance(found, list | tuple) and len(found) == len(wanted)
                and all(_compare(f, w) for f, w in zip(found, wanted, strict=True)))
    return bool(found == wanted)


def _operator(found: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(found == operand)
    if operator == "$ne":
        return bool(found != operand)
    a, b = _number(found), _number(operand)
    if a is None or b is None:
        return False
    return _ORDERINGS[operator](a, b)


def _number(value: Any) -> float | None:
    # float() as InMemoryStore uses it: numbers, booleans and numeric strings compare.
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(number) else number

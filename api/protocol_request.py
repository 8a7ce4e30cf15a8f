"""Reading a SPARQL 1.1 Protocol request: which operation, its text, its dataset, its time limit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl

from flask import request
from pyoxigraph import NamedNode

from api.errors import UnsupportedMediaTypeError
from api.url_form import form_fields
from kg.errors import ValidationError
from kg.settings import Settings
from kg.sparql.entailment import regime

__all__ = ["Operation", "read_operation", "read_query_string"]

_FORM = "application/x-www-form-urlencoded"
_DIRECT = {"application/sparql-query": "query", "application/sparql-update": "update"}
_DATASET = {
    "query": ("default-graph-uri", "named-graph-uri"),
    "update": ("using-graph-uri", "using-named-graph-uri"),
}


@dataclass(frozen=True, slots=True)
class Operation:
    """One protocol operation, validated but not yet run."""

    kind: Literal["query", "update"]
    text: str
    default_graphs: list[NamedNode]
    named_graphs: list[NamedNode]
    timeout: float
    entailment: str | None = None  # `entailment=rdfs` (kg.sparql.entailment), queries only


def read_operation(settings: Settings, *, only: str | None = None) -> Operation | None:
    """Return the request's operation, or None for a bare GET (the service description)."""
    if request.method == "GET":
        return read_query_string(request.query_string.decode("latin-1"), settings, only=only)
    media_type = request.mimetype
    _check_charset()
    url_params = _pairs(request.query_string.decode("latin-1"))
    if media_type == _FORM:
        raw = request.get_data(cache=True)
        _utf8(raw)  # a non-UTF-8 body is refused as before, with its position
        try:
            body = form_fields(raw)
        except UnicodeDecodeError:
            raise ValidationError("the URL-encoded parameters are not valid UTF-8") from None
        kinds = [k for k in ("query", "update") if k in body]
        if len(kinds) != 1:
            raise ValidationError("a form POST needs exactly one 'query' or 'update' field")
        merged = {k: url_params.get(k, []) + body.get(k, []) for k in {*url_params, *body}}
        return _operation(kinds[0], body, merged, settings, only)
    if media_type in _DIRECT:
        kind = _DIRECT[media_type]
        text = _utf8(request.get_data(cache=True))
        return _operation(kind, {kind: [text]}, url_params, settings, only)  # type: ignore[arg-type]
    raise UnsupportedMediaTypeError(
        f"POST a query or update as {_FORM}, application/sparql-query or "
        f"application/sparql-update, not {media_type or 'a body without Content-Type'}",
        details={"supported": [_FORM, *_DIRECT]},
    )


def read_query_string(query_string: str, settings: Settings, *,
                      only: str | None = None) -> Operation | None:
    """Return the operation of a GET's query string, or None when it has no query."""
    params = _pairs(query_string)
    if "update" in params:
        raise ValidationError("a SPARQL update must be sent by POST, never by GET")
    if "query" not in params:
        return None
    return _operation("query", params, params, settings, only)


def _operation(kind: Literal["query", "update"], source: dict[str, list[str]],
               params: dict[str, list[str]], settings: Settings, only: str | None) -> Operation:
    if only is not None and kind != only:
        raise ValidationError(f"this endpoint takes a SPARQL {only}, not a {kind}")
    texts = source[kind]
    if len(texts) != 1:
        raise ValidationError(f"send exactly one '{kind}' parameter, not {len(texts)}")
    default_key, named_key = _DATASET[kind]
    entailment = regime(params.get("entailment", []))
    if entailment is not None and kind == "update":
        raise ValidationError("entailment applies to queries, not to updates",
                              details={"parameter": "entailment"})
    return Operation(
        kind=kind,
        text=texts[0],
        default_graphs=[_iri(v, default_key) for v in params.get(default_key, [])],
        named_graphs=[_iri(v, named_key) for v in params.get(named_key, [])],
        timeout=_timeout(params.get("timeout", []), settings),
        entailment=entailment,
    )


def _pairs(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    try:
        pairs = parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        raise ValidationError("the URL-encoded parameters are not valid UTF-8") from None
    for key, value in pairs:
        found.setdefault(key, []).append(value)
    return found


def _utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"the request body is not valid UTF-8 (byte {exc.start})",
            details={"position": exc.start},
        ) from None


def _check_charset() -> None:
    charset = request.mimetype_params.get("charset")
    if charset is not None and charset.lower().replace("_", "-") not in ("utf-8", "utf8"):
        raise UnsupportedMediaTypeError(
            f"the SPARQL protocol takes UTF-8 only, not charset={charset}",
            details={"supported_charset": "utf-8"},
        )


def _iri(value: str, parameter: str) -> NamedNode:
    try:
        node = NamedNode(value)
    except ValueError as exc:
        raise ValidationError(
            f"{parameter} is not a valid IRI: {value[:200]!r} ({exc})",
            details={"parameter": parameter},
        ) from None
    if ":" not in value:
        raise ValidationError(f"{parameter} must be an absolute IRI: {value[:200]!r}")
    return node


def _timeout(values: list[str], settings: Settings) -> float:
    if not values:
        return min(settings.query_timeout, settings.max_query_timeout)
    try:
        seconds = float(values[-1])
    except ValueError:
        raise ValidationError(f"timeout must be a number of seconds, not {values[-1]!r}") from None
    if not seconds > 0:
        raise ValidationError("timeout must be positive")
    return min(seconds, settings.max_query_timeout)

"""What every view of the memory API shares: its blueprint and ROUTES, the service, body and
argument parsing, and the project checks (api.auth)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Blueprint, Response, current_app, request
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from api.auth import require
from api.errors import UnsupportedMediaTypeError
from api.openapi import RouteSpec, flask_rule
from kg.errors import ValidationError
from kg.memory_service import API_SESSION, MemoryService
from kg.terms import (
    ContextKey,
    UnknownContextKeyError,
    parse_term,
    validate_identifier,
)

__all__ = [
    "KEY", "PROJECT", "ROUTES", "SESSION", "InvalidRequestError", "blueprint", "body_of",
    "check_project", "check_session_project", "context_key", "int_arg", "json_arg", "json_response",
    "memory_service", "route",
]

KEY = "jido_kg_memory"
B = TypeVar("B", bound=BaseModel)
blueprint = Blueprint("memory", __name__)
ROUTES: list[RouteSpec] = []
SESSION = "/v1/sessions/{session_id}"
PROJECT = "/v1/projects/{project}"


class InvalidRequestError(ValidationError):
    """A body that is not valid JSON or does not match the operation's schema."""

    code = "invalid_request"


def memory_service() -> MemoryService:
    """The MemoryService of the app handling the request."""
    found = current_app.extensions[KEY]
    assert isinstance(found, MemoryService)
    return found


def route(spec: RouteSpec) -> Callable[[Callable[..., Response]], Callable[..., Response]]:
    ROUTES.append(spec)

    def decorator(view: Callable[..., Response]) -> Callable[..., Response]:
        blueprint.add_url_rule(
            flask_rule(spec.path), spec.operation_id, view, methods=[spec.method]
        )
        return view

    return decorator


def body_of(model: type[B]) -> B:
    if not request.is_json:
        raise UnsupportedMediaTypeError(
            "the body must be application/json",
            details={"content_type": request.content_type or ""},
        )
    try:
        return model.model_validate_json(request.get_data() or b"null")
    except PydanticValidationError as e:
        errors = [
            {"loc": [str(p) for p in err["loc"]], "msg": err["msg"], "type": err["type"]}
            for err in e.errors(include_url=False, include_input=False)
        ]
        raise InvalidRequestError(
            f"invalid {model.__name__}: {errors[0]['msg'] if errors else 'bad body'}",
            details={"errors": errors},
        ) from None


def json_response(model: BaseModel, status: int = 200) -> Response:
    response = current_app.response_class(
        model.model_dump_json(), status=status, mimetype="application/json"
    )
    return response


def check_session_project(session_id: str, *, write: bool) -> None:
    # Authenticate before looking the session up, so an anonymous caller cannot probe ids;
    # then check the session's own project against the token's scope.
    require("write" if write else "read")
    project = memory_service().session_project(session_id)
    require("write" if write else "read", project=project or API_SESSION)


def check_project(project: str, *, write: bool) -> None:
    validate_identifier(project, name="project id")
    require("write" if write else "read", project=project)


def context_key(raw: str) -> ContextKey:
    return parse_term(ContextKey, raw, error=UnknownContextKeyError)


def int_arg(name: str, default: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidRequestError(f"{name} must be an integer, got {raw[:50]!r}",
                                  details={"field": name}) from None


def json_arg(name: str) -> Any:
    raw = request.args.get(name)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise InvalidRequestError(f"{name} must be JSON text", details={"field": name}) from None

"""The OpenAPI 3.1 description, generated from the route table and the pydantic models.

Each blueprint that wants to be described hands its RouteSpecs to `document_routes(app, …)`;
GET /openapi.json renders every registered spec. A test compares the document with Flask's
url_map both ways, so a route cannot be added without its description or the reverse.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Flask, Response, current_app, jsonify
from pydantic import BaseModel

from api.models import ErrorResponse

__all__ = ["RouteSpec", "blueprint", "build_document", "document_routes", "flask_rule"]

_KEY = "jido_kg_openapi"
_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ERROR_TEXT = {
    400: "Invalid input",
    401: "Missing or invalid bearer token",
    403: "Token not allowed for this operation or project",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflicts with the current state",
    413: "Body too large",
    415: "Body is not application/json",
    500: "Unexpected error",
}


@dataclass(frozen=True, slots=True)
class RouteSpec:
    """One documented operation: method, OpenAPI path and the models at its edges."""

    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    response: type[BaseModel] | None
    request: type[BaseModel] | None = None
    status: int = 200
    write: bool = False
    query: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: tuple[int, ...] = (400, 401, 403, 404, 500)


def flask_rule(path: str) -> str:
    """`/v1/sessions/{session_id}` → `/v1/sessions/<session_id>`."""
    return _PARAM.sub(r"<\1>", path)


def document_routes(app: Flask, specs: Iterable[RouteSpec]) -> None:
    """Add route specs to the app's OpenAPI document."""
    app.extensions.setdefault(_KEY, []).extend(specs)


def _operation(spec: RouteSpec) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": spec.operation_id,
        "summary": spec.summary,
        "tags": [spec.tag],
        "parameters": [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _PARAM.findall(spec.path)
        ]
        + [
            {"name": name, "in": "query", "required": False, "schema": schema}
            for name, schema in spec.query.items()
        ],
        "responses": {},
    }
    if not op["parameters"]:
        del op["parameters"]
    if spec.request is not None:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _ref(spec.request)}},
        }
    ok: dict[str, Any] = {"description": "OK" if spec.status == 200 else "Created"}
    if spec.response is not None:
        ok["content"] = {"application/json": {"schema": _ref(spec.response)}}
    op["responses"][str(spec.status)] = ok
    errors = set(spec.errors) | ({415} if spec.request is not None else set())
    if spec.write:
        op["security"] = [{"bearer": []}]
    for status in sorted(errors):
        op["responses"][str(status)] = {
            "description": _ERROR_TEXT.get(status, "Error"),
            "content": {"application/json": {"schema": _ref(ErrorResponse)}},
        }
    return op


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def build_document(
    specs: Sequence[RouteSpec], *, title: str = "jido-kg memory API", version: str = "1"
) -> dict[str, Any]:
    """The OpenAPI 3.1 document describing `specs`."""
    paths: dict[str, dict[str, Any]] = {}
    schemas: dict[str, Any] = {}
    models: list[type[BaseModel]] = [ErrorResponse]
    for spec in specs:
        paths.setdefault(spec.path, {})[spec.method.lower()] = _operation(spec)
        models += [m for m in (spec.request, spec.response) if m is not None]
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema
    return {
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Sessions, working context, pending memories, promotion, "
            "remember / recall / forget and context assembly. Errors always have the shape "
            '{"error": {"status", "code", "message", "details"}}.',
        },
        "paths": paths,
        "components": {
            "schemas": dict(sorted(schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }


blueprint = Blueprint("openapi", __name__)

OPENAPI_ROUTE = RouteSpec(
    "GET", "/openapi.json", "getOpenApi", "This OpenAPI 3.1 document", "meta", None,
    errors=(500,),
)


@blueprint.get("/openapi.json")
def openapi_json() -> Response:
    """Serve the OpenAPI document of every described route."""
    specs = [*current_app.extensions.get(_KEY, []), OPENAPI_ROUTE]
    return jsonify(build_document(specs))

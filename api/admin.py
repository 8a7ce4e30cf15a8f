"""POST /admin/backup: a consistent copy of the store, taken while the service keeps serving.

The `jido-kg backup` command opens the store itself, so it cannot run beside a server that holds
the store's lock; this route asks the serving process for the copy instead (admin token only).
Backups go to `KG_BACKUP_DIR` (default: `<store dir>.backups/` beside the store) and never to a
path the caller chooses, so an admin token cannot be turned into a write-anywhere primitive.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

from flask import Blueprint, Flask, Response, current_app, request
from pydantic import BaseModel, ConfigDict, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from api.auth import require
from api.errors import UnsupportedMediaTypeError
from api.openapi import RouteSpec, document_routes
from api.services import services
from kg.errors import ConflictError, ValidationError

__all__ = ["ROUTES", "BackupOut", "BackupRequest", "blueprint", "install"]

blueprint = Blueprint("admin", __name__)


class BackupRequest(BaseModel):
    """Options of a backup: the name of the new backup directory (default: a UTC timestamp)."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,128}$")] | None = None


class BackupOut(BaseModel):
    """Where the backup was written and how long it took."""

    name: str
    path: str
    seconds: float


ROUTES = [
    RouteSpec("POST", "/admin/backup", "backupStore", "Back up the store while serving", "admin",
              BackupOut, BackupRequest, status=201, write=True,
              errors=(400, 401, 403, 409, 500)),
]


def install(app: Flask) -> None:
    """Register the admin routes and describe them in the OpenAPI document."""
    app.register_blueprint(blueprint)
    document_routes(app, ROUTES)


def _backup_root() -> Path:
    s = services()
    if s.settings.backup_dir:
        return Path(s.settings.backup_dir)
    store = s.settings.store_path
    if store is None:
        raise ConflictError("an in-memory store has nothing on disk to back up")
    return store.with_name(store.name + ".backups")


def _request() -> BackupRequest:
    raw = request.get_data()
    if not raw:
        return BackupRequest()
    if not request.is_json:
        raise UnsupportedMediaTypeError("the body must be application/json")
    try:
        return BackupRequest.model_validate_json(raw)
    except PydanticValidationError as exc:
        raise ValidationError(f"invalid BackupRequest: {exc.errors()[0]['msg']}") from None


@blueprint.post("/admin/backup")
def backup() -> Response:
    """Write a consistent copy of the store into a new directory under the backup root."""
    require("admin")
    body = _request()
    name = body.name or datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    root = _backup_root()
    target = root / name
    if target.exists():
        raise ConflictError(f"a backup named {name!r} already exists", details={"name": name})
    root.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    services().store.backup(target)
    seconds = (datetime.now(UTC) - started).total_seconds()
    out = BackupOut(name=name, path=str(target.resolve()), seconds=seconds)
    return current_app.response_class(out.model_dump_json(), status=201,
                                      mimetype="application/json")

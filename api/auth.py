"""Bearer tokens: who is calling, what they may read and write, and in which projects.

Configured by `KG_TOKENS` as `{token: role}` with role `read`, `write` or `admin`, optionally
scoped with `@project` (`read@acme`). Every route asks through `require(...)`:

    principal = require("read")                  # anonymous allowed if KG_ANONYMOUS_READ
    principal = require("write")                 # any unscoped write or admin token
    principal = require("write", project="acme") # also a write@acme token (memory API)
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import Literal

from flask import Flask, current_app, g, request

from kg.errors import AuthenticationError, PermissionDeniedError, ValidationError
from kg.settings import Settings
from kg.terms import validate_identifier

__all__ = [
    "ANONYMOUS", "Access", "Principal", "current_principal", "install", "principal_for", "require",
    "use_principal",
]

Access = Literal["read", "write", "admin"]
_KEY = "jido_kg_auth"
_RANK: dict[str, int] = {"read": 0, "write": 1, "admin": 2}
_ACTIONS: dict[str, str] = {"read": "reads (KG_ANONYMOUS_READ is false)", "write": "writes",
                            "admin": "admin requests"}


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: a role and, for a scoped token, the projects it is confined to."""

    name: str
    role: Access | None
    projects: frozenset[str] | None = None

    @property
    def can_read(self) -> bool:
        """True when the caller may read at all."""
        return self.role is not None

    @property
    def can_write(self) -> bool:
        """True for write and admin roles (a scoped one writes only through the memory API)."""
        return self.role in ("write", "admin")

    @property
    def is_admin(self) -> bool:
        """True for an admin token (may use SERVICE/LOAD anywhere)."""
        return self.role == "admin"

    @property
    def is_scoped(self) -> bool:
        """True when the caller is confined to some projects' graphs."""
        return self.projects is not None

    def may_access(self, project: str | None) -> bool:
        """Tell whether the caller may touch `project` (None = outside any project)."""
        if self.projects is None:
            return True
        return project is not None and project in self.projects


ANONYMOUS = Principal("anonymous", None)


@dataclass(frozen=True, slots=True)
class _TokenTable:
    tokens: dict[str, Principal]
    anonymous: Principal


def _principal(index: int, spec: str) -> Principal:
    role, _, project = spec.strip().partition("@")
    if role not in _RANK:
        raise ValidationError(
            f"KG_TOKENS: role {role!r} of token #{index} is not read, write or admin"
        )
    projects = frozenset({validate_identifier(project, name="project id")}) if project else None
    return Principal(f"token#{index}", role, projects)  # type: ignore[arg-type]


def install(app: Flask, settings: Settings) -> None:
    """Parse the configured tokens once, failing fast on a malformed role."""
    table = {token: _principal(k, spec)
             for k, (token, spec) in enumerate(sorted(settings.tokens.items()))}
    anonymous = Principal("anonymous", "read") if settings.anonymous_read else ANONYMOUS
    app.extensions[_KEY] = _TokenTable(table, anonymous)


def current_principal() -> Principal:
    """Return the caller of the current request (anonymous without an Authorization header)."""
    cached = g.get("_principal")
    if isinstance(cached, Principal):
        return cached
    principal = principal_for(current_app, request.headers.get("Authorization", ""))
    g._principal = principal
    return principal


def use_principal(principal: Principal) -> None:
    """Name the caller of the current request (a credential not in its headers, e.g. a cookie)."""
    g._principal = principal


def principal_for(app: Flask, header: str) -> Principal:
    """Return the caller an Authorization header value names in `app` (401 if it names none)."""
    table: _TokenTable = app.extensions[_KEY]
    if not header:
        return table.anonymous
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationError("use 'Authorization: Bearer <token>'")
    if not table.tokens:
        # "not valid" would send the caller hunting for a typo in a token nothing checks.
        raise _unconfigured("no tokens are configured, so no bearer token is valid")
    return _lookup(table.tokens, token.strip())


def require(access: Access, *, project: str | None = None) -> Principal:
    """Return the caller if it has `access` (in `project`), else raise 401 or 403."""
    principal = current_principal()
    if principal.role is None or _RANK[principal.role] < _RANK[access]:
        if principal is ANONYMOUS or principal.name == "anonymous":
            table: _TokenTable = current_app.extensions[_KEY]
            if not table.tokens:
                raise _unconfigured(f"{_ACTIONS[access]} need a token and none is configured",
                                    role=access)
            raise AuthenticationError(f"{access} access needs a bearer token")
        raise PermissionDeniedError(f"this token does not allow {access} access")
    if principal.is_scoped and access != "read" and project is None:
        raise PermissionDeniedError(
            "a project-scoped token cannot write outside its project's memory API"
        )
    if project is not None and not principal.may_access(project):
        raise PermissionDeniedError(f"this token is not allowed in project {project!r}")
    return principal


def _unconfigured(reason: str, *, role: Access = "write") -> AuthenticationError:
    """A 401 that says the server has no tokens, and which setting gives it one."""
    return AuthenticationError(
        f"{reason}: set KG_TOKENS='{{\"<token>\": \"{role}\"}}' on the server and send "
        "'Authorization: Bearer <token>'",
        details={"setting": "KG_TOKENS"},
    )


def _lookup(tokens: dict[str, Principal], offered: str) -> Principal:
    # Compare against every token in constant time, so timing does not reveal a prefix.
    found: Principal | None = None
    for token, principal in tokens.items():
        if hmac.compare_digest(token.encode(), offered.encode()):
            found = principal
    if found is None:
        raise AuthenticationError("the bearer token is not valid")
    return found

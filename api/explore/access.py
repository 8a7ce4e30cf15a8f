"""The explorer's token: typed once into a form, kept in an HttpOnly session cookie.

The cookie holds the bearer token (the service checks it on every request, as it checks an
Authorization header); it lives until the browser session ends, is sent only to /explore and
only from this site (SameSite=Strict). Forms that change data carry a secret derived from the
token, so another site cannot post them with the cookie.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import urlsplit

from flask import Response, current_app, g, redirect, request, url_for

from api.auth import principal_for, use_principal
from api.explore.blueprint import blueprint, page
from kg.errors import AuthenticationError, PermissionDeniedError

__all__ = ["COOKIE", "check_form", "form_secret", "token_state", "use_cookie"]

COOKIE = "jido_explore_token"
_PURPOSE = b"jido-kg explorer form"


def use_cookie() -> None:
    """Take the caller from the cookie when the request has no Authorization header."""
    token = request.cookies.get(COOKIE, "")
    if not token or request.headers.get("Authorization"):
        return
    try:
        use_principal(principal_for(current_app, f"Bearer {token}"))
        g.explore_token = token
    except AuthenticationError:
        g.explore_token_rejected = True  # rotated or removed: the page asks for a new one


def token_state() -> str:
    """'cookie' (a token is in use), 'rejected' (the stored one is no longer valid) or ''."""
    if g.get("explore_token"):
        return "cookie"
    return "rejected" if g.get("explore_token_rejected") else ""


def form_secret() -> str:
    """The secret a changing form carries when the caller came by cookie ('' otherwise)."""
    token = g.get("explore_token")
    if not token:
        return ""
    return hmac.new(token.encode(), _PURPOSE, hashlib.sha256).hexdigest()


def check_form() -> None:
    """Refuse a changing form posted with the cookie but without its secret (403)."""
    expected = form_secret()
    if expected and not hmac.compare_digest(expected, request.form.get("csrf", "")):
        raise PermissionDeniedError("the form did not come from this explorer page; reload it")


def _safe_next(raw: str | None) -> str:
    target = raw or url_for("explore.index")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/explore"):
        return url_for("explore.index")
    return target


@blueprint.get("/token")
def token_form() -> Response:
    """The form to type a token into."""
    return page("token.html", next_url=_safe_next(request.args.get("next")), message=None)


@blueprint.post("/token")
def set_token() -> Response:
    """Check a typed token and keep it for the browser session (or forget it)."""
    next_url = _safe_next(request.form.get("next"))
    if request.form.get("action") == "clear":
        response = redirect(next_url, code=303)
        response.delete_cookie(COOKIE, path="/explore")
        return response  # type: ignore[return-value]
    token = request.form.get("token", "").strip()
    try:
        principal_for(current_app, f"Bearer {token}") if token else None
    except AuthenticationError as e:
        return page("token.html", status=401, next_url=next_url, message=str(e))
    if not token:
        return page("token.html", status=400, next_url=next_url, message="type a token")
    response = redirect(next_url, code=303)
    response.set_cookie(COOKIE, token, path="/explore", httponly=True, samesite="Strict",
                        secure=request.is_secure)
    return response  # type: ignore[return-value]

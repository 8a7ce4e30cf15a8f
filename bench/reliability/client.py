"""A small HTTP client for the reliability checks: one keep-alive connection per thread."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

__all__ = ["TOKENS", "Client", "Reply", "server_env"]

# Every role the service knows, plus project-scoped tokens for the isolation checks.
TOKENS = {
    "admin": "rel-admin-token",
    "write": "rel-write-token",
    "read": "rel-read-token",
    "a_read": "rel-proj-a-read",
    "a_write": "rel-proj-a-write",
    "b_write": "rel-proj-b-write",
}
_ROLES = {
    TOKENS["admin"]: "admin",
    TOKENS["write"]: "write",
    TOKENS["read"]: "read",
    TOKENS["a_read"]: "read@proj-a",
    TOKENS["a_write"]: "write@proj-a",
    TOKENS["b_write"]: "write@proj-b",
}


def server_env(*, anonymous_read: bool = False) -> dict[str, str]:
    """The KG_* variables that give a server these tokens."""
    return {"KG_TOKENS": json.dumps(_ROLES), "KG_ANONYMOUS_READ": str(anonymous_read).lower()}


@dataclass(frozen=True, slots=True)
class Reply:
    """One response: status (0 = no response at all), body and how long it took."""

    status: int
    body: bytes
    seconds: float
    headers: dict[str, str]

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", errors="replace")


class Client:
    """Sends requests to one server; safe to share between threads (a connection each)."""

    def __init__(self, base_url: str, *, timeout: float = 60.0) -> None:
        parts = urllib.parse.urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.timeout = timeout
        self._local = threading.local()

    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def request(self, method: str, path: str, *, token: str | None = None,
                params: dict[str, str] | list[tuple[str, str]] | None = None,
                json_body: Any = None, body: bytes | str | None = None,
                content_type: str | None = None,
                headers: dict[str, str] | None = None) -> Reply:
        """Send one request; a refused or dropped connection gives status 0, never raises."""
        url = path + ("?" + urllib.parse.urlencode(params) if params else "")
        sent: dict[str, str] = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        data: bytes | None = None
        if json_body is not None:
            data = json.dumps(json_body).encode()
            sent.setdefault("Content-Type", "application/json")
        elif body is not None:
            data = body.encode() if isinstance(body, str) else body
        if content_type is not None:
            sent["Content-Type"] = content_type
        started = time.perf_counter()
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, url, body=data, headers=sent)
                response = conn.getresponse()
                payload = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                return Reply(response.status, payload, time.perf_counter() - started,
                             {k.lower(): v for k, v in response.getheaders()})
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                # A kept-alive connection the server already closed: retry once, fresh —
                # but never resend a request the server may have received (writes).
                if attempt == 1 and _stale(exc) and method in ("GET", "HEAD"):
                    continue
                return Reply(0, str(exc).encode(), time.perf_counter() - started, {})
        raise AssertionError("unreachable")

    # -- the service's operations ------------------------------------------------------------

    def sparql(self, query: str, *, token: str | None = None,
               accept: str = "application/sparql-results+json",
               params: list[tuple[str, str]] | None = None) -> Reply:
        """A SPARQL query by POST form (dataset parameters may be added in `params`)."""
        form = urllib.parse.urlencode([("query", query), *(params or [])])
        return self.request("POST", "/sparql", token=token, body=form,
                            content_type="application/x-www-form-urlencoded",
                            headers={"Accept": accept})

    def update(self, update: str, *, token: str | None = None) -> Reply:
        """A SPARQL update as a direct body."""
        return self.request("POST", "/update", token=token, body=update,
                            content_type="application/sparql-update")

    def remember(self, project: str, content: str, *, token: str | None = None,
                 session: str | None = None, **fields: Any) -> Reply:
        """POST /v1/projects/{project}/memories."""
        body = {"content": content, **fields}
        if session is not None:
            body["session_id"] = session
        return self.request("POST", f"/v1/projects/{project}/memories", token=token,
                            json_body=body)

    def recall(self, project: str, query: str, *, token: str | None = None,
               **fields: Any) -> Reply:
        """POST /v1/projects/{project}/recall."""
        return self.request("POST", f"/v1/projects/{project}/recall", token=token,
                            json_body={"query": query, **fields})


def _stale(exc: BaseException) -> bool:
    return isinstance(exc, http.client.RemoteDisconnected | BrokenPipeError |
                      ConnectionResetError)

"""A tiny HTTP helper for the endpoint tests (urllib, no redirects followed, errors returned)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = ["Answer", "call"]


@dataclass
class Answer:
    """Status, headers and body of one response."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)

    @property
    def error_code(self) -> str:
        """The `code` of the one JSON error shape (fails if the body is not that shape)."""
        error = self.json()["error"]
        assert set(error) == {"status", "code", "message", "details"}, error
        assert error["status"] == self.status
        return str(error["code"])


def call(url: str, *, method: str = "GET", body: bytes | None = None,
         headers: dict[str, str] | None = None, timeout: float = 30) -> Answer:
    """Send one request and return the answer, whatever its status."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Answer(response.status, {k.lower(): v for k, v in response.headers.items()},
                          response.read())
    except urllib.error.HTTPError as exc:
        return Answer(exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read())

"""HTTP for the remote store: pooled connections, auth, one deadline per call, retried reads."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import urllib3
from urllib3.exceptions import HTTPError, NewConnectionError, TimeoutError

from kg.errors import KgError, QuerySyntaxError, StoreError, StoreUnavailableError

__all__ = ["HttpAnswer", "SparqlClient"]

# Statuses that say "not now" rather than "never": worth another try for a read.
_TRANSIENT = frozenset({408, 429, 502, 503, 504})
# Virtuoso answers a malformed query with 500 (or 400) and an SQL state code in the body.
_SYNTAX_MARKERS = ("SP030", "SP031", "syntax error", "parse error")


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """A successful HTTP answer: status, media type (no parameters) and body."""

    status: int
    media_type: str
    body: bytes


class SparqlClient:
    """Send SPARQL protocol requests; map network failures and statuses onto kg errors."""

    def __init__(
        self,
        *,
        timeout: float = 10.0,
        connect_timeout: float = 2.0,
        retries: int = 2,
        backoff: float = 0.1,
        username: str | None = None,
        password: str | None = None,
        token: str | None = None,
        pool_size: int = 16,
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.retries = retries
        self.backoff = backoff
        # One pool per host, kept alive: a fresh TCP connection per request costs more than
        # a point query on a warm server.
        self._pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, block=False)
        self._headers: dict[str, str] = {}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        elif username is not None:
            self._headers.update(urllib3.make_headers(basic_auth=f"{username}:{password or ''}"))

    def send(
        self,
        method: str,
        url: str,
        *,
        fields: Sequence[tuple[str, str]] | None = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        idempotent: bool,
        syntax_is_client_error: bool = True,
    ) -> HttpAnswer:
        """Send one request within the deadline; only idempotent ones are retried."""
        deadline = time.monotonic() + self.timeout
        attempts = 1 + (self.retries if idempotent else 0)
        all_headers = {**self._headers, **(headers or {})}
        encoded: bytes | None = body
        if fields is not None:
            encoded = urlencode(list(fields)).encode("utf-8")
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        failure: KgError | None = None
        for attempt in range(attempts):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                response = self._pool.request(
                    method, url, body=encoded, headers=all_headers, retries=False,
                    redirect=False, preload_content=True,
                    timeout=urllib3.Timeout(connect=min(self.connect_timeout, remaining),
                                            read=remaining),
                )
            except NewConnectionError as exc:
                # Checked first: urllib3 makes it a subclass of ConnectTimeoutError.
                failure = StoreUnavailableError(
                    f"the SPARQL server at {url} cannot be reached: {_reason(exc)}",
                    details={"url": url},
                )
            except TimeoutError:
                failure = StoreUnavailableError(
                    f"the SPARQL server at {url} did not answer within {self.timeout:g} s",
                    details={"url": url, "timeout": self.timeout},
                )
            except HTTPError as exc:
                failure = StoreUnavailableError(
                    f"the SPARQL server at {url} cannot be reached: {_reason(exc)}",
                    details={"url": url},
                )
            else:
                if response.status < 300:
                    media = (response.headers.get("Content-Type") or "").split(";")[0].strip()
                    return HttpAnswer(response.status, media.lower(), response.data)
                failure = _status_error(url, response.status, response.data,
                                        syntax_is_client_error=syntax_is_client_error)
                if not isinstance(failure, StoreUnavailableError):
                    raise failure
            if not idempotent or attempt + 1 >= attempts:
                break
            pause = self.backoff * (2**attempt)
            if time.monotonic() + pause >= deadline:
                break
            time.sleep(pause)
        raise failure or StoreUnavailableError(
            f"the SPARQL server at {url} did not answer within {self.timeout:g} s",
            details={"url": url, "timeout": self.timeout},
        )

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.clear()


def _reason(exc: HTTPError) -> str:
    # MaxRetryError wraps the real cause (connection refused, reset, DNS failure).
    cause = getattr(exc, "reason", None) or exc
    text = str(cause)
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    return text.split(": ", 1)[-1][:200]


def _status_error(url: str, status: int, body: bytes, *, syntax_is_client_error: bool
                  ) -> KgError:
    text = body.decode("utf-8", errors="replace").strip()[:2000]
    details = {"url": url, "status": status, "server_message": text}
    if status in _TRANSIENT:
        return StoreUnavailableError(
            f"the SPARQL server at {url} is unavailable (HTTP {status})", details=details)
    if syntax_is_client_error and (
        status == 400 or (status >= 500 and any(m in text for m in _SYNTAX_MARKERS))
    ):
        first = text.splitlines()[0] if text else f"HTTP {status}"
        return QuerySyntaxError(f"the SPARQL server rejected the request: {first}",
                                details=details)
    if status in (401, 403):
        return StoreError(f"the SPARQL server at {url} refused our credentials (HTTP {status})",
                          details=details)
    return StoreError(f"the SPARQL server at {url} failed (HTTP {status}): {text[:200]}",
                      details=details)

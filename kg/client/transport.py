"""The HTTP session of a client: httpx, the bearer token, the timeout and retries of reads.

A read (Call.read) is tried again after a connection failure (refused, reset, closed before an
answer) or a 503 answer, `retries` times, pausing `backoff`, 2×`backoff`, …; a write never is:
it may have been applied before the connection broke, and sending it twice could apply it
twice. A timeout is not retried either (a slow service stays slow): ServiceTimeoutError.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from kg.client.errors import (
    ServiceTimeoutError,
    ServiceUnreachableError,
    UnexpectedResponseError,
    error_from_answer,
)
from kg.client.operations import Call
from kg.errors import KgError

__all__ = ["DEFAULT_BACKOFF", "DEFAULT_RETRIES", "DEFAULT_TIMEOUT", "AsyncTransport", "Transport"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 2
DEFAULT_BACKOFF = 0.1
_RETRIED_STATUS = 503  # the service is overloaded or its store is down: both pass


class _Policy:
    """What sync and async transports share: headers, retries and reading answers."""

    def __init__(self, url: str, *, token: str | None, timeout: float, retries: int,
                 backoff: float) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the service URL must be http(s)://…, got {url!r}")
        if retries < 0 or backoff < 0 or timeout <= 0:
            raise ValueError("retries and backoff must be ≥ 0 and timeout > 0")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.headers = {"Accept": "application/json"}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"

    def attempts(self, call: Call) -> int:
        """How many times a call may be sent."""
        return 1 + self.retries if call.read else 1

    def pause(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (0-based)."""
        return float(self.backoff * 2**attempt)

    def failure(self, call: Call, exc: httpx.TransportError, attempts: int) -> KgError:
        """The kg error of a request that got no answer."""
        where = f"the memory service at {self.url}"
        details = {"url": self.url, "target": call.target, "attempts": attempts}
        if isinstance(exc, httpx.TimeoutException) and not isinstance(exc, httpx.ConnectTimeout):
            return ServiceTimeoutError(
                f"{where} did not answer {call.target} within {self.timeout:g} s",
                details={**details, "timeout": self.timeout},
            )
        reason = _reason(exc)
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout) or call.read:
            message = f"{where} cannot be reached ({call.target}): {reason}"
        else:
            # The request may have arrived before the connection broke.
            message = (f"{where} closed the connection before answering {call.target} "
                       f"({reason}); the write may or may not have been applied")
        if attempts > 1:
            message += f" (after {attempts} attempts)"
        return ServiceUnreachableError(message, details=details)

    def retried(self, exc: httpx.TransportError) -> bool:
        """Whether a read that failed this way is tried again."""
        return not (isinstance(exc, httpx.TimeoutException)
                    and not isinstance(exc, httpx.ConnectTimeout))

    def answer(self, call: Call, response: httpx.Response) -> Any:
        """The JSON of a success; the kg error of an error answer is raised."""
        if response.status_code >= 400:
            raise error_from_answer(response.status_code, response.content,
                                    url=f"{self.url}{call.path}")
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise UnexpectedResponseError(
                f"{self.url} answered {call.target} with a body that is not JSON "
                f"({response.headers.get('content-type', 'no content type')})",
                details={"url": self.url, "target": call.target,
                         "status": response.status_code},
            ) from None


def _reason(exc: httpx.TransportError) -> str:
    text = str(exc) or type(exc).__name__
    if "Connection refused" in text or "Errno 111" in text:
        return "connection refused"
    return text[:200]


def _request(call: Call) -> dict[str, Any]:
    return {"method": call.method, "url": call.path, "params": call.params,
            "json": None if call.body is None else dict(call.body)}


class Transport:
    """A blocking httpx session to one memory service."""

    def __init__(self, url: str, *, token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                 backoff: float = DEFAULT_BACKOFF) -> None:
        self.policy = _Policy(url, token=token, timeout=timeout, retries=retries,
                              backoff=backoff)
        self._http = httpx.Client(base_url=self.policy.url, headers=self.policy.headers,
                                  timeout=timeout)

    @property
    def url(self) -> str:
        """The service's root URL."""
        return self.policy.url

    def send(self, call: Call) -> Any:
        """Send a call (reads retried) and return its JSON answer (None for an empty one)."""
        attempts = self.policy.attempts(call)
        for attempt in range(attempts):
            last = attempt + 1 == attempts
            try:
                response = self._http.request(**_request(call))
            except httpx.TransportError as exc:
                if last or not self.policy.retried(exc):
                    raise self.policy.failure(call, exc, attempt + 1) from exc
            else:
                if last or response.status_code != _RETRIED_STATUS:
                    return self.policy.answer(call, response)
            time.sleep(self.policy.pause(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()


class AsyncTransport:
    """An asyncio httpx session to one memory service."""

    def __init__(self, url: str, *, token: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = DEFAULT_RETRIES,
                 backoff: float = DEFAULT_BACKOFF) -> None:
        self.policy = _Policy(url, token=token, timeout=timeout, retries=retries,
                              backoff=backoff)
        self._http = httpx.AsyncClient(base_url=self.policy.url, headers=self.policy.headers,
                                       timeout=timeout)

    @property
    def url(self) -> str:
        """The service's root URL."""
        return self.policy.url

    async def send(self, call: Call) -> Any:
        """Send a call (reads retried) and return its JSON answer (None for an empty one)."""
        attempts = self.policy.attempts(call)
        for attempt in range(attempts):
            last = attempt + 1 == attempts
            try:
                response = await self._http.request(**_request(call))
            except httpx.TransportError as exc:
                if last or not self.policy.retried(exc):
                    raise self.policy.failure(call, exc, attempt + 1) from exc
            else:
                if last or response.status_code != _RETRIED_STATUS:
                    return self.policy.answer(call, response)
            await asyncio.sleep(self.policy.pause(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._http.aclose()

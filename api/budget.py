"""The runaway budget: who caused runaway queries lately, and 429 for SPARQL once over budget.

A query still running `KG_RUNAWAY_GRACE` seconds past its time limit costs a replacement of the
worker process (api/worker.py): everyone's requests pause while it happens. It is charged to its
caller — the bearer token (kept as a hash), or for anonymous readers the client address (an IPv6
address by its /64 network, which one client usually holds whole). A caller charged
`KG_RUNAWAY_BUDGET` times within the last `KG_RUNAWAY_BUDGET_WINDOW` seconds gets 429 with
`Retry-After` for every SPARQL request (/sparql, /query, /update) until the oldest charge ages
out, so no caller can cost the others more than that many replacements per window.

The ledger is a small JSON file (beside the store, or in the supervisor's directory for a store
without one), written on every charge and read by each new worker: it outlives the process
whose replacement a charge caused, and a restart of the service as well.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from api.bridge import Answer
from api.errors import error_body
from kg.store.execution import CALLER

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = [
    "SPARQL_PATHS",
    "BudgetGate",
    "RunawayLedger",
    "address_caller",
    "caller_of",
    "token_caller",
]

log = logging.getLogger("jido_kg.budget")

# The SPARQL protocol routes (api/sparql.py), with or without a trailing slash.
SPARQL_PATHS = frozenset({"/sparql", "/query", "/update", "/sparql/", "/query/", "/update/"})


class RunawayLedger:
    """Charges per caller within a sliding window, kept in a JSON file; safe across threads."""

    def __init__(self, path: Path | None, *, budget: int, window: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.path, self.budget, self.window, self._clock = path, budget, window, clock
        self._lock = threading.Lock()
        self._charges: dict[str, list[float]] = self._load()

    def charge(self, caller: str) -> None:
        """Record one runaway of `caller` now, and save the ledger."""
        with self._lock:
            self._charges.setdefault(caller, []).append(self._clock())
            self._prune()
            self._save()

    def retry_after(self, caller: str) -> float | None:
        """Seconds until `caller` is under budget again, or None if it is now."""
        times = self._charges.get(caller)
        if not times or len(times) < self.budget:
            return None
        with self._lock:
            recent = sorted(t for t in self._charges.get(caller, ()) if t > self._cutoff())
        if len(recent) < self.budget:
            return None
        # Under budget once all but budget-1 of the recent charges have aged out.
        return max(recent[len(recent) - self.budget] + self.window - self._clock(), 0.0)

    def charges(self, caller: str) -> int:
        """How many charges `caller` has within the window."""
        with self._lock:
            return sum(1 for t in self._charges.get(caller, ()) if t > self._cutoff())

    def _cutoff(self) -> float:
        return self._clock() - self.window

    def _prune(self) -> None:
        cutoff = self._cutoff()
        for caller in list(self._charges):
            kept = [t for t in self._charges[caller] if t > cutoff]
            if kept:
                self._charges[caller] = kept
            else:
                del self._charges[caller]

    def _load(self) -> dict[str, list[float]]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            charges = {str(k): [float(t) for t in v] for k, v in data["charges"].items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            # A damaged ledger must not keep the service from starting; it only forgets.
            log.warning("runaway ledger %s unreadable (%s); starting an empty one", self.path, exc)
            return {}
        cutoff = self._cutoff()
        return {k: kept for k, v in charges.items() if (kept := [t for t in v if t > cutoff])}

    def _save(self) -> None:
        if self.path is None:
            return
        text = json.dumps({"window_seconds": self.window, "charges": self._charges})
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            # Written whole and renamed over the old one: a kill leaves the old or the new.
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, self.path)
        except OSError as exc:
            log.warning("cannot write the runaway ledger %s: %s", self.path, exc)


def caller_of(environ: WSGIEnvironment) -> str:
    """Who a request is charged to: its bearer token (hashed), else its client address."""
    return token_caller(environ) or _address_id(environ.get("REMOTE_ADDR", ""))


def token_caller(environ: WSGIEnvironment) -> str | None:
    """The caller a request's bearer token names (hashed), or None without one."""
    header = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return _token_id(token.strip())
    return None


def address_caller(address: tuple[Any, ...]) -> str:
    """The caller a client address names (for a request without a bearer token)."""
    return _address_id(str(address[0]))


@lru_cache(maxsize=256)
def _token_id(token: str) -> str:
    # A hash: the ledger file must not hold a secret.
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


@lru_cache(maxsize=4096)
def _address_id(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"address:{address}"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return f"address:{ip.ipv4_mapped}"
        return f"address:{ipaddress.IPv6Network((ip, 64), strict=False)}"
    return f"address:{ip}"


class BudgetGate:
    """Refuses SPARQL requests of callers over budget (429) and names the caller to the rest."""

    def __init__(self, ledger: RunawayLedger) -> None:
        self.ledger = ledger

    def refusal(self, environ: WSGIEnvironment, caller: str) -> Answer | None:
        """The 429 answer for a SPARQL request of a caller over budget, else None."""
        if environ.get("PATH_INFO", "") not in SPARQL_PATHS:
            return None
        return self.refusal_of(caller)

    def refusal_of(self, caller: str) -> Answer | None:
        """The 429 answer for a caller over budget, else None."""
        wait = self.ledger.retry_after(caller)
        if wait is None:
            return None
        seconds = max(1, math.ceil(wait))
        charged = self.ledger.charges(caller)
        body = error_body(
            429, "runaway_budget_exceeded",
            f"{charged} of your queries ran on past their time limit in the last "
            f"{self.ledger.window:g} s, and each costs a restart of the service's worker; "
            f"after {self.ledger.budget} your SPARQL requests are refused: retry in {seconds} s",
            {"retry_after": seconds, "runaway_queries": charged,
             "budget": self.ledger.budget, "window_seconds": self.ledger.window})
        return 429, [("Content-Type", "application/json"), ("Retry-After", str(seconds))], body

    def wrap_app(self, app: WSGIApplication) -> WSGIApplication:
        """The WSGI app behind the gate."""

        def gated(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            caller = caller_of(environ)
            refused = self.refusal(environ, caller)
            if refused is not None:
                status, headers, body = refused
                start_response(f"{status} Too Many Requests", headers)
                return [body] if isinstance(body, bytes) else body
            token = CALLER.set(caller)
            try:
                return app(environ, start_response)
            finally:
                CALLER.reset(token)

        return gated

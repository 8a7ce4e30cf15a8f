"""Whether `jido-kg serve` may start as configured: no anonymous reads beyond loopback by default.

Anonymous reads are on by default, which is right on 127.0.0.1 and wrong on an address others
can reach: anyone who can reach the port would read every project's memories. So a server
bound beyond loopback starts with anonymous reads only when they were asked for explicitly —
`KG_ANONYMOUS_READ=true` in the environment, or `--allow-anonymous-read` — and otherwise stops
with one line saying why (exit status 2, api/startup.py's style).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from api.startup import StartupError
from kg.settings import Settings

__all__ = ["check_exposure", "is_loopback"]

_VARIABLE = "KG_ANONYMOUS_READ"


def is_loopback(host: str) -> bool:
    """True if `host` is a loopback address (or `localhost`); a name that could resolve
    anywhere else is not."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings, *, environ: Mapping[str, str], allowed: bool,
                   host_option: bool) -> None:
    """Raise StartupError if anonymous reads would be served beyond loopback unasked."""
    if not settings.anonymous_read or allowed or is_loopback(settings.host):
        return
    if any(name.upper() == _VARIABLE for name in environ):
        return  # set explicitly (to a true value, or anonymous reads would be off)
    where = f"--host {settings.host}" if host_option else f"KG_HOST={settings.host}"
    raise StartupError(
        f"{where} is reachable beyond this machine and anonymous reads are on by default, so "
        "anyone who can reach the port would read every project's memories; set "
        f"{_VARIABLE}=false to require tokens, or allow anonymous reads explicitly with "
        f"{_VARIABLE}=true or --allow-anonymous-read",
        details={"host": settings.host},
    )

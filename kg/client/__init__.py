"""A typed Python client of the memory service's HTTP API (`jido-kg serve`).

MemoryClient (blocking) and AsyncMemoryClient (asyncio) offer MemoryService's operations under
its method names and return its records; the service's errors arrive as the same kg.errors
classes, an unreachable service as ServiceUnreachableError naming its URL.

>>> from kg.client import MemoryClient
>>> with MemoryClient("http://127.0.0.1:7879", token="s3cret") as memory:  # doctest: +SKIP
...     memory.remember("shop", "Orders ship from Leeds").content
'Orders ship from Leeds'
"""

from __future__ import annotations

from kg.client.async_memory_client import AsyncMemoryClient
from kg.client.errors import ServiceTimeoutError, ServiceUnreachableError, UnexpectedResponseError
from kg.client.memory_client import MemoryClient
from kg.client.records import RemoteHit, SessionInfo

__all__ = [
    "AsyncMemoryClient",
    "MemoryClient",
    "RemoteHit",
    "ServiceTimeoutError",
    "ServiceUnreachableError",
    "SessionInfo",
    "UnexpectedResponseError",
]

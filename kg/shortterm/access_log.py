"""The access log: recent reads, writes and queries of context keys and memories (seed 000 §1.4).

Newest first, at most max_entries (1,000). The original prepended to a list and counted by
scanning it (O(n) per call, flagged in review). Here a bounded deque holds the entries and two
dicts — count and latest timestamp per key — are kept in step as the deque drops its oldest, so
record, get_frequency and get_recency are all O(1).

Keys are a ContextKey (or its string value) or `("memory", memory_id)`.

>>> log = AccessLog(now=lambda: 5.0)
>>> log.record("active_file", "read")
>>> log.record(("memory", "m1"), "query")
>>> log.get_frequency("active_file"), log.get_recency(("memory", "m1"))
(1, 5.0)
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping
from itertools import islice
from typing import Any, NamedTuple

from kg.errors import ValidationError
from kg.shortterm.errors import InvalidSnapshotError
from kg.terms import (
    AccessType,
    ContextKey,
    InvalidIdentifierError,
    UnknownContextKeyError,
    parse_term,
)

__all__ = ["DEFAULT_MAX_ENTRIES", "AccessEntry", "AccessKey", "AccessLog", "AccessStats"]

DEFAULT_MAX_ENTRIES = 1_000

AccessKey = ContextKey | tuple[str, str]

_KEYS: dict[str, ContextKey] = {key.value: key for key in ContextKey}
_TYPES: dict[str, AccessType] = {kind.value: kind for kind in AccessType}


class AccessEntry(NamedTuple):
    """One access: what, when (POSIX seconds) and how."""

    key: AccessKey
    timestamp: float
    access_type: AccessType


class AccessStats(NamedTuple):
    """Frequency and most recent access time of one key."""

    frequency: int
    recency: float | None


class AccessLog:
    """Bounded newest-first log with O(1) record, frequency and recency."""

    __slots__ = ("_counts", "_entries", "_latest", "_now", "max_entries")

    def __init__(
        self, max_entries: int = DEFAULT_MAX_ENTRIES, *, now: Callable[[], float] = time.time
    ) -> None:
        if type(max_entries) is not int or max_entries < 1:
            raise ValueError(f"max_entries must be a positive int, got {max_entries!r}")
        self.max_entries = max_entries
        self._now = now
        # Appended on the right, so the right end is the newest entry.
        self._entries: deque[AccessEntry] = deque()
        self._counts: dict[AccessKey, int] = {}
        self._latest: dict[AccessKey, float] = {}

    def record(self, key: AccessKey | str, access_type: AccessType | str = AccessType.READ) -> None:
        """Log an access to `key` now; past max_entries the oldest entry is dropped."""
        kind = _TYPES.get(access_type) if isinstance(access_type, str) else None
        if kind is None:
            kind = parse_term(AccessType, access_type)
        normal = _normalise(key)
        entries = self._entries
        if len(entries) >= self.max_entries:
            old = entries.popleft()[0]
            left = self._counts[old] - 1
            if left:
                self._counts[old] = left
            else:
                # The dropped entry was the oldest overall, so it was also this key's last.
                del self._counts[old]
                del self._latest[old]
        self._append(normal, self._now(), kind)

    def _append(self, key: AccessKey, at: float, kind: AccessType) -> None:
        self._entries.append(AccessEntry(key, at, kind))
        counts = self._counts
        counts[key] = counts.get(key, 0) + 1
        self._latest[key] = at

    def get_frequency(self, key: AccessKey | str) -> int:
        """How many logged accesses `key` has (0 if none)."""
        return self._counts.get(_normalise(key), 0)

    def get_recency(self, key: AccessKey | str) -> float | None:
        """Time of the most recent logged access to `key`, or None."""
        return self._latest.get(_normalise(key))

    def get_stats(self, key: AccessKey | str) -> AccessStats:
        """Frequency and recency of `key` together."""
        normal = _normalise(key)
        return AccessStats(self._counts.get(normal, 0), self._latest.get(normal))

    def recent_accesses(self, n: int) -> list[AccessEntry]:
        """The last `n` entries, newest first (all of them if `n` exceeds the size)."""
        if type(n) is not int or n < 0:
            raise ValueError(f"n must be a non-negative int, got {n!r}")
        return list(islice(reversed(self._entries), n))

    def size(self) -> int:
        """Number of entries held."""
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry."""
        self._entries.clear()
        self._counts.clear()
        self._latest.clear()

    def snapshot(self) -> dict[str, Any]:
        """The whole log as JSON-able data, oldest first."""
        return {
            "max_entries": self.max_entries,
            "entries": [
                [list(key) if isinstance(key, tuple) else key.value, at, kind.value]
                for key, at, kind in self._entries
            ],
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the log with a snapshot's; on any error nothing changes."""
        try:
            fresh = AccessLog(data["max_entries"], now=self._now)
            entries = data["entries"]
            if len(entries) > fresh.max_entries:
                raise ValueError(f"{len(entries)} entries exceed max_entries")
            for raw_key, at, kind in entries:
                key = _normalise(tuple(raw_key) if isinstance(raw_key, list) else raw_key)
                fresh._append(key, float(at), parse_term(AccessType, kind))
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise InvalidSnapshotError(f"invalid access-log snapshot: {e}") from e
        self.max_entries = fresh.max_entries
        self._entries, self._counts, self._latest = fresh._entries, fresh._counts, fresh._latest


def _normalise(key: object) -> AccessKey:
    """Validate a key and return its canonical form (ContextKey or ("memory", id))."""
    if isinstance(key, str):
        found = _KEYS.get(key)
        if found is not None:
            return found
    elif type(key) is tuple and len(key) == 2 and key[0] == "memory":
        # Memory ids may be long-term IRIs, so any non-empty string is accepted.
        if type(key[1]) is str and key[1]:
            return key
        raise InvalidIdentifierError(
            f"memory id must be a non-empty string, got {key[1]!r}",
            details={"field": "memory id", "value": repr(key[1])},
        )
    parse_term(ContextKey, key, error=UnknownContextKeyError)
    raise AssertionError("unreachable")  # pragma: no cover

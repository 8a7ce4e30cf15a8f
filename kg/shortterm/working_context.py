"""The working context: a per-session semantic scratchpad keyed by ContextKey (seed 000 §1.2).

Budget policy: max_tokens (default 12,000) is enforced with the shared token estimate. A put
that would take the total past it raises ContextBudgetExceededError and changes nothing —
silently evicting context the agent relies on (the project root, the current task) would be
worse than telling the caller, who can delete or summarise first.

Each item costs `TokenCounter.count_memory(text)`: its text (a string as is, anything else as
compact JSON) plus the memory overhead for the key, source and confidence rendered beside it.

>>> ctx = WorkingContext(now=lambda: 100.0)
>>> ctx.put("framework", "Flask", source="tool")
>>> ctx.get("framework"), ctx.item("framework").suggested_type
('Flask', <MemoryType.FACT: 'fact'>)
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from kg.errors import ValidationError
from kg.shortterm.errors import (
    ContextBudgetExceededError,
    InvalidContextValueError,
    InvalidSnapshotError,
)
from kg.terms import (
    ContextKey,
    ContextSource,
    MemoryType,
    UnknownContextKeyError,
    parse_term,
    validate_confidence,
)
from kg.tokens import TOKEN_COUNTER, TokenCounter

__all__ = ["DEFAULT_MAX_TOKENS", "ContextItem", "WorkingContext", "infer_memory_type"]

DEFAULT_MAX_TOKENS = 12_000

# Dict lookups validate and normalise a key or source in one step on the hot path.
_KEYS: dict[str, ContextKey] = {key.value: key for key in ContextKey}
_SOURCES: dict[str, ContextSource] = {source.value: source for source in ContextSource}
_SCALARS = (int, float, bool, type(None))


def infer_memory_type(key: ContextKey, source: ContextSource) -> MemoryType | None:
    """Suggest the memory type an item would be promoted as (the seed's table, verbatim)."""
    if key in (ContextKey.FRAMEWORK, ContextKey.PRIMARY_LANGUAGE, ContextKey.PROJECT_ROOT):
        return MemoryType.FACT if source is ContextSource.TOOL else None
    if key is ContextKey.USER_INTENT:
        return MemoryType.ASSUMPTION if source is ContextSource.INFERRED else None
    if key is ContextKey.DISCOVERED_PATTERNS:
        return MemoryType.DISCOVERY
    if key is ContextKey.PENDING_QUESTIONS:
        return MemoryType.UNKNOWN
    # active_errors is ephemeral and everything else has no natural type: not promoted.
    return None


@dataclass(slots=True)
class ContextItem:
    """One working-context entry with its provenance and access tracking."""

    key: ContextKey
    value: Any
    source: ContextSource
    confidence: float
    access_count: int
    first_seen: float
    last_accessed: float
    suggested_type: MemoryType | None
    tokens: int


class WorkingContext:
    """Key → item scratchpad with a token budget; timestamps are POSIX seconds from `now`."""

    __slots__ = ("_counter", "_items", "_now", "current_tokens", "max_tokens")

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        *,
        now: Callable[[], float] = time.time,
        counter: TokenCounter = TOKEN_COUNTER,
    ) -> None:
        if type(max_tokens) is not int or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
        self.max_tokens = max_tokens
        self.current_tokens = 0
        self._items: dict[ContextKey, ContextItem] = {}
        self._now = now
        self._counter = counter

    def put(
        self,
        key: ContextKey | str,
        value: Any,
        *,
        source: ContextSource | str = ContextSource.EXPLICIT,
        confidence: float = 1.0,
        memory_type: MemoryType | str | None = None,
    ) -> None:
        """Add or update the item at `key`; raise (changing nothing) on bad input or budget."""
        ckey = _KEYS.get(key) if isinstance(key, str) else None
        if ckey is None:
            parse_term(ContextKey, key, error=UnknownContextKeyError)
            raise AssertionError("unreachable")  # pragma: no cover
        src = _SOURCES.get(source) if isinstance(source, str) else None
        if src is None:
            src = parse_term(ContextSource, source)
        if type(confidence) is not float or not 0.0 <= confidence <= 1.0:
            confidence = validate_confidence(confidence)
        if memory_type is None:
            mtype = infer_memory_type(ckey, src)
        else:
            mtype = parse_term(MemoryType, memory_type)
        text = _text(ckey, value)
        if isinstance(value, (list, dict, tuple)):
            # Store a private copy of containers, so later mutation by the caller cannot
            # change the value behind the token count; it also normalises tuples to lists.
            value = json.loads(text)
        tokens = self._counter.count_memory(text)
        item = self._items.get(ckey)
        total = self.current_tokens + tokens - (item.tokens if item is not None else 0)
        if total > self.max_tokens:
            raise ContextBudgetExceededError(
                f"putting {ckey.value!r} ({tokens} tokens) would make the working context "
                f"{total} tokens, over max_tokens={self.max_tokens}; nothing was changed",
                details={"key": ckey.value, "tokens": tokens, "max_tokens": self.max_tokens},
            )
        at = self._now()
        if item is None:
            self._items[ckey] = ContextItem(ckey, value, src, confidence, 1, at, at, mtype, tokens)
        else:
            item.value = value
            item.source = src
            item.confidence = confidence
            item.suggested_type = mtype
            item.tokens = tokens
            item.access_count += 1
            item.last_accessed = at
        self.current_tokens = total

    def get(self, key: ContextKey | str) -> Any:
        """Return the value at `key` (None if absent), counting the access."""
        try:
            item = self._items.get(key)  # type: ignore[arg-type]
        except TypeError:  # unhashable key
            item = None
        if item is None:
            # Distinguish "valid key, no item" (None) from a key outside the vocabulary.
            if not isinstance(key, str) or key not in _KEYS:
                parse_term(ContextKey, key, error=UnknownContextKeyError)
            return None
        item.access_count += 1
        item.last_accessed = self._now()
        return item.value

    def item(self, key: ContextKey | str) -> ContextItem | None:
        """Return a copy of the item at `key` with its metadata, without counting an access."""
        found = self._items.get(parse_term(ContextKey, key, error=UnknownContextKeyError))
        return copy.copy(found) if found is not None else None

    def delete(self, key: ContextKey | str) -> bool:
        """Remove the item at `key`; return whether there was one."""
        item = self._items.pop(parse_term(ContextKey, key, error=UnknownContextKeyError), None)
        if item is None:
            return False
        self.current_tokens -= item.tokens
        return True

    def to_list(self) -> list[ContextItem]:
        """Copies of all items, in insertion order, for context assembly."""
        return [copy.copy(item) for item in self._items.values()]

    def to_map(self) -> dict[ContextKey, Any]:
        """Key → value, without metadata."""
        return {key: item.value for key, item in self._items.items()}

    def size(self) -> int:
        """Number of items."""
        return len(self._items)

    def clear(self) -> None:
        """Remove every item."""
        self._items.clear()
        self.current_tokens = 0

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-able data."""
        items = []
        for item in self._items.values():
            data = asdict(item)
            data["value"] = copy.deepcopy(item.value)
            items.append(data)
        return {"max_tokens": self.max_tokens, "items": items}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the state with a snapshot's; on any error nothing changes."""
        try:
            max_tokens = data["max_tokens"]
            if type(max_tokens) is not int or max_tokens < 1:
                raise ValueError(f"bad max_tokens {max_tokens!r}")
            items: dict[ContextKey, ContextItem] = {}
            for raw in data["items"]:
                key = parse_term(ContextKey, raw["key"], error=UnknownContextKeyError)
                source = parse_term(ContextSource, raw["source"])
                stype = raw["suggested_type"]
                text = _text(key, raw["value"])
                value = json.loads(text) if isinstance(raw["value"], (list, dict)) else raw["value"]
                items[key] = ContextItem(
                    key=key,
                    value=value,
                    source=source,
                    confidence=validate_confidence(raw["confidence"]),
                    access_count=int(raw["access_count"]),
                    first_seen=float(raw["first_seen"]),
                    last_accessed=float(raw["last_accessed"]),
                    suggested_type=None if stype is None else parse_term(MemoryType, stype),
                    tokens=self._counter.count_memory(text),
                )
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise InvalidSnapshotError(f"invalid working-context snapshot: {e}") from e
        total = sum(item.tokens for item in items.values())
        if total > max_tokens:
            raise InvalidSnapshotError(f"snapshot holds {total} tokens, over {max_tokens}")
        self.max_tokens, self._items, self.current_tokens = max_tokens, items, total


def _text(key: ContextKey, value: Any) -> str:
    """The text an item is measured (and later rendered) as; rejects non-JSON values."""
    if type(value) is str:
        return value
    if isinstance(value, (list, dict, tuple, str, *_SCALARS)):
        try:
            # allow_nan=False: NaN/Infinity are not JSON and would break snapshots.
            return json.dumps(value, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            pass
    raise InvalidContextValueError(
        f"value for {key.value!r} must be JSON data (str, number, bool, None, list, dict), "
        f"got {value!r}",
        details={"key": key.value, "value": repr(value)},
    )

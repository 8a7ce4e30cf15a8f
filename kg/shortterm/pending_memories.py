"""Pending memories: the staging area for items awaiting promotion (seed 000 §1.3).

Implicit items (from pattern detection) carry an importance score; past max_items (500) the
lowest-scored one is evicted — ties go to the oldest. The original found it by scanning every
item on each insert; here a min-heap with lazy deletion makes an insert O(log n): an update or
removal leaves the old heap entry behind marked dead, and the heap is rebuilt once dead
entries outnumber live ones, so the rebuild's cost is amortised over the inserts that caused it.

Agent decisions (explicit remember requests) have importance 1.0, bypass the threshold, and are
capped at 100 with the oldest dropped.

>>> pending = PendingMemories(max_items=2)
>>> a = pending.add_implicit("uses Flask", importance_score=0.9)
>>> b = pending.add_implicit("likes tabs", importance_score=0.2)
>>> c = pending.add_implicit("tests in pytest", importance_score=0.7)
>>> pending.get(b) is None, pending.size()
(True, 2)
"""

from __future__ import annotations

import heapq
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from kg.errors import ConflictError, ValidationError
from kg.shortterm.errors import InvalidContentError, InvalidSnapshotError, PendingItemNotFoundError
from kg.terms import (
    MemoryType,
    SourceType,
    SuggestedBy,
    parse_term,
    validate_confidence,
    validate_identifier,
    validate_score,
)

__all__ = [
    "DEFAULT_MAX_AGENT_DECISIONS",
    "DEFAULT_MAX_ITEMS",
    "DEFAULT_PROMOTION_THRESHOLD",
    "PendingItem",
    "PendingMemories",
]

DEFAULT_MAX_ITEMS = 500
DEFAULT_MAX_AGENT_DECISIONS = 100
DEFAULT_PROMOTION_THRESHOLD = 0.6


@dataclass(slots=True)
class PendingItem:
    """A memory staged for promotion (seed 000 §1.1.1.6)."""

    id: str
    content: str
    memory_type: MemoryType
    confidence: float
    source_type: SourceType
    evidence: tuple[str, ...]
    rationale: str | None
    suggested_by: SuggestedBy
    importance_score: float
    created_at: float
    access_count: int = 0


# A heap entry is [score, seq, id, alive]; lists so an entry can be marked dead in place.
_Entry = list[Any]


class PendingMemories:
    """Implicit items in a lazily-pruned min-heap plus a bounded FIFO of agent decisions."""

    __slots__ = (
        "_decisions",
        "_entries",
        "_heap",
        "_items",
        "_now",
        "_seq",
        "max_agent_decisions",
        "max_items",
    )

    def __init__(
        self,
        max_items: int = DEFAULT_MAX_ITEMS,
        *,
        max_agent_decisions: int = DEFAULT_MAX_AGENT_DECISIONS,
        now: Callable[[], float] = time.time,
    ) -> None:
        if type(max_items) is not int or max_items < 1:
            raise ValueError(f"max_items must be a positive int, got {max_items!r}")
        if type(max_agent_decisions) is not int or max_agent_decisions < 1:
            raise ValueError(f"max_agent_decisions must be a positive int: {max_agent_decisions!r}")
        self.max_items = max_items
        self.max_agent_decisions = max_agent_decisions
        self._now = now
        self._items: dict[str, PendingItem] = {}
        self._entries: dict[str, _Entry] = {}
        self._heap: list[_Entry] = []
        self._seq = 0
        self._decisions: OrderedDict[str, PendingItem] = OrderedDict()

    def add_implicit(
        self,
        content: str,
        *,
        importance_score: float,
        memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8,
        source_type: SourceType | str = SourceType.AGENT,
        evidence: Sequence[str] = (),
        rationale: str | None = None,
        item_id: str | None = None,
    ) -> str:
        """Stage an implicit item and return its id; past max_items the lowest score goes."""
        score = validate_score(importance_score)
        item = self._build(
            content,
            memory_type,
            confidence,
            source_type,
            evidence,
            rationale,
            item_id,
            SuggestedBy.IMPLICIT,
            score,
        )
        if item.id in self._decisions:
            raise ConflictError(f"pending id {item.id!r} is already an agent decision")
        self._discard_implicit(item.id)
        self._items[item.id] = item
        self._push(item)
        if len(self._items) > self.max_items:
            self._evict_lowest()
        return item.id

    def add_agent_decision(
        self,
        content: str,
        *,
        memory_type: MemoryType | str = MemoryType.FACT,
        confidence: float = 0.8,
        source_type: SourceType | str = SourceType.AGENT,
        evidence: Sequence[str] = (),
        rationale: str | None = None,
        item_id: str | None = None,
    ) -> str:
        """Stage an explicit agent decision (importance 1.0); past the cap the oldest goes."""
        item = self._build(
            content,
            memory_type,
            confidence,
            source_type,
            evidence,
            rationale,
            item_id,
            SuggestedBy.AGENT,
            1.0,
        )
        # The agent's explicit word supersedes an implicit guess with the same id.
        self._discard_implicit(item.id)
        self._decisions.pop(item.id, None)
        self._decisions[item.id] = item
        while len(self._decisions) > self.max_agent_decisions:
            self._decisions.popitem(last=False)
        return item.id

    def ready_for_promotion(
        self, threshold: float = DEFAULT_PROMOTION_THRESHOLD
    ) -> list[PendingItem]:
        """Copies of items scoring ≥ threshold plus every agent decision, highest score first."""
        limit = validate_score(threshold, name="threshold")
        chosen = list(self._decisions.values())
        chosen += [item for item in self._items.values() if item.importance_score >= limit]
        # sort() is stable: agent decisions lead ties at 1.0, older items lead other ties.
        chosen.sort(key=lambda item: item.importance_score, reverse=True)
        return [replace(item) for item in chosen]

    def clear_promoted(self, ids: Iterable[str]) -> int:
        """Remove the given ids (implicit items or agent decisions); return how many went.

        The seed emptied the whole agent-decision list here, which silently dropped decisions
        staged during a promotion run or left out of it; only promoted ids are removed now.
        """
        removed = 0
        for item_id in ids:
            if self._decisions.pop(item_id, None) is not None or self._discard_implicit(item_id):
                removed += 1
        return removed

    def get(self, item_id: str) -> PendingItem | None:
        """A copy of the pending item with this id, or None."""
        item = self._items.get(item_id) or self._decisions.get(item_id)
        return replace(item) if item is not None else None

    def update_score(self, item_id: str, importance_score: float) -> None:
        """Set the importance score of an implicit item."""
        score = validate_score(importance_score)
        item = self._items.get(item_id)
        if item is None:
            raise PendingItemNotFoundError(
                f"no implicit pending item {item_id!r} (agent decisions keep importance 1.0)",
                details={"id": repr(item_id)},
            )
        self._entries[item_id][3] = False
        item.importance_score = score
        self._push(item)

    def to_list(self) -> list[PendingItem]:
        """Copies of all pending items: agent decisions first, then implicit by age."""
        return [replace(item) for item in (*self._decisions.values(), *self._items.values())]

    def size(self) -> int:
        """Total pending count: implicit items plus agent decisions."""
        return len(self._items) + len(self._decisions)

    def clear(self) -> None:
        """Remove everything."""
        self._items.clear()
        self._entries.clear()
        self._heap.clear()
        self._decisions.clear()

    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-able data (implicit items oldest first)."""
        by_age = sorted(self._items.values(), key=lambda item: self._entries[item.id][1])
        return {
            "max_items": self.max_items,
            "max_agent_decisions": self.max_agent_decisions,
            "items": [_dump(item) for item in by_age],
            "agent_decisions": [_dump(item) for item in self._decisions.values()],
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace the state with a snapshot's; on any error nothing changes."""
        try:
            fresh = PendingMemories(
                data["max_items"], max_agent_decisions=data["max_agent_decisions"], now=self._now
            )
            for raw in data["items"]:
                fresh._restore_item(raw, SuggestedBy.IMPLICIT)
            for raw in data["agent_decisions"]:
                fresh._restore_item(raw, SuggestedBy.AGENT)
        except (KeyError, TypeError, ValueError, ValidationError) as e:
            raise InvalidSnapshotError(f"invalid pending-memories snapshot: {e}") from e
        if len(fresh._items) > fresh.max_items or len(fresh._decisions) > fresh.max_agent_decisions:
            raise InvalidSnapshotError("pending-memories snapshot holds more items than its caps")
        for name in self.__slots__:
            setattr(self, name, getattr(fresh, name))

    def _restore_item(self, raw: Mapping[str, Any], kind: SuggestedBy) -> None:
        item = self._build(
            raw["content"],
            raw["memory_type"],
            raw["confidence"],
            raw["source_type"],
            raw["evidence"],
            raw["rationale"],
            raw["id"],
            kind,
            validate_score(raw["importance_score"]),
        )
        item.created_at = float(raw["created_at"])
        item.access_count = int(raw["access_count"])
        if kind is SuggestedBy.AGENT:
            self._decisions[item.id] = item
        else:
            self._items[item.id] = item
            self._push(item)

    def _build(
        self,
        content: object,
        memory_type: object,
        confidence: object,
        source_type: object,
        evidence: object,
        rationale: object,
        item_id: object,
        suggested_by: SuggestedBy,
        score: float,
    ) -> PendingItem:
        if not isinstance(content, str) or not content.strip():
            raise InvalidContentError(
                f"content must be a non-empty string, got {content!r}",
                details={"value": repr(content)},
            )
        if (
            isinstance(evidence, str)
            or not isinstance(evidence, Sequence)
            or not all(isinstance(e, str) for e in evidence)
        ):
            raise InvalidContentError(f"evidence must be a list of strings, got {evidence!r}")
        if rationale is not None and not isinstance(rationale, str):
            raise InvalidContentError(f"rationale must be a string or None, got {rationale!r}")
        return PendingItem(
            id=uuid.uuid4().hex if item_id is None else validate_identifier(item_id, name="id"),
            content=content,
            memory_type=parse_term(MemoryType, memory_type),
            confidence=validate_confidence(confidence),
            source_type=parse_term(SourceType, source_type),
            evidence=tuple(evidence),
            rationale=rationale,
            suggested_by=suggested_by,
            importance_score=score,
            created_at=self._now(),
        )

    def _push(self, item: PendingItem) -> None:
        self._seq += 1
        entry: _Entry = [item.importance_score, self._seq, item.id, True]
        self._entries[item.id] = entry
        heapq.heappush(self._heap, entry)
        if len(self._heap) > 2 * len(self._entries) + 64:
            self._heap = [e for e in self._heap if e[3]]
            heapq.heapify(self._heap)

    def _discard_implicit(self, item_id: str) -> bool:
        if self._items.pop(item_id, None) is None:
            return False
        self._entries.pop(item_id)[3] = False
        return True

    def _evict_lowest(self) -> None:
        heap = self._heap
        while heap:
            entry = heapq.heappop(heap)
            if entry[3]:
                del self._items[entry[2]]
                del self._entries[entry[2]]
                return


def _dump(item: PendingItem) -> dict[str, Any]:
    data = asdict(item)
    data["evidence"] = list(item.evidence)
    return data

"""PendingMemories (seed 000 §1.3.2 and the pending_item parts of §1.1.2).

Mapping of seed 000 §1.3.2:
- 'new/0 creates empty pending memories with default max_items' → test_new_defaults
- 'new/1 accepts custom max_items value' → test_new_custom_max_items
- 'add_implicit/2 adds item to items map' → test_add_implicit_adds_item
- 'add_implicit/2 generates unique id if not provided' → test_add_implicit_generates_unique_ids
- 'add_implicit/2 sets suggested_by to :implicit' → test_add_implicit_sets_suggested_by
- 'add_implicit/2 enforces max_items limit by evicting lowest score' → test_max_items_evicts_lowest
- 'add_agent_decision/2 adds to agent_decisions list' → test_add_agent_decision_adds
- 'add_agent_decision/2 sets suggested_by to :agent' → test_add_agent_decision_adds
- 'add_agent_decision/2 sets importance_score to 1.0' → test_add_agent_decision_adds
- 'ready_for_promotion/2 returns items above default threshold' → test_ready_default_threshold
- 'ready_for_promotion/2 with custom threshold' → test_ready_custom_threshold
- 'ready_for_promotion/2 always includes agent_decisions' → test_ready_includes_agent_decisions
- 'ready_for_promotion/2 sorts by importance_score descending' → test_ready_sorted_descending
- 'clear_promoted/2 removes specified ids from items' → test_clear_promoted_removes_ids
- 'clear_promoted/2 clears agent_decisions list' → test_clear_promoted_clears_promoted_decisions
  (deliberate change: only promoted decisions go — see the module docstring)
- 'clear_promoted/2 handles non-existent ids gracefully' → test_clear_promoted_unknown_ids
- 'get/2 returns pending item by id' / 'returns nil for non-existent id' → test_get
- 'size/1 returns correct total count' → test_size_counts_both
- 'update_score/3 updates importance_score for existing item' → test_update_score
- 'eviction removes item with lowest importance_score' → test_eviction_after_update_score
Seed 000 §1.1.2 'pending_item struct with all required fields / optional fields nil' →
test_item_fields_required_and_optional.
Plus: the agent-decision cap (100, oldest dropped), heap compaction, snapshot/restore.
"""

from __future__ import annotations

import json
import random

import pytest

from kg.shortterm import PendingItemNotFoundError, PendingMemories
from kg.terms import MemoryType, SourceType, SuggestedBy


def test_new_defaults() -> None:
    pending = PendingMemories()
    assert (pending.max_items, pending.max_agent_decisions, pending.size()) == (500, 100, 0)


def test_new_custom_max_items() -> None:
    assert PendingMemories(7).max_items == 7


def test_add_implicit_adds_item() -> None:
    pending = PendingMemories()
    item_id = pending.add_implicit("uses Flask", importance_score=0.7)
    item = pending.get(item_id)
    assert item is not None and item.content == "uses Flask" and item.importance_score == 0.7


def test_add_implicit_generates_unique_ids() -> None:
    pending = PendingMemories()
    ids = {pending.add_implicit(f"m{i}", importance_score=0.5) for i in range(100)}
    assert len(ids) == 100
    assert pending.add_implicit("given", importance_score=0.5, item_id="mine") == "mine"


def test_add_implicit_sets_suggested_by() -> None:
    pending = PendingMemories()
    item = pending.get(pending.add_implicit("x", importance_score=0.5))
    assert item is not None and item.suggested_by is SuggestedBy.IMPLICIT


def test_item_fields_required_and_optional() -> None:
    pending = PendingMemories(now=lambda: 42.0)
    full = pending.get(
        pending.add_implicit(
            "Use pyoxigraph",
            importance_score=0.9,
            memory_type="decision",
            confidence=0.95,
            source_type="user",
            evidence=["msg-1"],
            rationale="fast",
        )
    )
    assert full is not None
    assert (
        full.memory_type,
        full.confidence,
        full.source_type,
        full.evidence,
        full.rationale,
        full.created_at,
        full.access_count,
    ) == (MemoryType.DECISION, 0.95, SourceType.USER, ("msg-1",), "fast", 42.0, 0)
    bare = pending.get(pending.add_implicit("x", importance_score=0.1))
    assert bare is not None and bare.rationale is None and bare.evidence == ()


def test_max_items_evicts_lowest() -> None:
    pending = PendingMemories(3)
    ids = [pending.add_implicit(f"m{s}", importance_score=s) for s in (0.5, 0.2, 0.9)]
    pending.add_implicit("m0.7", importance_score=0.7)
    assert pending.get(ids[1]) is None and pending.size() == 3
    # A newcomer scoring below everything held is itself the lowest, so it is the one dropped.
    low = pending.add_implicit("low", importance_score=0.1)
    assert pending.get(low) is None and pending.size() == 3


def test_eviction_ties_go_to_the_oldest() -> None:
    pending = PendingMemories(2)
    first = pending.add_implicit("a", importance_score=0.5)
    second = pending.add_implicit("b", importance_score=0.5)
    pending.add_implicit("c", importance_score=0.5)
    assert pending.get(first) is None and pending.get(second) is not None


def test_add_agent_decision_adds() -> None:
    pending = PendingMemories()
    item = pending.get(pending.add_agent_decision("We use tabs", memory_type="convention"))
    assert item is not None
    assert (item.suggested_by, item.importance_score) == (SuggestedBy.AGENT, 1.0)
    assert pending.size() == 1


def test_agent_decisions_capped_oldest_dropped() -> None:
    pending = PendingMemories(max_agent_decisions=3)
    ids = [pending.add_agent_decision(f"d{i}") for i in range(5)]
    assert [pending.get(i) is not None for i in ids] == [False, False, True, True, True]


def test_ready_default_threshold() -> None:
    pending = PendingMemories()
    for score in (0.59, 0.6, 0.8):
        pending.add_implicit(f"s{score}", importance_score=score)
    assert [i.importance_score for i in pending.ready_for_promotion()] == [0.8, 0.6]


def test_ready_custom_threshold() -> None:
    pending = PendingMemories()
    for score in (0.2, 0.4, 0.8):
        pending.add_implicit(f"s{score}", importance_score=score)
    assert [i.importance_score for i in pending.ready_for_promotion(0.3)] == [0.8, 0.4]


def test_ready_includes_agent_decisions() -> None:
    pending = PendingMemories()
    pending.add_implicit("low", importance_score=0.1)
    decision = pending.add_agent_decision("decided")
    assert [i.id for i in pending.ready_for_promotion(0.99)] == [decision]


def test_ready_sorted_descending() -> None:
    pending = PendingMemories()
    rng = random.Random(1)
    for i in range(50):
        pending.add_implicit(f"m{i}", importance_score=rng.random())
    pending.add_agent_decision("d")
    scores = [i.importance_score for i in pending.ready_for_promotion(0.0)]
    assert scores == sorted(scores, reverse=True) and scores[0] == 1.0


def test_clear_promoted_removes_ids() -> None:
    pending = PendingMemories()
    a = pending.add_implicit("a", importance_score=0.9)
    b = pending.add_implicit("b", importance_score=0.9)
    assert pending.clear_promoted([a]) == 1
    assert pending.get(a) is None and pending.get(b) is not None


def test_clear_promoted_clears_promoted_decisions() -> None:
    pending = PendingMemories()
    d1, d2 = pending.add_agent_decision("d1"), pending.add_agent_decision("d2")
    promoted = [i.id for i in pending.ready_for_promotion()]
    late = pending.add_agent_decision("staged during the promotion run")
    assert pending.clear_promoted(promoted) == 2
    assert pending.get(d1) is None and pending.get(d2) is None
    assert pending.get(late) is not None  # the seed would have lost this one


def test_clear_promoted_unknown_ids() -> None:
    pending = PendingMemories()
    pending.add_implicit("a", importance_score=0.9)
    assert pending.clear_promoted(["nope", "also-nope"]) == 0 and pending.size() == 1


def test_get() -> None:
    pending = PendingMemories()
    item_id = pending.add_implicit("a", importance_score=0.9)
    item = pending.get(item_id)
    assert item is not None and item.id == item_id
    item.content = "mutated"  # a copy
    assert pending.get(item_id).content == "a"  # type: ignore[union-attr]
    assert pending.get("missing") is None


def test_size_counts_both() -> None:
    pending = PendingMemories()
    pending.add_implicit("a", importance_score=0.9)
    pending.add_implicit("b", importance_score=0.1)
    pending.add_agent_decision("c")
    assert pending.size() == 3


def test_update_score() -> None:
    pending = PendingMemories()
    item_id = pending.add_implicit("a", importance_score=0.1)
    pending.update_score(item_id, 0.95)
    assert pending.get(item_id).importance_score == 0.95  # type: ignore[union-attr]
    with pytest.raises(PendingItemNotFoundError, match="'missing'"):
        pending.update_score("missing", 0.5)


def test_eviction_after_update_score() -> None:
    pending = PendingMemories(2)
    a = pending.add_implicit("a", importance_score=0.9)
    b = pending.add_implicit("b", importance_score=0.1)
    pending.update_score(a, 0.05)  # a is now the lowest; its old heap entry is dead
    pending.add_implicit("c", importance_score=0.5)
    assert pending.get(a) is None and pending.get(b) is not None


def test_heap_stays_bounded_and_correct_under_churn() -> None:
    pending = PendingMemories(50)
    rng = random.Random(7)
    scores: dict[str, float] = {}
    for i in range(5_000):
        item_id = pending.add_implicit(f"m{i}", importance_score=rng.random())
        if i % 3 == 0 and pending.get(item_id) is not None:
            pending.update_score(item_id, rng.random())
        # Dead entries are compacted away, so the heap never grows past about twice the items.
        assert len(pending._heap) <= 2 * 50 + 64 + 1
    for item in pending.to_list():
        scores[item.id] = item.importance_score
    assert len(scores) == 50


def test_survivors_are_the_top_scores() -> None:
    pending = PendingMemories(50)
    rng = random.Random(3)
    all_scores = []
    for i in range(5_000):
        score = rng.random()
        all_scores.append(score)
        pending.add_implicit(f"m{i}", importance_score=score)
    survivors = sorted((i.importance_score for i in pending.to_list()), reverse=True)
    assert survivors == sorted(all_scores, reverse=True)[:50]


def test_snapshot_restore_roundtrip() -> None:
    pending = PendingMemories(3, now=lambda: 1.0)
    for score in (0.3, 0.3, 0.9):
        pending.add_implicit(f"s{score}", importance_score=score, evidence=["e"])
    pending.add_agent_decision("d", rationale="because")
    data = json.loads(json.dumps(pending.snapshot()))
    other = PendingMemories()
    other.restore(data)
    assert other.snapshot() == pending.snapshot()
    # Eviction order (oldest of the lowest first) survives the round trip.
    pending.add_implicit("x", importance_score=0.5)
    other.add_implicit("x", importance_score=0.5, item_id=pending.to_list()[-1].id)
    assert {i.id for i in other.to_list()} == {i.id for i in pending.to_list()}

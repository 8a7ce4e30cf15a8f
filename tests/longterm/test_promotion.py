"""Importance scoring, the promotion engine and its triggers, wired into a real SessionManager."""

from __future__ import annotations

import time

import pytest

from kg.errors import ValidationError
from kg.graphs import sessions
from kg.longterm import LongTermMemory
from kg.longterm.importance import ImportanceScorer, ImportanceWeights, salience
from kg.longterm.promotion import PromotionEngine, PromotionResult, PromotionTrigger
from kg.longterm.scheduler import PromotionScheduler
from kg.memory import session_iri
from kg.namespaces import JIDO
from kg.shortterm import SessionManager
from kg.store import EmbeddedStore
from kg.terms import MemoryType, SessionStatus


def test_importance_formula() -> None:
    s = ImportanceScorer()
    # 30 minutes ago → recency 0.5; 5 accesses → 0.5; fact salience 0.7
    got = s.score(memory_type="fact", confidence=0.8, access_count=5, last_accessed=0.0,
                  now=1800.0)
    assert got == pytest.approx(0.2 * 0.5 + 0.3 * 0.5 + 0.25 * 0.8 + 0.25 * 0.7)
    assert salience("risk") == salience("coding_standard") == 1.0
    assert (salience("discovery"), salience("hypothesis"), salience("assumption")) == (0.8, 0.5,
                                                                                      0.4)
    assert salience("trade_off") == 0.3
    custom = ImportanceScorer(ImportanceWeights(recency=0.0, frequency=0.0, confidence=1.0,
                                                salience=0.0))
    assert custom.score(memory_type="bug", confidence=0.3, access_count=99, last_accessed=None,
                        now=0.0) == pytest.approx(0.3)
    with pytest.raises(ValidationError, match="sum to 1"):
        ImportanceWeights(recency=0.5, frequency=0.5, confidence=0.5, salience=0.5)


@pytest.fixture
def wired(ltm: LongTermMemory) -> tuple[PromotionScheduler, SessionManager]:
    """A scheduler and a manager wired through the manager's hooks."""
    scheduler = PromotionScheduler(PromotionEngine(ltm))
    manager = SessionManager(on_pause=scheduler.on_pause, on_close=scheduler.on_close)
    scheduler.bind(manager)
    return scheduler, manager


def test_candidates_are_filtered_scored_and_capped(ltm: LongTermMemory,
                                                   wired: tuple[PromotionScheduler,
                                                                SessionManager]) -> None:
    scheduler, _ = wired
    s = scheduler.start_session("s1", project="p", agent="coder")
    s.working_context.put("framework", "Flask", source="tool")  # typed: fact
    s.working_context.put("current_task", "write tests")  # no suggested type
    s.working_context.put("discovered_patterns", "   ", source="inferred")  # empty
    for i in range(30):
        s.pending_memories.add_implicit(f"implicit {i}", importance_score=0.7)
    s.pending_memories.add_implicit("too weak", importance_score=0.3)
    s.pending_memories.add_agent_decision("Use ruff", memory_type="convention")
    result = PromotionEngine(ltm).promote(s)
    assert len(result.written) == 20 and result.ok
    assert "pending:" in next(iter(result.written)) and len(result.promoted) == 20
    first = ltm.get(result.promoted[0])
    assert first.content == "Use ruff" and first.type is MemoryType.CONVENTION  # decisions first
    reasons = {x.candidate: x.reason for x in result.skipped}
    assert reasons["context:current_task"] == "no memory type"
    assert reasons["context:discovered_patterns"] == "empty content"
    assert sum("over the limit of 20" in r for r in reasons.values()) == 12
    assert s.pending_memories.size() == 31 - 19  # 19 implicit + 1 decision written
    assert ltm.get(result.promoted[0]).agent == "coder"


def test_promoted_memories_cross_sessions_but_not_projects(
    ltm: LongTermMemory, wired: tuple[PromotionScheduler, SessionManager]
) -> None:
    scheduler, manager = wired
    s1 = scheduler.start_session("s1", project="shop", agent="a")
    s1.pending_memories.add_agent_decision("Payments go through Stripe", memory_type="decision")
    manager.close("s1")  # final run via on_close
    scheduler.start_session("s2", project="shop")
    scheduler.start_session("s3", project="blog")
    assert [m.content for m in ltm.memories("shop")] == ["Payments go through Stripe"]
    assert ltm.memories("blog") == []
    assert ltm.records.status("s1", project="shop") is SessionStatus.CLOSED


def test_pause_and_close_triggers_and_records(ltm: LongTermMemory, store: EmbeddedStore) -> None:
    seen: list[PromotionResult] = []
    scheduler = PromotionScheduler(PromotionEngine(ltm), on_result=seen.append)
    manager = SessionManager(on_pause=scheduler.on_pause, on_close=scheduler.on_close)
    scheduler.bind(manager)
    s = scheduler.start_session("s1", project="p", agent="a")
    s.pending_memories.add_implicit("found a cache bug", importance_score=0.9,
                                    memory_type="discovery")
    manager.pause("s1")
    assert seen[-1].trigger is PromotionTrigger.SESSION_PAUSE and len(seen[-1].promoted) == 1
    assert ltm.records.status("s1", project="p") is SessionStatus.PAUSED
    scheduler.resume_session("s1")
    assert ltm.records.status("s1", project="p") is SessionStatus.ACTIVE
    for i in range(45):
        s.pending_memories.add_implicit(f"note {i}", importance_score=0.8)
    manager.close("s1")  # the final run drains past the per-run limit
    assert seen[-1].trigger.value == "session_close"
    assert len(seen[-1].promoted) == 45 and s.pending_memories.size() == 0
    ended = list(store.quads(session_iri("s1"), JIDO["endedAt"], None, sessions("p")))
    assert len(ended) == 1


def test_context_items_are_promoted_once(ltm: LongTermMemory,
                                         wired: tuple[PromotionScheduler, SessionManager]) -> None:
    scheduler, _ = wired
    s = scheduler.start_session("s1", project="p")
    s.working_context.put("framework", "Flask", source="tool")
    s.access_log.record("framework")
    engine = scheduler.engine
    assert len(engine.promote(s).promoted) == 1
    again = engine.promote(s)
    assert again.written == {} and again.skipped[0].reason == "already promoted"
    s.working_context.put("framework", "Django", source="tool")
    assert len(engine.promote(s).promoted) == 1
    assert sorted(m.content for m in ltm.memories("p")) == ["framework: Django",
                                                            "framework: Flask"]


def test_agent_decision_and_pending_limit_trigger_at_once(
    ltm: LongTermMemory, wired: tuple[PromotionScheduler, SessionManager]
) -> None:
    scheduler, manager = wired
    manager.config = manager.config.__class__(max_pending=5)
    scheduler.start_session("s1", project="p")
    result = scheduler.add_agent_decision("s1", "Deploy on Fridays is banned",
                                          memory_type="agent_rule")
    assert result.trigger is PromotionTrigger.AGENT_DECISION and len(result.promoted) == 1
    scheduler.start_session("s2", project="p")
    for i in range(4):
        scheduler.add_pending("s2", f"item {i}", importance_score=0.9)
    assert len(ltm.memories("p")) == 1
    scheduler.add_pending("s2", "item 4", importance_score=0.9)  # the 5th fills the store
    assert len(ltm.memories("p")) == 6


def test_periodic_thread_promotes_and_stops(
    ltm: LongTermMemory, wired: tuple[PromotionScheduler, SessionManager]
) -> None:
    scheduler, _ = wired
    s = scheduler.start_session("s1", project="p")
    s.pending_memories.add_implicit("periodic item", importance_score=0.95)
    scheduler.start(interval=0.05)
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not ltm.memories("p"):
            time.sleep(0.02)
    finally:
        scheduler.stop()
    assert [m.content for m in ltm.memories("p")] == ["periodic item"]
    assert scheduler._thread is None


class FailingOnce(LongTermMemory):
    """A LongTermMemory whose store rejects one particular content (a real partial failure)."""

    def remember(self, content: str, **kwargs: object):  # type: ignore[no-untyped-def]
        if content == "poison":
            raise OSError("disk full")
        return super().remember(content, **kwargs)  # type: ignore[arg-type]


def test_partial_failure_keeps_unwritten_items_pending(store: EmbeddedStore) -> None:
    ltm = FailingOnce(store)
    manager = SessionManager()
    s = manager.start("s1", project="p")
    ids = [s.pending_memories.add_implicit(c, importance_score=0.9)
           for c in ("good one", "poison", "good two")]
    result = PromotionEngine(ltm).promote(s)
    assert len(result.promoted) == 2 and [f.candidate for f in result.failed] == [
        f"pending:{ids[1]}"
    ]
    assert "disk full" in result.failed[0].error
    assert [i.id for i in s.pending_memories.to_list()] == [ids[1]]

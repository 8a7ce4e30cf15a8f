"""SessionManager and Session (seed 000 §1.5.6 and §1.6; GenServer calls → manager methods).

Mapping of seed 000 §1.5.6:
- 'init/1 initializes working_context / pending_memories / access_log with correct defaults'
  → test_start_initialises_memory_with_defaults
- 'update_context/4 stores context item' → test_update_context_stores_item
- 'update_context/4 updates existing item with incremented access_count' → same test
- 'update_context/4 accepts all supported options' → test_update_context_accepts_all_options
- 'get_context/2 returns value for existing key' → test_get_context
- 'get_context/2 returns {:error, :key_not_found} for missing key' → test_get_context
- 'get_context/2 updates access tracking' → test_get_context
- 'get_all_context/1 returns all context items as map' → test_get_all_and_clear_context
- 'clear_context/1 resets working_context to empty' → test_get_all_and_clear_context
- 'add_pending_memory/2 adds item' / 'enforces max_pending_memories limit'
  → test_add_pending_memory_and_limit
- 'add_agent_memory_decision/2 adds to agent_decisions with max score'
  → test_agent_decision_and_ready_for_promotion
- 'get_pending_memories/1 returns items ready for promotion' → same test
- 'clear_promoted_memories/2 removes promoted ids' → same test
- 'record_access/3 adds entry to access_log' / 'get_access_stats/2' → test_record_access_and_stats
- 'memory fields persist across multiple GenServer calls' → test_state_persists_across_calls
- 'memory operations work with existing Session.State operations' → test_conversation_and_memory
Mapping of seed 000 §1.6:
- 1.6.1.2 initialises empty → test_start_initialises_memory_with_defaults
- 1.6.1.3 persist across calls → test_state_persists_across_calls
- 1.6.1.4 restart resets memory (not persisted) → test_restart_resets_but_restore_recovers
- 1.6.1.5 no interference with existing operations → test_conversation_and_memory
- 1.6.1.6 / 1.6.2.2 isolated sessions → test_sessions_are_isolated (+ test_concurrency.py)
- 1.6.2.1 updates propagate → test_update_context_stores_item
- 1.6.2.3 access tracking on get/put → test_get_context
- 1.6.2.4 heavy read/write load without corruption → test_concurrency.py
- 1.6.3.1–4 pending accumulate / agent decisions / limit / clear
  → test_add_pending_memory_and_limit, test_agent_decision_and_ready_for_promotion
- 1.6.4.1 access log records context and memory access → test_record_access_and_stats
- 1.6.4.2 high-frequency recording does not block others → test_concurrency.py
- 1.6.4.3 stats reflect activity → test_record_access_and_stats
Plus the life cycle (pause/resume/close, hooks), snapshot/restore into a fresh manager.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from kg.shortterm import (
    ContextKeyNotFoundError,
    Session,
    SessionConfig,
    SessionExistsError,
    SessionHookError,
    SessionManager,
    SessionNotFoundError,
    SessionStateError,
)
from kg.terms import ContextSource, MemoryType, SessionStatus


class Clock:
    def __init__(self) -> None:
        self.t = 1_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def manager(clock: Clock) -> SessionManager:
    return SessionManager(now=clock)


def test_start_initialises_memory_with_defaults(manager: SessionManager) -> None:
    session = manager.start("s1", project="jido-kg", agent="coder")
    assert (session.id, session.project, session.agent) == ("s1", "jido-kg", "coder")
    assert session.status is SessionStatus.ACTIVE
    assert (session.working_context.max_tokens, session.working_context.size()) == (12_000, 0)
    assert (session.pending_memories.max_items, session.pending_memories.size()) == (500, 0)
    assert (session.access_log.max_entries, session.access_log.size()) == (1_000, 0)
    assert (session.conversation.max_messages, session.conversation.max_tokens) == (1_000, 128_000)
    assert session.working_memory.size() == 0
    assert len(manager.start().id) == 32  # generated ids are valid session ids


def test_update_context_stores_item(manager: SessionManager) -> None:
    manager.start("s1")
    manager.update_context("s1", "framework", "Flask")
    manager.update_context("s1", "framework", "Django")
    item = manager.get("s1").working_context.item("framework")
    assert item is not None and (item.value, item.access_count) == ("Django", 2)


def test_update_context_accepts_all_options(manager: SessionManager) -> None:
    manager.start("s1")
    manager.update_context(
        "s1", "user_intent", "ship", source="inferred", confidence=0.6, memory_type="decision"
    )
    item = manager.get("s1").working_context.item("user_intent")
    assert item is not None
    assert (item.source, item.confidence, item.suggested_type) == (
        ContextSource.INFERRED,
        0.6,
        MemoryType.DECISION,
    )


def test_get_context(manager: SessionManager) -> None:
    manager.start("s1")
    manager.update_context("s1", "framework", "Flask")
    assert manager.get_context("s1", "framework") == "Flask"
    item = manager.get("s1").working_context.item("framework")
    assert item is not None and item.access_count == 2
    with pytest.raises(ContextKeyNotFoundError, match="'active_file'"):
        manager.get_context("s1", "active_file")


def test_get_all_and_clear_context(manager: SessionManager) -> None:
    manager.start("s1")
    manager.update_context("s1", "framework", "Flask")
    manager.update_context("s1", "active_file", "app.py")
    assert manager.get_all_context("s1") == {"framework": "Flask", "active_file": "app.py"}
    manager.clear_context("s1")
    assert manager.get_all_context("s1") == {}


def test_add_pending_memory_and_limit(clock: Clock) -> None:
    manager = SessionManager(config=SessionConfig(max_pending=3), now=clock)
    manager.start("s1")
    for i, score in enumerate((0.9, 0.1, 0.7, 0.8)):
        manager.add_pending_memory("s1", f"m{i}", importance_score=score)
    pending = manager.get("s1").pending_memories
    assert pending.size() == 3
    assert sorted(i.importance_score for i in pending.to_list()) == [0.7, 0.8, 0.9]


def test_agent_decision_and_ready_for_promotion(manager: SessionManager) -> None:
    manager.start("s1")
    low = manager.add_pending_memory("s1", "low", importance_score=0.2)
    high = manager.add_pending_memory("s1", "high", importance_score=0.9)
    decision = manager.add_agent_memory_decision("s1", "use tabs", memory_type="convention")
    ready = manager.get_pending_memories("s1")
    assert [(i.id, i.importance_score) for i in ready] == [(decision, 1.0), (high, 0.9)]
    assert manager.clear_promoted_memories("s1", [i.id for i in ready]) == 2
    assert [i.id for i in manager.get("s1").pending_memories.to_list()] == [low]


def test_record_access_and_stats(manager: SessionManager, clock: Clock) -> None:
    manager.start("s1")
    manager.record_access("s1", "framework", "read")
    clock.t += 10
    manager.record_access("s1", "framework", "write")
    manager.record_access("s1", ("memory", "m1"), "query")
    stats = manager.get_access_stats("s1", "framework")
    assert (stats.frequency, stats.recency) == (2, clock.t)
    assert manager.get_access_stats("s1", ("memory", "m1")).frequency == 1


def test_state_persists_across_calls(manager: SessionManager) -> None:
    manager.start("s1")
    for i in range(20):
        manager.update_context("s1", "current_task", f"task {i}")
        manager.append_message("s1", "user", f"message {i}")
    assert manager.get_context("s1", "current_task") == "task 19"
    assert manager.get("s1").conversation.size() == 20


def test_conversation_and_memory(manager: SessionManager) -> None:
    manager.start("s1")
    manager.append_message("s1", "user", "Let's use Flask")
    manager.update_context("s1", "framework", "Flask", source="tool")
    with manager.use("s1") as session:
        session.working_memory.add("Flask chosen", [1.0, 0.0], agent_id="a", user_id="u")
    session = manager.get("s1")
    assert session.conversation.size() == 1 and session.working_context.size() == 1
    assert session.working_memory.size() == 1


def test_sessions_are_isolated(manager: SessionManager) -> None:
    manager.start("s1")
    manager.start("s2")
    manager.update_context("s1", "framework", "Flask")
    manager.add_pending_memory("s1", "only s1", importance_score=0.9)
    manager.record_access("s1", "framework")
    assert manager.get_all_context("s2") == {}
    assert manager.get("s2").pending_memories.size() == 0
    assert manager.get_access_stats("s2", "framework").frequency == 0


def test_restart_resets_but_restore_recovers(clock: Clock) -> None:
    first = SessionManager(now=clock)
    first.start("s1", project="p")
    first.update_context("s1", "framework", "Flask")
    first.add_agent_memory_decision("s1", "use tabs")
    first.append_message("s1", "user", "hello")
    first.record_access("s1", "framework")
    with first.use("s1") as session:
        session.working_memory.add("note", [0.6, 0.8], agent_id="a", user_id="u")
    data = json.loads(json.dumps(first.snapshot("s1")))  # JSON-able
    # A fresh process: nothing carries over by itself ...
    second = SessionManager(now=clock)
    with pytest.raises(SessionNotFoundError):
        second.get("s1")
    # ... but the snapshot restores the whole short-term state.
    restored = second.restore(data)
    assert restored.snapshot() == data
    assert second.get_context("s1", "framework") == "Flask"
    with pytest.raises(SessionExistsError):
        second.restore(data)


def test_life_cycle_and_hooks(manager: SessionManager) -> None:
    seen: list[tuple[str, str, int]] = []
    manager = SessionManager(
        on_pause=lambda s: seen.append(("pause", s.status.value, s.pending_memories.size())),
        on_close=lambda s: seen.append(("close", s.status.value, s.pending_memories.size())),
    )
    manager.start("s1")
    manager.add_pending_memory("s1", "x", importance_score=0.9)
    assert manager.pause("s1").status is SessionStatus.PAUSED
    assert manager.list(status=SessionStatus.PAUSED) == ["s1"]
    with pytest.raises(SessionStateError, match="paused"):
        manager.update_context("s1", "framework", "Flask")
    assert manager.get_pending_memories("s1")  # reads still work while paused
    with pytest.raises(SessionStateError, match="cannot pause"):
        manager.pause("s1")
    manager.resume("s1")
    with pytest.raises(SessionStateError, match="cannot resume"):
        manager.resume("s1")
    final = manager.close("s1")
    assert final.status is SessionStatus.CLOSED and final.pending_memories.size() == 1
    assert seen == [("pause", "paused", 1), ("close", "closed", 1)]
    assert manager.list() == []
    with pytest.raises(SessionNotFoundError):
        manager.close("s1")


def test_failing_hook_still_closes_and_hands_back_the_session() -> None:
    def boom(session: Session) -> None:
        raise RuntimeError("promotion store down")

    manager = SessionManager(on_close=boom)
    manager.start("s1")
    with pytest.raises(SessionHookError, match="promotion store down") as info:
        manager.close("s1")
    assert info.value.session.id == "s1" and manager.list() == []


def test_start_twice_and_restore_closed_are_refused(manager: SessionManager) -> None:
    manager.start("s1")
    with pytest.raises(SessionExistsError):
        manager.start("s1")
    data = manager.snapshot("s1")
    data["status"] = "closed"
    data["id"] = "s2"
    with pytest.raises(SessionStateError):
        manager.restore(data)


def test_session_restore_with_seeded_rng_is_deterministic() -> None:
    session = Session("s1", now=lambda: 0.0, rng=np.random.default_rng(1))
    session.working_memory.add("x", [1.0], agent_id="a", user_id="u")
    copy = Session.restore(session.snapshot(), now=lambda: 0.0, rng=np.random.default_rng(1))
    assert copy.working_memory.query([1.0]) == session.working_memory.query([1.0])

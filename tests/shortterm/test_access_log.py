"""AccessLog (seed 000 §1.4.2 and the access_entry part of §1.1.2).

Mapping of seed 000 §1.4.2:
- 'new/0 creates empty log with default max_entries (1000)' → test_new_defaults
- 'new/1 accepts custom max_entries value' → test_new_custom_max_entries
- 'record/3 adds entry to front of list (newest first)' → test_record_newest_first
- 'record/3 sets timestamp to current time' → test_record_sets_timestamp
- 'record/3 enforces max_entries limit by dropping oldest' → test_record_drops_oldest
- 'record/3 accepts context_key as key' → test_record_accepts_context_key
- 'record/3 accepts {:memory, id} tuple as key' → test_record_accepts_memory_tuple
- 'record/3 accepts all access_type values' → test_record_accepts_all_access_types
- 'get_frequency/2 counts all accesses for key' → test_get_frequency_counts
- 'get_frequency/2 returns 0 for unknown keys' → test_unknown_keys
- 'get_recency/2 returns most recent timestamp for key' → test_get_recency_latest
- 'get_recency/2 returns nil for unknown keys' → test_unknown_keys
- 'get_stats/2 returns both frequency and recency' → test_get_stats
- 'recent_accesses/2 returns last N entries' → test_recent_accesses_last_n
- 'recent_accesses/2 returns all entries if N > size' → test_recent_accesses_more_than_size
- 'clear/1 resets entries to empty list' → test_clear
- 'size/1 returns correct entry count' → test_size
Plus: counters stay exact through eviction (against a brute-force model), snapshot/restore.
"""

from __future__ import annotations

import json
import random

import pytest

from kg.shortterm import AccessLog
from kg.terms import AccessType, ContextKey, UnknownContextKeyError, UnknownTermError


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


def test_new_defaults() -> None:
    log = AccessLog()
    assert (log.max_entries, log.size()) == (1000, 0)


def test_new_custom_max_entries() -> None:
    assert AccessLog(10).max_entries == 10


def test_record_newest_first() -> None:
    log = AccessLog(now=Clock())
    log.record("active_file")
    log.record("framework")
    assert [e.key for e in log.recent_accesses(2)] == [ContextKey.FRAMEWORK, ContextKey.ACTIVE_FILE]


def test_record_sets_timestamp() -> None:
    log = AccessLog(now=lambda: 123.5)
    log.record("active_file", "write")
    entry = log.recent_accesses(1)[0]
    assert (entry.key, entry.timestamp, entry.access_type) == (
        ContextKey.ACTIVE_FILE,
        123.5,
        AccessType.WRITE,
    )


def test_record_drops_oldest() -> None:
    log = AccessLog(3, now=Clock())
    for key in ("active_file", "framework", "current_task", "user_intent"):
        log.record(key)
    assert log.size() == 3
    assert log.get_frequency("active_file") == 0 and log.get_recency("active_file") is None
    assert [e.key.value for e in log.recent_accesses(10)] == [  # type: ignore[union-attr]
        "user_intent",
        "current_task",
        "framework",
    ]


def test_record_accepts_context_key() -> None:
    log = AccessLog()
    log.record(ContextKey.PROJECT_ROOT)
    assert log.get_frequency("project_root") == 1


def test_record_accepts_memory_tuple() -> None:
    log = AccessLog()
    log.record(("memory", "m-1"), AccessType.QUERY)
    assert log.get_frequency(("memory", "m-1")) == 1 and log.get_frequency(("memory", "m-2")) == 0


def test_record_accepts_all_access_types() -> None:
    log = AccessLog()
    for kind in ("read", "write", "query"):
        log.record("framework", kind)
    assert {e.access_type for e in log.recent_accesses(3)} == set(AccessType)
    with pytest.raises(UnknownTermError, match="'delete'"):
        log.record("framework", "delete")


def test_get_frequency_counts() -> None:
    log = AccessLog()
    for key in ("framework", "framework", "active_file", "framework"):
        log.record(key)
    assert log.get_frequency("framework") == 3 and log.get_frequency("active_file") == 1


def test_unknown_keys() -> None:
    log = AccessLog()
    assert log.get_frequency("framework") == 0 and log.get_recency("framework") is None
    with pytest.raises(UnknownContextKeyError, match="'nope'"):
        log.get_frequency("nope")


def test_get_recency_latest() -> None:
    log = AccessLog(now=Clock())
    log.record("framework")  # t=1
    log.record("active_file")  # t=2
    log.record("framework")  # t=3
    assert log.get_recency("framework") == 3.0


def test_get_stats() -> None:
    log = AccessLog(now=Clock())
    log.record("framework")
    log.record("framework")
    stats = log.get_stats("framework")
    assert (stats.frequency, stats.recency) == (2, 2.0)


def test_recent_accesses_last_n() -> None:
    log = AccessLog(now=Clock())
    for _ in range(10):
        log.record("framework")
    assert [e.timestamp for e in log.recent_accesses(3)] == [10.0, 9.0, 8.0]
    assert log.recent_accesses(0) == []


def test_recent_accesses_more_than_size() -> None:
    log = AccessLog()
    log.record("framework")
    assert len(log.recent_accesses(50)) == 1


def test_clear() -> None:
    log = AccessLog()
    log.record("framework")
    log.clear()
    assert (log.size(), log.recent_accesses(5), log.get_frequency("framework")) == (0, [], 0)


def test_size() -> None:
    log = AccessLog(5)
    for _ in range(3):
        log.record("framework")
    assert log.size() == 3


def test_counters_match_a_brute_force_model_through_eviction() -> None:
    log = AccessLog(50, now=Clock())
    rng = random.Random(5)
    keys: list[object] = [*ContextKey, *(("memory", f"m{i}") for i in range(5))]
    for _ in range(2_000):
        log.record(rng.choice(keys))  # type: ignore[arg-type]
    entries = log.recent_accesses(1_000)
    for key in keys:
        mine = [e.timestamp for e in entries if e.key == key]
        assert log.get_frequency(key) == len(mine)  # type: ignore[arg-type]
        assert log.get_recency(key) == (max(mine) if mine else None)  # type: ignore[arg-type]


def test_snapshot_restore_roundtrip() -> None:
    log = AccessLog(4, now=Clock())
    for key in ("framework", ("memory", "m1"), "framework", "active_file", "current_task"):
        log.record(key)
    other = AccessLog()
    other.restore(json.loads(json.dumps(log.snapshot())))
    assert other.snapshot() == log.snapshot()
    assert other.get_stats("framework") == log.get_stats("framework")

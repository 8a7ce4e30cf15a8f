"""Concurrency: 16 threads × 10,000 mixed operations over 8 sessions (seed 000 §1.6.2.4, §1.6.4.2).

Each operation (thread t, step j) goes to session (t + j) % 8, so every session is hit by every
thread. The operations are chosen so the final state is exactly computable whatever the
interleaving: context puts count per key; gets read a key no put touches; pending scores are
unique, so the survivors are exactly the top 500; messages all have the same length, so the
token total is count × size; every value is tagged with its session so a leak is visible.
"""

from __future__ import annotations

import threading
from collections import Counter

from kg.shortterm import SessionManager
from kg.terms import ContextKey

THREADS, STEPS, SESSIONS = 16, 10_000, 8
SIDS = [f"s{i}" for i in range(SESSIONS)]
KEYS = [k for k in ContextKey if k is not ContextKey.PROJECT_ROOT]
TOTAL = THREADS * STEPS + 2


def score(t: int, j: int) -> float:
    return (t * STEPS + j + 1) / TOTAL


def plan(t: int, j: int) -> tuple[str, int]:
    return SIDS[(t + j) % SESSIONS], j % 5


def test_many_threads_many_sessions_exact_counts() -> None:
    manager = SessionManager()
    for sid in SIDS:
        manager.start(sid)
        manager.update_context(sid, "project_root", sid)
    errors: list[str] = []
    barrier = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        barrier.wait()
        try:
            for j in range(STEPS):
                sid, kind = plan(t, j)
                if kind == 0:
                    key = KEYS[(t * 7 + j) % len(KEYS)]
                    manager.update_context(sid, key, f"{sid}|{t}|{j}")
                elif kind == 1:
                    if manager.get_context(sid, "project_root") != sid:
                        errors.append(f"leak into {sid}")
                elif kind == 2:
                    manager.record_access(sid, ("memory", f"{sid}-{t}"), "read")
                elif kind == 3:
                    manager.add_pending_memory(sid, f"{sid}|{t}|{j}", importance_score=score(t, j))
                else:
                    manager.append_message(sid, "user", f"{sid}|{t:02d}|{j:05d}")
        except Exception as e:  # pragma: no cover - surfaced by the assertion below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []

    puts: dict[str, Counter[ContextKey]] = {sid: Counter() for sid in SIDS}
    counts: dict[str, Counter[int]] = {sid: Counter() for sid in SIDS}
    scores: dict[str, list[float]] = {sid: [] for sid in SIDS}
    for t in range(THREADS):
        for j in range(STEPS):
            sid, kind = plan(t, j)
            counts[sid][kind] += 1
            if kind == 0:
                puts[sid][KEYS[(t * 7 + j) % len(KEYS)]] += 1
            elif kind == 3:
                scores[sid].append(score(t, j))

    for sid in SIDS:
        session = manager.get(sid)
        ctx = session.working_context
        root = ctx.item("project_root")
        assert root is not None and root.access_count == 1 + counts[sid][1]
        for key in KEYS:
            item = ctx.item(key)
            if puts[sid][key] == 0:
                assert item is None
                continue
            assert item is not None and item.access_count == puts[sid][key]
            assert item.value.startswith(f"{sid}|")
        assert ctx.size() == 1 + sum(1 for n in puts[sid].values() if n)
        log = session.access_log
        assert log.size() == min(counts[sid][2], 1_000)
        assert all(e.key[1].startswith(f"{sid}-") for e in log.recent_accesses(1_000))
        assert (
            sum(log.get_frequency(("memory", f"{sid}-{t}")) for t in range(THREADS)) == log.size()
        )
        pending = session.pending_memories.to_list()
        assert len(pending) == min(counts[sid][3], 500)
        assert sorted(i.importance_score for i in pending) == sorted(scores[sid])[-500:]
        assert all(i.content.startswith(f"{sid}|") for i in pending)
        messages = session.conversation.window()
        assert len(messages) == min(counts[sid][4], 1_000)
        assert session.conversation.token_count() == len(messages) * messages[0].tokens
        assert all(m.content.startswith(f"{sid}|") for m in messages)

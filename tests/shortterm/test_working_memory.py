"""WorkingMemory and the ACT-R formulas (seed 002 task 1; MISSION §2).

Seed 002 task 1 → tests: add returns an id and counts as the first access → test_add;
query ranks by activation and returns top_k → test_query_ranks_by_similarity_and_top_k;
getTopActivated → test_top_activated; getContextItems → test_context_items_filters_and_ranks;
clear/size → test_clear_and_size. The formulas are checked against hand computations (written
out in comments), Petrov's approximation against the exact sum, the noise's σ, and that only
returned items are reinforced (the original reinforced every item it scored).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from kg.shortterm import InvalidEmbeddingError, WorkingMemory
from kg.shortterm.activation import base_level, noise_scale, petrov_base_level

HOUR = 3600.0
E1, E2, E3 = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def memory(clock: Clock, sigma: float = 0.0, seed: int = 0) -> WorkingMemory:
    return WorkingMemory(noise_sigma=sigma, now=clock, rng=np.random.default_rng(seed))


def add(wm: WorkingMemory, content: str, embedding: list[float], user: str = "u") -> str:
    return wm.add(content, embedding, agent_id="a", user_id=user)


def test_base_level_hand_computed() -> None:
    # One access 1 h ago: ln(1^-0.5) = ln 1 = 0.
    assert base_level([HOUR]) == 0.0
    # Accesses 4 h and 1 h ago: ln(4^-0.5 + 1^-0.5) = ln(0.5 + 1) = ln 1.5 = 0.4054651.
    assert base_level([4 * HOUR, HOUR]) == pytest.approx(0.4054651, abs=1e-7)
    # An access "now" is floored at 1 s = 1/3600 h: ln((1/3600)^-0.5) = ln 60 = 4.0943446.
    assert base_level([0.0]) == pytest.approx(4.0943446, abs=1e-7)


def test_petrov_hand_computed() -> None:
    # n = 101, newest 1 h, oldest 4 h, d = 0.5:
    # 1^-0.5 + 100·(4^0.5 − 1^0.5) / (0.5·(4 − 1)) = 1 + 100·1/1.5 = 67.6667; ln → 4.2145937.
    assert petrov_base_level(101, HOUR, 4 * HOUR) == pytest.approx(4.2145937, abs=1e-6)
    # All accesses at one moment (t_n = t_k): the limit is n·t^-d; 60 accesses 1 h ago → ln 60.
    assert petrov_base_level(60, HOUR, HOUR) == pytest.approx(math.log(60))


def test_activation_hand_computed() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "flask app", E1)
    clock.t = HOUR
    # B = ln(1^-0.5) = 0; S = 11 × cos(E1, E1) = 11; ε = 0 → A = 11.
    [hit] = wm.query(E1)
    assert hit.activation == pytest.approx(11.0)
    # Reinforced at 1 h. At 4 h the ages are 4 h and 3 h:
    # B = ln(4^-0.5 + 3^-0.5) = ln(0.5 + 0.5773503) = 0.0745046; S = 11 × cos(45°) = 7.7781746.
    clock.t = 4 * HOUR
    [hit] = wm.query([1.0, 1.0, 0.0])
    assert hit.activation == pytest.approx(0.0745046 + 11 / math.sqrt(2), abs=1e-6)


def test_vectorised_base_level_equals_the_exact_sum() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "x", E1)
    times = [0.0]
    for step in range(1, 40):
        clock.t = step * 977.0
        wm.query(E1)
        times.append(clock.t)
    clock.t = 50_000.0
    [item] = wm.top_activated(-math.inf)
    assert item.access_count == 40
    assert item.activation == pytest.approx(base_level([clock.t - t for t in times]), rel=1e-12)


def test_petrov_is_close_to_the_exact_sum_for_many_accesses() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "x", E1)
    times = [0.0]
    for step in range(1, 300):  # 300 accesses, one a minute
        clock.t = step * 60.0
        wm.query(E1)
        times.append(clock.t)
    for later in (0.0, 600.0, 5 * HOUR):
        clock.t = times[-1] + later
        [item] = wm.top_activated(-math.inf)
        exact = base_level([clock.t - t for t in times])
        assert item.access_count == 300
        assert item.activation == pytest.approx(exact, abs=0.05), (later, exact)


def test_noise_has_the_configured_sigma() -> None:
    # Logistic variance is s²π²/3, so s = σ√3/π gives standard deviation σ.
    assert noise_scale(1.2) == pytest.approx(1.2 * math.sqrt(3) / math.pi)
    clock = Clock()
    wm = memory(clock, sigma=1.2, seed=42)
    for i in range(4_000):
        add(wm, f"m{i}", E1)
    clock.t = HOUR  # every B = 0 and S = 11, so the spread is all noise
    spread = np.array([i.activation for i in wm.query(E1, top_k=4_000, threshold=-math.inf)])
    assert spread.std() == pytest.approx(1.2, rel=0.05)
    assert spread.mean() == pytest.approx(11.0, abs=0.1)


def test_sigma_zero_is_deterministic_and_seeded_noise_reproducible() -> None:
    results = []
    for _ in range(2):
        clock = Clock()
        wm = memory(clock, sigma=1.2, seed=7)
        for i, e in enumerate((E1, E2, E3, [1.0, 1.0, 0.0])):
            add(wm, f"m{i}", e)
        clock.t = HOUR
        results.append([(i.content, i.activation) for i in wm.query(E1, top_k=4)])
    assert results[0] == results[1]


def test_only_returned_items_are_reinforced() -> None:
    clock = Clock()
    wm = memory(clock)
    ids = [add(wm, f"m{i}", [1.0, i / 10, 0.0]) for i in range(10)]
    clock.t = 60.0
    returned = {i.id for i in wm.query(E1, top_k=3)}
    assert len(returned) == 3
    for item_id in ids:
        item = wm.get(item_id)
        assert item is not None
        assert item.access_count == (2 if item_id in returned else 1)
        assert item.last_accessed == (60.0 if item_id in returned else 0.0)


def test_add() -> None:
    clock = Clock()
    clock.t = 5.0
    wm = memory(clock)
    item_id = wm.add("note", E1, agent_id="agent-1", user_id="user-1", source="tool")
    item = wm.get(item_id)
    assert item is not None
    assert (item.content, item.agent_id, item.user_id, item.source.value) == (
        "note",
        "agent-1",
        "user-1",
        "tool",
    )
    assert (item.created_at, item.last_accessed, item.access_count) == (5.0, 5.0, 1)


def test_query_ranks_by_similarity_and_top_k() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "far", E2)
    add(wm, "near", [1.0, 0.1, 0.0])
    add(wm, "exact", E1)
    clock.t = 60.0
    assert [i.content for i in wm.query(E1, top_k=2)] == ["exact", "near"]
    assert wm.query(E1, top_k=0) == []


def test_retrieval_threshold_filters_query() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "old and unrelated", E2)
    clock.t = 4 * HOUR  # B = ln(4^-0.5) = −0.693, S = 0 → below the 0.0 threshold
    assert wm.query(E1) == []
    [item] = wm.query(E1, threshold=-1.0)
    assert item.activation == pytest.approx(-math.log(2))


def test_top_activated() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "old", E1)
    clock.t = 3 * HOUR
    add(wm, "new", E2)
    clock.t = 4 * HOUR
    # old: ln(4^-0.5) = −0.693 (excluded at 0.0); new: ln(1^-0.5) = 0 (kept).
    assert [i.content for i in wm.top_activated()] == ["new"]
    assert [i.content for i in wm.top_activated(-1.0)] == ["new", "old"]
    assert all(i.access_count == 1 for i in wm.top_activated(-1.0))  # looking is not retrieving


def test_context_items_filters_and_ranks() -> None:
    clock = Clock()
    wm = memory(clock)
    add(wm, "u1 old", E1, user="u1")
    clock.t = HOUR
    add(wm, "u1 new", E2, user="u1")
    add(wm, "u2", E3, user="u2")
    clock.t = 2 * HOUR
    assert [i.content for i in wm.context_items("u1", "a")] == ["u1 new", "u1 old"]
    assert [i.content for i in wm.context_items("u1", "a", top_k=1)] == ["u1 new"]
    assert wm.context_items("u1", "other-agent") == []


def test_clear_and_size() -> None:
    wm = memory(Clock())
    for i in range(100):  # past the initial capacity of 64
        add(wm, f"m{i}", E1)
    assert wm.size() == 100
    wm.clear()
    assert wm.size() == 0 and wm.query(E1) == []
    add(wm, "new dimension", [1.0, 2.0])  # the dimension is fixed anew after clear
    assert wm.size() == 1


@pytest.mark.parametrize(
    "bad", [[], [0.0, 0.0, 0.0], [1.0, 2.0], [math.nan, 1.0, 0.0], [[1.0, 0.0, 0.0]], ["a", 1, 2]]
)
def test_bad_embeddings_are_rejected_and_nothing_changes(bad: object) -> None:
    wm = memory(Clock())
    add(wm, "keep", E1)
    before = wm.snapshot()
    with pytest.raises(InvalidEmbeddingError):
        wm.add("x", bad, agent_id="a", user_id="u")  # type: ignore[arg-type]
    with pytest.raises(InvalidEmbeddingError):
        wm.query(bad)  # type: ignore[arg-type]
    assert wm.snapshot() == before


def test_snapshot_restore_roundtrip() -> None:
    clock = Clock()
    wm = memory(clock)
    for i in range(70):
        add(wm, f"m{i}", [1.0, i, 0.0])
    for step in range(60):  # push one item past the exact-access window
        clock.t = step * 30.0
        wm.query([1.0, 69.0, 0.0], top_k=1)
    data = json.loads(json.dumps(wm.snapshot()))
    other = memory(clock)
    other.restore(data)
    assert other.snapshot() == wm.snapshot()
    clock.t += HOUR
    assert [(i.id, i.activation) for i in other.top_activated(-math.inf)] == [
        (i.id, i.activation) for i in wm.top_activated(-math.inf)
    ]

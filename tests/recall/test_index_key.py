"""Index keys: a memory's calendar terms and cues, a query's weighted keys by question type."""

from __future__ import annotations

from datetime import datetime

import pytest

from kg.recall.index_key import CUE_NUMBER, CUE_TIME, memory_keys, query_keys

MOMENT = datetime(2023, 5, 25, 13, 14)
NOW = datetime(2026, 1, 1)


def test_a_memory_is_keyed_by_its_moment_and_the_times_it_names() -> None:
    keys = memory_keys("I ran a charity race last Saturday", MOMENT)
    assert {"d20230525", "m202305", "y2023", "d20230520", CUE_TIME} <= set(keys)
    assert CUE_NUMBER not in keys


def test_cues_mark_times_and_numbers_only_when_the_text_has_them() -> None:
    assert set(memory_keys("We have three kids", MOMENT)) >= {CUE_NUMBER}
    plain = memory_keys("Lovely to hear from you", MOMENT)
    assert CUE_TIME not in plain and CUE_NUMBER not in plain
    assert plain[0] == "d20230525"  # the moment's own terms are always there


@pytest.mark.parametrize(("question", "cue"), [
    ("When did Melanie run a charity race?", CUE_TIME),
    ("what year did she move?", CUE_TIME),
    ("How many children does Melanie have?", CUE_NUMBER),
    ("How often does John work out?", CUE_NUMBER),
    ("What does Melanie do to destress?", None),
])
def test_the_question_type_asks_for_its_cue(question: str, cue: str | None) -> None:
    keys = dict(query_keys(question, NOW, time=2.0, cue=0.3))
    assert keys == ({cue: 0.3} if cue else {})


def test_query_times_carry_the_time_weight_and_zero_weights_drop_keys() -> None:
    assert query_keys("When did we meet on 7 July, 2023?", NOW, time=2.0, cue=0.3) == [
        ("d20230707", 2.0), (CUE_TIME, 0.3)]
    assert query_keys("When did we meet on 7 July, 2023?", NOW, time=0.0, cue=0.0) == []

"""Word forms, contraction fragments and own-word coverage: what the keyword ranking matches."""

from __future__ import annotations

from datetime import datetime

import pytest

from kg.recall.analyzer import stems
from kg.recall.fusion import FusionWeights
from kg.recall.index_key import COVERAGE, query_keys
from kg.recall.query_text import query_tokens
from kg.recall.text_index import TextDocument, TextIndex
from kg.recall.word_forms import base_form


@pytest.mark.parametrize(("form", "base"), [
    ("bought", "buy"), ("drew", "draw"), ("drawn", "draw"), ("went", "go"), ("taught", "teach"),
    ("children", "child"), ("people", "person"), ("kids", "child"), ("mum", "mother"),
    ("dad", "father"), ("pics", "picture"), ("colour", "color"), ("favourite", "favorite"),
])
def test_a_form_maps_to_its_base_word(form: str, base: str) -> None:
    assert base_form(form) == base


@pytest.mark.parametrize("word", ["saw", "found", "felt", "left", "rose", "bit", "table"])
def test_words_with_another_common_meaning_stay_themselves(word: str) -> None:
    assert base_form(word) == word


def test_memory_and_query_forms_share_one_stem() -> None:
    assert stems("She bought the kids' pics") == stems("she buys the child picture")
    assert stems("My mum's favourite colour") == stems("my mother s favorite color")


def test_contraction_and_possessive_fragments_are_not_query_words() -> None:
    assert query_tokens("What is Caroline's identity?") == ["caroline", "identity"]
    assert query_tokens("Why won't he say what he'd do? I'll ask") == ["won", "say", "ask"]


def test_coverage_key_carries_its_weight_only_when_asked() -> None:
    now = datetime(2026, 1, 1)
    assert query_keys("Where did Mel garden?", now, time=2.0, cue=0.1, coverage=0.25) == [
        (COVERAGE, 0.25)]
    assert query_keys("Where did Mel garden?", now, time=2.0, cue=0.1) == []
    assert FusionWeights().coverage > 0  # on by default


def test_coverage_puts_a_memory_saying_every_query_word_itself_first() -> None:
    index = TextIndex(None)
    index.put([
        # Says both words itself, among a long context of other words.
        TextDocument(1, "p1", "fact", stems("We planted tomatoes in the garden"),
                     stems("lovely weather today and a long walk by the river with friends")),
        # Repeats one word; the other is only in its neighbours' context.
        TextDocument(2, "p1", "fact", stems("Tomatoes tomatoes everywhere"),
                     stems("the garden was full")),
    ])
    index.commit()
    query = stems("garden tomatoes")
    assert [s for s, _ in index.search("p1", query, limit=10)] == [2, 1]
    assert [s for s, _ in index.search("p1", query, limit=10, keys=[(COVERAGE, 1.0)])] == [1, 2]
    # The every-word test of "facts about" ignores it.
    assert [s for s, _ in index.search("p1", query, limit=10, all_words=True,
                                       keys=[(COVERAGE, 1.0)])] == [1]

"""Time-aware recall: the times a query names (and its question type) rank memories, through
the engine on a real store and index; an index of the previous text version is re-indexed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from kg.longterm import LongTermMemory
from kg.recall import FusionWeights, KeywordIndex, RecallEngine
from kg.recall.keyword_index import text_location
from kg.store import EmbeddedStore
from tests.recall.conftest import Recall

JULY_7 = datetime(2023, 7, 7, 10, 0, tzinfo=UTC)
AUGUST_1 = datetime(2023, 8, 1, 10, 0, tzinfo=UTC)


def contents(recall: Recall, query: str, **options: object) -> list[str]:
    return [h.memory.content for h in recall.engine.recall("p", query, **options)]  # type: ignore[arg-type]


def remember(recall: Recall, text: str, moment: datetime) -> None:
    recall.memory.remember(text, project="p", session="s-" + moment.date().isoformat(),
                           timestamp=moment, valid_from=moment)


def test_a_date_in_the_query_ranks_that_days_memories_first(recall: Recall) -> None:
    remember(recall, "Deployed the billing service to staging", JULY_7)
    remember(recall, "Deployed the billing service to production", AUGUST_1)
    # Without a date the newer memory wins (recency breaks the BM25 tie) ...
    assert contents(recall, "What billing service did we deploy?")[0].endswith("production")
    # ... and a named day or month puts that time's memory first.
    assert contents(recall, "What billing service did we deploy on 7 July, 2023?")[0].endswith(
        "staging")
    assert contents(recall, "Billing service deploy in July 2023")[0].endswith("staging")
    assert contents(recall, "Billing service deploy in August 2023")[0].endswith("production")


def test_a_memory_saying_yesterday_is_found_by_the_day_it_means(recall: Recall) -> None:
    remember(recall, "The billing deploy failed yesterday", JULY_7 + timedelta(days=1))
    remember(recall, "The billing deploy failed again", AUGUST_1)
    assert contents(recall, "Which billing deploy failed on July 7, 2023?")[0].endswith(
        "yesterday")


def test_relative_query_times_count_from_now(recall: Recall) -> None:
    now = datetime.now(UTC)
    remember(recall, "Upgraded the search cluster nodes", now - timedelta(days=7))
    remember(recall, "Upgraded the search cluster disks", now)
    assert contents(recall, "search cluster upgrade")[0].endswith("disks")
    assert contents(recall, "What did we upgrade in the search cluster last week?")[0].endswith(
        "nodes")


def test_a_when_question_prefers_memories_that_name_a_time(recall: Recall) -> None:
    remember(recall, "The billing deploy finished yesterday", JULY_7)
    remember(recall, "The billing deploy finished cleanly", JULY_7 + timedelta(hours=1))
    assert contents(recall, "When did the billing deploy finish?")[0].endswith("yesterday")
    plain = RecallEngine(recall.store, recall.memory, index=recall.index,
                         weights=FusionWeights(cue=0.0))
    first = plain.recall("p", "When did the billing deploy finish?")[0]
    assert first.memory.content.endswith("cleanly")  # without the cue, recency decides


def test_an_index_of_the_previous_text_version_is_reindexed_with_keys(tmp_path: Path) -> None:
    path = tmp_path / "x.recall.sqlite"
    store = EmbeddedStore(None)
    index = KeywordIndex(path)
    memory = LongTermMemory(store, listeners=[index])
    memory.remember("Deployed the billing service to staging", project="p", session="a",
                    timestamp=JULY_7)
    memory.remember("Deployed the billing service to production", project="p", session="b",
                    timestamp=AUGUST_1)
    memory.close()
    index.close()
    (text_location(path) / "jido-version").write_text("3")  # a folder built by older code
    index = KeywordIndex(path)
    memory = LongTermMemory(store, listeners=[index])
    engine = RecallEngine(store, memory, index=index)
    assert index.text_stale
    assert engine.ensure_index(progress=False) is False  # the words, not a rebuild from store
    assert not index.text_stale
    hits = engine.recall("p", "billing service deployed on 7 July, 2023")
    assert hits[0].memory.content.endswith("staging")
    memory.close()
    index.close()


def test_a_cue_only_reorders_what_the_words_found_but_a_named_day_finds_its_memories(
        recall: Recall) -> None:
    remember(recall, "The billing deploy finished yesterday", JULY_7)
    remember(recall, "Lunch with the team", AUGUST_1)
    # "when" asks for memories naming a time, but shares no word with any: nothing is found.
    assert contents(recall, "When did the unicorn fly?") == []
    # A day named is itself a key: that day's memories are found without a shared word.
    assert contents(recall, "What happened on 1 August, 2023?") == ["Lunch with the team"]

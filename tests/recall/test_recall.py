"""Ranked recall: query safety, limits, types, modes, filters and project isolation."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from kg.errors import ValidationError
from kg.longterm import LongTermMemory
from kg.recall import InvalidQueryError, KeywordIndex, RecallEngine, wordllama_embedder
from kg.recall.embedding import quantize
from kg.recall.engine import _best, _nearest, _product
from kg.recall.index_search import Filters
from kg.terms import UnknownTermError
from tests.recall.conftest import Recall

INJECTIONS = ['"}) ; DROP ALL #', "NEAR(", "*", 'say "hello', "a OR b AND NOT c", "col:term",
              "^start", "x\" OR \"y", "'; DELETE FROM memory; --", "{body}: x", ")))((("]


@pytest.fixture
def filled(recall: Recall) -> Recall:
    m = recall.memory
    m.remember("We DROP ALL caches on deploy", project="p1", session="s1")
    m.remember("The NEAR operator is not supported by our parser", project="p1", session="s2")
    m.remember("Say hello to the new teammate", project="p1", session="s3")
    m.remember("Decided to use PostgreSQL", project="p1", session="s4", type="decision",
               confidence=0.9)
    m.remember("Maybe PostgreSQL is slow", project="p1", session="s5", type="hypothesis",
               confidence=0.3)
    m.remember("Secret of project two: PostgreSQL runs on port 6543", project="p2",
               session="s1")
    return recall


@pytest.mark.parametrize("text", INJECTIONS)
def test_injection_strings_are_literal_searches_or_clear_errors(filled: Recall, text: str) -> None:
    try:
        hits = filled.engine.recall("p1", text)
    except ValidationError as exc:
        assert "query" in str(exc)
        return
    assert all(h.memory.project == "p1" for h in hits)
    assert filled.index.fingerprint().count == 6  # nothing was dropped or deleted


def test_injection_words_are_found_literally(filled: Recall) -> None:
    assert [h.memory.content for h in filled.engine.recall("p1", '"}) ; DROP ALL #')] == [
        "We DROP ALL caches on deploy"]
    assert filled.engine.recall("p1", "NEAR(")[0].memory.content.startswith("The NEAR operator")
    assert filled.engine.recall("p1", 'say "hello')[0].memory.content.startswith("Say hello")
    with pytest.raises(InvalidQueryError, match="no searchable word"):
        filled.engine.recall("p1", "*")


def test_query_length_limit(filled: Recall) -> None:
    assert filled.engine.recall("p1", "a" * 1000) == []
    with pytest.raises(InvalidQueryError, match="1001 bytes; the limit is 1000"):
        filled.engine.recall("p1", "a" * 1001)
    with pytest.raises(InvalidQueryError):
        filled.engine.recall("p1", "é" * 501)  # 1,002 bytes in UTF-8
    with pytest.raises(InvalidQueryError, match="empty"):
        filled.engine.recall("p1", "   ")


@pytest.mark.parametrize("limit", [0, 51, -1, 2.5, True, "10"])
def test_limit_must_be_1_to_50(filled: Recall, limit: object) -> None:
    with pytest.raises(ValidationError, match="limit must be an integer from 1 to 50"):
        filled.engine.recall("p1", "postgresql", limit=limit)  # type: ignore[arg-type]


def test_limit_caps_results(filled: Recall) -> None:
    for i in range(60):
        filled.memory.remember(f"note {i} about kafka", project="p1", session="s9")
    assert len(filled.engine.recall("p1", "kafka", limit=50)) == 50
    assert len(filled.engine.recall("p1", "kafka", limit=1)) == 1


def test_types_and_min_confidence_filter(filled: Recall) -> None:
    hits = filled.engine.recall("p1", "postgresql", min_confidence=0.0)
    assert {h.memory.type.value for h in hits} == {"decision", "hypothesis"}
    assert [h.memory.type.value for h in filled.engine.recall("p1", "postgresql")] == ["decision"]
    only = filled.engine.recall("p1", "postgresql", types=["hypothesis"], min_confidence=0.0)
    assert [h.memory.content for h in only] == ["Maybe PostgreSQL is slow"]
    with pytest.raises(UnknownTermError, match="expected one of: fact, assumption"):
        filled.engine.recall("p1", "postgresql", types=["opinion"])
    with pytest.raises(ValidationError, match="confidence"):
        filled.engine.recall("p1", "postgresql", min_confidence=1.5)


def test_projects_are_isolated(filled: Recall) -> None:
    assert all(h.memory.project == "p1" for h in filled.engine.recall("p1", "secret port 6543"))
    assert [h.memory.project for h in filled.engine.recall("p2", "postgresql")] == ["p2"]
    assert filled.engine.recall("p3", "postgresql") == []
    with pytest.raises(ValidationError, match="project id"):
        filled.engine.recall("../p1", "postgresql")


def test_modes(filled: Recall) -> None:
    assert filled.engine.recall("p1", "postgresql", mode="text")[0].semantic == 0.0
    with pytest.raises(ValidationError, match="semantic recall needs an embedder"):
        filled.engine.recall("p1", "postgresql", mode="semantic")
    with pytest.raises(ValidationError, match="expected one of: text, semantic, hybrid"):
        filled.engine.recall("p1", "postgresql", mode="fuzzy")


def test_modes_with_the_offline_embedder(recall: Recall) -> None:
    index = KeywordIndex(None, embedder=wordllama_embedder())
    memory = LongTermMemory(recall.store, listeners=[index])
    engine = RecallEngine(recall.store, memory, index=index)
    memory.remember("The kitten sleeps on the sofa", project="p1", session="s1")
    memory.remember("Quarterly revenue grew by ten percent", project="p1", session="s2")
    semantic = engine.recall("p1", "a cat is napping", mode="semantic", limit=2)
    assert semantic[0].memory.content == "The kitten sleeps on the sofa"
    assert semantic[0].semantic > semantic[1].semantic
    hybrid = engine.recall("p1", "kitten sofa", mode="hybrid")
    assert hybrid[0].memory.content.startswith("The kitten") and hybrid[0].semantic > 0.3
    assert engine.recall("p1", "kitten", mode="text")[0].keyword == 1.0


def test_keyword_candidates_skip_filtered_rows_in_bm25_order(recall: Recall) -> None:
    """Rows are looked up a few at a time; the result is the best passing ones, in order."""
    m = recall.memory
    for i in range(40):  # short texts rank first, but their confidence is below the floor
        m.remember(f"zebra {i}", project="p1", session=f"s{i}", confidence=0.3)
    for i in range(12):
        m.remember(f"zebra crossing near the old station number {i}", project="p1",
                   session=f"t{i}", confidence=0.9)
    filters = Filters(project="p1", at=datetime.now(UTC).timestamp(), min_confidence=0.5)
    ranked = recall.index.search_text("p1", ["zebra"], limit=100)
    expected = [c.seq for c in recall.engine.search.matching(filters, [s for s, _ in ranked])]
    got = recall.engine.search.keyword(filters, ["zebra"], limit=5)
    assert [c.seq for c in got] == expected[:5] and len(expected) == 12
    assert all(c.confidence == 0.9 and c.bm25 == dict(ranked)[c.seq] for c in got)


def test_semantic_scan_picks_the_exact_best(recall: Recall) -> None:
    """The SIMD int8 shortlist never changes which memories the float cosines choose."""
    rng = np.random.default_rng(5)
    codes = quantize(rng.standard_normal((3000, 256)).astype(np.float32))
    for _ in range(50):
        vector = rng.standard_normal(256).astype(np.float32)
        vector /= np.linalg.norm(vector)
        exact = _best(_product(codes.astype(np.float32), vector), 50)
        assert _nearest(codes, vector, 50).tolist() == exact.tolist()


def test_hits_explain_their_score(filled: Recall) -> None:
    hit = filled.engine.recall("p1", "postgresql decided")[0]
    assert hit.memory.content == "Decided to use PostgreSQL"
    assert hit.keyword == 1.0 and 0 < hit.recency <= 1 and hit.salience == 1.0
    assert hit.score > hit.keyword

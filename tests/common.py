"""Helpers shared by the test files of several areas: bitwise equality of float arrays,
a rate's Monte Carlo standard error, and a small synthetic audit bank."""

import math

import numpy as np


def same_bits(a, b) -> bool:
    """Bitwise equality of float arrays (distinguishes -0.0 from 0.0; NaN never passes)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if a.shape != b.shape or np.isnan(a).any() or np.isnan(b).any():
        return False
    return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


def mc_se(rate: float, n: int) -> float:
    """The Monte Carlo standard error of a rate estimated from n replications."""
    return math.sqrt(rate * (1.0 - rate) / n)


def bank(big_n=120, k=2, seed=0):
    """Binary correctness on big_n parents, public and k fresh forms, per-parent
    difficulty Beta(2, 2), no form effect."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2, 2, size=big_n)
    public = (rng.random(big_n) < difficulty).astype(float)
    fresh = (rng.random((big_n, k)) < difficulty[:, None]).astype(float)
    return public, fresh

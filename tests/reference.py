"""Slow, obvious reference implementations that the compiled kernels are tested against.

Each function here is written for clarity, not speed: plain NumPy/SciPy (or mpmath where
double precision is not enough), one shard at a time, no shared code with the package.
Other test modules add their own references to this file; keep each group under its own
heading and give every function a name that says what it computes.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np
from scipy import stats

# ---------------------------------------------------------------------------------------
# Contamination: the exact exchangeability (permutation-rank) test and its pooling
# ---------------------------------------------------------------------------------------


def ref_rank_test(canonical: float, permuted: Any) -> dict[str, float]:
    """One shard's rank test, the textbook way.

    count = #{j : l_j >= canonical}; p = (1 + count) / (m + 1); mean and the ddof=1
    standard deviation of the l_j (0 for a single permutation); z = (canonical - mean) / sd,
    0 when sd is 0. Mean and sd come from NumPy on a contiguous float64 copy, so they are
    rounded exactly as NumPy (and therefore truescore) rounds them.
    """
    x = np.ascontiguousarray(np.asarray(permuted, dtype=np.float64))
    c = float(canonical)
    m = x.shape[0]
    count = int(np.count_nonzero(x >= c))
    with np.errstate(over="ignore", invalid="ignore"):  # inf/nan beyond ~1e154, as NumPy
        mean = float(x.mean())
        sd = float(x.std(ddof=1)) if m > 1 else 0.0
        z = (c - mean) / sd if sd > 0.0 else 0.0
    return {
        "count": count,
        "p_value": (1.0 + count) / (m + 1.0),
        "mean": mean,
        "sd": sd,
        "z_score": float(z),
    }


def ref_rank_tests_rows(canonical: Any, rows: list[Any]) -> dict[str, np.ndarray]:
    """:func:`ref_rank_test` on each row, gathered into arrays (one entry per shard)."""
    results = [
        ref_rank_test(c, row) for c, row in zip(np.asarray(canonical, float), rows, strict=True)
    ]
    keys = ("count", "p_value", "mean", "sd", "z_score")
    out = {k: np.array([r[k] for r in results], dtype=np.float64) for k in keys}
    out["count"] = out["count"].astype(np.int64)
    return out


def ref_row_means(rows: list[Any]) -> np.ndarray:
    """Mean of each row with NumPy, one row at a time."""
    return np.array([float(np.asarray(r, dtype=np.float64).mean()) for r in rows])


def ref_moments_mpmath(values: Any, dps: int = 60) -> tuple[float, float]:
    """Mean and ddof=1 sd in high precision: the ground truth where doubles overflow."""
    with mpmath.workdps(dps):
        xs = [mpmath.mpf(float(v)) for v in np.asarray(values, dtype=np.float64)]
        m = len(xs)
        mean = mpmath.fsum(xs) / m
        if m < 2:
            return float(mean), 0.0
        var = mpmath.fsum((x - mean) ** 2 for x in xs) / (m - 1)
        return float(mean), float(mpmath.sqrt(var))


def ref_fisher(p_values: Any) -> tuple[float, float]:
    """Fisher's method: statistic -2 sum log p, p-value P(chi2(2K) >= statistic)."""
    p = np.asarray(p_values, dtype=np.float64)
    statistic = float(-2.0 * np.sum(np.log(p)))
    return statistic, float(stats.chi2(df=2 * p.shape[0]).sf(statistic))


def ref_stouffer_midp(counts: Any, n_permutations: Any) -> tuple[float, float]:
    """Stouffer's Z on mid-p values (0.5 + count) / (m + 1): (Z, P(N(0,1) >= Z))."""
    mid = (0.5 + np.asarray(counts, dtype=np.float64)) / (
        np.asarray(n_permutations, dtype=np.float64) + 1.0
    )
    z = float(np.sum(stats.norm.isf(mid)) / math.sqrt(mid.shape[0]))
    return z, float(stats.norm.sf(z))


def ref_average_p(p_values: Any) -> tuple[float, float]:
    """Averaged p made valid: (mean p, min(1, 2 * mean p))."""
    mean = float(np.mean(np.asarray(p_values, dtype=np.float64)))
    return mean, min(1.0, 2.0 * mean)


def ref_chi2_even_log_sf_mpmath(statistic: float, k: int, dps: int = 50) -> float:
    """log P(chi2(2k) > statistic) in arbitrary precision (regularised upper gamma Q(k, x/2)).

    mpmath numbers have an unbounded exponent, so this stays finite far below 1e-308.
    """
    with mpmath.workdps(dps):
        q = mpmath.gammainc(k, mpmath.mpf(statistic) / 2, mpmath.inf, regularized=True)
        return float(mpmath.log(q))


# ---------------------------------------------------------------------------------------
# Compare: paired bootstrap and sign-flip permutation test, rebuilt from the documented
# stream layout (block k of 256 resamples draws from Philox counter [0, 0, k, 0])
# ---------------------------------------------------------------------------------------

REF_RESAMPLE_BLOCK = 256


def ref_philox_words(key: tuple[int, int], task: int, count: int) -> np.ndarray:
    """The first ``count`` raw 64-bit words of task ``task``'s Philox4x64-10 stream."""
    gen = np.random.Philox(
        key=np.array(key, dtype=np.uint64), counter=np.array([0, 0, task, 0], dtype=np.uint64)
    )
    return gen.random_raw(count)


def ref_uniform_indices(key: tuple[int, int], task: int, n: int, count: int) -> np.ndarray:
    """The first ``count`` uniform integers on [0, n) of a task's stream.

    Each word is cut into k-bit chunks, lowest first (k = 21, three a word, for
    n <= 2^16; k = 32, two a word, for n <= 2^26); chunk x gives (x * n) >> k unless
    (x * n) mod 2^k < 2^k mod n, in which case it is skipped (Lemire's rejection).
    """
    if n <= 2**16:
        k, per_word = 21, 3
    elif n <= 2**26:
        k, per_word = 32, 2
    else:
        raise NotImplementedError("full-width draws are not modelled here")
    mask = np.uint64(2**k - 1)
    threshold = np.uint64(2**k % n)
    n_words = count // per_word + 8
    while True:
        words = ref_philox_words(key, task, n_words)
        shifts = np.arange(per_word, dtype=np.uint64) * np.uint64(k)
        chunks = ((words[:, None] >> shifts[None, :]) & mask).ravel()
        products = chunks * np.uint64(n)
        accepted = products[(products & mask) >= threshold] >> np.uint64(k)
        if accepted.shape[0] >= count:
            return accepted[:count].astype(np.int64)
        n_words *= 2


def ref_bootstrap_means(diffs: Any, n_bootstrap: int, key: tuple[int, int]) -> np.ndarray:
    """Resampled means, resample r = block r // 256, drawn n indices at a time."""
    d = np.asarray(diffs, dtype=np.float64)
    n = d.shape[0]
    out = []
    for block in range(-(-n_bootstrap // REF_RESAMPLE_BLOCK)):
        size = min(REF_RESAMPLE_BLOCK, n_bootstrap - block * REF_RESAMPLE_BLOCK)
        idx = ref_uniform_indices(key, block, n, size * n).reshape(size, n)
        out.append(d[idx].mean(axis=1))
    return np.concatenate(out)


def ref_cluster_bootstrap_means(
    sums: Any, sizes: Any, n_bootstrap: int, key: tuple[int, int]
) -> np.ndarray:
    """Cluster resamples: drawn sums over drawn sizes, G clusters drawn per resample."""
    s = np.asarray(sums, dtype=np.float64)
    m = np.asarray(sizes, dtype=np.float64)
    g = s.shape[0]
    out = []
    for block in range(-(-n_bootstrap // REF_RESAMPLE_BLOCK)):
        size = min(REF_RESAMPLE_BLOCK, n_bootstrap - block * REF_RESAMPLE_BLOCK)
        idx = ref_uniform_indices(key, block, g, size * g).reshape(size, g)
        out.append(s[idx].sum(axis=1) / m[idx].sum(axis=1))
    return np.concatenate(out)


def _tie_counts(null: np.ndarray, observed: float) -> tuple[int, int]:
    """#{null <= observed + tol}, #{null >= observed - tol}, tol = 100 eps |observed|."""
    tol = abs(100 * np.finfo(np.float64).eps * observed)
    return int(np.count_nonzero(null <= observed + tol)), int(
        np.count_nonzero(null >= observed - tol)
    )


def ref_sign_flip_mc_counts(
    diffs: Any, n_resamples: int, key: tuple[int, int]
) -> tuple[int, int]:
    """Monte Carlo sign-flip tail counts: resample r uses ceil(n/64) words of block r // 256;
    bit j of word w set means pair 64 w + j is flipped; statistic sum_i s_i d_i."""
    d = np.asarray(diffs, dtype=np.float64)
    n = d.shape[0]
    n_words = -(-n // 64)
    stats_ = []
    for block in range(-(-n_resamples // REF_RESAMPLE_BLOCK)):
        size = min(REF_RESAMPLE_BLOCK, n_resamples - block * REF_RESAMPLE_BLOCK)
        words = ref_philox_words(key, block, size * n_words).reshape(size, n_words)
        bits = (words[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
        signs = 1.0 - 2.0 * bits.reshape(size, n_words * 64)[:, :n].astype(np.float64)
        stats_.append((signs * d).sum(axis=1))
    return _tie_counts(np.concatenate(stats_), float(d.sum()))


def ref_sign_flip_exact_p(a: Any, b: Any) -> float:
    """Two-sided exact sign-flip p-value over all 2^n swaps of (a_i, b_i), statistic
    mean(x) - mean(y), ties within 100 eps (relative) of the observed value counted."""
    import itertools

    x0 = np.asarray(a, dtype=np.float64)
    y0 = np.asarray(b, dtype=np.float64)
    null = []
    for swaps in itertools.product((False, True), repeat=x0.shape[0]):
        s = np.array(swaps)
        x = np.where(s, y0, x0)
        y = np.where(s, x0, y0)
        null.append(np.mean(x) - np.mean(y))
    total = len(null)
    below, above = _tie_counts(np.array(null), float(np.mean(x0) - np.mean(y0)))
    return float(min(1.0, 2 * min(below / total, above / total)))

"""Slow, obvious reference implementations that the compiled kernels are tested against.

Each function here is written for clarity, not speed: plain NumPy/SciPy (or mpmath where
double precision is not enough), one shard at a time, no shared code with the package.
Other test modules add their own references to this file; keep each group under its own
heading. One naming scheme: every reference is ``ref_<what it computes>`` (the name of
the statistic, interval or sample, not of the test module that uses it); helpers are
private (``_name``). One Philox helper: :func:`ref_philox` is the only place a stream is
built, and :class:`RefStream` the only reader of raw words (Lemire's integers, uniforms).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
from scipy import stats

# ---------------------------------------------------------------------------------------
# Random streams: every random kernel draws from Philox4x64-10 with the key from
# truescore_fast._random.philox_key(seed) and counter [0, 0, task, 0], task being the
# kernel's block, replicate or (cell, block) index
# ---------------------------------------------------------------------------------------


def ref_philox(key: tuple[int, int], task: int) -> np.random.Philox:
    """NumPy's Philox4x64-10 for stream ``task`` under ``key``: counter [0, 0, task, 0].

    The key goes in as uint64 words: NumPy reads a list of Python ints >= 2**63 differently.
    """
    return np.random.Philox(
        key=np.array(key, dtype=np.uint64), counter=np.array([0, 0, task, 0], dtype=np.uint64)
    )


def ref_philox_words(key: tuple[int, int], task: int, count: int) -> np.ndarray:
    """The first ``count`` raw 64-bit words of stream ``task`` (uint64)."""
    return np.asarray(ref_philox(key, task).random_raw(count), dtype=np.uint64)


class RefStream:
    """Raw 64-bit words of one stream, in order, with what the kernels make of them:
    Lemire's unbiased integers below n and uniforms on [0, 1)."""

    def __init__(self, key: tuple[int, int], task: int):
        self._bitgen = ref_philox(key, task)
        self._buf: list[int] = []

    def raw(self) -> int:
        if not self._buf:
            self._buf = [int(v) for v in self._bitgen.random_raw(64)][::-1]
        return self._buf.pop()

    def below(self, n: int) -> int:
        """Uniform integer in [0, n): the high word of raw * n, rejecting the low words
        below 2^64 mod n (Lemire), with Python integers."""
        m = self.raw() * n
        low = m & (2**64 - 1)
        if low < n:
            threshold = (2**64 - n) % n
            while low < threshold:
                m = self.raw() * n
                low = m & (2**64 - 1)
        return m >> 64

    def uniform(self) -> float:
        """Uniform on [0, 1) from the top 53 bits of one raw word."""
        return (self.raw() >> 11) * 2.0**-53


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


def ref_moments_scaled_numpy(values: Any, canonical: float = 0.0) -> tuple[float, float, float]:
    """Mean, ddof=1 sd and z by NumPy on the values scaled by a power of two.

    For values whose squares overflow: x * 2**-e (e the binary exponent of max |x|) is
    exact, so this is NumPy's own two-pass arithmetic with a wider exponent range. z is
    formed in the scaled units, where the sd cannot overflow.
    """
    x = np.asarray(values, dtype=np.float64)
    largest = float(np.max(np.abs(x)))
    if largest == 0.0:
        return 0.0, 0.0, 0.0
    e = math.frexp(largest)[1]
    xs = np.ldexp(x, -e)
    mean_s = float(xs.mean())
    sd_s = float(xs.std(ddof=1)) if x.shape[0] > 1 else 0.0
    z = (math.ldexp(canonical, -e) - mean_s) / sd_s if sd_s > 0.0 else 0.0
    with np.errstate(over="ignore"):  # an sd above the largest double is inf
        return float(np.ldexp(mean_s, e)), float(np.ldexp(sd_s, e)), z


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
# Audit: intervals for the mean gap and the exact randomization test
# (truescore_fast.audit.intervals, truescore_fast.audit.randomization),
# written from the formulas in SPEC.md section 4, not from the C++ code
# ---------------------------------------------------------------------------------------

GAP_RANGE = 2.0


def _clip_interval(estimate: float, half: float) -> tuple[float, float, float, float]:
    return max(-1.0, estimate - half), min(1.0, estimate + half), estimate, half


def ref_hoeffding_interval(d, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    half = GAP_RANGE * math.sqrt(math.log(2.0 / alpha) / (2.0 * n))
    return _clip_interval(float(np.mean(d)), half)


def ref_bernstein_interval(d, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    s2 = float(np.var(d, ddof=1))
    log_term = math.log(4.0 / alpha)
    half = math.sqrt(2.0 * s2 * log_term / n) + 7.0 * GAP_RANGE * log_term / (3.0 * (n - 1))
    return _clip_interval(float(np.mean(d)), half)


def ref_wald_interval(d, population_size=None, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    s2 = float(np.var(d, ddof=1))
    fpc = 1.0 - n / population_size if population_size else 1.0
    half = float(stats.norm.ppf(1.0 - alpha / 2.0)) * math.sqrt(fpc * s2 / n)
    return _clip_interval(float(np.mean(d)), half)


def ref_hoeffding_serfling_interval(d, population_size, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    half = GAP_RANGE * math.sqrt(
        (1.0 - (n - 1) / population_size) * math.log(2.0 / alpha) / (2.0 * n)
    )
    return _clip_interval(float(np.mean(d)), half)


def _betting_path(x, alpha):
    n = x.size
    t = np.arange(1, n + 1, dtype=np.float64)
    s = np.cumsum(x)
    mu = (0.5 + s) / (t + 1.0)
    sq = np.cumsum((x - mu) ** 2)
    var = (0.25 + sq) / (t + 1.0)
    var_prev = np.concatenate([[0.25], var[:-1]])
    lam = np.sqrt(2.0 * math.log(2.0 / alpha) / (n * var_prev))
    sprev = np.concatenate([[0.0], s[:-1]])
    return lam, sprev


def _betting_conditional_mean(m, sprev, population_size):
    if not population_size:
        return np.full(sprev.size, m)
    i = np.arange(sprev.size, dtype=np.float64)
    return (population_size * m - sprev) / (population_size - i)


def ref_betting_interval(d, population_size=None, alpha=0.05, tol=1e-9):
    """Waudby-Smith & Ramdas hedged betting CI with predictable plug-in bets (fixed n),
    c = 3/4, WoR conditional means; bisection on the monotone one-sided rejections."""
    d = np.asarray(d, dtype=np.float64)
    if population_size is not None and population_size == d.size:  # a census: the point
        return float(np.mean(d)), float(np.mean(d)), float(np.mean(d)), 0.0
    x = (d + 1.0) * 0.5
    lam, sprev = _betting_path(x, alpha)
    c = 0.75

    def below(m):
        mt = _betting_conditional_mean(m, sprev, population_size)
        if np.any(mt < 0.0):
            return True
        with np.errstate(divide="ignore"):
            lp = np.where(mt > 0.0, np.minimum(lam, c / np.where(mt > 0, mt, 1.0)), lam)
        with np.errstate(over="ignore"):
            cap = np.cumprod(1.0 + lp * (x - mt))
        return bool(np.any(0.5 * cap >= 1.0 / alpha))

    def above(m):
        mt = _betting_conditional_mean(m, sprev, population_size)
        if np.any(mt > 1.0):
            return True
        lm = np.where(mt < 1.0, np.minimum(lam, c / np.where(mt < 1.0, 1.0 - mt, 1.0)), lam)
        with np.errstate(over="ignore"):
            cap = np.cumprod(1.0 - lm * (x - mt))
        return bool(np.any(0.5 * cap >= 1.0 / alpha))

    if not below(0.0):
        lower = 0.0
    elif below(1.0):
        lower = 1.0
    else:
        lo, hi = 0.0, 1.0
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            if below(mid):
                lo = mid
            else:
                hi = mid
        lower = lo
    if not above(1.0):
        upper = 1.0
    elif above(0.0):
        upper = 0.0
    else:
        lo, hi = 0.0, 1.0
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            if above(mid):
                hi = mid
            else:
                lo = mid
        upper = hi
    low, high = 2.0 * lower - 1.0, 2.0 * upper - 1.0
    if lower > upper:  # every mean rejected: the empty set, its crossed ends, width 0
        return low, high, float(np.mean(d)), 0.0
    return low, high, float(np.mean(d)), 0.5 * (high - low)


def ref_feasible_gap_range(d, population_size):
    """The exact values (as Fractions) the mean gap of ``population_size`` parents can take
    when the gaps ``d`` were scored and the others lie anywhere in [-1, 1]: the unscored
    gaps all -1, or all +1. Exact rational arithmetic on the doubles of ``d``."""
    total = sum((Fraction(float(v)) for v in d), Fraction(0))
    rest = population_size - len(d)
    return (total - rest) / population_size, (total + rest) / population_size


def ref_within_feasible_range(interval, d, population_size, betting=False):
    """An interval tuple (low, high, estimate, half_width) intersected with
    :func:`ref_feasible_gap_range` (unchanged without a population, or when it is an
    empty betting set). The betting half-width is that of the result; the symmetric
    methods keep theirs."""
    low, high, estimate, half = interval
    if not population_size or low > high:
        return interval
    first, last = ref_feasible_gap_range(d, population_size)
    low, high = max(low, float(first)), min(high, float(last))
    if betting:
        half = 0.0 if low > high else 0.5 * (high - low)
    return low, high, estimate, half


# The interval references by method name (one per method of INTERVAL_METHODS), each
# called as (d, population_size, alpha), each within the feasible range when
# population_size is given.
INTERVAL_REFERENCES = {
    "hoeffding": lambda d, pop, alpha: ref_within_feasible_range(
        ref_hoeffding_interval(d, alpha), d, pop
    ),
    "bernstein": lambda d, pop, alpha: ref_within_feasible_range(
        ref_bernstein_interval(d, alpha), d, pop
    ),
    "wald": lambda d, pop, alpha: ref_within_feasible_range(
        ref_wald_interval(d, pop, alpha), d, pop
    ),
    "hoeffding_serfling": lambda d, pop, alpha: ref_within_feasible_range(
        ref_hoeffding_serfling_interval(d, pop, alpha), d, pop
    ),
    "betting": lambda d, pop, alpha: ref_within_feasible_range(
        ref_betting_interval(d, pop, alpha), d, pop, betting=True
    ),
}


def ref_randomization_brute_force(public, fresh):
    """Exact p-values by enumerating every assignment of the public slot, (K+1)^n cases.
    Returns (p_greater, p_less, p_two_sided) for T = sum of gaps."""
    public = np.asarray(public, dtype=np.float64)
    fresh = np.asarray(fresh, dtype=np.float64).reshape(public.size, -1)
    n, k = fresh.shape
    values = np.column_stack([public, fresh])
    t_obs = float(np.sum(public - fresh.mean(axis=1)))
    ge = le = two = 0.0
    weight = (1.0 / (k + 1)) ** n
    eps = 1e-9
    for choice in itertools.product(range(k + 1), repeat=n):
        t = 0.0
        for i, j in enumerate(choice):
            v = values[i, j]
            t += v - (values[i].sum() - v) / k
        ge += weight * (t >= t_obs - eps)
        le += weight * (t <= t_obs + eps)
        two += weight * (abs(t) >= abs(t_obs) - eps)
    return ge, le, two


def ref_randomization_convolution(public, fresh):
    """Exact null by np.convolve of the per-parent distributions of the public value on
    the lattice (binary labels or averages with a common denominator found by the
    caller: pass integer-valued arrays). Returns (p_greater, p_less, p_two_sided)."""
    public = np.asarray(public, dtype=np.int64)
    fresh = np.asarray(fresh, dtype=np.int64).reshape(public.size, -1)
    k = fresh.shape[1]
    values = np.column_stack([public, fresh])
    lows = values.min(axis=1)
    pmf = np.ones(1)
    # group identical parents, convolve each group's binomial-like power by repeated
    # np.convolve (plain, no FFT), the baseline a NumPy user would write
    for row in values:
        lo, hi = row.min(), row.max()
        if lo == hi:
            continue
        f = np.bincount(row - lo, minlength=hi - lo + 1) / (k + 1)
        pmf = np.convolve(pmf, f)
    shift = int(lows.sum())
    total = int(values.sum())
    u = np.arange(pmf.size) + shift
    u_obs = int(public.sum())
    stat = (k + 1) * u - total
    obs = (k + 1) * u_obs - total
    return (
        float(pmf[u >= u_obs].sum()),
        float(pmf[u <= u_obs].sum()),
        float(pmf[np.abs(stat) >= abs(obs)].sum()),
    )


def ref_lattice_null_counts(rows: Any) -> tuple[list[int], int, int]:
    """Exact null of the informative sum V = U - shift for integer lattice rows (n, K + 1):
    counts[v] = number of the (K + 1)^n_informative equally likely public choices with
    V = v, by Python integers (each row's value polynomial, multiplied out by Kronecker
    substitution: coefficient k in bits [k B, (k + 1) B) of one big integer). Returns
    (counts, shift, n_informative)."""
    rows = np.asarray(rows, dtype=np.int64)
    kp1 = rows.shape[1]
    lows = rows.min(axis=1)
    informative = rows[rows.max(axis=1) > lows] - lows[rows.max(axis=1) > lows, None]
    n_inf = len(informative)
    width = (n_inf * kp1.bit_length() + 16 + 7) // 8 * 8
    poly, degree = 1, 0
    for row, count in sorted(
        Counter(tuple(sorted(int(v) for v in r)) for r in informative).items()
    ):
        poly *= sum(1 << (width * v) for v in row) ** count  # parents with equal rows at once
        degree += max(row) * count
    nbytes = width // 8
    raw = poly.to_bytes((degree + 1) * nbytes + 8, "little")
    counts = [
        int.from_bytes(raw[k * nbytes : (k + 1) * nbytes], "little") for k in range(degree + 1)
    ]
    assert sum(counts) == kp1**n_inf
    return counts, int(lows.sum()), n_inf


def ref_lattice_p_values(counts: list[int], shift: int, n_inf: int, kp1: int, rows: Any):
    """(p_greater, p_less, p_two_sided) of the lattice test from exact counts (see
    ref_lattice_null_counts), each correctly rounded from an exact fraction."""
    rows = np.asarray(rows, dtype=np.int64)
    total, u_obs = int(rows.sum()), int(rows[:, 0].sum())
    den = kp1**n_inf

    def at_least(x: int) -> Fraction:
        return Fraction(sum(counts[max(x - shift, 0) :]), den)

    def at_most(x: int) -> Fraction:
        return Fraction(sum(counts[: max(x - shift + 1, 0)]), den)

    a = abs(kp1 * u_obs - total)
    if a == 0:
        two = Fraction(1)
    else:
        two = min(Fraction(1), at_least(-(-(total + a) // kp1)) + at_most((total - a) // kp1))
    return float(at_least(u_obs)), float(at_most(u_obs)), float(two)


def ref_randomization_binomial(n_by_sum, k, u_obs):
    """Binary labels: the null of U = sum_s Bin(n_s, s/(K+1)) by np.convolve of
    scipy binomial pmfs. Returns (p_greater, p_less, p_two_sided)."""
    pmf = np.ones(1)
    for s in range(1, k + 1):
        if n_by_sum[s]:
            pmf = np.convolve(
                pmf, stats.binom.pmf(np.arange(n_by_sum[s] + 1), n_by_sum[s], s / (k + 1))
            )
    shift = int(n_by_sum[k + 1])
    total = int(sum(s * n_by_sum[s] for s in range(k + 2)))
    u = np.arange(pmf.size) + shift
    stat = (k + 1) * u - total
    obs = (k + 1) * u_obs - total
    return (
        float(pmf[u >= u_obs].sum()),
        float(pmf[u <= u_obs].sum()),
        float(pmf[np.abs(stat) >= abs(obs)].sum()),
    )


# ---------------------------------------------------------------------------------------
# PaCoST: the paired sign-flip test, by brute force
# ---------------------------------------------------------------------------------------


def ref_sign_flip_counts(d: Any) -> dict[str, int]:
    """Enumerate all 2^n sign vectors with itertools; count those at least as extreme.

    Meant for integer-valued (exactly representable) differences, so sums are exact and
    ties are decided without a tolerance.
    """
    d = [float(x) for x in d]
    observed = sum(d)
    counts = {"greater": 0, "less": 0, "two-sided": 0}
    for signs in itertools.product((1.0, -1.0), repeat=len(d)):
        t = sum(s * x for s, x in zip(signs, d, strict=True))
        counts["greater"] += t >= observed
        counts["less"] += t <= observed
        counts["two-sided"] += abs(t) >= abs(observed)
    return counts


def ref_sign_flip_p_at(d: Any, mu: float, alternative: str) -> float:
    """Exact sign-flip p-value of the null 'centre = mu', by enumerating sign vectors."""
    x = np.asarray(d, dtype=np.float64) - mu
    observed = x.sum()
    hits = 0
    total = 0
    for signs in itertools.product((1.0, -1.0), repeat=x.size):
        t = float(np.dot(signs, x))
        total += 1
        if alternative == "greater":
            hits += t >= observed - 1e-9
        else:
            hits += t <= observed + 1e-9
    return hits / total


def ref_sign_flip_mc_counts(
    d: Any, key: tuple[int, int], n_resamples: int, block: int = 256
) -> dict[str, int]:
    """Monte Carlo sign-flip counts with the patterns drawn from NumPy's own Philox.

    Resample r uses task r // block: bit i of its pattern is bit (i % 64) of raw word
    i // 64; a set bit flips d_i.
    """
    x = np.asarray(d, dtype=np.float64)
    n = x.size
    words = (n + 63) // 64
    observed = x.sum()
    counts = {"greater": 0, "less": 0, "two-sided": 0}
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        raw = ref_philox_words(key, start // block, size * words).reshape(size, words)
        for row in raw:
            flip = np.array([(int(row[i // 64]) >> (i % 64)) & 1 for i in range(n)], dtype=bool)
            t = float(np.where(flip, -x, x).sum())
            tol = 1e-9 * float(np.abs(x).sum())
            counts["greater"] += t >= observed - tol
            counts["less"] += t <= observed + tol
            counts["two-sided"] += abs(t) >= abs(observed) - tol
    return counts


# ---------------------------------------------------------------------------------------
# Families: the family-clustered bootstrap and Holm's step-down procedure
# ---------------------------------------------------------------------------------------


def ref_family_bootstrap_differences(
    treated: Any,
    control: Any,
    families: Any,
    key: tuple[int, int],
    n_resamples: int,
    block: int = 64,
) -> np.ndarray:
    """Family bootstrap replicates, one family draw at a time from NumPy's Philox.

    Resample r uses the stream of task r // block; within a task, resamples draw their F
    family indices in turn. Each replicate pools the drawn families' observations (with
    multiplicity) and takes mean(treated) - mean(control).
    """
    t = np.asarray(treated, dtype=np.float64)
    c = np.asarray(control, dtype=np.float64)
    labels = np.asarray(families)
    names = sorted(set(labels.tolist()))
    t_groups = [t[labels == f] for f in names]
    c_groups = [c[labels == f] for f in names]
    n_fam = len(names)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, block):
        stream = RefStream(key, start // block)
        for r in range(start, min(start + block, n_resamples)):
            draws = [stream.below(n_fam) for _ in range(n_fam)]
            ts = sum(t_groups[k].sum() for k in draws)
            tn = sum(t_groups[k].size for k in draws)
            cs = sum(c_groups[k].sum() for k in draws)
            cn = sum(c_groups[k].size for k in draws)
            out[r] = ts / tn - cs / cn
    return out


def ref_holm(p_values: Any) -> list[float]:
    """Holm-adjusted p-values from the definition:
    adj_(k) = max_{j <= k} min(1, (m - j + 1) p_(j)) for the sorted p-values."""
    p = [float(x) for x in p_values]
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        adjusted[i] = running
    return adjusted


# ---------------------------------------------------------------------------------------
# Audit-Prune: the cross-validated pair classifier, written out directly
# ---------------------------------------------------------------------------------------


def ref_pair_classifier_accuracy(d: Any, n_splits: int, seed: int) -> int:
    """Held-out pairs solved by a no-intercept logistic regression on (d, 1), (-d, 0).

    Features divided by their root mean square over all pairs; folds from scikit-learn's
    KFold(shuffle=True, random_state=seed); a pair is solved when w . d > 0 (the data used
    in tests has no exact ties).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    x = np.asarray(d, dtype=np.float64)
    rms = np.sqrt((x**2).mean(axis=0))
    rms[rms == 0] = 1.0
    x = x / rms
    solved = 0
    for train, test in KFold(n_splits=n_splits, shuffle=True, random_state=seed).split(x):
        features = np.concatenate([x[train], -x[train]])
        labels = np.array([1] * len(train) + [0] * len(train))
        model = LogisticRegression(
            fit_intercept=False, solver="newton-cholesky", max_iter=200
        ).fit(features, labels)
        solved += int((model.decision_function(x[test]) > 0).sum())
    return solved


def ref_clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """Exact binomial interval from beta quantiles."""
    a = 1 - level
    lo = 0.0 if k == 0 else stats.beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k == n else stats.beta.ppf(1 - a / 2, k + 1, n - k)
    return float(lo), float(hi)


# ---------------------------------------------------------------------------------------
# Resampling: pattern permutation null, finite-population bootstraps, difference in
# differences, sign flips (truescore_fast.resampling). Written from the draw order stated
# in src/cpp/truescore/resampling.hpp and the formulas in the module docstring: each
# replicate b reads numpy.random.Philox(key=key, counter=[0, 0, b, 0]).random_raw, so
# where a stream is shared the replicates must agree bit for bit.
# ---------------------------------------------------------------------------------------


def ref_pattern_statistic(indicator, min_models):
    return int((np.asarray(indicator, dtype=bool).sum(axis=0) >= min_models).sum())


def ref_pattern_null(indicator, min_models, draws, key):
    """Null statistics, one per draw: each model's row replaced by a random subset of its
    size (partial Fisher-Yates; the complement when the row is mostly ones)."""
    ind = np.asarray(indicator, dtype=bool)
    n_models, n = ind.shape
    out = np.empty(draws, dtype=np.int64)
    for b in range(draws):
        stream = RefStream(key, b)
        counts = np.zeros(n, dtype=np.int64)
        for m in range(n_models):
            c = int(ind[m].sum())
            complement = c > n - c
            s = n - c if complement else c
            perm = list(range(n))
            for i in range(s):
                j = i + stream.below(n - i)
                perm[i], perm[j] = perm[j], perm[i]
            row = np.zeros(n, dtype=np.int64)
            row[perm[:s]] = 1
            counts += (1 - row) if complement else row
        out[b] = int((counts >= min_models).sum())
    return out


def ref_packed_draws(stream: RefStream, n: int, count: int) -> list[int]:
    """``count`` uniform integers on [0, n) from the next words of ``stream``, several a
    word: k-bit chunks lowest first (k = 21, three a word, for n <= 2^16; k = 32, two a
    word, for n <= 2^26; one ``below(n)`` a word beyond), chunk x giving (x * n) >> k
    unless (x * n) mod 2^k < 2^k mod n. The chunks left in the last word are dropped."""
    if n > 2**26:
        return [stream.below(n) for _ in range(count)]
    k, per_word = (21, 3) if n <= 2**16 else (32, 2)
    out: list[int] = []
    while len(out) < count:
        word = stream.raw()
        for c in range(per_word):
            if len(out) == count:
                break
            product = ((word >> (k * c)) % 2**k) * n
            if product % 2**k >= 2**k % n:
                out.append(product >> k)
    return out


def _four_accumulator_sum(values) -> float:
    """Value i added to accumulator i mod 4 in order; ((a0 + a1) + (a2 + a3))."""
    acc = [0.0, 0.0, 0.0, 0.0]
    for i, v in enumerate(values):
        acc[i % 4] += float(v)
    return (acc[0] + acc[1]) + (acc[2] + acc[3])


def ref_rao_wu_replicates(strata_values, resample_sizes, lambdas, weights, replicates, key):
    """Rao-Wu replicates: per stratum, m_h packed draws with replacement (a fresh word for
    each stratum), their mean rescaled by lambda_h."""
    means = [np.sum(y) / y.size for y in strata_values]
    out = np.empty(replicates)
    for b in range(replicates):
        stream = RefStream(key, b)
        total = 0.0
        for y, m, lam, w, ybar in zip(
            strata_values, resample_sizes, lambdas, weights, means, strict=True
        ):
            picked = [y[i] for i in ref_packed_draws(stream, y.size, m)]
            total += w * (ybar + lam * (_four_accumulator_sum(picked) / m - ybar))
        out[b] = total
    return out


def _floyd_sample(stream, m, s):
    chosen: list[int] = []
    seen: set[int] = set()
    for j in range(m - s, m):
        t = stream.below(j + 1)
        v = j if t in seen else t
        seen.add(v)
        chosen.append(v)
    return chosen


def ref_bbh_replicates(strata_values, population_sizes, weights, replicates, key):
    """Booth-Butler-Hall replicates, recentred on the pseudo-population mean."""
    out = np.empty(replicates)
    for b in range(replicates):
        stream = RefStream(key, b)
        total = 0.0
        for y, big_n, w in zip(strata_values, population_sizes, weights, strict=True):
            n = y.size
            k, r = divmod(int(big_n), n)
            completion = _floyd_sample(stream, n, r)
            pseudo = np.concatenate([np.tile(y, k), y[completion]])
            pseudo_mean = (k * np.sum(y) + np.sum(y[completion])) / big_n
            positions = _floyd_sample(stream, int(big_n), n)
            sample = pseudo[positions]
            total += w * (np.sum(y) / n + (np.sum(sample) / n - pseudo_mean))
        out[b] = total
    return out


def ref_did_point(exposed, unexposed):
    """Direct arithmetic: (public DiD, fresh DiD, visible gap) from (n, 4) arrays with
    columns public_before, public_after, fresh_before, fresh_after."""
    e, u = np.asarray(exposed, float), np.asarray(unexposed, float)
    pub = (e[:, 1].mean() - e[:, 0].mean()) - (u[:, 1].mean() - u[:, 0].mean())
    fresh = (e[:, 3].mean() - e[:, 2].mean()) - (u[:, 3].mean() - u[:, 2].mean())
    return pub, fresh, pub - fresh


def ref_did_replicates(exposed_list, unexposed_list, replicates, key, shared=False):
    """(replicates, models + 1, 3) DiD bootstrap replicates; the last row pools models."""
    dpe = [np.ascontiguousarray(e[:, 1] - e[:, 0]) for e in exposed_list]
    dfe = [np.ascontiguousarray(e[:, 3] - e[:, 2]) for e in exposed_list]
    dpu = [np.ascontiguousarray(u[:, 1] - u[:, 0]) for u in unexposed_list]
    dfu = [np.ascontiguousarray(u[:, 3] - u[:, 2]) for u in unexposed_list]
    n_models = len(exposed_list)
    out = np.empty((replicates, n_models + 1, 3))
    for b in range(replicates):
        stream = RefStream(key, b)
        if shared:
            ie = [stream.below(dpe[0].size) for _ in range(dpe[0].size)]
            iu = [stream.below(dpu[0].size) for _ in range(dpu[0].size)]
        pooled = [0.0, 0.0, 0.0]
        for m in range(n_models):
            if not shared:
                ie = [stream.below(dpe[m].size) for _ in range(dpe[m].size)]
                iu = [stream.below(dpu[m].size) for _ in range(dpu[m].size)]
            p = np.sum(dpe[m][ie]) / len(ie) - np.sum(dpu[m][iu]) / len(iu)
            f = np.sum(dfe[m][ie]) / len(ie) - np.sum(dfu[m][iu]) / len(iu)
            out[b, m] = (p, f, p - f)
            pooled = [pooled[0] + p, pooled[1] + f, pooled[2] + (p - f)]
        out[b, n_models] = [v / n_models for v in pooled]
    return out


def ref_sign_flip_tolerance(values):
    """The sign-flip tie tolerance, in units of sum_i s_i x_i: twice 8 m eps sum |x_i|,
    m the nonzero values (a bound on the rounding of any signed sum of them)."""
    x = np.asarray(values, float)
    return 2 * 8 * np.count_nonzero(x) * np.finfo(np.float64).eps * np.abs(x).sum()


def ref_sign_flip_exact_two_sided(values):
    """Exact two-sided sign-flip p by listing all 2^n sign vectors."""
    x = np.asarray(values, float)
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=x.size)))
    stats_ = np.abs(signs @ x)
    observed = abs(x.sum())
    return float(np.mean(stats_ >= observed - ref_sign_flip_tolerance(x)))


def ref_sign_flip_mc_count_two_sided(values, draws, key):
    """Monte Carlo two-sided sign-flip count over the package's random patterns."""
    x = np.asarray(values, float)
    null = ref_sign_flip_mc_statistics(x, draws, key)
    return int(np.count_nonzero(np.abs(null) >= abs(x.sum()) - ref_sign_flip_tolerance(x)))


def ref_bca_interval(replicates, estimate, jackknife_groups, alpha):
    """BCa interval (Efron 1987) from bootstrap replicates and, per independently
    resampled group, the leave-one-out estimates (acceleration as scipy.stats.bootstrap
    combines several samples)."""
    theta = np.asarray(replicates, float)
    tol = 1e-12 * (1 + abs(estimate))  # ties within rounding count half
    below = np.sum(theta < estimate - tol) + 0.5 * np.sum(np.abs(theta - estimate) <= tol)
    z0 = stats.norm.ppf(below / theta.size)
    num = 0.0
    den = 0.0
    for loo in jackknife_groups:
        loo = np.asarray(loo, float)
        n = loo.size
        u = (n - 1) * (loo.mean() - loo)
        num += np.sum(u**3) / n**3
        den += np.sum(u**2) / n**2
    a = num / (6 * den**1.5) if den > 0 else 0.0
    z = stats.norm.ppf([alpha / 2, 1 - alpha / 2])
    levels = stats.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
    return np.quantile(theta, levels)


# Compare: paired bootstrap and sign-flip permutation test, rebuilt from the documented
# stream layout (block k of 256 resamples draws from Philox counter [0, 0, k, 0])
# ---------------------------------------------------------------------------------------

RESAMPLE_BLOCK = 256


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
    for block in range(-(-n_bootstrap // RESAMPLE_BLOCK)):
        size = min(RESAMPLE_BLOCK, n_bootstrap - block * RESAMPLE_BLOCK)
        idx = ref_uniform_indices(key, block, n, size * n).reshape(size, n)
        out.append(d[idx].mean(axis=1))
    return np.concatenate(out)


def ref_cluster_bootstrap_means(
    sums: Any, sizes: Any, n_bootstrap: int, key: tuple[int, int]
) -> np.ndarray:
    """Cluster resamples: drawn sums over drawn sizes, G clusters drawn per resample; the
    drawn sums added draw i to accumulator i mod 4, then ((a0 + a1) + (a2 + a3)) (issue
    24: the plain bootstrap's order), the sizes exactly (integers)."""
    s = np.asarray(sums, dtype=np.float64)
    m = np.asarray(sizes, dtype=np.int64)
    g = s.shape[0]
    out = []
    for block in range(-(-n_bootstrap // RESAMPLE_BLOCK)):
        size = min(RESAMPLE_BLOCK, n_bootstrap - block * RESAMPLE_BLOCK)
        idx = ref_uniform_indices(key, block, g, size * g).reshape(size, g)
        out.extend(_four_accumulator_sum(s[row]) / float(m[row].sum()) for row in idx)
    return np.array(out)


def _tie_counts(null: np.ndarray, observed: float, tol: float | None = None) -> tuple[int, int]:
    """#{null <= observed + tol}, #{null >= observed - tol}; tol = 100 eps |observed|
    (scipy's rule) unless given."""
    if tol is None:
        tol = abs(100 * np.finfo(np.float64).eps * observed)
    return int(np.count_nonzero(null <= observed + tol)), int(
        np.count_nonzero(null >= observed - tol)
    )


def ref_sign_flip_mc_statistics(diffs: Any, n_resamples: int, key: tuple[int, int]) -> np.ndarray:
    """sum_i s_i d_i of each Monte Carlo sign pattern: resample r uses ceil(n/64) words of
    block r // 256; bit j of word w set means pair 64 w + j is flipped."""
    d = np.asarray(diffs, dtype=np.float64)
    n = d.shape[0]
    n_words = -(-n // 64)
    stats_ = []
    for block in range(-(-n_resamples // RESAMPLE_BLOCK)):
        size = min(RESAMPLE_BLOCK, n_resamples - block * RESAMPLE_BLOCK)
        words = ref_philox_words(key, block, size * n_words).reshape(size, n_words)
        bits = (words[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
        signs = 1.0 - 2.0 * bits.reshape(size, n_words * 64)[:, :n].astype(np.float64)
        stats_.append((signs * d).sum(axis=1))
    return np.concatenate(stats_)


def ref_compare_sign_flip_mc_counts(
    diffs: Any, n_resamples: int, key: tuple[int, int]
) -> tuple[int, int]:
    """Monte Carlo sign-flip tail counts (#null <= observed, #null >= observed) with the
    rounding tolerance of ref_sign_flip_tolerance."""
    d = np.asarray(diffs, dtype=np.float64)
    null = ref_sign_flip_mc_statistics(d, n_resamples, key)
    return _tie_counts(null, float(d.sum()), ref_sign_flip_tolerance(d))


def ref_sign_flip_exact_p(a: Any, b: Any) -> float:
    """Two-sided exact sign-flip p-value over all 2^n swaps of (a_i, b_i), statistic
    mean(x) - mean(y), ties within 100 eps (relative) of the observed value counted."""
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


# ---------------------------------------------------------------------------------------
# Survey samplers and Monte Carlo studies (the core's samplers in src/cpp/truescore/
# sampling.hpp, the studies of truescore_fast.studies), re-implemented from the documented
# draw order on numpy.random.Philox.random_raw(), so that where the stream is shared the
# reference must reproduce every sample exactly.
# ---------------------------------------------------------------------------------------

CELL_TASK_STRIDE = 2**32


def ref_partial_fisher_yates(stream, begin, size, n, perm):
    """Partial Fisher-Yates over perm[begin:begin + size]; perm is restored afterwards."""
    swaps, out = [], []
    for i in range(n):
        j = i + stream.below(size - i)
        perm[begin + i], perm[begin + j] = perm[begin + j], perm[begin + i]
        swaps.append(j)
        out.append(perm[begin + i])
    for i in reversed(range(n)):
        j = swaps[i]
        perm[begin + i], perm[begin + j] = perm[begin + j], perm[begin + i]
    return out


def ref_stratified_sample(stream, offsets, allocation, perm):
    out = []
    for h, n_h in enumerate(allocation):
        out += ref_partial_fisher_yates(stream, offsets[h], offsets[h + 1] - offsets[h], n_h, perm)
    return out


def ref_with_replacement_sample(stream, population_size, n):
    return [stream.below(population_size) for _ in range(n)]


def ref_bernoulli_sample(stream, population_size, p):
    return [k for k in range(population_size) if stream.uniform() < p]


def ref_proportional_allocation(sizes, n):
    """Largest remainder with exact fractions; ties to the lower stratum."""
    from fractions import Fraction

    total = sum(sizes)
    quotas = [Fraction(n * s, total) for s in sizes]
    alloc = [math.floor(q) for q in quotas]
    order = sorted(range(len(sizes)), key=lambda h: (-(quotas[h] - alloc[h]), h))
    for h in order[: n - sum(alloc)]:
        alloc[h] += 1
    return alloc


def _tasks(replications, block):
    return [(t, min(block, replications - t * block)) for t in range(-(-replications // block))]


def ref_coverage_sums(
    values, offsets, allocation, methods, alpha, truth, key, cell, replications, block
):
    """Coverage study on the Fisher-Yates path, one replication at a time: returns, per
    method, (covered count, sum of half-widths, sum of squared half-widths), each summed
    within a task and then across tasks in task order."""
    values = np.asarray(values, dtype=np.float64)
    big_n = values.size
    totals = np.zeros((len(methods), 3))
    perm = list(range(big_n))
    for t, reps in _tasks(replications, block):
        stream = RefStream(key, cell * CELL_TASK_STRIDE + t)
        part = np.zeros((len(methods), 3))
        for _ in range(reps):
            d = values[ref_stratified_sample(stream, offsets, allocation, perm)]
            for k, m in enumerate(methods):
                low, high, _, half = INTERVAL_REFERENCES[m](d, big_n, alpha)
                part[k] += (float(low <= truth <= high), half, half * half)
        totals += part
    return totals


def ref_detection_sums(
    public,
    fresh,
    n,
    relabel,
    flip_public,
    flip_fresh,
    guardrail,
    fallback,
    alpha,
    key,
    cell,
    replications,
    block,
):
    """Detection study, one audit at a time: (interval claims, exact-test rejections,
    sum of Delta-hat)."""
    public = np.asarray(public, dtype=np.float64)
    fresh = np.asarray(fresh, dtype=np.float64)
    big_n, k = fresh.shape
    perm = list(range(big_n))
    totals = np.zeros(3)
    for t, reps in _tasks(replications, block):
        stream = RefStream(key, cell * CELL_TASK_STRIDE + t)
        part = np.zeros(3)
        for _ in range(reps):
            idx = ref_partial_fisher_yates(stream, 0, big_n, n, perm)
            pub = public[idx].copy()
            fr = fresh[idx].copy()
            for i in range(n):
                if relabel:
                    j = stream.below(k + 1)
                    if j > 0:
                        pub[i], fr[i, j - 1] = fr[i, j - 1], pub[i]
                if flip_public > 0:
                    if stream.uniform() < flip_public and pub[i] == 0:
                        pub[i] = 1.0
                if flip_fresh > 0:
                    for kk in range(k):
                        if stream.uniform() < flip_fresh and fr[i, kk] == 1:
                            fr[i, kk] = 0.0
            d = pub - fr.mean(axis=1)
            if np.count_nonzero(d) >= guardrail:
                low = ref_wald_interval(d, big_n, alpha)[0]
            else:
                low = INTERVAL_REFERENCES[fallback](d, big_n, alpha)[0]
            sums = (pub + fr.sum(axis=1)).astype(int)
            n_by_sum = np.bincount(sums, minlength=k + 2)
            p_greater = ref_randomization_binomial(n_by_sum, k, int(pub.sum()))[0]
            part += (float(low > 0), float(p_greater <= alpha), float(np.mean(d)))
        totals += part
    return totals


def ref_budget_sums(gaps, n, method, alpha, key, cell, replications, block):
    """Budget study: (sum of model-mean half-widths, its squares, exact-order count, sum
    of pair shares, its squares); pairs from the full-sample means, ties left out."""
    gaps = np.asarray(gaps, dtype=np.float64)
    n_models, big_n = gaps.shape
    full = gaps.mean(axis=1)
    pairs = [(i, j) for i in range(n_models) for j in range(n_models) if full[i] > full[j]]
    perm = list(range(big_n))
    totals = np.zeros(5)
    for t, reps in _tasks(replications, block):
        stream = RefStream(key, cell * CELL_TASK_STRIDE + t)
        part = np.zeros(5)
        for _ in range(reps):
            idx = ref_partial_fisher_yates(stream, 0, big_n, n, perm)
            sub = gaps[:, idx]
            means = [float(np.mean(row)) for row in sub]
            half = sum(INTERVAL_REFERENCES[method](row, big_n, alpha)[3] for row in sub) / n_models
            correct = sum(means[i] > means[j] for i, j in pairs)
            share = correct / len(pairs)
            part += (half, half * half, float(correct == len(pairs)), share, share * share)
        totals += part
    return totals


# ---------------------------------------------------------------------------------------
# Sequential audits: the betting confidence sequence and Besag-Clifford p-values
# ---------------------------------------------------------------------------------------


# The horizon-free sequence's capital (issue 22, part 3), written from
# docs/guide/sequential.md, not imported: the average, with weights w, of capital
# processes each betting sqrt(2 log(2 / (w alpha)) / (var_{t-1} max(t, h))) truncated at
# c_low / m_t (up) or c_low / (1 - m_t) (down) while var_{t-1} < 0.045, at c_high after.
# (w, h, c_low, c_high):
REF_SEQUENCE_MIXTURE = tuple((0.65 / 3, h, 0.9, 0.7) for h in (10, 25, 50)) + tuple(
    (0.35 / 4, h, 0.5, 0.5) for h in (100, 200, 500, 1000)
)


def ref_betting_sequence_rejects(d, m, population_size=None, alpha=0.05, horizon=None):
    """True when the candidate mean gap ``m`` is rejected at some step by the hedged
    betting sequence (either half of the wealth reaching 1/alpha), or, with a population,
    when m lies outside the values the population mean can take given the gaps so far
    (every other gap -1, or every other +1). With a horizon n: Waudby-Smith & Ramdas's
    capital with bets sqrt(2 log(2/alpha) / (var max(t, n))) truncated at 3/4 / m_t (up)
    and 3/4 / (1 - m_t) (down). Horizon-free: each half's wealth is the weighted sum of
    the capitals of REF_SEQUENCE_MIXTURE. One plain loop per step."""
    x = [(float(v) + 1.0) / 2.0 for v in d]
    target = (m + 1.0) / 2.0
    log_threshold = math.log(2.0 / alpha)  # log((1/alpha) / (1/2))
    parts = REF_SEQUENCE_MIXTURE if horizon is None else ((1.0, horizon, 0.75, 0.75),)
    log_up = [0.0] * len(parts)
    log_down = [0.0] * len(parts)
    total = 0.0
    sq = 0.0
    var_prev = 0.25
    for i, xi in enumerate(x):
        t = i + 1
        if population_size is None:
            mt = target
        else:
            mt = (population_size * target - total) / (population_size - i)
            if mt < 0.0 or mt > 1.0:
                return True
        for k, (w, h, c_low, c_high) in enumerate(parts):
            bet = math.sqrt(2.0 * math.log(2.0 / (w * alpha)) / (var_prev * max(t, h)))
            c = c_low if var_prev < 0.045 else c_high
            up = min(bet, c / mt) if mt > 0.0 else bet
            down = min(bet, c / (1.0 - mt)) if mt < 1.0 else bet
            log_up[k] += math.log(1.0 + up * (xi - mt))
            log_down[k] += math.log(1.0 - down * (xi - mt))
        for logs in (log_up, log_down):
            top = max(logs)
            wealth = sum(p[0] * math.exp(v - top) for p, v in zip(parts, logs, strict=True))
            if top + math.log(wealth) >= log_threshold:
                return True
        total += xi
        if population_size is not None and not (
            total <= population_size * target <= total + (population_size - t)
        ):
            return True  # the population mean cannot be m given x_1..x_t
        mu = (0.5 + total) / (t + 1.0)
        sq += (xi - mu) ** 2
        var_prev = (0.25 + sq) / (t + 1.0)
    return False


def ref_besag_clifford_null(m: int, h: int) -> dict[float, float]:
    """The exact null distribution {p: probability} of Besag & Clifford's sequential
    p-value with at most m draws, for continuous (tie-free) scores: the published order's
    rank among the m + 1 is uniform, so the number k of shuffled orders above it is
    uniform on 0..m, and given k their positions are a uniform k-subset of the m draws."""
    out: dict[float, float] = {}
    for k in range(m + 1):
        pk = 1.0 / (m + 1)
        if k < h:
            p = (k + 1) / (m + 1)
            out[p] = out.get(p, 0.0) + pk
            continue
        for j in range(h, m + 1):  # the h-th exceedance falls on draw j
            ways = math.comb(j - 1, h - 1) * math.comb(m - j, k - h)
            prob = pk * ways / math.comb(m, k)
            if prob:
                out[h / j] = out.get(h / j, 0.0) + prob
    return out


# ---------------------------------------------------------------------------------------
# The hedged betting confidence sequence of Waudby-Smith & Ramdas (2023), written from
# the paper's formulas (JRSS-B 86(1), "Estimating means of bounded random variables by
# betting", Sections 4 and 6; with the truncation scale of confseq's hedged_cs, 1/2):
# independent of audit/_betting.py, which the widths of the documentation are set against
# ---------------------------------------------------------------------------------------


def _ref_hedged_half_ever_reaches(x, m, population_size, alpha, c, positive):
    """Whether theta K_t^+(m) (positive) or (1 - theta) K_t^-(m) reaches 1/alpha at some
    t, theta = 1/2: K_t^+-(m) = prod_i (1 +- lambda_i^+-(m) (x_i - m_i)), m_i the mean
    of what is left (N m - sum_{j<i} x_j) / (N - i + 1) (m without a population),
    lambda_i^+ = min(lambda_i, c / m_i), lambda_i^- = min(lambda_i, c / (1 - m_i)),
    lambda_i = sqrt(2 log(2/alpha) / (sigma_{i-1}^2 i log(1 + i))), sigma_i^2 =
    (1/4 + sum_{j<=i} (x_j - mu_j)^2) / (i + 1), mu_i = (1/2 + sum_{j<=i} x_j) / (i + 1)."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    i = np.arange(1, n + 1, dtype=np.float64)
    sums = np.cumsum(x)
    mu = (0.5 + sums) / (i + 1.0)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2)) / (i + 1.0)
    sigma2_prev = np.concatenate(([0.25], sigma2[:-1]))
    lam = np.sqrt(2.0 * math.log(2.0 / alpha) / (sigma2_prev * i * np.log1p(i)))
    if population_size is None:
        mi = np.full(n, m)
    else:
        before = np.concatenate(([0.0], sums[:-1]))
        mi = (population_size * m - before) / (population_size - i + 1.0)
        # a mean too low (this half) or too high (the other) for these draws: no
        # population with it could have given them
        if np.any(mi < 0.0) if positive else np.any(mi > 1.0):
            return True
    with np.errstate(divide="ignore"):
        if positive:
            bet = np.minimum(lam, c / mi)
            log_capital = np.cumsum(np.log1p(bet * (x - mi)))
        else:
            bet = np.minimum(lam, c / (1.0 - mi))
            log_capital = np.cumsum(np.log1p(-bet * (x - mi)))
    return bool(np.any(log_capital + math.log(0.5) >= -math.log(alpha)))


def ref_hedged_cs(x, population_size=None, alpha=0.05, c=0.5, tol=1e-10):
    """Waudby-Smith & Ramdas's hedged capital confidence sequence (predictable plug-in
    bets, truncation scale ``c``, theta = 1/2) for the mean of ``x`` in [0, 1], read after
    all of ``x`` as its running intersection: the candidates m whose hedged capital
    max(theta K_t^+, (1 - theta) K_t^-) never reached 1/alpha. Each half is monotone in m,
    so each end is a bisection to ``tol`` on its half alone. Returns (low, high) on the
    [0, 1] scale, the outer (rejected) points of the bisections."""

    def end(positive):
        rejected, kept = (0.0, 1.0) if positive else (1.0, 0.0)
        if not _ref_hedged_half_ever_reaches(x, rejected, population_size, alpha, c, positive):
            return rejected
        while abs(kept - rejected) > tol:
            mid = 0.5 * (rejected + kept)
            if _ref_hedged_half_ever_reaches(x, mid, population_size, alpha, c, positive):
                rejected = mid
            else:
                kept = mid
        return rejected

    return end(True), end(False)


# ---------------------------------------------------------------------------------------
# Suite audit: multiplicity procedures run as procedures (which tests does each reject at
# level q?), the adjusted p-value of a test being the smallest q that rejects it
# ---------------------------------------------------------------------------------------


def ref_step_up_rejects(p_values: Any, q: float, dependence_factor: float = 1.0) -> list[bool]:
    """Benjamini-Hochberg's step-up procedure at level q (Benjamini-Yekutieli's with
    ``dependence_factor`` c(m) = sum 1/i): k* = the largest k with p_(k) <= k q / (m c);
    reject the k* smallest p-values."""
    p = [float(x) for x in p_values]
    m = len(p)
    ranked = sorted(p)
    k_star = 0
    for k in range(1, m + 1):
        if ranked[k - 1] <= k * q / (m * dependence_factor) * (1 + 1e-12):  # at the level
            k_star = k
    return [x <= ranked[k_star - 1] if k_star else False for x in p]


def ref_step_down_rejects(p_values: Any, q: float) -> list[bool]:
    """Holm's step-down procedure at level q: reject p_(1), p_(2), ... while
    p_(k) <= q / (m - k + 1), stopping at the first that is not."""
    p = [float(x) for x in p_values]
    m = len(p)
    ranked = sorted(p)
    cut = -1.0
    for k in range(1, m + 1):
        if ranked[k - 1] <= q / (m - k + 1) * (1 + 1e-12):  # at the level itself
            cut = ranked[k - 1]
        else:
            break
    return [x <= cut for x in p]


def ref_adjusted_by_procedure(p_values: Any, method: str) -> list[float]:
    """The adjusted p-values as the smallest level q in (0, 1] at which the procedure
    rejects each test (1 when none does), searched over every level at which some
    procedure decision can change: the values m c p_(k) / k (step-up) or
    (m - k + 1) p_(k) (step-down)."""
    p = [float(x) for x in p_values]
    m = len(p)
    c = sum(1.0 / i for i in range(1, m + 1)) if method == "by" else 1.0
    ranked = sorted(p)
    if method == "holm":
        levels = [(m - k + 1) * ranked[k - 1] for k in range(1, m + 1)]
    else:
        levels = [m * c * ranked[k - 1] / k for k in range(1, m + 1)]
    candidates = sorted({min(1.0, v) for v in levels} | {1.0})
    out = [1.0] * m
    for q in reversed(candidates):  # from 1 down: the last level that rejects is smallest
        rejects = ref_step_down_rejects(p, q) if method == "holm" else ref_step_up_rejects(p, q, c)
        for i in range(m):
            if rejects[i]:
                out[i] = q
    return out


# Suite audit: ConStat's performance-based test (Dekoninck, Müller & Vechev, NeurIPS 2024),
# as its reference code computes it (eth-sri/ConStat, ConStat.return_functions_test),
# written from that algorithm: the fit with scipy.interpolate.make_smoothing_spline and a
# dense-matrix GCV, either on the kernel's own resamples (replayed from its Philox words)
# or on NumPy draws of the same law (ConStat's own way of drawing).
# ---------------------------------------------------------------------------------------

REF_CONSTAT_ANCHOR_WEIGHT = 1e-8  # ConStat's anchors (0, 0) and (1, 1), added after GCV
REF_CONSTAT_MIN_DISTINCT = 5
REF_CONSTAT_SHARE_LAMBDA = 30  # references per row from which a resample's GCV is shared


def ref_gcv_lambda(x, y):
    """The lambda GCV chooses for the natural cubic smoothing spline through (x, y) with
    unit weights: GCV(lam) = (|y - A y|^2 / n) / (1 - tr A / n)^2 with
    A = (I + lam Q R^-1 Q^T)^-1 built densely (Reinsch's Q and R), minimised over (0, n)
    by SciPy's bounded search (xatol 1e-5), as make_smoothing_spline does."""
    from scipy.optimize import minimize_scalar

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = x.shape[0]
    h = np.diff(x)
    q, r = np.zeros((n, n - 2)), np.zeros((n - 2, n - 2))
    for j in range(n - 2):
        q[j, j], q[j + 1, j], q[j + 2, j] = 1 / h[j], -1 / h[j] - 1 / h[j + 1], 1 / h[j + 1]
        r[j, j] = (h[j] + h[j + 1]) / 3
        if j + 1 < n - 2:
            r[j, j + 1] = r[j + 1, j] = h[j + 1] / 6
    k = q @ np.linalg.solve(r, q.T)
    kappa, u = np.linalg.eigh((k + k.T) / 2)
    c = u.T @ y

    def gcv(lam):
        shrink = 1.0 / (1.0 + lam * kappa)
        rss = float(np.sum(((1.0 - shrink) * c) ** 2))
        return (rss / n) / (1.0 - float(np.sum(shrink)) / n) ** 2

    return float(minimize_scalar(gcv, bounds=(0, n), method="bounded").x)


def ref_constat_points(bench, ref, guess, sort):
    """ConStat's points from the models' benchmark scores ``bench`` and reference scores
    ``ref`` (the random-guess point ``guess`` = (benchmark, reference) first, if any):
    sorted (each coordinate on its own when ``sort``, else by reference score, ties kept in
    order) and every point whose x equals the next one's dropped. Returns (x, y)."""
    ys = ([guess[0]] if guess is not None else []) + [float(v) for v in bench]
    xs = ([guess[1]] if guess is not None else []) + [float(v) for v in ref]
    if sort:
        x, y = np.sort(xs), np.sort(ys)
    else:
        order = np.argsort(xs, kind="stable")
        x, y = np.asarray(xs)[order], np.asarray(ys)[order]
    keep = np.ones(x.shape[0], dtype=bool)
    keep[:-1] = x[:-1] != x[1:]
    return x[keep], y[keep]


def ref_constat_fit(x, y, x0, lam=None):
    """ConStat's prediction at x0 from prepared points (at least 5): lambda given or by GCV
    on the points with unit weights; anchors (0, 0) and (1, 1) of weight 1e-8 where x does
    not reach 0 or 1; make_smoothing_spline at that lambda; clipped to [0, 1]."""
    from scipy.interpolate import make_smoothing_spline

    if lam is None:
        lam = ref_gcv_lambda(x, y)
    w = np.ones(x.shape[0])
    if x[0] > 0:
        x, y, w = np.r_[0.0, x], np.r_[0.0, y], np.r_[REF_CONSTAT_ANCHOR_WEIGHT, w]
    if x[-1] < 1:
        x, y, w = np.r_[x, 1.0], np.r_[y, 1.0], np.r_[w, REF_CONSTAT_ANCHOR_WEIGHT]
    value = float(make_smoothing_spline(x, y, w=w, lam=lam)(x0))
    return min(1.0, max(0.0, value))


def _ref_means(matrix, indices):
    counts = np.bincount(np.asarray(indices, dtype=np.int64), minlength=matrix.shape[1])
    return (matrix * counts).sum(axis=1) / matrix.shape[1]


def _ref_guess_noise(guess, n_items, n_ref, z_bench, z_ref):
    if guess is None:
        return None
    gb, gr = guess
    return (
        gb + z_bench * np.sqrt(gb * (1 - gb) / n_items),
        gr + z_ref * np.sqrt(gr * (1 - gr) / n_ref),
    )


def _ref_model_draws(draw_below, k):
    """k draws below k, again until 5 are distinct; all k models when k is 5."""
    if k == REF_CONSTAT_MIN_DISTINCT:
        return list(range(k))
    while True:
        draw = [draw_below(k) for _ in range(k)]
        if len(set(draw)) >= REF_CONSTAT_MIN_DISTINCT:
            return draw


REF_CONSTAT_MAX_CANDIDATES = 256


def _ref_candidate_draws(stream, n, k_big, rows):
    """A leaderboard's draws: for each row (its count k of draws and its own reference
    position, None for a row that is no reference), the first of the candidates u^1, u^2,
    ... (k_big draws below n each, drawn in turn from ``stream``) whose first k draws avoid
    the row's position and hold 5 or more distinct positions: (those draws, the candidate's
    index), or None when none of the first 256 does. Also the first candidate."""
    candidates = []
    taken = []
    for k, own in rows:
        choice = None
        for g in range(REF_CONSTAT_MAX_CANDIDATES):
            while len(candidates) <= g:
                candidates.append([stream.below(n) for _ in range(k_big)])
            d = candidates[g][:k]
            if (own is None or own not in d) and len(set(d)) >= REF_CONSTAT_MIN_DISTINCT:
                choice = d
                break
        taken.append(choice)
    if not candidates:
        candidates.append([stream.below(n) for _ in range(k_big)])
    return taken, candidates[0]


def ref_constat_kernel_draws(key, resample, attempt, n_items, n_ref, counts, guess, coupled=False):
    """Attempt ``attempt`` of resample ``resample`` as the kernel draws it, replayed from
    Philox counter (0, 0, resample, attempt): benchmark and reference item indices
    (``ref_packed_draws``), two normals by inversion of one word each when there is a
    random-guess point, then, from a copy of the stream, per count k of references the
    model draws, or with ``coupled`` the copy of the stream itself, from which the
    leaderboard's candidates are drawn (``_ref_candidate_draws``)."""
    import copy

    from scipy.special import ndtri

    stream = RefStream(key, resample)
    stream._bitgen = np.random.Philox(
        key=np.array(key, dtype=np.uint64),
        counter=np.array([0, 0, resample, attempt], dtype=np.uint64),
    )
    bench = ref_packed_draws(stream, n_items, n_items)
    ref = ref_packed_draws(stream, n_ref, n_ref)
    z = (0.0, 0.0)
    if guess is not None:
        z = tuple(float(ndtri(((stream.raw() >> 11) + 0.5) * 2.0**-53)) for _ in range(2))
    if coupled:
        return bench, ref, z, copy.deepcopy(stream)
    models = {}
    for k in counts:
        s = copy.deepcopy(stream)
        models[k] = _ref_model_draws(s.below, k)
    return bench, ref, z, models


def ref_constat_replicates(
    scores, reference_scores, references, tested, n_bootstrap, key, *, random_guess=(0.0, 0.0),
    lam=None, sort=True,
):  # fmt: skip
    """ConStat's delta*_b for each tested row on the kernel's resamples, with its full-data
    actual and predicted scores; a row that is not testable (fewer than 5 points on the
    full data) is NaN. ``references``: the reference rows; a tested row's own references
    are these less itself, in increasing order."""
    s = np.asarray(scores, dtype=np.float64)
    r = np.asarray(reference_scores, dtype=np.float64)
    n, nr = s.shape[1], r.shape[1]
    lists = {i: [j for j in sorted(references) if j != i] for i in tested}
    counts = sorted({len(v) for v in lists.values()})
    bench, ref = s.mean(axis=1), r.mean(axis=1)
    actual = np.array([bench[i] for i in tested])
    predicted = np.full(len(tested), np.nan)
    ok = []
    for t, i in enumerate(tested):
        x, y = ref_constat_points(bench[lists[i]], ref[lists[i]], random_guess, sort)
        if x.shape[0] >= REF_CONSTAT_MIN_DISTINCT:
            predicted[t] = ref_constat_fit(x, y, ref[i], lam)
            ok.append(t)
    out = np.full((len(tested), n_bootstrap), np.nan)
    share = lam is None and counts[0] >= REF_CONSTAT_SHARE_LAMBDA
    refs = sorted(references)
    for b in range(n_bootstrap):
        pending = list(ok)
        attempt = 0
        while pending:
            bi, ri, z, models = ref_constat_kernel_draws(key, b, attempt, n, nr, counts,
                                                         random_guess, share)  # fmt: skip
            bench_b, ref_b = _ref_means(s, bi), _ref_means(r, ri)
            guess = _ref_guess_noise(random_guess, n, nr, *z)
            lam_b = lam
            if share:  # each row's candidate; one GCV per resample, on the first's models
                rows = [(len(lists[tested[t]]), refs.index(tested[t]) if tested[t] in refs
                         else None) for t in pending]  # fmt: skip
                taken, first = _ref_candidate_draws(models, len(refs), counts[-1], rows)
                draws = dict(zip(pending, taken, strict=True))
                if len(set(first)) >= REF_CONSTAT_MIN_DISTINCT:
                    picked = [refs[d] for d in first]
                    x, y = ref_constat_points(bench_b[picked], ref_b[picked], guess, sort)
                    if x.shape[0] >= REF_CONSTAT_MIN_DISTINCT:
                        lam_b = ref_gcv_lambda(x, y)
            left = []
            for t in pending:
                i = tested[t]
                if share:
                    if draws[t] is None:
                        left.append(t)
                        continue
                    chosen = [refs[d] for d in draws[t]]
                else:
                    chosen = [lists[i][d] for d in models[len(lists[i])]]
                x, y = ref_constat_points(bench_b[chosen], ref_b[chosen], guess, sort)
                if x.shape[0] < REF_CONSTAT_MIN_DISTINCT:
                    left.append(t)
                    continue
                out[t, b] = bench_b[i] - ref_constat_fit(x, y, ref_b[i], lam_b)
            pending = left
            attempt += 1
    return out, actual, predicted


def ref_constat_pvalue(replicates, delta):
    """ConStat's p-value, the conservative way at ties: k / B for the first k in
    0 .. B - 1 with 2 mean - quantile(1 - k / B) > delta (1 when none), each quantile taken
    on its own."""
    d = np.asarray(replicates, dtype=np.float64)
    mean, b = float(d.mean()), d.shape[0]
    for k in range(b):
        if 2 * mean - float(np.quantile(d, 1 - k / b)) > delta:
            return k / b
    return 1.0


def ref_constat_summary(replicates, delta, alpha):
    """Estimate (mean), basic bootstrap interval and ConStat's p-value."""
    d = np.asarray(replicates, dtype=np.float64)
    mean = float(d.mean())
    low = 2 * mean - float(np.quantile(d, 1 - alpha / 2))
    high = 2 * mean - float(np.quantile(d, alpha / 2))
    return mean, low, high, ref_constat_pvalue(d, delta)


def ref_constat_test(
    scores, reference_scores, model_scores, model_reference_scores, *, n_bootstrap=1000,
    random_guess=(0.0, 0.0), sort=True, delta=0.0, seed=0,
):  # fmt: skip
    """ConStat's test of one model as its reference code runs it, with NumPy's generator
    (``default_rng(seed)``) drawing in ConStat's order: benchmark items, reference items,
    the reference models (again until 5 distinct; all when there are 5), the random-guess
    noise; a resample with fewer than 5 points after ties is drawn again. Returns
    (estimate, p-value) with ConStat's rule (``>`` at the bound)."""
    rng = np.random.default_rng(seed)
    s, r = np.asarray(scores, dtype=np.float64), np.asarray(reference_scores, dtype=np.float64)
    ms = np.asarray(model_scores, dtype=np.float64)
    mr = np.asarray(model_reference_scores, dtype=np.float64)
    k, n, nr = ms.shape[0], s.shape[0], r.shape[0]
    deltas = []
    while len(deltas) < n_bootstrap:
        i1 = rng.integers(0, n, n)
        i2 = rng.integers(0, nr, nr)
        chosen = _ref_model_draws(lambda m: int(rng.integers(0, m)), k)
        bench = ms[chosen][:, i1].mean(axis=1)
        ref = mr[chosen][:, i2].mean(axis=1)
        guess = _ref_guess_noise(random_guess, n, nr, rng.normal(), rng.normal())
        x, y = ref_constat_points(bench, ref, guess, sort)
        if x.shape[0] < REF_CONSTAT_MIN_DISTINCT:
            continue
        deltas.append(float(s[i1].mean()) - ref_constat_fit(x, y, float(r[i2].mean())))
    d = np.array(deltas)
    return float(d.mean()), ref_constat_pvalue(d, delta)


# ---------------------------------------------------------------------------------------
# The sliding-window log-likelihood of Oren et al. (2023), from the definition in their
# released script (tatsu-lab/test_set_contamination, compute_sharded_comparison_test.py,
# commit 2912e15ac72cbaf0eb33696ce1fd640534f7c922, compute_logprob_of_token_sequence)
# ---------------------------------------------------------------------------------------


def ref_sliding_window_loglik(tokens, model, context_len, stride):
    """log p(tokens) as the released script defines it, one target at a time.

    The script's targets are tokens 1 .. n-1 (t = n - 1 of them, the first token is never
    scored); window j starts at input j * stride and holds context_len inputs; the first
    window scores its targets from the start, every later one from its
    (context_len - stride)-th on. So target q (0-based among the targets) is scored by
    window 0 when q < context_len, else by window j = (q - context_len) // stride + 1,
    with the inputs from j * stride to q as its context. Here each target is scored by
    its own forward pass over exactly that context (the last position's log-softmax),
    not by slicing windows: a different computation of the same quantity.
    """
    import torch

    total = 0.0
    for q in range(len(tokens) - 1):
        j = 0 if q < context_len else (q - context_len) // stride + 1
        context = torch.tensor([list(tokens[j * stride : q + 1])])
        with torch.no_grad():
            logits = model(input_ids=context, use_cache=False).logits[0, -1].double()
        total += float(torch.log_softmax(logits, dim=-1)[tokens[q + 1]])
    return total


def ref_full_context_loglik(tokens, model):
    """log p(tokens[1:] | tokens[0]) from one forward pass over the whole sequence."""
    import torch

    ids = torch.tensor([list(tokens)])
    with torch.no_grad():
        logits = model(input_ids=ids[:, :-1], use_cache=False).logits[0].double()
    logps = torch.log_softmax(logits, dim=-1)
    return float(sum(logps[i, tokens[i + 1]] for i in range(len(tokens) - 1)))

"""Slow, obvious reference implementations that the compiled kernels are tested against.

Each function here is written for clarity, not speed: plain NumPy/SciPy (or mpmath where
double precision is not enough), one shard at a time, no shared code with the package.
Other test modules add their own references to this file; keep each group under its own
heading and give every function a name that says what it computes.
"""

from __future__ import annotations

import itertools
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
# Audit: intervals for the mean gap and the exact randomization test (truescore_fast.audit),
# written from the formulas in SPEC.md section 4, not from the C++ code
# ---------------------------------------------------------------------------------------

AUDIT_RANGE = 2.0


def _audit_clip(estimate: float, half: float) -> tuple[float, float, float, float]:
    return max(-1.0, estimate - half), min(1.0, estimate + half), estimate, half


def audit_hoeffding_reference(d, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    half = AUDIT_RANGE * math.sqrt(math.log(2.0 / alpha) / (2.0 * n))
    return _audit_clip(float(np.mean(d)), half)


def audit_bernstein_reference(d, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    s2 = float(np.var(d, ddof=1))
    log_term = math.log(4.0 / alpha)
    half = math.sqrt(2.0 * s2 * log_term / n) + 7.0 * AUDIT_RANGE * log_term / (3.0 * (n - 1))
    return _audit_clip(float(np.mean(d)), half)


def audit_wald_reference(d, population_size=None, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    s2 = float(np.var(d, ddof=1))
    fpc = 1.0 - n / population_size if population_size else 1.0
    half = float(stats.norm.ppf(1.0 - alpha / 2.0)) * math.sqrt(fpc * s2 / n)
    return _audit_clip(float(np.mean(d)), half)


def audit_hoeffding_serfling_reference(d, population_size, alpha=0.05):
    d = np.asarray(d, dtype=np.float64)
    n = d.size
    half = AUDIT_RANGE * math.sqrt(
        (1.0 - (n - 1) / population_size) * math.log(2.0 / alpha) / (2.0 * n)
    )
    return _audit_clip(float(np.mean(d)), half)


def _audit_betting_path(x, alpha):
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


def _audit_conditional_mean(m, sprev, population_size):
    if not population_size:
        return np.full(sprev.size, m)
    i = np.arange(sprev.size, dtype=np.float64)
    return (population_size * m - sprev) / (population_size - i)


def audit_betting_reference(d, population_size=None, alpha=0.05, tol=1e-9):
    """Waudby-Smith & Ramdas hedged betting CI with predictable plug-in bets (fixed n),
    c = 3/4, WoR conditional means; bisection on the monotone one-sided rejections."""
    d = np.asarray(d, dtype=np.float64)
    x = (d + 1.0) * 0.5
    lam, sprev = _audit_betting_path(x, alpha)
    c = 0.75

    def below(m):
        mt = _audit_conditional_mean(m, sprev, population_size)
        if np.any(mt < 0.0):
            return True
        with np.errstate(divide="ignore"):
            lp = np.where(mt > 0.0, np.minimum(lam, c / np.where(mt > 0, mt, 1.0)), lam)
        with np.errstate(over="ignore"):
            cap = np.cumprod(1.0 + lp * (x - mt))
        return bool(np.any(0.5 * cap >= 1.0 / alpha))

    def above(m):
        mt = _audit_conditional_mean(m, sprev, population_size)
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
    if lower > upper:
        lower = upper = 0.5 * (lower + upper)
    low, high = 2.0 * lower - 1.0, 2.0 * upper - 1.0
    return low, high, float(np.mean(d)), 0.5 * (high - low)


def audit_randomization_brute_force(public, fresh):
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


def audit_randomization_numpy_convolution(public, fresh):
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


def audit_randomization_binomial_convolution(n_by_sum, k, u_obs):
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
# Calibration: survey samplers and Monte Carlo studies (truescore_fast.calibration),
# re-implemented from the documented draw order on numpy.random.Philox.random_raw(), so
# that where the stream is shared the reference must reproduce every sample exactly.
# ---------------------------------------------------------------------------------------

CAL_TASK_STRIDE = 2**32


def cal_stream(key, task):
    """numpy's Philox for task `task` under `key`: counter [0, 0, task, 0]."""
    return np.random.Philox(
        key=np.array(key, dtype=np.uint64), counter=np.array([0, 0, task, 0], dtype=np.uint64)
    )


def cal_below(bitgen, n):
    """Uniform integer in [0, n): Lemire's multiply-and-reject on 64-bit raw draws."""
    x = int(bitgen.random_raw())
    m = x * n
    if m % 2**64 < n:
        threshold = (2**64 - n) % n
        while m % 2**64 < threshold:
            x = int(bitgen.random_raw())
            m = x * n
    return m >> 64


def cal_uniform(bitgen):
    """Uniform on [0, 1) from the top 53 bits of one raw draw."""
    return (int(bitgen.random_raw()) >> 11) * 2.0**-53


def cal_fisher_yates(bitgen, begin, size, n, perm):
    """Partial Fisher-Yates over perm[begin:begin + size]; perm is restored afterwards."""
    swaps, out = [], []
    for i in range(n):
        j = i + cal_below(bitgen, size - i)
        perm[begin + i], perm[begin + j] = perm[begin + j], perm[begin + i]
        swaps.append(j)
        out.append(perm[begin + i])
    for i in reversed(range(n)):
        j = swaps[i]
        perm[begin + i], perm[begin + j] = perm[begin + j], perm[begin + i]
    return out


def cal_stratified(bitgen, offsets, allocation, perm):
    out = []
    for h, n_h in enumerate(allocation):
        out += cal_fisher_yates(bitgen, offsets[h], offsets[h + 1] - offsets[h], n_h, perm)
    return out


def cal_with_replacement(bitgen, population_size, n):
    return [cal_below(bitgen, population_size) for _ in range(n)]


def cal_bernoulli(bitgen, population_size, p):
    return [k for k in range(population_size) if cal_uniform(bitgen) < p]


def cal_proportional_allocation(sizes, n):
    """Largest remainder with exact fractions; ties to the lower stratum."""
    from fractions import Fraction

    total = sum(sizes)
    quotas = [Fraction(n * s, total) for s in sizes]
    alloc = [math.floor(q) for q in quotas]
    order = sorted(range(len(sizes)), key=lambda h: (-(quotas[h] - alloc[h]), h))
    for h in order[: n - sum(alloc)]:
        alloc[h] += 1
    return alloc


_CAL_INTERVALS = {
    "hoeffding": lambda d, pop, alpha: audit_hoeffding_reference(d, alpha),
    "bernstein": lambda d, pop, alpha: audit_bernstein_reference(d, alpha),
    "wald": lambda d, pop, alpha: audit_wald_reference(d, pop, alpha),
    "hoeffding_serfling": lambda d, pop, alpha: audit_hoeffding_serfling_reference(d, pop, alpha),
    "betting": lambda d, pop, alpha: audit_betting_reference(d, pop, alpha),
}


def _cal_tasks(replications, block):
    return [(t, min(block, replications - t * block)) for t in range(-(-replications // block))]


def cal_coverage_reference(
    values, offsets, allocation, methods, alpha, truth, key, cell, replications, block
):
    """Coverage study on the Fisher-Yates path, one replication at a time: returns, per
    method, (covered count, sum of half-widths, sum of squared half-widths), each summed
    within a task and then across tasks in task order."""
    values = np.asarray(values, dtype=np.float64)
    big_n = values.size
    totals = np.zeros((len(methods), 3))
    perm = list(range(big_n))
    for t, reps in _cal_tasks(replications, block):
        bitgen = cal_stream(key, cell * CAL_TASK_STRIDE + t)
        part = np.zeros((len(methods), 3))
        for _ in range(reps):
            d = values[cal_stratified(bitgen, offsets, allocation, perm)]
            for k, m in enumerate(methods):
                low, high, _, half = _CAL_INTERVALS[m](d, big_n, alpha)
                part[k] += (float(low <= truth <= high), half, half * half)
        totals += part
    return totals


def cal_detection_reference(
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
    for t, reps in _cal_tasks(replications, block):
        bitgen = cal_stream(key, cell * CAL_TASK_STRIDE + t)
        part = np.zeros(3)
        for _ in range(reps):
            idx = cal_fisher_yates(bitgen, 0, big_n, n, perm)
            pub = public[idx].copy()
            fr = fresh[idx].copy()
            for i in range(n):
                if relabel:
                    j = cal_below(bitgen, k + 1)
                    if j > 0:
                        pub[i], fr[i, j - 1] = fr[i, j - 1], pub[i]
                if flip_public > 0:
                    if cal_uniform(bitgen) < flip_public and pub[i] == 0:
                        pub[i] = 1.0
                if flip_fresh > 0:
                    for kk in range(k):
                        if cal_uniform(bitgen) < flip_fresh and fr[i, kk] == 1:
                            fr[i, kk] = 0.0
            d = pub - fr.mean(axis=1)
            if np.count_nonzero(d) >= guardrail:
                low = audit_wald_reference(d, big_n, alpha)[0]
            else:
                low = _CAL_INTERVALS[fallback](d, big_n, alpha)[0]
            sums = (pub + fr.sum(axis=1)).astype(int)
            n_by_sum = np.bincount(sums, minlength=k + 2)
            p_greater = audit_randomization_binomial_convolution(n_by_sum, k, int(pub.sum()))[0]
            part += (float(low > 0), float(p_greater <= alpha), float(np.mean(d)))
        totals += part
    return totals


def cal_budget_reference(gaps, n, method, alpha, key, cell, replications, block):
    """Budget study: (sum of model-mean half-widths, its squares, exact-order count, sum
    of pair shares, its squares); pairs from the full-sample means, ties left out."""
    gaps = np.asarray(gaps, dtype=np.float64)
    n_models, big_n = gaps.shape
    full = gaps.mean(axis=1)
    pairs = [(i, j) for i in range(n_models) for j in range(n_models) if full[i] > full[j]]
    perm = list(range(big_n))
    totals = np.zeros(5)
    for t, reps in _cal_tasks(replications, block):
        bitgen = cal_stream(key, cell * CAL_TASK_STRIDE + t)
        part = np.zeros(5)
        for _ in range(reps):
            idx = cal_fisher_yates(bitgen, 0, big_n, n, perm)
            sub = gaps[:, idx]
            means = [float(np.mean(row)) for row in sub]
            half = sum(_CAL_INTERVALS[method](row, big_n, alpha)[3] for row in sub) / n_models
            correct = sum(means[i] > means[j] for i, j in pairs)
            share = correct / len(pairs)
            part += (half, half * half, float(correct == len(pairs)), share, share * share)
        totals += part
    return totals

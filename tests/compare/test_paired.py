"""The truescore drop-in of ``compare/paired.py`` (``paired_bootstrap``, ``paired_permutation``,
``holm``, ``benjamini_hochberg``): signatures, result types, p-values and intervals equal to
truescore 0.7.4 and the references in tests/reference.py, calibration, streaming memory,
and truescore's exceptions, seeds and numbers at the edges, case by case."""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import tracemalloc
import warnings

import numpy as np
import pytest
import truescore.compare as ts
import truescore.compare as ts_compare
import truescore.contamination as ts_contamination
import truescore_fast as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_paths import KERNEL_PATHS, kernel_path
from reference import (
    ref_bootstrap_means,
    ref_cluster_bootstrap_means,
    ref_compare_sign_flip_mc_counts,
    ref_sign_flip_exact_p,
)
from scipy import stats
from truescore_fast import _core
from truescore_fast._random import philox_key

NAMES = ["paired_bootstrap", "paired_permutation", "holm", "benjamini_hochberg"]


def pairs(rng, kind, n):
    """Paired scores of one kind: binary, continuous, tied (coarse grid), or degenerate."""
    if kind == "binary":
        a = (rng.random(n) < 0.7).astype(float)
        b = (rng.random(n) < rng.uniform(0.5, 0.8)).astype(float)
    elif kind == "continuous":
        a = rng.normal(size=n)
        b = a * rng.uniform(0, 1) + rng.normal(rng.uniform(-0.5, 0.5), 1.0, size=n)
    elif kind == "ties":
        a = rng.integers(0, 5, n) * 0.1
        b = rng.integers(0, 5, n) * 0.1
    elif kind == "equal":
        a = rng.integers(0, 3, n).astype(float)
        b = a.copy()
    else:  # "shifted": every difference of one sign
        a = rng.random(n) + 1.0
        b = rng.random(n)
    return a, b


KINDS = ["binary", "continuous", "ties", "equal", "shifted"]


# --- interface -------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_truescore(name):
    assert inspect.signature(getattr(tf, name)) == inspect.signature(getattr(ts, name))


def test_result_type_matches_truescore():
    ours = [(f.name, f.default) for f in dataclasses.fields(tf.ComparisonResult)]
    theirs = [(f.name, f.default) for f in dataclasses.fields(ts.ComparisonResult)]
    assert ours == theirs
    assert isinstance(tf.ComparisonResult.significant, property)
    fields = dict(
        difference=0.1,
        low=-0.2,
        high=0.4,
        level=0.9,
        p_value=0.08,
        method="m",
        n_pairs=5,
        n_discordant=3,
    )
    mine, yours = tf.ComparisonResult(**fields), ts.ComparisonResult(**fields)
    assert mine.significant == yours.significant is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        mine.p_value = 0.5  # type: ignore[misc]
    # summary() is truescore's text, word for word; explain() is ours
    assert mine.summary() == yours.summary()
    no_pairs = dataclasses.replace(mine, n_discordant=None)
    assert no_pairs.summary() == dataclasses.replace(yours, n_discordant=None).summary()
    text = mine.explain()
    for piece in ("m", "5", "+0.1000", "-0.2000", "+0.4000", "90%", "0.08", "3"):
        assert piece in text
    assert "disagree" in text and "disagree" not in no_pairs.explain()


# --- deterministic results: identical to truescore ---------------------------------------


def test_exact_enumeration_p_values_identical_to_truescore_and_reference():
    rng = np.random.default_rng(20260)
    checked = 0
    for trial in range(120):
        kind = KINDS[trial % len(KINDS)]
        n = int(rng.integers(2, 11))
        a, b = pairs(rng, kind, n)
        budget = [10000, 2**n, np.inf][trial % 3]
        ours = tf.paired_permutation(a, b, n_resamples=budget, seed=trial)
        theirs = ts.paired_permutation(a, b, n_resamples=budget, seed=trial)
        assert ours.p_value == theirs.p_value, (kind, n, a, b)
        assert ours.p_value == ref_sign_flip_exact_p(a, b)
        assert ours.difference == theirs.difference
        assert ours.method == theirs.method and ours.n_pairs == theirs.n_pairs
        checked += 1
    assert checked == 120


def test_exact_p_values_for_tied_and_degenerate_data():
    # all pairs equal: every pattern ties the observed 0, p = 1
    assert tf.paired_permutation([1, 0, 1, 1], [1, 0, 1, 1]).p_value == 1.0
    # four discordant pairs all favouring A: only 2 of 16 patterns as extreme each side
    r = tf.paired_permutation([1, 1, 1, 1], [0, 0, 0, 0])
    assert r.p_value == 2 * (1 / 16)
    # 0.1 + 0.2 style rounding: theoretically tied statistics must count as ties
    a = [0.1, 0.2, 0.3, 0.7, 0.3]
    b = [0.3, 0.1, 0.2, 0.4, 0.6]
    assert tf.paired_permutation(a, b).p_value == ts.paired_permutation(a, b).p_value


def test_holm_and_bh_identical_to_truescore():
    rng = np.random.default_rng(7)
    cases = [[0.5], [0.0, 1.0], [0.01, 0.01, 0.04, 0.04, 1.0, 0.0], [1.0] * 4, [0.0] * 3]
    for m in (2, 3, 10, 57, 500):
        p = rng.random(m) ** 3
        p[rng.integers(0, m, m // 3)] = p[0]  # ties
        cases.append(p.tolist())
    for p in cases:
        for fn in ("holm", "benjamini_hochberg"):
            ours, theirs = getattr(tf, fn)(p), getattr(ts, fn)(p)
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            np.testing.assert_array_equal(ours, theirs)


def test_holm_and_bh_against_textbook_definitions():
    p = np.array([0.04, 0.001, 0.03, 0.2, 0.01])
    # Holm: sorted 0.001, 0.01, 0.03, 0.04, 0.2 -> 5p, 4p, 3p, 2p, 1p, running max
    np.testing.assert_allclose(tf.holm(p), [0.09, 0.005, 0.09, 0.2, 0.04])
    # BH: m/rank * p, running min from the top
    np.testing.assert_allclose(tf.benjamini_hochberg(p), [0.05, 0.005, 0.05, 0.2, 0.025])


# --- randomised results: within Monte Carlo error of truescore ---------------------------


def p_tolerance(p, n_resamples):
    """Five standard errors of the difference of two independent two-sided MC p-values."""
    q = min(max(p / 2, 1 / n_resamples), 0.5)
    se_one = 2 * math.sqrt(q * (1 - q) / n_resamples)
    return 5 * math.sqrt(2) * se_one + 2 / n_resamples


def test_monte_carlo_permutation_p_values_within_mc_error_of_truescore():
    rng = np.random.default_rng(11)
    budget = 2000
    for trial in range(24):
        kind = ["binary", "continuous", "ties"][trial % 3]
        n = int(rng.integers(16, 60))
        a, b = pairs(rng, kind, n)
        if trial % 2:
            b = b + rng.uniform(0, 0.3)  # some real effects, so small p-values occur too
        ours = tf.paired_permutation(a, b, n_resamples=budget, seed=trial)
        theirs = ts.paired_permutation(a, b, n_resamples=budget, seed=trial)
        assert abs(ours.p_value - theirs.p_value) <= p_tolerance(theirs.p_value, budget), (
            kind,
            n,
            ours.p_value,
            theirs.p_value,
        )
        assert ours.p_value >= 2 / (budget + 1) - 1e-15  # the +1 correction's floor


def bootstrap_scale(d, codes=None):
    """Approximate sd of the bootstrap distribution (row or cluster), for tolerances."""
    if codes is None:
        return d.std() / math.sqrt(d.size)
    sums = np.bincount(codes, weights=d)
    sizes = np.bincount(codes)
    resid = sums - sizes * d.mean()
    return math.sqrt(np.sum(resid**2)) / d.size


@pytest.mark.parametrize("clustered", [False, True])
def test_bootstrap_interval_and_p_within_mc_error_of_truescore(clustered):
    rng = np.random.default_rng(5 + clustered)
    for trial in range(16):
        kind = ["binary", "continuous", "ties", "shifted"][trial % 4]
        n = int(rng.integers(40, 300))
        a, b = pairs(rng, kind, n)
        clusters = None
        codes = None
        if clustered:
            g = int(rng.integers(5, 30))
            codes = np.sort(rng.integers(0, g, n))
            codes = np.unique(codes, return_inverse=True)[1].ravel()
            clusters = np.array([f"c{c}" for c in codes])
            a = a + 0.5 * rng.normal(size=g)[codes] * (kind == "continuous")
        ours = tf.paired_bootstrap(a, b, seed=trial, clusters=clusters)
        theirs = ts.paired_bootstrap(a, b, seed=trial, clusters=clusters)
        assert ours.difference == theirs.difference
        assert ours.method == theirs.method
        d = a - b
        step = np.abs(d).max() / n if kind != "continuous" else 0.0
        if clustered:
            step = np.abs(np.bincount(codes, weights=d)).max() / n if step else 0.0
        tol = 0.15 * bootstrap_scale(d, codes) + 1.01 * step + 1e-12
        assert abs(ours.low - theirs.low) <= tol, (kind, ours, theirs)
        assert abs(ours.high - theirs.high) <= tol, (kind, ours, theirs)
        assert abs(ours.p_value - theirs.p_value) <= p_tolerance(theirs.p_value, 10000)


def test_bootstrap_p_counts_zero_mass_in_both_tails():
    a = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    for clusters in (None, [0, 0, 1, 1, 2]):
        r = tf.paired_bootstrap(a, a.copy(), clusters=clusters)
        assert (r.p_value, r.low, r.high, r.difference) == (1.0, 0.0, 0.0, 0.0)
    r = tf.paired_bootstrap([3.0, 3.0, 3.0], [1.0, 1.0, 1.0])
    assert (r.p_value, r.low, r.high) == (0.0, 2.0, 2.0)


# --- the streaming kernels against NumPy rebuilds of the same streams ---------------------


@pytest.mark.parametrize("n, n_bootstrap", [(1, 3), (7, 300), (1000, 700), (70000, 5)])
def test_bootstrap_means_equal_numpy_rebuild_of_the_streams(n, n_bootstrap):
    rng = np.random.default_rng(n)
    d = rng.normal(size=n)
    key = philox_key(n_bootstrap)
    ours = _core.bootstrap_means(d, n_bootstrap, *key)
    np.testing.assert_allclose(
        ours, ref_bootstrap_means(d, n_bootstrap, key), rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize("avx512", KERNEL_PATHS, ids=["avx512-if-available", "portable"])
@pytest.mark.parametrize(
    "g, n_bootstrap", [(1, 300), (2, 600), (3, 600), (5, 600), (13, 600), (500, 600), (43_691, 20)]
)
def test_cluster_bootstrap_means_equal_numpy_rebuild(avx512, g, n_bootstrap):
    # A block's resamples are one stream of draws cut into runs of G: with G not a multiple
    # of 4 most resamples start part-way through a four (the accumulators rotate), and at
    # G = 43,691 2.1% of the 21-bit chunks are rejected (the buffers' carried draws).
    rng = np.random.default_rng(3)
    sums = rng.normal(size=g)
    sizes = rng.integers(1, 6, g)
    key = philox_key(99)
    with kernel_path(avx512):
        ours = _core.cluster_bootstrap_means(sums, sizes, n_bootstrap, *key)
        equal = np.full(g, 3)  # every cluster the same size: the kernel skips the size tally
        ours_equal = _core.cluster_bootstrap_means(sums, equal, n_bootstrap, *key)
    np.testing.assert_array_equal(ours, ref_cluster_bootstrap_means(sums, sizes, n_bootstrap, key))
    np.testing.assert_array_equal(
        ours_equal, ref_cluster_bootstrap_means(sums, equal, n_bootstrap, key)
    )


def test_public_bootstrap_is_the_percentile_interval_of_those_means():
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=50), rng.normal(size=50)
    means = ref_bootstrap_means(a - b, 10000, philox_key(4))
    r = tf.paired_bootstrap(a, b, seed=4, alpha=0.1)
    low, high = np.percentile(means, [5, 95])
    assert r.low == pytest.approx(low, rel=1e-12) and r.high == pytest.approx(high, rel=1e-12)
    expected_p = min(1.0, 2 * min(np.mean(means <= 0), np.mean(means >= 0)))
    assert r.p_value == pytest.approx(expected_p, abs=1e-12)


def test_bootstrap_p_is_the_smallest_level_whose_interval_excludes_zero():
    # The docstring: p is the smallest alpha at which the percentile interval (same seed,
    # same resamples) excludes zero -- just above it the interval excludes 0, just below
    # it the interval contains 0.
    rng = np.random.default_rng(12)
    a, b = rng.normal(0.15, 1.0, size=60), rng.normal(0.0, 1.0, size=60)
    p = tf.paired_bootstrap(a, b, seed=6).p_value
    assert 0.02 < p < 0.5  # over a hundred of the 10,000 resamples in the smaller tail
    above = tf.paired_bootstrap(a, b, seed=6, alpha=1.05 * p)
    below = tf.paired_bootstrap(a, b, seed=6, alpha=0.95 * p)
    assert above.low > 0 or above.high < 0
    assert below.low <= 0 <= below.high


@pytest.mark.parametrize("n, n_resamples", [(1, 10), (63, 300), (64, 257), (65, 600), (300, 513)])
def test_sign_flip_counts_equal_numpy_rebuild(n, n_resamples):
    d = np.random.default_rng(n).normal(size=n)
    key = philox_key(n)
    c = _core.sign_flip_counts(d, exact=False, n_resamples=n_resamples, key0=key[0], key1=key[1])
    assert (c["count_less"], c["count_greater"]) == ref_compare_sign_flip_mc_counts(
        d, n_resamples, key
    )
    assert c["n_patterns"] == n_resamples


def _bootstrap_means_on(avx512, d, b, key):
    with kernel_path(avx512):
        return _core.bootstrap_means(d, b, *key)


def test_bootstrap_means_identical_on_both_kernel_paths():
    # The AVX-512 kernels (bulk words, cut in registers) and the portable one-draw-at-a-
    # time loop make the same draws and the same additions: bit-identical means, checked
    # against the NumPy reference too. n = 70,001 takes two 32-bit draws a word; at
    # n = 43,691 2.1% of the 21-bit chunks are rejected; one sampler serves a block of
    # replicates, so most replicates start in the middle of a word and of a block.
    rng = np.random.default_rng(3)
    key = philox_key(13)
    cases = ((10_000, 300), (70_001, 20), (43_691, 20), (193, 300), (1, 9), (2, 300), (3, 257))
    for n, b in cases:
        d = rng.normal(size=n)
        fast, portable = [_bootstrap_means_on(avx512, d, b, key) for avx512 in KERNEL_PATHS]
        np.testing.assert_array_equal(fast, portable)
        np.testing.assert_allclose(fast, ref_bootstrap_means(d, b, key), rtol=1e-12, atol=1e-15)


def test_results_identical_for_any_thread_count():
    rng = np.random.default_rng(1)
    d = rng.normal(size=1500)
    key = philox_key(12)
    one = _core.bootstrap_means(d, 3000, *key, n_threads=1)
    np.testing.assert_array_equal(one, _core.bootstrap_means(d, 3000, *key, n_threads=2))
    np.testing.assert_array_equal(one, _core.bootstrap_means(d, 3000, *key, n_threads=3))
    # Workers claim blocks as they get free: 7 of them on this machine's cores claim in
    # an order that varies from call to call.
    for _ in range(3):
        np.testing.assert_array_equal(one, _core.bootstrap_means(d, 3000, *key, n_threads=7))
    sums, sizes = rng.normal(size=500), rng.integers(1, 4, 500)
    np.testing.assert_array_equal(
        _core.cluster_bootstrap_means(sums, sizes, 3000, *key, n_threads=1),
        _core.cluster_bootstrap_means(sums, sizes, 3000, *key, n_threads=2),
    )
    kw = dict(exact=False, n_resamples=5000, key0=key[0], key1=key[1])
    assert _core.sign_flip_counts(d, **kw, n_threads=1) == _core.sign_flip_counts(
        d, **kw, n_threads=2
    )
    a, b = rng.normal(size=18), rng.normal(size=18)
    assert _core.sign_flip_exact_pairs(a, b, n_threads=1) == _core.sign_flip_exact_pairs(
        a, b, n_threads=2
    )


def test_reproducible_from_seed():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=80), rng.normal(size=80)
    assert tf.paired_bootstrap(a, b, seed=3) == tf.paired_bootstrap(a, b, seed=3)
    assert tf.paired_bootstrap(a, b, seed=3) != tf.paired_bootstrap(a, b, seed=4)
    assert tf.paired_permutation(a, b, seed=3) == tf.paired_permutation(a, b, seed=3)
    gen_result = tf.paired_bootstrap(a, b, seed=np.random.default_rng(5))
    assert gen_result == tf.paired_bootstrap(a, b, seed=np.random.default_rng(5))
    assert math.isfinite(tf.paired_bootstrap(a, b, seed=None).low)  # fresh entropy, as NumPy


def test_cluster_bootstrap_widens_for_correlated_clusters():
    rng = np.random.default_rng(9)
    codes = np.repeat(np.arange(20), 10)
    d = rng.normal(size=20)[codes] + 0.1 * rng.normal(size=200)
    rows = tf.paired_bootstrap(d, np.zeros(200))
    clustered = tf.paired_bootstrap(d, np.zeros(200), clusters=codes)
    # the cluster means carry all the variation: about sqrt(10) times wider
    ratio = (clustered.high - clustered.low) / (rows.high - rows.low)
    assert 2.0 < ratio < 4.5


# --- the discrete-data paths: binomial sampler, multinomial bootstrap, grouped flips ------


@pytest.mark.parametrize(
    "n, p",
    [
        (7, 0.3),
        (60, 0.1),
        (40, 0.5),
        (3000, 0.5),
        (10_000, 0.03),
        (5000, 0.93),
        (100_000, 0.0004),
        (1, 0.5),
    ],
)
def test_binomial_sampler_fits_the_binomial_law(n, p):
    draws = _core.testing.binomial_sample(n, p, 40_000, *philox_key(n))
    lo, hi = int(stats.binom.ppf(1e-3, n, p)), int(stats.binom.isf(1e-3, n, p))
    support = np.arange(lo, hi + 1)
    observed = np.concatenate(
        [[np.sum(draws < lo)], [np.sum(draws == k) for k in support], [np.sum(draws > hi)]]
    )
    probs = np.concatenate(
        [
            [stats.binom.cdf(lo - 1, n, p)],
            stats.binom.pmf(support, n, p),
            [stats.binom.sf(hi, n, p)],
        ]
    )
    expected = probs * draws.size
    keep = expected > 5
    chi2 = np.sum((observed[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi2, max(1, keep.sum() - 1)) > 1e-4
    assert draws.min() >= 0 and draws.max() <= n
    edge = (
        _core.testing.binomial_sample(n, 0.0, 5, 1, 2).tolist(),
        _core.testing.binomial_sample(n, 1.0, 5, 1, 2),
    )
    assert edge[0] == [0] * 5 and edge[1].tolist() == [n] * 5


def test_multinomial_bootstrap_has_the_index_bootstraps_distribution():
    rng = np.random.default_rng(4)
    d = rng.choice([-1.0, 0.0, 0.0, 1.0, 0.5], size=2000)
    values, counts = np.unique(d, return_counts=True)
    fast = _core.bootstrap_means_discrete(values, counts, 20_000, *philox_key(1))
    slow = _core.bootstrap_means(d, 20_000, *philox_key(2))
    assert stats.ks_2samp(fast, slow).pvalue > 1e-4
    se = d.std() / math.sqrt(d.size)
    assert abs(fast.mean() - d.mean()) < 5 * se / math.sqrt(fast.size)
    assert fast.var() == pytest.approx(se**2, rel=0.05)  # sd of a variance estimate ~1%


def test_monte_carlo_sign_flips_match_the_exact_null_of_binary_data():
    # binary pairs: with m discordant pairs the null statistic is 2 Binomial(m, 1/2) - m
    a = np.r_[np.ones(30), np.zeros(12), np.ones(58)]
    b = np.r_[np.zeros(30), np.ones(12), np.ones(58)]
    m, net = 42, 18
    budget = 50_000
    r = tf.paired_permutation(a, b, n_resamples=budget, seed=1)
    tail = stats.binom.sf((m + net) / 2 - 1, m, 0.5)  # P(2X - m >= 18)
    exact = min(1.0, 2 * tail)
    assert abs(r.p_value - exact) < 4.5 * 2 * math.sqrt(tail * (1 - tail) / budget) + 2 / budget


def test_discrete_paths_identical_for_any_thread_count():
    values, counts = np.array([-1.0, 0.0, 2.5]), np.array([300, 900, 250])
    key = philox_key(8)
    np.testing.assert_array_equal(
        _core.bootstrap_means_discrete(values, counts, 5000, *key, n_threads=1),
        _core.bootstrap_means_discrete(values, counts, 5000, *key, n_threads=2),
    )


# --- memory ---------------------------------------------------------------------------


def test_bootstrap_memory_is_streaming():
    rng = np.random.default_rng(0)
    a, b = rng.random(10_000), rng.random(10_000)
    tracemalloc.start()
    try:
        tf.paired_bootstrap(a, b, n_bootstrap=10_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 50 MB is the requirement; an (n_bootstrap x n) index matrix alone would be 800 MB.
    assert peak < 50 * 2**20, peak
    assert peak < 2 * 2**20, peak  # O(n + n_bootstrap): a few arrays of 80 kB


# --- statistical calibration under the null ----------------------------------------------


def test_monte_carlo_permutation_test_is_calibrated_under_the_null():
    rng = np.random.default_rng(2026)
    n_datasets, alpha = 1500, 0.05
    rejections = 0
    for i in range(n_datasets):
        # exchangeable within pairs: a and b drawn from the same skewed law
        a, b = rng.exponential(size=24), rng.exponential(size=24)
        p = tf.paired_permutation(a, b, n_resamples=999, seed=i).p_value
        rejections += p < alpha
    rate = rejections / n_datasets
    se = math.sqrt(alpha * (1 - alpha) / n_datasets)
    # the +1 correction makes the test slightly conservative, never anti-conservative
    assert abs(rate - alpha) < 3.5 * se, rate


def test_exact_permutation_test_has_its_exact_size():
    rng = np.random.default_rng(77)
    n_datasets = 1500
    rejections = sum(
        tf.paired_permutation(rng.normal(size=8), rng.normal(size=8)).p_value < 0.05
        for _ in range(n_datasets)
    )
    size = 12 / 256  # p < 0.05 <=> at most 6 of the 256 patterns in the smaller tail
    se = math.sqrt(size * (1 - size) / n_datasets)
    assert abs(rejections / n_datasets - size) < 3.5 * se


# --- errors ---------------------------------------------------------------------------

BAD_COMMON = [
    dict(a=[], b=[]),
    dict(a=[[1.0, 2.0]], b=[[1.0, 2.0]]),
    dict(a=[1.0, np.nan, 2.0], b=[1.0, 2.0, 3.0]),
    dict(a=[1.0, 2.0, 3.0], b=[1.0, np.inf, 3.0]),
    dict(a=[1.0, 2.0, 3.0], b=[1.0, 2.0]),
    dict(a=["x", "y"], b=[1.0, 2.0]),
    dict(a=[1.0, 2.0], b=[0.0, 1.0], alpha=0.0),
    dict(a=[1.0, 2.0], b=[0.0, 1.0], alpha=1.0),
    dict(a=[1.0, 2.0], b=[0.0, 1.0], alpha=-0.5),
    dict(a=[1.0, 2.0], b=[0.0, 1.0], alpha=np.nan),
    dict(a=[1.0, 2.0], b=[0.0, 1.0], seed=-1),
]


BAD_BOOTSTRAP = BAD_COMMON + [
    dict(a=[1.0, 2.0, 3.0], b=[0.0, 1.0, 0.0], clusters=[1, 1]),
    dict(a=[1.0, 2.0, 3.0], b=[0.0, 1.0, 0.0], clusters=[[1, 1, 2]]),
    dict(a=[1.0, 2.0, 3.0], b=[0.0, 1.0, 0.0], clusters=["a", "a", "a"]),
]


BAD_PERMUTATION = BAD_COMMON + [
    dict(a=[1.0], b=[0.0]),
    dict(a=[1.0, 2.0, 3.0], b=[0.0, 1.0, 0.0], n_resamples=0),
    dict(a=[1.0, 2.0, 3.0], b=[0.0, 1.0, 0.0], n_resamples=-3),
    dict(a=[1.0, 2.0, 3.0], b=[0.0, 1.0, 0.0], n_resamples=2.5),
]


BAD_P = [[], [[0.1, 0.2]], [0.1, np.nan], [-0.01, 0.5], [0.5, 1.01], ["a"], [np.inf]]


@pytest.mark.parametrize("kwargs", BAD_BOOTSTRAP)
def test_bootstrap_raises_value_error_where_truescore_does(kwargs):
    with pytest.raises(ValueError):
        ts.paired_bootstrap(**kwargs)
    with pytest.raises(ValueError):
        tf.paired_bootstrap(**kwargs)


@pytest.mark.parametrize("kwargs", BAD_PERMUTATION)
def test_permutation_raises_value_error_where_truescore_does(kwargs):
    with pytest.raises(ValueError):
        ts.paired_permutation(**kwargs)
    with pytest.raises(ValueError):
        tf.paired_permutation(**kwargs)


@pytest.mark.parametrize("p", BAD_P)
@pytest.mark.parametrize("fn", ["holm", "benjamini_hochberg"])
def test_adjustments_raise_value_error_where_truescore_does(fn, p):
    with pytest.raises(ValueError):
        getattr(ts, fn)(p)
    with pytest.raises(ValueError):
        getattr(tf, fn)(p)


def test_infeasible_exact_enumeration_is_refused():
    a, b = np.arange(31.0), np.zeros(31)
    with pytest.raises(ValueError, match="infeasible"):
        tf.paired_permutation(a, b, n_resamples=np.inf)
    with pytest.raises(ValueError, match="infeasible"):
        tf.paired_permutation(a, b, n_resamples=2**31)


@pytest.mark.parametrize(
    ("n_bootstrap", "error"),
    [(0, IndexError), (-1, ValueError), (2.5, TypeError), (True, TypeError), (None, TypeError)],
)
def test_bad_n_bootstrap_raises_what_truescore_raises(n_bootstrap, error):
    # truescore's count reaches NumPy unchecked: 0 fails in np.percentile (IndexError), a
    # bool or float in rng.integers (TypeError). A drop-in mirrors that, type and message.
    args = ([1.0, 2.0], [0.0, 1.0])
    with pytest.raises(error) as theirs:
        ts.paired_bootstrap(*args, n_bootstrap=n_bootstrap)
    with pytest.raises(error, match=re.escape(str(theirs.value))):
        tf.paired_bootstrap(*args, n_bootstrap=n_bootstrap)


def test_huge_scores_stay_finite_or_raise():
    r = tf.paired_bootstrap([1e308, 1.5e308, -1e308], [1e308, -1e307, 0.0])
    assert all(math.isfinite(v) for v in (r.difference, r.low, r.high, r.p_value))
    assert r.difference == pytest.approx((1.6e308 - 1e308) / 3)
    p = tf.paired_permutation([1.7e308, 1e308, -1e308], [0.0, 0.0, 1.0])
    assert p.p_value == ref_sign_flip_exact_p(np.array([1.7, 1, -1]), np.array([0, 0, 1e-308]))
    with pytest.raises(ValueError, match="float64"):
        tf.paired_bootstrap([1.7e308] * 3, [-1.7e308] * 3)


finite_or_not = st.floats(allow_nan=True, allow_infinity=True, width=64)


modest = st.floats(-1e6, 1e6)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.tuples(st.one_of(modest, finite_or_not), modest), min_size=0, max_size=40),
    extra=st.integers(0, 1),
    alpha=st.one_of(st.floats(0.001, 0.999), st.sampled_from([0.0, 1.0, -1.0, 2.0])),
    n_resamples=st.integers(-2, 3000),
    seed=st.integers(0, 2**40),
    clustered=st.booleans(),
)
def test_property_finite_result_or_value_error(values, extra, alpha, n_resamples, seed, clustered):
    a = [v[0] for v in values]
    b = [v[1] for v in values] + [0.0] * extra
    clusters = [i % 3 for i in range(len(a))] if clustered else None
    for call in (
        lambda: tf.paired_bootstrap(
            a, b, alpha=alpha, seed=seed, clusters=clusters, n_bootstrap=max(n_resamples, 1)
        ),
        lambda: tf.paired_permutation(a, b, alpha=alpha, n_resamples=n_resamples, seed=seed),
    ):
        try:
            r = call()
        except ValueError:
            continue
        values_out = (r.difference, r.low, r.high, r.p_value)
        assert all(math.isfinite(v) for v in values_out), r
        assert 0.0 <= r.p_value <= 1.0 and r.low <= r.high


# --- Monte Carlo sign flips: the enumeration's statistic and tie rule ----------------------


@pytest.mark.slow
def test_monte_carlo_permutation_p_estimates_the_exact_p():
    # Many swap patterns tie with the observed statistic up to rounding; the enumeration
    # (SciPy's rule, 100 eps relative) counts them by their rounded values. The Monte Carlo
    # mode must count them the same way, or it estimates another number (it gave 1.0).
    a, b = np.tile([0.1, 0.2, -0.3], 6), np.zeros(18)
    exact = tf.paired_permutation(a, b, n_resamples=np.inf).p_value
    assert exact == ts.paired_permutation(a, b, n_resamples=2**18).p_value
    draws = 4000
    ps = np.array(
        [tf.paired_permutation(a, b, n_resamples=draws, seed=s).p_value for s in range(40)]
    )
    # p = 2 * tail; each tail estimate has sd sqrt(q (1 - q) / draws), q = exact / 2
    se = 2 * math.sqrt((exact / 2) * (1 - exact / 2) / draws) / math.sqrt(len(ps))
    assert abs(ps.mean() - exact) < 4 * se, (ps.mean(), exact, se)


@pytest.mark.parametrize("n", [1, 5, 64, 70])
def test_monte_carlo_sign_flip_pairs_equal_numpy_philox_reference(n):
    rng = np.random.default_rng(n)
    a = rng.integers(0, 3, n) / 4.0
    b = rng.integers(0, 3, n) / 4.0
    draws, key = 300, (12345, 678910)  # two blocks of 256 patterns
    got = _core.sign_flip_monte_carlo_pairs(a, b, n_resamples=draws, key0=key[0], key1=key[1])
    words = (n + 63) // 64
    observed = np.mean(a) - np.mean(b)
    tol = abs(100 * np.finfo(float).eps * observed)
    greater = less = 0
    for block in range(2):
        gen = np.random.Philox(
            key=np.array(key, dtype=np.uint64), counter=np.array([0, 0, block, 0], np.uint64)
        )
        raw = gen.random_raw(256 * words).reshape(256, words)
        for row in raw[: draws - 256 * block]:
            bits = np.unpackbits(row.view(np.uint8), bitorder="little")[:n].astype(bool)
            t = np.mean(np.where(bits, b, a)) - np.mean(np.where(bits, a, b))
            greater += t >= observed - tol
            less += t <= observed + tol
    assert (got["n_patterns"], got["count_greater"], got["count_less"]) == (draws, greater, less)


def test_monte_carlo_sign_flip_pairs_identical_for_any_thread_count():
    # 80 blocks of 256 patterns of 1,000 pairs: enough work that both threads start.
    rng = np.random.default_rng(11)
    a, b = rng.integers(0, 5, 1000) / 4.0, rng.integers(0, 5, 1000) / 4.0
    args = {"n_resamples": 20_000, "key0": 3, "key1": 4}
    one = _core.sign_flip_monte_carlo_pairs(a, b, n_threads=1, **args)
    assert one == _core.sign_flip_monte_carlo_pairs(a, b, n_threads=2, **args)
    assert one["n_patterns"] == 20_000 and 0 < one["count_greater"] < 20_000


def _screen_cases():
    """Data where the screened statistic meets near-ties: grids whose signed sums tie the
    observed one exactly (rubric 0.05 steps, quarters, integers), all-zero and constant
    differences, magnitudes far apart, and plain continuous scores."""
    rng = np.random.default_rng(24)
    yield "rubric", *(np.round(rng.random((2, 3000)) * 20) / 20)
    yield "quarters", rng.integers(0, 5, 129) / 4.0, rng.integers(0, 5, 129) / 4.0
    yield "integers", rng.integers(-3, 4, 64).astype(float), rng.integers(-3, 4, 64).astype(float)
    yield "equal", np.full(50, 0.3), np.full(50, 0.3)
    yield "constant", np.full(33, 0.7), np.full(33, 0.1)
    yield "two pairs", np.array([0.1, 0.2]), np.array([0.2, 0.1])
    yield "spread", rng.normal(size=200) * 10.0 ** rng.integers(-8, 8, 200), rng.normal(size=200)
    yield "continuous", rng.normal(0.05, 1, 1000), rng.normal(0, 1, 1000)
    yield "one tenth", np.tile([0.1, 0.2, -0.3], 40), np.zeros(120)
    # subnormal scores: below DBL_MIN a rounding errs by an absolute amount, not a relative
    # one (the relative bound alone gave 520/3587/983 where every pattern gives 544/3651/1047)
    tiny = 5e-324
    yield (
        "subnormal",
        np.array([31, 27, 27, 46, 13, 40, 33]) * tiny,
        np.array([0, 19, 42, 27, 1, 38, 36]) * tiny,
    )
    yield "subnormal grid", rng.integers(0, 50, 40) * 1e-318, rng.integers(0, 50, 40) * 1e-318


@pytest.mark.parametrize("avx512", KERNEL_PATHS, ids=["avx512-if-available", "portable"])
@pytest.mark.parametrize("case", list(_screen_cases()), ids=lambda c: c[0])
def test_screened_monte_carlo_counts_equal_every_pattern_evaluated(case, avx512):
    # The screen classifies a pattern from a signed sum with a proven error bound and
    # evaluates SciPy's float statistic only near ties: the counts must be those of
    # evaluating every pattern, bit for bit (issue 24).
    _, a, b = case
    args = {"n_resamples": 3000, "key0": 7, "key1": 8}
    with kernel_path(avx512):
        fast = _core.sign_flip_monte_carlo_pairs(a, b, **args)
    slow = _core.sign_flip_monte_carlo_pairs(a, b, screen=False, **args)
    assert fast == slow


A, B = [0.1, 0.5, 0.3, 0.9], [0.2, 0.1, 0.3, 0.4]


def _numbers():
    yield from [1.0, 2.0]


def truescore_function(name):
    return getattr(ts_compare, name, None) or getattr(ts_contamination, name)


def outcome(function, *args, **kwargs):
    """("ok", result) or (exception type, message); the type as the builtin class it is
    (an ArgumentError is the ValueError truescore raises, with its message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", function(*args, **kwargs))
    except Exception as error:  # noqa: BLE001 - comparing whatever is raised
        return (next(c for c in type(error).__mro__ if c.__module__ == "builtins"), str(error))


BAD_ARRAYS = {
    "set": {1.0, 2.0},
    "dict": {1: 2},
    "generator": _numbers,
    "complex": [1 + 2j, 3],
    "string": "abc",
    "strings": ["a", "b"],
    "2-D": [[1, 2], [3, 4]],
    "empty": [],
    "nan": [np.nan, 1.0],
    "inf": [np.inf, 1.0],
    "None": None,
    "scalar": 3.0,
    "ragged": [[1], [1, 2]],
    "numeric strings": ["1", "2"],
    "object": np.array([1, None], dtype=object),
    "datetime": np.array(["2020-01-01"], dtype="datetime64[D]"),
}


def cases():
    for label, value in BAD_ARRAYS.items():

        def fresh(v=value):
            return v() if callable(v) else v

        for name in ("paired_bootstrap", "paired_permutation"):
            yield name, lambda f=fresh: ((f(), B), {}), f"a={label}"
            yield name, lambda f=fresh: ((A, f()), {}), f"b={label}"
        for name in ("holm", "benjamini_hochberg", "combine_shards"):
            yield name, lambda f=fresh: ((f(),), {}), label
        yield "exchangeability_test", lambda f=fresh: ((-4.0, f()), {}), f"permuted={label}"
        yield "exchangeability_test", lambda f=fresh: ((f(), [1.0, 2.0]), {}), f"canon={label}"
    for count in (1.5, True, False, None, "10", 0, -1, np.nan, np.inf, 2**63, 10.0):
        yield "paired_bootstrap", lambda c=count: ((A, B), {"n_bootstrap": c}), f"n_boot={count!r}"
        yield (
            "paired_permutation",
            lambda c=count: ((A, B), {"n_resamples": c}),
            f"n_res={count!r}",
        )
    for seed in (-1, 1.5, "a", (1, 2.5), [-1]):
        for name in ("paired_bootstrap", "paired_permutation"):
            yield name, lambda s=seed: ((A, B), {"seed": s}), f"seed={seed!r}"
    for alpha in (0, 1, -0.1, np.nan, "0.05", None):
        yield "paired_bootstrap", lambda a=alpha: ((A, B), {"alpha": a}), f"alpha={alpha!r}"
        yield "combine_shards", lambda a=alpha: (([0.5],), {"alpha": a}), f"alpha={alpha!r}"
        yield (
            "exchangeability_test",
            lambda a=alpha: ((-4.0, [1.0]), {"alpha": a}),
            f"alpha={alpha!r}",
        )
    yield "combine_shards", lambda: (([0.0, 0.5],), {}), "p = 0"
    yield "combine_shards", lambda: (([1.5],), {}), "p > 1"
    yield "paired_permutation", lambda: (([1.0], [0.0]), {}), "n = 1"
    yield "paired_bootstrap", lambda: ((A, B[:3]), {}), "lengths"
    yield "paired_bootstrap", lambda: ((A, B), {"clusters": [1, 1, 2]}), "cluster length"
    yield "paired_bootstrap", lambda: ((A, B), {"clusters": [[1, 1], [2, 2]]}), "clusters 2-D"
    yield "paired_bootstrap", lambda: ((A, B), {"clusters": [1, 1, 1, 1]}), "one cluster"
    yield "exchangeability_test", lambda: (([-4.0], [1.0, 2.0]), {}), "canonical list"
    yield "exchangeability_test", lambda: ((np.nan, [1.0, 2.0]), {}), "canonical nan"


CASES = list(cases())


@pytest.mark.parametrize(("name", "make", "label"), CASES, ids=[c[2] + "-" + c[0] for c in CASES])
def test_bad_input_raises_what_truescore_raises(name, make, label):
    args, kwargs = make()
    theirs = outcome(truescore_function(name), *args, **kwargs)
    args, kwargs = make()
    ours = outcome(getattr(tf, name), *args, **kwargs)
    assert ours[0] == theirs[0]
    if theirs[0] != "ok":
        assert ours[1] == theirs[1]


@pytest.mark.parametrize(
    "seed",
    [
        None,
        True,
        False,
        3,
        [1, 2],
        np.array([3, 4]),
        np.random.SeedSequence(1),
        np.random.PCG64(0),
        np.random.default_rng(1),
        np.random.RandomState(0),
    ],
    ids=lambda s: type(s).__name__,
)
@pytest.mark.parametrize("name", ["paired_bootstrap", "paired_permutation"])
def test_every_truescore_seed_type_is_accepted(name, seed):
    result = getattr(tf, name)(A, B, seed=seed)
    assert 0.0 <= result.p_value <= 1.0 and result.low <= result.high


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.01, 0.3, 0.5, 1.0]), min_size=1, max_size=9))
def test_holm_and_benjamini_hochberg_keep_truescores_sign_of_zero(p):
    for name in ("holm", "benjamini_hochberg"):
        theirs = getattr(ts_compare, name)(p)
        ours = getattr(tf, name)(p)
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))

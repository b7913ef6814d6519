"""Resampling: pattern permutation test, finite-population bootstraps, difference in
differences, seed-paired contrasts.

Where a Philox stream is shared, the compiled replicates are compared bit for bit with
the slow NumPy references in tests/reference.py; statistical claims are checked with
fixed seeds against a stated number of Monte Carlo standard errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernels import every_kernel_path, kernel_path
from reference import (
    ref_bbh_replicates,
    ref_bca_interval,
    ref_did_point,
    ref_did_replicates,
    ref_pattern_null,
    ref_pattern_statistic,
    ref_rao_wu_replicates,
    ref_sign_flip_exact_two_sided,
    ref_sign_flip_mc_count_two_sided,
)
from scipy import stats
from truescore_fast import _core
from truescore_fast._bootstrap_intervals import bca_interval
from truescore_fast._random import philox_key

# ---------------------------------------------------------------------------------------
# Pattern permutation test
# ---------------------------------------------------------------------------------------


def _sparse_gaps(rng, models, parents, rate=0.1):
    values = rng.choice([-1.0, -0.5, 0.5, 1.0], size=(models, parents))
    return np.where(rng.random((models, parents)) < rate, values, 0.0)


def test_pattern_null_equals_numpy_reference_draw_for_draw():
    rng = np.random.default_rng(11)
    gaps = _sparse_gaps(rng, 4, 25, rate=0.3)
    gaps[1] = np.where(rng.random(25) < 0.8, 0.5, -0.5)  # a mostly-"harder" row: complement path
    key = philox_key(7)
    result = tf.pattern_permutation_test(gaps, pattern="harder", min_models=2, draws=300, seed=7)
    null = ref_pattern_null(gaps > 0, 2, 300, key)
    assert np.array_equal(result.null_histogram, np.bincount(null, minlength=26))
    observed = ref_pattern_statistic(gaps > 0, 2)
    assert result.observed == observed
    assert result.p_value == (1 + np.sum(null >= observed)) / 301
    assert result.null_mean == pytest.approx(null.mean(), rel=1e-12)
    assert result.null_sd == pytest.approx(null.std(ddof=1), rel=1e-12)
    assert np.array_equal(result.per_model, (gaps > 0).sum(axis=1))
    assert np.array_equal(result.parents, np.flatnonzero((gaps > 0).sum(axis=0) >= 2))


def test_pattern_variants_agree():
    rng = np.random.default_rng(3)
    gaps = _sparse_gaps(rng, 5, 40, rate=0.25)
    common = {"min_models": 2, "draws": 200, "seed": 5}
    easier = tf.pattern_permutation_test(gaps, pattern="easier", **common)
    by_callable = tf.pattern_permutation_test(gaps, pattern=lambda g: g < 0, **common)
    by_mask = tf.pattern_permutation_test(gaps, pattern=gaps < 0, **common)
    for other in (by_callable, by_mask):
        assert other.observed == easier.observed
        assert np.array_equal(other.null_histogram, easier.null_histogram)
    nonzero = tf.pattern_permutation_test(gaps, pattern="nonzero", **common)
    assert nonzero.observed == int((((gaps != 0).sum(axis=0)) >= 2).sum())


def test_pattern_planted_cluster_is_detected():
    rng = np.random.default_rng(4)
    gaps = _sparse_gaps(rng, 5, 200, rate=0.02)
    gaps[:, :6] = 0.5  # six parents where every model shows the pattern
    result = tf.pattern_permutation_test(gaps, min_models=4, draws=2000, seed=1)
    assert result.observed >= 6
    assert result.p_value < 0.01


def test_pattern_test_is_calibrated_under_the_null():
    # 600 null data sets (rows exchangeable over parents), 399 draws each. A wide null
    # (N = 600, 30% pattern rate) keeps the statistic's atoms small, so the rejection rate
    # should match alpha within Monte Carlo error: SE = sqrt(alpha (1 - alpha) / 600),
    # 0.0089 at alpha = 0.05 and 0.0122 at alpha = 0.10.
    rng = np.random.default_rng(2024)
    replications, alphas = 600, np.array([0.05, 0.10])
    rejections = np.zeros(2)
    row = np.r_[np.ones(180, bool), np.zeros(420, bool)]
    for r in range(replications):
        mask = np.array([rng.permutation(row) for _ in range(5)])
        result = tf.pattern_permutation_test(
            np.zeros((5, 600)), pattern=mask, min_models=2, draws=399, seed=r
        )
        rejections += result.p_value <= alphas
    rate = rejections / replications
    se = np.sqrt(alphas * (1 - alphas) / replications)
    assert np.all(np.abs(rate - alphas) <= 3 * se), (rate, se)


def test_pattern_thread_count_does_not_change_the_result():
    gaps = _sparse_gaps(np.random.default_rng(8), 5, 200)
    one = tf.pattern_permutation_test(gaps, draws=3000, seed=9, n_threads=1)
    two = tf.pattern_permutation_test(gaps, draws=3000, seed=9, n_threads=2)
    assert np.array_equal(one.null_histogram, two.null_histogram)
    assert one.p_value == two.p_value


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"pattern": "bogus"}, "pattern"),
        ({"pattern": np.zeros((2, 3), bool)}, "pattern"),
        ({"pattern": lambda g: g}, "pattern"),
        ({"min_models": 0}, "min_models"),
        ({"min_models": 6}, "min_models"),
        ({"draws": 0}, "draws"),
        ({"seed": -1}, "seed"),
        ({"seed": None}, "seed"),
        ({"n_threads": 0}, "n_threads"),
    ],
)
def test_pattern_errors_name_the_argument(kwargs, name):
    gaps = _sparse_gaps(np.random.default_rng(1), 5, 20)
    args = {"seed": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        tf.pattern_permutation_test(gaps, **args)


def test_pattern_rejects_bad_gaps():
    with pytest.raises(ValueError, match="gaps"):
        tf.pattern_permutation_test(np.zeros(10), seed=1)
    with pytest.raises(ValueError, match="gaps"):
        tf.pattern_permutation_test(np.full((3, 10), 2.0), seed=1)
    with pytest.raises(ValueError, match="gaps"):
        tf.pattern_permutation_test([[0.0, np.nan], [0.0, 0.0]], seed=1)


# ---------------------------------------------------------------------------------------
# Finite-population bootstraps
# ---------------------------------------------------------------------------------------


def _stratified_sample(rng):
    sizes = {"a": 7, "b": 12, "c": 5}
    labels = np.concatenate([[k] * v for k, v in sizes.items()])
    rng.shuffle(labels)
    values = rng.random(labels.size).round(3)
    return values, labels


def test_rao_wu_equals_numpy_reference_draw_for_draw():
    rng = np.random.default_rng(5)
    values, labels = _stratified_sample(rng)
    pops = {"a": 30, "b": 100, "c": 9}
    result = tf.finite_population_bootstrap(
        values, population_size=pops, strata=labels, replicates=150, seed=12
    )
    groups = [values[labels == k] for k in ("a", "b", "c")]
    big = np.array([30, 100, 9])
    n = np.array([g.size for g in groups])
    lam = np.sqrt((n - 1) * (1 - n / big) / (n - 1))
    expected = ref_rao_wu_replicates(groups, n - 1, lam, big / big.sum(), 150, philox_key(12))
    assert np.array_equal(result.replicates, expected)
    assert result.resample_size == (6, 11, 4)
    assert result.estimate == pytest.approx(
        sum(g.mean() * w for g, w in zip(groups, big / 139, strict=True))
    )
    # A given resample size m.
    result = tf.finite_population_bootstrap(
        values, population_size=pops, strata=labels, replicates=60, resample_size=3, seed=13
    )
    lam = np.sqrt(3 * (1 - n / big) / (n - 1))
    expected = ref_rao_wu_replicates(groups, [3, 3, 3], lam, big / big.sum(), 60, philox_key(13))
    assert np.array_equal(result.replicates, expected)


@every_kernel_path
def test_rao_wu_large_strata_equal_the_reference_on_both_kernel_paths(avx512):
    # Strata big enough for the bulk draws (and their AVX-512 kernels): 3,001 units (three
    # 21-bit draws a word) and 70,001 (two 32-bit draws a word, n > 2^16); m = n - 1 and
    # an m past the 1,024-index batches that is not a multiple of 4.
    rng = np.random.default_rng(14)
    groups = [rng.normal(size=3001), rng.exponential(size=70_001)]
    values = np.concatenate(groups)
    labels = np.repeat([0, 1], [3001, 70_001])
    big = np.array([9000, 700_000])
    n = np.array([g.size for g in groups])
    with kernel_path(avx512):
        for m in (None, 2051):
            result = tf.finite_population_bootstrap(
                values,
                population_size=list(big),
                strata=labels,
                replicates=3,
                resample_size=m,
                seed=15,
            )
            sizes = n - 1 if m is None else np.array([m, m])
            lam = np.sqrt(sizes * (1 - n / big) / (n - 1))
            expected = ref_rao_wu_replicates(
                groups, sizes, lam, big / big.sum(), 3, philox_key(15)
            )
            assert np.array_equal(result.replicates, expected)


@every_kernel_path
def test_rao_wu_around_the_fused_kernels_batches_equals_the_reference(avx512):
    # The AVX-512 gathered_sum cuts 16 Philox blocks at a time (192 chunks of 21 bits,
    # 128 of 32) and never more chunks than draws still wanted; the draws before the
    # first and after the last batch go one at a time. Resample sizes on either side of
    # one and two batches, and n = 43,691, where 2^21 mod n = 43,675 makes 2.1% of the
    # 21-bit chunks rejections (a word with a rejected chunk takes the compressing path).
    rng = np.random.default_rng(16)
    with kernel_path(avx512):
        for n, sizes in (
            (43_691, (191, 192, 193, 195, 196, 383, 385, 4099)),
            (70_001, (127, 128, 129, 131, 255, 257, 1031)),
        ):
            values = rng.normal(size=n)
            for m in sizes:
                result = tf.finite_population_bootstrap(
                    values, population_size=3 * n, replicates=2, resample_size=m, seed=m
                )
                lam = np.sqrt(np.array([m]) * (1 - 1 / 3) / (n - 1))
                expected = ref_rao_wu_replicates([values], [m], lam, [1.0], 2, philox_key(m))
                assert np.array_equal(result.replicates, expected), (n, m)


def test_bbh_equals_numpy_reference_draw_for_draw():
    rng = np.random.default_rng(6)
    values, labels = _stratified_sample(rng)
    # Sorted label order a, b, c; 31 = 4*7 + 3 and 12 = 2*5 + 2 complete at random.
    pops = [31, 100, 12]
    result = tf.finite_population_bootstrap(
        values, population_size=pops, strata=labels, method="bbh", replicates=120, seed=21
    )
    groups = [values[labels == k] for k in ("a", "b", "c")]
    big = np.array(pops)
    expected = ref_bbh_replicates(groups, pops, big / big.sum(), 120, philox_key(21))
    assert np.array_equal(result.replicates, expected)


def test_rao_wu_bootstrap_variance_is_the_unbiased_estimate_given_the_sample():
    # E*[v*] = (1 - f) s^2 / n exactly; 20,000 replicates estimate it with relative MC SE
    # about sqrt(2 / 20,000) = 1% (more for skewed data), so 4% is > 3 SE.
    rng = np.random.default_rng(7)
    values = rng.exponential(size=200)
    result = tf.finite_population_bootstrap(
        values, population_size=1000, replicates=20_000, seed=3
    )
    unbiased = (1 - 200 / 1000) * values.var(ddof=1) / 200
    assert result.variance_estimate == pytest.approx(unbiased, rel=1e-12)
    assert result.standard_error**2 / unbiased == pytest.approx(1.0, abs=0.04)
    assert result.replicates.mean() == pytest.approx(
        values.mean(), abs=4 * result.standard_error / math.sqrt(20_000)
    )
    # Stratified: sum_h W_h^2 (1 - f_h) s_h^2 / n_h.
    labels = np.repeat([0, 1], [80, 120])
    strat = tf.finite_population_bootstrap(
        values, population_size=[200, 1800], strata=labels, replicates=20_000, seed=4
    )
    w = np.array([0.1, 0.9])
    v = sum(
        w[h] ** 2 * (1 - n / big) * values[labels == h].var(ddof=1) / n
        for h, (n, big) in enumerate([(80, 200), (120, 1800)])
    )
    assert strat.variance_estimate == pytest.approx(v, rel=1e-12)
    assert strat.standard_error**2 / v == pytest.approx(1.0, abs=0.04)


@pytest.mark.parametrize("fraction", [0.2, 0.8])
def test_rao_wu_expected_bootstrap_variance_matches_the_design_variance(fraction):
    # E[v*] / Var(ybar) over repeated simple random samples without replacement from one
    # finite population of N = 1,000 sparse gaps: 600 samples x 400 replicates each. The MC
    # SE of the ratio is measured from the 600 per-sample values (about 0.005 at f = 0.2,
    # 0.003 at f = 0.8); the claim is |ratio - 1| < 0.03.
    rng = np.random.default_rng(100 + int(10 * fraction))
    population = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.05, 0.1, 0.6, 0.15, 0.1], size=1000)
    n = int(fraction * 1000)
    design_var = (1 - fraction) * population.var(ddof=1) / n
    ratios = np.empty(600)
    for r in range(600):
        sample = rng.choice(population, size=n, replace=False)
        result = tf.finite_population_bootstrap(
            sample, population_size=1000, replicates=400, seed=r
        )
        ratios[r] = result.standard_error**2 / design_var
    mc_se = ratios.std(ddof=1) / math.sqrt(ratios.size)
    assert mc_se < 0.01
    assert abs(ratios.mean() - 1) < 0.03, (ratios.mean(), mc_se)


def test_bbh_is_centred_and_has_its_known_variance():
    # Recentring makes E*[ybar*] = ybar exactly; with N = k n the pseudo-population
    # variance gives Var* = (1 - f) k (n - 1) s^2 / ((N - 1) n). 20,000 replicates: the mean
    # is checked within 4 MC SE, the variance within 4% (relative MC SE about 1%).
    rng = np.random.default_rng(8)
    values = rng.exponential(size=100)
    result = tf.finite_population_bootstrap(
        values, population_size=500, method="bbh", replicates=20_000, seed=5
    )
    assert abs(result.replicates.mean() - values.mean()) < 4 * result.standard_error / math.sqrt(
        20_000
    )
    known = (1 - 100 / 500) * 5 * 99 * values.var(ddof=1) / (499 * 100)
    assert result.standard_error**2 / known == pytest.approx(1.0, abs=0.04)
    # Random completion (N = 4 n + 37) and strata: still centred on the stratified mean.
    labels = np.repeat([0, 1], [40, 60])
    strat = tf.finite_population_bootstrap(
        values, population_size=[197, 263], strata=labels, method="bbh", replicates=20_000, seed=6
    )
    assert abs(strat.replicates.mean() - strat.estimate) < 4 * strat.standard_error / math.sqrt(
        20_000
    )


def test_rao_wu_weights_reproduce_the_mean_replicates():
    rng = np.random.default_rng(9)
    values, labels = _stratified_sample(rng)
    pops = {"a": 30, "b": 100, "c": 9}
    common = {"population_size": pops, "strata": labels, "replicates": 300, "seed": 14}
    plain = tf.finite_population_bootstrap(values, **common)
    weighted = tf.finite_population_bootstrap(values, statistic=lambda w: w @ values, **common)
    assert np.allclose(weighted.replicates, plain.replicates, rtol=0, atol=1e-12)
    assert weighted.estimate == pytest.approx(plain.estimate, abs=1e-12)
    assert weighted.variance_estimate is None
    # A ratio of weighted totals stays finite and centred near the sample ratio.
    other = rng.random(values.size) + 0.5
    ratio = tf.finite_population_bootstrap(
        values, statistic=lambda w: (w @ values) / (w @ other), **common
    )
    assert ratio.estimate == pytest.approx(
        sum(values[labels == k].mean() * pops[k] for k in pops)
        / sum(other[labels == k].mean() * pops[k] for k in pops)
    )


def test_rao_wu_weights_have_the_documented_base_sum_and_sign():
    # The docstring's statements about the weights handed to ``statistic``: the sample's
    # own weights are W_h / n_h (in the order of ``values``), and with the default
    # m_h = n_h - 1 every replicate's weights are non-negative and sum to sum_h W_h = 1.
    rng = np.random.default_rng(21)
    values, labels = _stratified_sample(rng)
    pops = {"a": 30, "b": 100, "c": 9}
    seen = []

    def record(w):
        seen.append(w.copy())
        return float(w @ values)

    tf.finite_population_bootstrap(
        values, population_size=pops, strata=labels, replicates=300, statistic=record, seed=3
    )
    base, reps = seen[0], np.array(seen[1:])
    total = sum(pops.values())
    for k, size in pops.items():
        inside = labels == k
        assert np.allclose(base[inside], size / total / inside.sum(), rtol=1e-15, atol=0)
    assert reps.shape == (300, values.size)
    assert np.all(reps >= 0)
    np.testing.assert_allclose(reps.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", ["lam", "weight"])
def test_rao_wu_kernels_reject_a_non_finite_design(bad):
    # Both Rao-Wu entry points validate the same design: a NaN lambda or weight is a
    # ValueError naming it, never NaN weights or replicates.
    offsets = np.array([0, 3, 6], dtype=np.int64)
    design = {
        "resample_size": np.array([2, 2], dtype=np.int64),
        "lam": np.ones(2),
        "weight": np.full(2, 0.5),
    }
    design[bad] = np.array([0.5, np.nan])
    with pytest.raises(ValueError, match=bad):
        _core.rao_wu_replicates(
            np.arange(6.0),
            offsets,
            design["resample_size"],
            design["lam"],
            design["weight"],
            4,
            1,
            2,
        )
    with pytest.raises(ValueError, match=bad):
        _core.rao_wu_weights(
            offsets, design["resample_size"], design["lam"], design["weight"], 0, 4, 1, 2
        )


def test_bootstrap_thread_count_does_not_change_the_result():
    # Workers claim replicates from a shared counter, in whatever order they get free:
    # more workers than cores (7) make that order vary from call to call.
    values = np.random.default_rng(10).random(500)
    for method in ("rao_wu", "bbh"):
        one = tf.finite_population_bootstrap(
            values, population_size=2345, method=method, replicates=999, seed=1, n_threads=1
        )
        for n_threads in (2, 3, 7, 7):
            many = tf.finite_population_bootstrap(
                values,
                population_size=2345,
                method=method,
                replicates=999,
                seed=1,
                n_threads=n_threads,
            )
            assert np.array_equal(one.replicates, many.replicates)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"values": [1.0, np.inf, 2.0]}, "values"),
        ({"values": []}, "values"),
        ({"population_size": 3}, "population_size"),
        ({"population_size": 10.5}, "population_size"),
        ({"population_size": None, "method": "bbh"}, "population_size"),
        ({"method": "jackknife"}, "method"),
        ({"replicates": 1}, "replicates"),
        ({"alpha": 1.5}, "alpha"),
        ({"resample_size": 0}, "resample_size"),
        ({"method": "bbh", "resample_size": 3}, "resample_size"),
        ({"method": "bbh", "statistic": np.mean}, "statistic"),
        ({"statistic": lambda w: np.nan}, "statistic"),
        ({"strata": [0, 1, 1, 1, 1], "population_size": [10, 20]}, "Rao-Wu"),
        ({"strata": [0, 0, 1]}, "strata"),
        ({"strata": [0, 0, 1, 1, 1], "population_size": None}, "population_size"),
        ({"strata": [0, 0, 1, 1, 1], "population_size": {0: 10}}, "population_size"),
        ({"strata": [0, 0, 1, 1, 1], "population_size": [10]}, "population_size"),
        ({"seed": None}, "seed"),
    ],
)
def test_bootstrap_errors_name_the_argument(kwargs, name):
    args = {"values": [0.1, 0.2, 0.3, 0.5, 0.8], "population_size": 50, "seed": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        tf.finite_population_bootstrap(**args)


# ---------------------------------------------------------------------------------------
# Difference in differences
# ---------------------------------------------------------------------------------------


def _cells(rng, n, means, fresh_forms=2):
    """(n, 4) data with exactly the given column means: public columns binary, fresh
    columns averaged over `fresh_forms` binary forms (multiples of 1/fresh_forms)."""
    cols = []
    for j, mean in enumerate(means):
        step = 1 if j < 2 else fresh_forms
        units = round(mean * n * step)
        col = np.zeros(n * step)
        col[:units] = 1.0
        col = rng.permutation(col).reshape(n, step).mean(axis=1)
        cols.append(col)
    return np.column_stack(cols)


def test_did_reproduces_the_arithmetic_of_table_15():
    # Table 14's cell means, 100 exposed and 100 unexposed parents.
    rng = np.random.default_rng(15)
    exposed = _cells(rng, 100, (0.460, 0.610, 0.485, 0.570))
    unexposed = _cells(rng, 100, (0.490, 0.400, 0.515, 0.425))
    result = tf.did_estimate(exposed, unexposed, replicates=500, seed=1)
    row = 0
    assert result.exposed_change[row] == pytest.approx([0.150, 0.085, 0.065], abs=1e-12)
    assert result.unexposed_change[row] == pytest.approx([-0.090, -0.090, 0.000], abs=1e-12)
    assert result.estimate[row] == pytest.approx([0.240, 0.175, 0.065], abs=1e-12)
    assert result.estimate[row] == pytest.approx(ref_did_point(exposed, unexposed), abs=1e-15)
    # With one model, pooled is that model.
    assert np.array_equal(result.estimate[1], result.estimate[0])


def test_did_pools_models_as_in_table_16():
    # Four models whose DiDs are Table 16's (unexposed parents unchanged): the pooled row
    # is the mean over models, +0.260 / +0.199 / +0.061 after rounding.
    rng = np.random.default_rng(16)
    table = [(0.240, 0.175), (0.100, 0.040), (0.500, 0.350), (0.200, 0.230)]
    exposed = [_cells(rng, 200, (0.3, 0.3 + p, 0.3, 0.3 + f)) for p, f in table]
    unexposed = [_cells(rng, 200, (0.4, 0.4, 0.4, 0.4)) for _ in table]
    result = tf.did_estimate(
        exposed, unexposed, models=["Q", "S", "O", "St"], replicates=300, seed=2
    )
    for m, (p, f) in enumerate(table):
        assert result.estimate[m] == pytest.approx([p, f, p - f], abs=1e-12)
    assert np.round(result.estimate[4], 3) == pytest.approx([0.260, 0.199, 0.061])
    assert result.models == ("Q", "S", "O", "St", "pooled")
    assert result.spread == pytest.approx([0.4, 0.31, 0.18], abs=1e-12)
    # The pooled interval is narrower than each model's (independent models averaged).
    widths = result.percentile[..., 1] - result.percentile[..., 0]
    assert np.all(widths[4, :2] < widths[:4, :2].min(axis=0))


@pytest.mark.parametrize("shared", [False, True])
def test_did_replicates_equal_numpy_reference_draw_for_draw(shared):
    rng = np.random.default_rng(17)
    sizes = [(12, 9), (12, 9)] if shared else [(12, 9), (15, 7)]
    exposed = [rng.integers(0, 3, size=(ne, 4)) / 2 for ne, _ in sizes]
    unexposed = [rng.integers(0, 3, size=(nu, 4)) / 2 for _, nu in sizes]
    key = philox_key(33)
    expected = ref_did_replicates(exposed, unexposed, 80, key, shared=shared)
    result = tf.did_estimate(exposed, unexposed, shared_parents=shared, replicates=80, seed=33)
    assert np.array_equal(result.standard_error, np.std(expected, axis=0, ddof=1))
    assert np.array_equal(result.percentile[..., 0], np.quantile(expected, 0.025, axis=0))
    for m in range(2):
        assert result.estimate[m] == pytest.approx(
            ref_did_point(exposed[m], unexposed[m]), abs=1e-15
        )


def test_did_bca_matches_the_reference_formula_with_brute_force_jackknife():
    rng = np.random.default_rng(18)
    exposed = rng.integers(0, 2, size=(30, 4)).astype(float)
    unexposed = rng.integers(0, 2, size=(25, 4)).astype(float)
    key = philox_key(44)
    reps = ref_did_replicates([exposed], [unexposed], 2000, key)
    result = tf.did_estimate(exposed, unexposed, replicates=2000, seed=44)
    for q in range(3):
        est = ref_did_point(exposed, unexposed)[q]
        loo_e = [ref_did_point(np.delete(exposed, i, 0), unexposed)[q] for i in range(30)]
        loo_u = [ref_did_point(exposed, np.delete(unexposed, i, 0))[q] for i in range(25)]
        expected = ref_bca_interval(reps[:, 0, q], est, [loo_e, loo_u], 0.05)
        assert result.bca[0, q] == pytest.approx(expected, abs=1e-12)


def test_bca_reduces_to_percentile_without_bias_or_acceleration():
    # Replicates symmetric about the estimate with none equal to it (z0 = 0) and a
    # symmetric jackknife (acceleration 0): BCa must be the percentile interval.
    rng = np.random.default_rng(19)
    half = rng.normal(size=1000) + 0.0
    reps = np.concatenate([1.0 + np.abs(half) + 1e-3, 1.0 - np.abs(half) - 1e-3])
    loo = [np.array([-1.0, 0.0, 1.0]), np.array([2.0, -2.0])]
    interval, z0, a = bca_interval(reps, 1.0, loo, 0.1)
    assert z0 == 0.0 and a == 0.0
    # Equal up to the rounding of Phi(Phi^-1(alpha / 2)).
    assert interval == pytest.approx(np.quantile(reps, [0.05, 0.95]), rel=1e-12, abs=1e-12)


def test_did_thread_count_does_not_change_the_result():
    rng = np.random.default_rng(20)
    exposed = rng.integers(0, 2, size=(3, 100, 4)).astype(float)
    unexposed = rng.integers(0, 2, size=(3, 100, 4)).astype(float)
    one = tf.did_estimate(exposed, unexposed, replicates=999, seed=5, n_threads=1)
    two = tf.did_estimate(exposed, unexposed, replicates=999, seed=5, n_threads=2)
    assert np.array_equal(one.bca, two.bca) and np.array_equal(
        one.standard_error, two.standard_error
    )
    assert "pooled" in one.summary() and len(one.table()) == 12


@pytest.mark.parametrize(
    ("exposed", "unexposed", "kwargs", "name"),
    [
        (np.zeros((5, 3)), np.zeros((5, 4)), {}, "exposed"),
        (np.zeros((5, 4)), np.full((5, 4), 2.0), {}, "unexposed"),
        (np.zeros((1, 4)), np.zeros((5, 4)), {}, "exposed"),
        (np.zeros((2, 5, 4)), np.zeros((5, 4)), {}, "same number of models"),
        (np.zeros((5, 4)), np.zeros((5, 4)), {"models": ["a", "b"]}, "models"),
        (
            [np.zeros((5, 4)), np.zeros((6, 4))],
            [np.zeros((5, 4))] * 2,
            {"shared_parents": True},
            "shared_parents",
        ),
        (np.zeros((5, 4)), np.zeros((5, 4)), {"replicates": 1}, "replicates"),
        (np.zeros((5, 4)), np.zeros((5, 4)), {"alpha": 0.0}, "alpha"),
        (np.zeros((5, 4)), np.zeros((5, 4)), {"seed": "x"}, "seed"),
    ],
)
def test_did_errors_name_the_argument(exposed, unexposed, kwargs, name):
    with pytest.raises((TypeError, ValueError), match=name):  # TypeError: a seed of a wrong type
        tf.did_estimate(exposed, unexposed, **{"seed": 1, **kwargs})


# ---------------------------------------------------------------------------------------
# Seed-paired contrasts
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 5, 10, 13])
def test_sign_flip_p_equals_brute_force_enumeration(n):
    rng = np.random.default_rng(n)
    for values in (
        rng.normal(0.01, 0.02, size=n),
        rng.choice([-0.02, -0.01, 0.01, 0.02, 0.03], size=n),  # many exact ties
    ):
        result = tf.seed_contrast(values)
        assert result.method == "exact" and result.n_sign_vectors == 2**n
        assert result.p_value == ref_sign_flip_exact_two_sided(values)


def test_seed_contrast_summaries_match_scipy():
    values = np.array([0.031, 0.012, 0.020, 0.044, -0.006, 0.018, 0.027, 0.035, 0.009, 0.011])
    result = tf.seed_contrast(values)
    low, high = stats.t.interval(0.95, 9, loc=values.mean(), scale=stats.sem(values))
    assert (result.low, result.high) == pytest.approx((low, high), rel=1e-12)
    assert (result.n_positive, result.n_negative) == (9, 1)
    # 9 of 10 positive with one small negative: only the all-positive vector, the one
    # flipping the negative seed, and their mirrors are as extreme -> p = 4/1024.
    assert result.p_value == 4 / 1024
    assert "9/10" in result.summary()


def test_seed_contrast_smallest_exact_p_with_ten_seeds_is_2_in_1024():
    # Any 10 contrasts of one sign: only the observed sign vector and its mirror are as
    # extreme, the smallest exact p the docstring states.
    values = np.linspace(0.01, 0.1, 10)
    assert tf.seed_contrast(values).p_value == 2 / 1024
    assert tf.seed_contrast(-values).p_value == 2 / 1024


def test_bca_bias_correction_counts_ties_half_and_clips_the_share():
    # DiDResult's stated z0 rule: replicates within 1e-12 (1 + |estimate|) of the estimate
    # count half, and the share is clipped to [1/(2B), 1 - 1/(2B)].
    loo = [np.array([-1.0, 0.0, 1.0])]
    b = 400
    _, z0, _ = bca_interval(np.full(b, 2.0 + 1e-13), 2.0, loo, 0.1)
    assert z0 == 0.0  # all ties: share 1/2
    _, z0, _ = bca_interval(np.full(b, 3.0), 2.0, loo, 0.1)
    assert z0 == pytest.approx(stats.norm.ppf(0.5 / b), rel=1e-12)  # none below
    _, z0, _ = bca_interval(np.full(b, 1.0), 2.0, loo, 0.1)
    assert z0 == pytest.approx(stats.norm.ppf(1 - 0.5 / b), rel=1e-12)  # all below
    reps = np.concatenate([np.full(100, 1.0), np.full(100, 2.0), np.full(200, 3.0)])
    _, z0, _ = bca_interval(reps, 2.0, loo, 0.1)
    assert z0 == pytest.approx(stats.norm.ppf((100 + 0.5 * 100) / b), rel=1e-12)


def test_sign_flip_monte_carlo_equals_reference_and_approximates_exact():
    values = np.random.default_rng(21).normal(0.01, 0.03, size=14)
    mc = tf.seed_contrast(values, method="monte_carlo", draws=400, seed=8)
    hits = ref_sign_flip_mc_count_two_sided(values, 400, philox_key(8))
    assert mc.p_value == (1 + hits) / 401
    big = tf.seed_contrast(values, method="monte_carlo", draws=200_000, seed=9)
    exact = tf.seed_contrast(values)
    se = math.sqrt(exact.p_value * (1 - exact.p_value) / 200_000)
    assert abs(big.p_value - exact.p_value) < 4 * se + 1 / 200_001
    one = tf.seed_contrast(values, method="monte_carlo", draws=5000, seed=9, n_threads=1)
    two = tf.seed_contrast(values, method="monte_carlo", draws=5000, seed=9, n_threads=2)
    assert one.p_value == two.p_value


def test_sign_flip_exact_at_forty_seeds_matches_symmetry_and_monte_carlo():
    values = np.random.default_rng(22).normal(0.002, 0.03, size=40)
    exact = tf.seed_contrast(values)
    assert exact.method == "exact"
    mc = tf.seed_contrast(values, method="monte_carlo", draws=100_000, seed=3)
    se = math.sqrt(exact.p_value * (1 - exact.p_value) / 100_000)
    assert abs(mc.p_value - exact.p_value) < 4 * se + 1e-5
    # More than 40 seeds: Monte Carlo, which refuses seed=None and defaults to seed 0.
    with pytest.raises(ValueError, match="seed"):
        tf.seed_contrast(np.r_[values, 0.01], seed=None)
    default = tf.seed_contrast(np.r_[values, 0.01], draws=1000)
    assert default == tf.seed_contrast(np.r_[values, 0.01], seed=0, draws=1000)
    assert tf.seed_contrast(np.r_[values, 0.01], seed=1, draws=1000).method == "monte-carlo"
    with pytest.raises(ValueError, match="values"):
        tf.seed_contrast(np.r_[values, 0.01], method="exact")


@pytest.mark.parametrize(
    ("values", "kwargs", "name"),
    [
        ([0.1], {}, "values"),
        ([0.1, np.nan], {}, "values"),
        ([[0.1, 0.2]], {}, "values"),
        ([0.1, 0.2], {"alpha": 0}, "alpha"),
        ([0.1, 0.2], {"method": "bootstrap"}, "method"),
        ([0.1, 0.2], {"method": "monte_carlo", "seed": None}, "seed"),
        ([0.1, 0.2], {"method": "monte_carlo", "seed": 1, "draws": 0}, "draws"),
    ],
)
def test_seed_contrast_errors_name_the_argument(values, kwargs, name):
    with pytest.raises(ValueError, match=name):
        tf.seed_contrast(values, **kwargs)


# ---------------------------------------------------------------------------------------
# Properties: a finite result or a ValueError, never NaN or a crash
# ---------------------------------------------------------------------------------------

_floats = st.one_of(st.floats(min_value=-1e6, max_value=1e6), st.sampled_from([np.nan, np.inf]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(_floats, min_size=0, max_size=12),
    population=st.integers(min_value=-2, max_value=60),
    method=st.sampled_from(["rao_wu", "bbh"]),
)
def test_bootstrap_and_contrast_finite_or_value_error(values, population, method):
    try:
        boot = tf.finite_population_bootstrap(
            values, population_size=population, method=method, replicates=20, seed=1
        )
    except ValueError:
        pass
    else:
        assert all(
            math.isfinite(v) for v in (boot.estimate, boot.standard_error, boot.low, boot.high)
        )
    try:
        contrast = tf.seed_contrast(values)
    except ValueError:
        pass
    else:
        assert all(
            math.isfinite(v)
            for v in (contrast.estimate, contrast.low, contrast.high, contrast.p_value)
        )
        assert 0 < contrast.p_value <= 1


@settings(max_examples=40, deadline=None)
@given(
    cells=st.lists(st.sampled_from([0.0, 0.5, 1.0, 1.5, np.nan]), min_size=0, max_size=24),
    models=st.integers(min_value=1, max_value=3),
)
def test_did_and_pattern_finite_or_value_error(cells, models):
    arr = np.array(cells)
    try:
        result = tf.did_estimate(
            arr.reshape(-1, 4) if arr.size % 4 == 0 else arr,
            arr.reshape(-1, 4) if arr.size % 4 == 0 else arr,
            replicates=20,
            seed=1,
        )
    except ValueError:
        pass
    else:
        assert np.isfinite(result.bca).all() and np.isfinite(result.estimate).all()
    try:
        test = tf.pattern_permutation_test(
            (arr - 0.5).reshape(models, -1) if arr.size % models == 0 else arr,
            min_models=models,
            draws=20,
            seed=1,
        )
    except ValueError:
        pass
    else:
        assert 0 < test.p_value <= 1 and math.isfinite(test.null_mean)

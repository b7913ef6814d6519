"""The finite-population bootstrap of ``resampling/finite_population.py``: Rao-Wu and BBH
replicates draw for draw against tests/reference.py (both kernel paths), their variances,
the Rao-Wu weights, population sizes beyond int64 refused, huge values scaled exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_paths import every_kernel_path, kernel_path
from reference import (
    ref_bbh_replicates,
    ref_rao_wu_replicates,
)
from truescore_fast import _core
from truescore_fast._random import philox_key

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


# --- item 3: population sizes beyond 64-bit integer arithmetic ------------------------


def test_stratum_sizes_whose_sum_overflows_int64_are_refused() -> None:
    values = np.arange(10.0)
    strata = np.repeat([0, 1], 5)
    with pytest.raises(ValueError, match="population_size sums to"):
        ts.finite_population_bootstrap(
            values, strata=strata, population_size=[2**62, 2**62], replicates=10
        )
    fine = ts.finite_population_bootstrap(
        values, strata=strata, population_size=[2**62, 2**61], replicates=10
    )
    assert fine.estimate == pytest.approx((2 * 2.0 + 7.0) / 3)


@pytest.mark.parametrize("size", [2**63, 1e300, np.uint64(2**63)])
def test_a_population_size_beyond_int64_is_refused(size: object) -> None:
    with pytest.raises(ValueError, match="population_size must be below 2\\*\\*63"):
        ts.finite_population_bootstrap(np.arange(10.0), population_size=size, replicates=10)


# --- items 8 and 9: values near the ends of the double range ----------------------------


def test_finite_population_bootstrap_of_huge_values_is_scaled_exactly() -> None:
    flat = ts.finite_population_bootstrap(np.full(10, 1e308), population_size=100, replicates=50)
    assert (flat.estimate, flat.low, flat.high, flat.standard_error) == (1e308, 1e308, 1e308, 0.0)
    values = np.random.default_rng(3).normal(size=30)
    strata = np.repeat([0, 1, 2], 10)
    for method in ("rao_wu", "bbh"):
        common = {"population_size": [50, 60, 70], "strata": strata, "method": method}
        base = ts.finite_population_bootstrap(values, replicates=200, seed=4, **common)
        big = ts.finite_population_bootstrap(
            np.ldexp(values, 500), replicates=200, seed=4, **common
        )
        np.testing.assert_array_equal(big.replicates, np.ldexp(base.replicates, 500))
        assert big.estimate == math.ldexp(base.estimate, 500)
        assert (big.low, big.high) == (math.ldexp(base.low, 500), math.ldexp(base.high, 500))
        assert big.standard_error == math.ldexp(base.standard_error, 500)
        assert big.variance_estimate == math.ldexp(base.variance_estimate, 1000)
    with pytest.raises(ValueError, match="values are too large"):
        ts.finite_population_bootstrap(np.array([1e308, -1e308] * 5), population_size=100)


def test_rao_wu_resamples_above_the_buffer_are_summed_as_drawn_bit_for_bit() -> None:
    # m = 5000 per stratum (above the 4096 gathered in a buffer): the streamed sum equals
    # NumPy's sum of the same draws.
    rng = np.random.default_rng(8)
    values = rng.normal(size=40)
    result = ts.finite_population_bootstrap(
        values, population_size=400, replicates=3, resample_size=5000, seed=6
    )
    lam = math.sqrt(5000 * (1 - 40 / 400) / 39)
    want = ref_rao_wu_replicates([values], [5000], [lam], [1.0], 3, philox_key(6))
    assert np.array_equal(result.replicates, want)

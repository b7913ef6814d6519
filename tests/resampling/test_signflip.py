"""``seed_contrast`` of ``resampling/signflip.py``: the sign-flip p-value against brute-force
enumeration and Monte Carlo, summaries against SciPy, huge or subnormal values scaled
exactly, and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from reference import (
    ref_sign_flip_exact_two_sided,
    ref_sign_flip_mc_count_two_sided,
)
from scipy import stats
from truescore_fast._random import philox_key

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


def test_seed_contrast_of_huge_or_subnormal_values_is_scaled_exactly() -> None:
    flat = ts.seed_contrast(np.full(5, 1e308))
    assert (flat.estimate, flat.low, flat.high, flat.sd) == (1e308, 1e308, 1e308, 0.0)
    x = np.array([3.0, -1.0, 2.0, 5.0, 0.5, 1.0])
    base = ts.seed_contrast(x)
    for exponent in (1020, -1068):
        scaled = ts.seed_contrast(np.ldexp(x, exponent))
        assert scaled.p_value == base.p_value
        assert scaled.estimate == math.ldexp(base.estimate, exponent) or exponent < 0
        assert scaled.sd == pytest.approx(math.ldexp(base.sd, exponent), rel=1e-3)
        assert scaled.low < scaled.estimate < scaled.high

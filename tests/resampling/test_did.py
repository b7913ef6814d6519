"""The difference-in-differences of ``resampling/did.py``: the paper's tables 15 and 16, its
replicates against the reference, the BCa interval (and ``_bootstrap_intervals``) against
the formula with a brute-force jackknife, thread-count invariance and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import (
    ref_bca_interval,
    ref_did_point,
    ref_did_replicates,
)
from scipy import stats
from truescore_fast._bootstrap_intervals import bca_interval
from truescore_fast._random import philox_key

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

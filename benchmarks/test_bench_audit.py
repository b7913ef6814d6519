"""Benchmarks of the matched-form audit against plain NumPy baselines in the same run.

Groups (compare the rows within a group; the README quotes the ratios):
* betting_interval: betting_interval at n = 200 vs the NumPy reference (target >= 30x);
* randomization test: the exact randomization test at n = 20,000, K = 2, vs a NumPy
  convolution of the same null (target >= 10x);
* five intervals: all five intervals for 10^4 audits of n = 200 in one call, vs the
  single-audit functions in a Python loop over the same audits.
Every benchmark also asserts correctness. ``extra_info`` marks each entry's role ("ours" or
"baseline") for ``benchmarks/ratios.py``; the Python loop is timed on a subset of the audits
and scaled. No time is asserted anywhere.
"""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as tf
from reference import (
    ref_bernstein_interval,
    ref_betting_interval,
    ref_randomization_binomial,
    ref_wald_interval,
)

N_POP = 1000
N_AUDITS = 10_000
LOOP_SUBSET = 1_000  # the one-at-a-time loop is timed on this many audits, then scaled


@pytest.fixture(scope="module")
def gaps200():
    rng = np.random.default_rng(2024)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=200, p=[0.05, 0.1, 0.6, 0.1, 0.15])


@pytest.mark.benchmark(group="audit: betting_interval, n = 200")
def test_betting_interval_compiled(benchmark, gaps200, record_role):
    record_role("ours", "truescore_fast.betting_interval")
    iv = benchmark(tf.betting_interval, gaps200, population_size=N_POP)
    want = ref_betting_interval(gaps200, N_POP)
    assert abs(iv.low - want[0]) <= 1e-9 and abs(iv.high - want[1]) <= 1e-9


@pytest.mark.benchmark(group="audit: betting_interval, n = 200")
def test_betting_interval_numpy_reference(benchmark, gaps200, record_role):
    record_role("baseline", "NumPy betting CI (tests/reference.py)")
    want = benchmark(ref_betting_interval, gaps200, N_POP)
    iv = tf.betting_interval(gaps200, population_size=N_POP)
    assert abs(iv.low - want[0]) <= 1e-9 and abs(iv.high - want[1]) <= 1e-9


@pytest.fixture(scope="module")
def binary20000():
    rng = np.random.default_rng(77)
    n = 20_000
    pub = (rng.random(n) < 0.52).astype(float)
    fr = (rng.random((n, 2)) < 0.5).astype(float)
    ints = np.column_stack([pub, fr]).astype(np.int64)
    n_by_sum = np.bincount(ints.sum(axis=1), minlength=4)
    return pub, fr, n_by_sum, int(pub.sum())


@pytest.mark.benchmark(group="audit: exact randomization test, n = 20,000, K = 2")
def test_randomization_test_compiled(benchmark, binary20000, record_role):
    record_role("ours", "truescore_fast.randomization_test")
    pub, fr, n_by_sum, u_obs = binary20000
    res = benchmark(tf.randomization_test, pub, fr, alternative="two-sided")
    want = ref_randomization_binomial(n_by_sum, 2, u_obs)
    np.testing.assert_allclose([res.p_greater, res.p_less, res.p_two_sided], want, rtol=1e-9)


@pytest.mark.benchmark(group="audit: exact randomization test, n = 20,000, K = 2")
def test_randomization_numpy_convolution(benchmark, binary20000, record_role):
    record_role("baseline", "np.convolve of the two binomial nulls")
    pub, fr, n_by_sum, u_obs = binary20000
    want = benchmark.pedantic(ref_randomization_binomial, args=(n_by_sum, 2, u_obs), rounds=3)
    res = tf.randomization_test(pub, fr, alternative="two-sided")
    np.testing.assert_allclose([res.p_greater, res.p_less, res.p_two_sided], want, rtol=1e-9)


@pytest.fixture(scope="module")
def audits():
    rng = np.random.default_rng(5)
    return rng.choice(
        [-1.0, -0.5, 0.0, 0.5, 1.0], size=(N_AUDITS, 200), p=[0.05, 0.1, 0.6, 0.1, 0.15]
    )


def _check_rows(out, gaps):
    for a in (0, 4999, 9999):
        assert out["betting"][a] == tf.betting_interval(gaps[a], population_size=N_POP)
        want = ref_wald_interval(gaps[a], N_POP)
        assert abs(out["wald"].low[a] - want[0]) <= 1e-12
        want = ref_bernstein_interval(gaps[a])
        assert abs(out["bernstein"].high[a] - want[1]) <= 1e-12


@pytest.mark.benchmark(group="audit: five intervals, 10^4 audits of n = 200")
def test_five_intervals_batched(benchmark, audits, record_role):
    record_role("ours", "truescore_fast.matched_form_intervals (one call)")
    out = benchmark.pedantic(
        tf.matched_form_intervals, args=(audits,), kwargs={"population_size": N_POP}, rounds=3
    )
    assert set(out) == set(tf.INTERVAL_METHODS) and len(out["betting"]) == N_AUDITS
    _check_rows(out, audits)


@pytest.mark.benchmark(group="audit: five intervals, 10^4 audits of n = 200")
def test_five_intervals_python_loop(benchmark, audits, record_role):
    record_role(
        "baseline",
        "the five single-audit functions in a Python loop",
        N_AUDITS / LOOP_SUBSET,
    )
    subset = audits[:LOOP_SUBSET]

    def loop():
        return {
            "hoeffding": [tf.hoeffding_interval(d) for d in subset],
            "bernstein": [tf.bernstein_interval(d) for d in subset],
            "wald": [tf.wald_interval(d, population_size=N_POP) for d in subset],
            "hoeffding_serfling": [
                tf.hoeffding_serfling_interval(d, population_size=N_POP) for d in subset
            ],
            "betting": [tf.betting_interval(d, population_size=N_POP) for d in subset],
        }

    got = benchmark.pedantic(loop, rounds=1)
    batched = tf.matched_form_intervals(audits, population_size=N_POP)
    for m, ivs in got.items():
        for a in (0, LOOP_SUBSET - 1):
            assert ivs[a] == batched[m][a]

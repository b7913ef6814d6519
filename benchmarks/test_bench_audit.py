"""Benchmarks of the matched-form audit against plain NumPy baselines in the same run.

Groups (compare the rows within a group; the README quotes the ratios):
* ``betting-n200``: betting_interval at n = 200 vs the NumPy reference (target >= 30x);
* ``randomization-n20000``: the exact randomization test at n = 20,000, K = 2, vs a NumPy
  convolution of the same null (target >= 10x);
* ``five-intervals-1e4``: all five intervals for 10^4 audits of n = 200 in one call, vs the
  single-audit functions in a Python loop over the same audits.
Every benchmark also asserts correctness.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import reference as ref  # noqa: E402
import truescore_fast as tf  # noqa: E402

N_POP = 1000


@pytest.fixture(scope="module")
def gaps200():
    rng = np.random.default_rng(2024)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=200, p=[0.05, 0.1, 0.6, 0.1, 0.15])


@pytest.mark.benchmark(group="betting-n200")
def test_betting_interval_compiled(benchmark, gaps200):
    iv = benchmark(tf.betting_interval, gaps200, population_size=N_POP)
    want = ref.audit_betting_reference(gaps200, N_POP)
    assert abs(iv.low - want[0]) <= 1e-9 and abs(iv.high - want[1]) <= 1e-9


@pytest.mark.benchmark(group="betting-n200")
def test_betting_interval_numpy_reference(benchmark, gaps200):
    want = benchmark(ref.audit_betting_reference, gaps200, N_POP)
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


@pytest.mark.benchmark(group="randomization-n20000")
def test_randomization_test_compiled(benchmark, binary20000):
    pub, fr, n_by_sum, u_obs = binary20000
    res = benchmark(tf.randomization_test, pub, fr, alternative="two-sided")
    want = ref.audit_randomization_binomial_convolution(n_by_sum, 2, u_obs)
    np.testing.assert_allclose([res.p_greater, res.p_less, res.p_two_sided], want, rtol=1e-9)


@pytest.mark.benchmark(group="randomization-n20000")
def test_randomization_numpy_convolution(benchmark, binary20000):
    pub, fr, n_by_sum, u_obs = binary20000
    want = benchmark.pedantic(
        ref.audit_randomization_binomial_convolution, args=(n_by_sum, 2, u_obs), rounds=3
    )
    res = tf.randomization_test(pub, fr, alternative="two-sided")
    np.testing.assert_allclose([res.p_greater, res.p_less, res.p_two_sided], want, rtol=1e-9)


@pytest.fixture(scope="module")
def audits():
    rng = np.random.default_rng(5)
    return rng.choice(
        [-1.0, -0.5, 0.0, 0.5, 1.0], size=(10_000, 200), p=[0.05, 0.1, 0.6, 0.1, 0.15]
    )


def _check_rows(out, gaps):
    for a in (0, 4999, 9999):
        assert out["betting"][a] == tf.betting_interval(gaps[a], population_size=N_POP)
        want = ref.audit_wald_reference(gaps[a], N_POP)
        assert abs(out["wald"].low[a] - want[0]) <= 1e-12
        want = ref.audit_bernstein_reference(gaps[a])
        assert abs(out["bernstein"].high[a] - want[1]) <= 1e-12


@pytest.mark.benchmark(group="five-intervals-1e4")
def test_five_intervals_batched(benchmark, audits):
    out = benchmark.pedantic(
        tf.matched_form_intervals, args=(audits,), kwargs={"population_size": N_POP}, rounds=3
    )
    assert set(out) == set(tf.INTERVAL_METHODS) and len(out["betting"]) == 10_000
    _check_rows(out, audits)


@pytest.mark.benchmark(group="five-intervals-1e4")
def test_five_intervals_python_loop(benchmark, audits):
    def loop():
        return {
            "hoeffding": [tf.hoeffding_interval(d) for d in audits],
            "bernstein": [tf.bernstein_interval(d) for d in audits],
            "wald": [tf.wald_interval(d, population_size=N_POP) for d in audits],
            "hoeffding_serfling": [
                tf.hoeffding_serfling_interval(d, population_size=N_POP) for d in audits
            ],
            "betting": [tf.betting_interval(d, population_size=N_POP) for d in audits],
        }

    got = benchmark.pedantic(loop, rounds=1)
    batched = tf.matched_form_intervals(audits, population_size=N_POP)
    for m, ivs in got.items():
        for a in (0, 9999):
            assert ivs[a] == batched[m][a]

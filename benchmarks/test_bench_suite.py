"""Benchmarks of the suite audit's ConStat test against the NumPy/SciPy reference in the
same run.

Groups (compare the rows within a group; the README quotes the ratios):
* ConStat, 20 models: ``constat_tests`` on 20 models x 500 items (and 500 reference
  items), 100 bootstraps, every model against the other 19, vs the reference
  (``tests/reference.py``: ``make_smoothing_spline`` per fit) on the first 5 resamples,
  scaled by 20 (resample b's replicates depend on b alone). Target >= 50x;
* the suite job: 50 models x 20 benchmarks x 1,000 items with 1,000 bootstraps per pair
  (20 calls of ``constat_tests`` on 50 x 1,000 matrices); target under a minute on 2
  cores. Timed once; no baseline (the reference would take hours);
* the whole suite audit on such a suite: ``suite_audit`` with every test (the matched-form
  audit's p-value, the randomization test, ConStat with 1,000 resamples per benchmark) on
  a simulated suite of 50 models x 20 benchmarks x 1,000 parents with a fresh form each:
  what ``truescore-fast suite`` runs. Timed once;
* the matched-form p-value of 40 pairs whose betting interval is primary (it bisects):
  each level decided by ``ClaimRule`` against the whole audit at each level (before).
Every benchmark also asserts correctness. No time is asserted anywhere.
"""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as tf
from reference import ref_constat_replicates
from truescore_fast._random import philox_key

N_MODELS, N_ITEMS, N_BOOT, REF_BOOT = 20, 500, 100, 5


def _suite(m, n, seed):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, m)
    d_bench, d_ref = rng.normal(0.0, 1.0, n), rng.normal(0.3, 1.0, n)
    p_bench = 1.0 / (1.0 + np.exp(-(theta[:, None] - d_bench[None, :]) * 1.5))
    p_ref = 1.0 / (1.0 + np.exp(-(theta[:, None] - d_ref[None, :]) * 1.5))
    return (rng.random((m, n)) < p_bench).astype(float), (rng.random((m, n)) < p_ref).astype(float)


@pytest.fixture(scope="module")
def small_suite():
    return _suite(N_MODELS, N_ITEMS, 2024)


def _check(ours, reps):
    # GCV on a flat criterion: SciPy's fit drifts ~1e-7 (tests/suite/test_constat.py).
    np.testing.assert_allclose(ours.replicates[:, :REF_BOOT], reps, rtol=0, atol=1e-5)


@pytest.mark.benchmark(group="suite: ConStat, 20 models x 500 items, B = 100")
def test_constat_tests_compiled(benchmark, small_suite, record_role):
    record_role("ours", "truescore_fast.constat_tests")
    s, r = small_suite
    ours = benchmark(tf.constat_tests, s, r, n_bootstrap=N_BOOT, seed=5)
    reps, _, _ = ref_constat_replicates(
        s, r, list(range(N_MODELS)), list(range(N_MODELS)), REF_BOOT, philox_key(5)
    )
    _check(ours, reps)


@pytest.mark.benchmark(group="suite: ConStat, 20 models x 500 items, B = 100")
def test_constat_numpy_reference(benchmark, small_suite, record_role):
    record_role(
        "baseline",
        "NumPy/SciPy ConStat (tests/reference.py), 5 resamples x 20",
        scale=N_BOOT / REF_BOOT,
    )
    s, r = small_suite
    reps, _, _ = benchmark.pedantic(
        ref_constat_replicates,
        args=(s, r, list(range(N_MODELS)), list(range(N_MODELS)), REF_BOOT, philox_key(5)),
        rounds=1,
    )
    _check(tf.constat_tests(s, r, n_bootstrap=N_BOOT, seed=5), reps)


@pytest.mark.benchmark(group="suite: ConStat job, 50 models x 20 benchmarks x 1,000 items")
def test_constat_suite_job(benchmark, record_role):
    record_role("ours", "20 calls of constat_tests (50 x 1,000, B = 1,000)")
    data = [_suite(50, 1000, seed) for seed in range(20)]

    def job():
        return [tf.constat_tests(s, r, n_bootstrap=1000, seed=b) for b, (s, r) in enumerate(data)]

    results = benchmark.pedantic(job, rounds=1)
    assert len(results) == 20 and all(np.isfinite(res.p_value).all() for res in results)
    # Correctness: one resample of one benchmark against the reference.
    s, r = data[0]
    reps, _, _ = ref_constat_replicates(s, r, list(range(50)), [0, 1], 1, philox_key(0))
    np.testing.assert_allclose(results[0].replicates[:2, :1], reps, rtol=0, atol=1e-5)


@pytest.mark.benchmark(group="suite: the whole audit, 50 models x 20 benchmarks x 1,000 items")
def test_suite_audit_job(benchmark, record_role):
    record_role("ours", "suite_audit, every test (ConStat B = 1,000)")
    data = tf.simulate_suite(
        models=50, benchmarks=20, parents=1000, leaks=((0, 0, 0.3), (30, 7, 0.3)), seed=1
    )
    result = benchmark.pedantic(tf.suite_audit, args=(data,), kwargs={"seed": 3}, rounds=1)
    assert result.n_tests == 50 * 20 * 3
    flagged = {(m, b) for m, b, f in zip(result.model, result.benchmark, result.flagged,
                                          strict=True) if f}  # fmt: skip
    assert {("model-01", "bench-1"), ("model-31", "bench-8")} <= flagged
    # Correctness: benchmark 1's ConStat rows are constat_tests on its matrices, built here
    # from the suite (p-values at least 1 / B, as the suite audit enters them).
    from truescore_fast._random import seed_int

    pairs = [p for p in data.pairs if p.benchmark == "bench-1"]
    want = tf.constat_tests(
        np.array([p.public for p in pairs]),
        np.array([p.fresh.mean(axis=1) for p in pairs]),
        n_bootstrap=1000,
        seed=seed_int([3, 0]),
    )
    rows = [i for i in range(result.n_tests)
            if result.benchmark[i] == "bench-1" and result.test[i] == "constat"]  # fmt: skip
    assert np.array_equal(result.p_value[rows], np.maximum(want.p_value, 1 / 1000))


class _AuditRule:
    """The claim rule as the suite decided it before ClaimRule: the whole audit at each
    level (the baseline of the p-value benchmark below)."""

    def __init__(self, pub, fr, *, seed, audit=None):
        self.args, self.seed = (pub, fr), seed
        self.audit = audit if audit is not None else tf.matched_form_audit(pub, fr, seed=seed)

    def outcome(self, alpha):
        res = tf.matched_form_audit(*self.args, alpha=alpha, seed=self.seed)
        return res.claim, res.primary.empty or res.tau.empty

    def __call__(self, alpha):
        return self.outcome(alpha)[0]


@pytest.fixture(scope="module")
def betting_pairs():
    """40 pairs of 40 parents with fewer than 30 nonzero gaps: the betting interval is
    primary, so the p-value bisects."""
    rng = np.random.default_rng(3)
    pairs = []
    while len(pairs) < 40:
        pub = (rng.random(40) < 0.7).astype(float)
        fr = (rng.random((40, 1)) < 0.4).astype(float)
        if tf.matched_form_audit(pub, fr).primary.method == "betting":
            pairs.append((pub, fr))
    return pairs


@pytest.mark.benchmark(group="suite: the matched-form p-value, 40 betting-primary pairs of 40")
@pytest.mark.parametrize("role", ["ours", "baseline"])
def test_matched_form_p_value(benchmark, betting_pairs, role, record_role, monkeypatch):
    import truescore_fast.suite._tests as suite_tests

    def p_values():
        return [suite_tests.claim_p_value(pub, fr, 0) for pub, fr in betting_pairs]

    if role == "ours":
        record_role("ours", "each level decided by ClaimRule (the primary interval alone)")
        got = benchmark(p_values)
        monkeypatch.setattr(suite_tests, "ClaimRule", _AuditRule)
        assert got == p_values()  # the same p-values, bit for bit
    else:
        record_role("baseline", "each level decided by the whole audit (before)")
        monkeypatch.setattr(suite_tests, "ClaimRule", _AuditRule)
        benchmark(p_values)

"""Benchmarks of the matched-form audit against plain NumPy baselines in the same run.

Groups (compare the rows within a group; the README quotes the ratios):
* betting_interval: betting_interval at n = 200 vs the NumPy reference (target >= 30x);
* betting_interval kernel, n = 200 / 400 / 5,000: the endpoint search vs the compiled
  bisection it replaced, both through the same thin testing call (no validation);
* exact lattice test: K = 2 scores on the 5-level grid, n = 20,000 vs np.convolve of the
  per-parent nulls, and n = 100,000 vs 5x the n = 20,000 time (1x would be linear);
* randomization test: the exact randomization test at n = 20,000, K = 2, vs a NumPy
  convolution of the same null (target >= 10x);
* every interval: all the interval methods for 10^4 audits of n = 200 in one call, vs the
  single-audit functions in a Python loop over the same audits;
* matched_form_audit against its compiled work: the whole call vs its two core calls
  alone (goal: ratio <= 3, a fixed cost at most twice the compiled work).
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
    ref_randomization_convolution,
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


def _betting_gaps(n, seed):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n, p=[0.05, 0.1, 0.6, 0.1, 0.15])


@pytest.mark.parametrize("n", [200, 400, 5000])
def test_betting_interval_search_kernel_n(benchmark, n, record_role):
    benchmark.group = f"audit: betting_interval kernel, n = {n:,}"
    record_role("ours", "the grid search, through the same thin testing call")
    d = _betting_gaps(n, n)
    got = benchmark(tf._core.testing.betting_interval_bisection, d, 20.0 * n, 0.05, False)
    assert got == tf._core.testing.betting_interval_bisection(d, 20.0 * n, 0.05)


@pytest.mark.parametrize("n", [200, 400, 5000])
def test_betting_interval_bisection_kernel_n(benchmark, n, record_role):
    benchmark.group = f"audit: betting_interval kernel, n = {n:,}"
    record_role("baseline", "the compiled bisection to 1e-9 (the search before issue 13)")
    d = _betting_gaps(n, n)
    want = benchmark(tf._core.testing.betting_interval_bisection, d, 20.0 * n, 0.05)
    assert want == tf._core.testing.betting_interval_bisection(d, 20.0 * n, 0.05, False)


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


@pytest.mark.benchmark(group="audit: every interval, 10^4 audits of n = 200")
def test_every_interval_batched(benchmark, audits, record_role):
    record_role("ours", "truescore_fast.matched_form_intervals (one call)")
    out = benchmark.pedantic(
        tf.matched_form_intervals, args=(audits,), kwargs={"population_size": N_POP}, rounds=3
    )
    assert set(out) == set(tf.INTERVAL_METHODS) and len(out["betting"]) == N_AUDITS
    _check_rows(out, audits)


@pytest.mark.benchmark(group="audit: every interval, 10^4 audits of n = 200")
def test_every_interval_python_loop(benchmark, audits, record_role):
    record_role(
        "baseline",
        "the single-audit functions in a Python loop",
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


def _lattice_grid(n, seed):
    """K = 2 graded scores on the 5-level grid {0, 1/4, 1/2, 3/4, 1}, as integers."""
    rng = np.random.default_rng(seed)
    pub = rng.choice(5, size=n, p=[0.1, 0.15, 0.3, 0.25, 0.2])
    fr = rng.choice(5, size=(n, 2), p=[0.12, 0.18, 0.3, 0.22, 0.18])
    return pub, fr


@pytest.fixture(scope="module")
def lattice20000():
    return _lattice_grid(20_000, 13)


@pytest.mark.benchmark(group="audit: exact lattice test, K = 2, 5-level grid, n = 20,000")
def test_lattice_test_compiled(benchmark, lattice20000, record_role):
    record_role("ours", "truescore_fast.randomization_test")
    pub, fr = lattice20000
    res = benchmark(tf.randomization_test, pub / 4, fr / 4, alternative="two-sided")
    assert res.method == "exact-lattice"
    want = ref_randomization_convolution(pub, fr)
    np.testing.assert_allclose([res.p_greater, res.p_less, res.p_two_sided], want, rtol=1e-9)


@pytest.mark.benchmark(group="audit: exact lattice test, K = 2, 5-level grid, n = 20,000")
def test_lattice_numpy_convolution(benchmark, lattice20000, record_role):
    record_role("baseline", "np.convolve of the 20,000 per-parent nulls (tests/reference.py)")
    pub, fr = lattice20000
    want = benchmark.pedantic(ref_randomization_convolution, args=(pub, fr), rounds=1)
    res = tf.randomization_test(pub / 4, fr / 4, alternative="two-sided")
    np.testing.assert_allclose([res.p_greater, res.p_less, res.p_two_sided], want, rtol=1e-9)


@pytest.mark.benchmark(group="audit: exact lattice test, K = 2, 5-level grid, n = 100,000")
def test_lattice_test_compiled_100000(benchmark, record_role):
    # near-linear: compare with the n = 20,000 row of this group (5x the parents)
    record_role("ours", "truescore_fast.randomization_test")
    pub, fr = _lattice_grid(100_000, 14)
    res = benchmark(tf.randomization_test, pub / 4, fr / 4, alternative="two-sided")
    assert res.method == "exact-lattice"
    # the two one-sided tails overlap in exactly P(U = u_obs), at most the smaller tail
    overlap = res.p_greater + res.p_less - 1.0
    assert -1e-12 <= overlap <= min(res.p_greater, res.p_less) + 1e-12
    mc = tf.randomization_test(
        pub / 4, fr / 4, alternative="two-sided", method="monte_carlo", n_resamples=2000, seed=1
    )
    se = (res.p_two_sided * (1 - res.p_two_sided) / 2000) ** 0.5
    assert abs(mc.p_two_sided - res.p_two_sided) <= 4 * se + 1 / 2001


@pytest.mark.benchmark(group="audit: exact lattice test, K = 2, 5-level grid, n = 100,000")
def test_lattice_test_compiled_20000_for_scaling(benchmark, lattice20000, record_role):
    record_role("ours-variant", "the same test at n = 20,000 (x5 would be linear)", 5.0)
    pub, fr = lattice20000
    res = benchmark(tf.randomization_test, pub / 4, fr / 4, alternative="two-sided")
    assert res.method == "exact-lattice"


# --- one interval at n = 200 against its bare NumPy formula (issue 24: <= 2x) ------------

Z975 = 1.959963984540054


def numpy_hoeffding(d, alpha=0.05):
    m = d.mean()
    h = 2.0 * np.sqrt(np.log(2.0 / alpha) / (2.0 * d.size))
    return max(-1.0, m - h), min(1.0, m + h)


def numpy_wald(d, population_size, alpha=0.05):
    m = d.mean()
    h = Z975 * np.sqrt((1.0 - d.size / population_size) * d.var(ddof=1) / d.size)
    return max(-1.0, m - h), min(1.0, m + h)


ONE = {
    "hoeffding": (lambda d: tf.hoeffding_interval(d), numpy_hoeffding),
    "wald": (
        lambda d: tf.wald_interval(d, population_size=N_POP),
        lambda d: numpy_wald(d, N_POP),
    ),
}


@pytest.mark.parametrize("method", ONE)
@pytest.mark.parametrize("role", ["ours", "baseline"])
def test_one_interval(benchmark, gaps200, method, role, record_role):
    benchmark.group = f"audit: one {method}_interval, n = 200"
    ours_fn, numpy_fn = ONE[method]
    if role == "ours":
        record_role("ours", f"truescore_fast.{method}_interval")
        iv = benchmark(ours_fn, gaps200)
        low, high = iv.low, iv.high
    else:
        record_role("baseline", "the bare NumPy formula (mean, var, sqrt, clip)")
        low, high = benchmark(numpy_fn, gaps200)
        iv = ours_fn(gaps200)
    assert abs(iv.low - low) <= 1e-12 and abs(iv.high - high) <= 1e-12


# --- small calls (issue 37) ---------------------------------------------------------------
# One betting_interval at n = 200 against one hoeffding_interval (goal: <= 2.5x its time),
# and matched_form_audit at n = 200, N = 1,000, K = 2 against the bare NumPy formulas of
# the audit without the betting interval (goal: no slower).


@pytest.mark.parametrize("role", ["ours", "baseline"])
def test_one_betting_interval(benchmark, gaps200, role, record_role):
    benchmark.group = "audit: one betting_interval, n = 200, N = 1,000"
    if role == "ours":
        record_role("ours", "truescore_fast.betting_interval")
        iv = benchmark(tf.betting_interval, gaps200, population_size=N_POP)
        want = ref_betting_interval(gaps200, N_POP)
        assert abs(iv.low - want[0]) <= 1e-9 and abs(iv.high - want[1]) <= 1e-9
    else:
        record_role("baseline", "one truescore_fast.hoeffding_interval call")
        iv = benchmark(tf.hoeffding_interval, gaps200)
        assert (iv.low, iv.high) == pytest.approx(numpy_hoeffding(gaps200), abs=1e-12)


Z9875 = 2.241402727604947  # the normal quantile at 1 - 0.025 / 2


def numpy_audit(public, fresh, population_size, alpha=0.05):
    """The matched-form audit's numbers without the betting interval, in bare NumPy: the
    scores, Delta-hat, the Wald, Hoeffding, Hoeffding-Serfling and Bernstein intervals at
    alpha and the primary (Wald) one at alpha / 2, each clipped to [-1, 1]."""
    d = public - fresh.mean(axis=1)
    n = d.size
    m, v = d.mean(), d.var(ddof=1)
    fpc = 1.0 - n / population_size
    halves = {
        "wald": Z975 * np.sqrt(fpc * v / n),
        "hoeffding": 2.0 * np.sqrt(np.log(2.0 / alpha) / (2.0 * n)),
        "hoeffding_serfling": 2.0
        * np.sqrt((1.0 - (n - 1) / population_size) * np.log(2.0 / alpha) / (2.0 * n)),
        "bernstein": np.sqrt(2.0 * v * np.log(4.0 / alpha) / n)
        + 14.0 * np.log(4.0 / alpha) / (3.0 * (n - 1)),
        "wald_half": Z9875 * np.sqrt(fpc * v / n),
    }
    intervals = {k: (max(-1.0, m - h), min(1.0, m + h)) for k, h in halves.items()}
    return public.mean(), fresh.mean(), m, int(np.count_nonzero(d)), intervals


@pytest.fixture(scope="module")
def audit200():
    rng = np.random.default_rng(37)
    public = (rng.random(200) < 0.7).astype(float)
    fresh = (rng.random((200, 2)) < 0.62).astype(float)
    return public, fresh


@pytest.mark.parametrize("role", ["ours", "baseline"])
def test_matched_form_audit_small(benchmark, audit200, role, record_role):
    benchmark.group = "audit: matched_form_audit, n = 200 of N = 1,000, K = 2"
    public, fresh = audit200
    if role == "ours":
        record_role("ours", "truescore_fast.matched_form_audit (with the betting interval)")
        res = benchmark(tf.matched_form_audit, public, fresh, population_size=N_POP)
        pub, fr, m, nonzero, intervals = numpy_audit(public, fresh, N_POP)
    else:
        record_role("baseline", "the bare NumPy formulas of its other intervals (no betting)")
        pub, fr, m, nonzero, intervals = benchmark(numpy_audit, public, fresh, N_POP)
        res = tf.matched_form_audit(public, fresh, population_size=N_POP)
    assert (res.public_score, res.fresh_score, res.nonzero_gaps) == (pub, fr, nonzero)
    assert res.estimate == pytest.approx(m, abs=1e-15)
    for name in ("wald", "hoeffding", "hoeffding_serfling", "bernstein"):
        got = res.intervals[name]
        assert (got.low, got.high) == pytest.approx(intervals[name], abs=1e-12), name
    assert res.primary.method == "wald"
    # no control bank: tau is the primary interval at alpha / 2
    assert (res.tau.low, res.tau.high) == pytest.approx(intervals["wald_half"], abs=1e-12)


@pytest.mark.parametrize("role", ["ours", "baseline"])
def test_matched_form_audit_against_its_compiled_work(benchmark, audit200, role, record_role):
    """The audit's fixed cost: the whole call against the two core calls it makes (its
    gaps and sums; every interval at alpha and the primary one at alpha / 2), timed alone.
    The goal (issue 37): a fixed cost at most twice the compiled work, a ratio <= 3."""
    from truescore_fast import _core

    benchmark.group = "audit: matched_form_audit against its compiled work, n = 200, K = 2"
    public, fresh = audit200
    res = tf.matched_form_audit(public, fresh, population_size=N_POP)
    d = np.ascontiguousarray((public - fresh.mean(axis=1))[res.order])
    traits = _core.interval_method_traits()
    names = (*res.intervals, res.primary.method)
    codes = tuple(traits[m]["code"] for m in names)
    alphas = (0.05,) * len(res.intervals) + (0.025,)

    def compiled_work():
        _core.matched_form_gaps(public, fresh)
        return _core.gap_intervals_unchecked(d, codes, float(N_POP), alphas)

    if role == "ours":
        record_role("ours", "matched_form_audit, the whole call")
        benchmark(tf.matched_form_audit, public, fresh, population_size=N_POP)
    else:
        record_role("baseline", "its two core calls alone")
        got = benchmark(compiled_work)
        for name, g in zip(res.intervals, got, strict=False):
            assert (g[0], g[1]) == (res.intervals[name].low, res.intervals[name].high)
        assert (got[-1][0], got[-1][1]) == (res.tau.low, res.tau.high)  # no bank, r = 0

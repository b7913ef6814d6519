"""ConStat's performance-based test (``suite/constat.py``): the bootstrap against the
NumPy/SciPy reference on the same resamples, the spline against exact arithmetic, the
batch against single calls, threads and seeds, argument checks, and its error rates on
simulated suites."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import truescore_fast as tf
from kernel_paths import every_kernel_path, kernel_path
from reference import (
    ref_constat_fit,
    ref_constat_points,
    ref_constat_pvalue,
    ref_constat_replicates,
    ref_constat_summary,
    ref_constat_test,
    ref_gcv_lambda,
)
from scipy.interpolate import make_smoothing_spline
from truescore_fast import _core
from truescore_fast._random import philox_key


def suite(m, n, nr, seed, partial=False):
    """Scores of m models of varied ability on a benchmark and a reference benchmark that
    measure one latent skill (a logistic item model, items of varied difficulty)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, m)
    d_bench, d_ref = rng.normal(0.0, 1.0, n), rng.normal(0.3, 1.0, nr)
    p_bench = 1.0 / (1.0 + np.exp(-(theta[:, None] - d_bench[None, :]) * 1.5))
    p_ref = 1.0 / (1.0 + np.exp(-(theta[:, None] - d_ref[None, :]) * 1.5))
    if partial:
        return np.round(p_bench * 4) / 4, np.round(p_ref * 4) / 4
    return (rng.random((m, n)) < p_bench).astype(float), (rng.random((m, nr)) < p_ref).astype(
        float
    )


# ------------------------------------------------------------------ against the reference


def _pair(guess):
    if guess is None or isinstance(guess, tuple):
        return guess
    return (guess, guess)


@pytest.mark.parametrize(
    ("smoothing", "random_guess", "sort", "partial", "reference_models", "tol", "n_ref"),
    [
        (0.01, None, True, False, None, 1e-9, 45),
        (0.5, 0.25, True, True, None, 1e-9, 45),
        (0.05, 0.0, False, False, (0, 1, 2, 3, 4, 5, 6), 1e-9, 45),
        # 6 reference rows: each tested model has exactly 5 references, which ConStat
        # keeps without resampling the models
        (0.05, 0.25, True, False, (0, 1, 2, 3, 4, 5), 1e-9, 45),
        # 8 reference items: reference scores tie (points dropped; resamples with fewer
        # than 5 distinct drawn again on their own streams)
        (0.05, None, True, False, None, 1e-9, 8),
        (None, (0.5, 0.3), False, False, None, 1e-6, 8),
        # 5 reference items: two of the nine models have references with only four
        # distinct scores (not testable: NaN, p = 1)
        (0.05, None, True, False, None, 1e-9, 5),
        # GCV: the reference's dense criterion and the kernel's banded one round
        # differently, which moves the Brent search on a flat criterion slightly.
        (None, 0.0, True, False, None, 1e-6, 45),
        (None, 0.25, False, True, (1, 2, 3, 4, 5, 6, 7, 8), 1e-6, 45),
    ],
)
def test_replicates_match_reference(
    smoothing, random_guess, sort, partial, reference_models, tol, n_ref
):
    s, r = suite(9, 60, n_ref, seed=4, partial=partial)
    res = tf.constat_tests(
        s,
        r,
        n_bootstrap=25,
        seed=11,
        smoothing=smoothing,
        random_guess=random_guess,
        sort=sort,
        reference_models=reference_models,
        delta=0.02,
        alpha=0.1,
    )
    refs = list(range(9)) if reference_models is None else list(reference_models)
    reps, actual, predicted = ref_constat_replicates(
        s, r, refs, list(range(9)), 25, philox_key(11), random_guess=_pair(random_guess),
        lam=smoothing, sort=sort,
    )  # fmt: skip
    assert res.sort is sort
    assert res.testable.tolist() == (~np.isnan(predicted)).tolist()
    predicted[~res.testable] = actual[~res.testable]  # the library's "no prediction"
    reps[~res.testable] = 0.0
    assert res.testable.sum() == (7 if n_ref == 5 else 9)
    np.testing.assert_allclose(res.replicates, reps, rtol=0, atol=tol)
    np.testing.assert_allclose(res.actual, actual, rtol=0, atol=1e-15)
    np.testing.assert_allclose(res.predicted, predicted, rtol=0, atol=tol)
    for i in np.flatnonzero(res.testable):  # the summaries of the core's own replicates
        mean, low, high, p = ref_constat_summary(res.replicates[i], 0.02, 0.1)
        assert res.estimate[i] == pytest.approx(mean, abs=1e-15)
        assert res.low[i] == pytest.approx(low, abs=1e-14)
        assert res.high[i] == pytest.approx(high, abs=1e-14)
        assert res.p_value[i] == p
    assert np.all(res.p_value[~res.testable] == 1.0)


def test_each_rule_of_constat_on_its_own():
    """Each of ConStat's rules, on a suite where it matters, equals the reference's and
    differs from the rule it replaced (so each assertion fails under the old rule)."""
    s, r = suite(9, 80, 60, seed=6)
    bench, ref = s.mean(axis=1), r.mean(axis=1)
    others = list(range(1, 9))
    # sort: the quantile map (each coordinate sorted) against the pairs
    by_sort = {}
    for sort in (True, False):
        res = tf.constat_tests(s, r, n_bootstrap=2, seed=1, sort=sort, random_guess=None)
        x, y = ref_constat_points(bench[others], ref[others], None, sort)
        assert res.predicted[0] == pytest.approx(ref_constat_fit(x, y, ref[0]), abs=1e-6)
        by_sort[sort] = res
    # the two orders of the models disagree here, so the fits differ
    assert np.argsort(bench[others]).tolist() != np.argsort(ref[others]).tolist()
    assert not np.allclose(by_sort[True].predicted, by_sort[False].predicted)
    # the random-guess point: (0, 0) by default, none with None, noise in the resamples
    default = tf.constat_tests(s, r, n_bootstrap=2, seed=1)
    none = tf.constat_tests(s, r, n_bootstrap=2, seed=1, random_guess=None)
    x, y = ref_constat_points(bench[others], ref[others], (0.0, 0.0), True)
    assert default.predicted[0] == pytest.approx(ref_constat_fit(x, y, ref[0]), abs=1e-6)
    assert default.random_guess == (0.0, 0.0) and none.random_guess is None
    assert not np.allclose(default.predicted, none.predicted)
    # the anchors: 1e-8 after the GCV (ConStat), not 1e-3 inside it (the old rule)
    x, y = ref_constat_points(bench[others], ref[others], None, True)
    lam = ref_gcv_lambda(x, y)
    old = make_smoothing_spline(np.r_[0.0, x, 1.0], np.r_[0.0, y, 1.0],
                                w=np.r_[1e-3, np.ones(x.size), 1e-3])(ref[0])  # fmt: skip
    new = ref_constat_fit(x, y, ref[0], lam)
    assert none.predicted[0] == pytest.approx(new, abs=1e-6)
    assert abs(float(old) - new) > 1e-4
    # ties: a model drawn twice counts once (ConStat drops the tie) -- a suite with a
    # copy of model 3 predicts exactly what the suite without it does
    s2, r2 = np.vstack([s, s[3]]), np.vstack([r, r[3]])
    dup = tf.constat_tests(s2, r2, n_bootstrap=2, seed=1, smoothing=0.1,
                           reference_models=(1, 2, 3, 4, 5, 6, 9))  # fmt: skip
    one = tf.constat_tests(s, r, n_bootstrap=2, seed=1, smoothing=0.1,
                           reference_models=(1, 2, 3, 4, 5, 6))  # fmt: skip
    assert dup.predicted[0] == one.predicted[0]


def test_every_model_alike_is_no_evidence():
    """Six copies of one model: no fit can be made, so no flag (ConStat's code loops for
    ever here; the library's old fit flagged all six with p = 0)."""
    s, r = suite(9, 80, 60, seed=6)
    same_s, same_r = np.tile(s[0], (6, 1)), np.tile(r[0], (6, 1))
    res = tf.constat_tests(same_s, same_r, n_bootstrap=50, seed=1)
    assert not res.testable.any() and np.all(res.p_value == 1.0)
    assert all("fewer than 5 distinct" in x for x in res.reason)
    # no evidence, in finite numbers: inflation 0 in [-1, 1], the prediction the actual
    assert np.all(res.estimate == 0) and np.all(res.low == -1) and np.all(res.high == 1)
    assert np.array_equal(res.predicted, res.actual) and np.all(res.replicates == 0)
    assert "not testable, p = 1" in res.summary()
    with pytest.raises(ValueError, match="index: model 0 is not testable"):
        res.test(0)
    with pytest.raises(ValueError, match="models_reference_scores: the model is not testable"):
        tf.constat_test(s[1], r[1], same_s[:5], same_r[:5], n_bootstrap=20)
    # rows 0-4 distinct, row 5 a copy of row 4: models 0-3 have four distinct references,
    # with the random-guess point five (testable); without it four (not testable)
    five = np.vstack([s[:5], s[4]]), np.vstack([r[:5], r[4]])
    mixed = tf.constat_tests(*five, n_bootstrap=20, seed=1)
    assert mixed.testable.tolist() == [True] * 6
    without = tf.constat_tests(*five, n_bootstrap=20, seed=1, random_guess=None)
    assert without.testable.tolist() == [False, False, False, False, True, True]
    assert np.all(without.p_value[:4] == 1.0) and not without.testable[:4].any()


def _exact_spline(x, y, w, lam, x0):
    """Reinsch's equations in 40-digit arithmetic (dense solve)."""
    mpmath.mp.dps = 40
    n = len(x)
    h = [mpmath.mpf(x[i + 1]) - mpmath.mpf(x[i]) for i in range(n - 1)]
    q, rr = mpmath.zeros(n, n - 2), mpmath.zeros(n - 2, n - 2)
    for j in range(n - 2):
        q[j, j], q[j + 1, j], q[j + 2, j] = 1 / h[j], -1 / h[j] - 1 / h[j + 1], 1 / h[j + 1]
        rr[j, j] = (h[j] + h[j + 1]) / 3
        if j + 1 < n - 2:
            rr[j, j + 1] = rr[j + 1, j] = h[j + 1] / 6
    wi = mpmath.diag([1 / mpmath.mpf(v) for v in w])
    yv = mpmath.matrix([mpmath.mpf(v) for v in y])
    gam = mpmath.lu_solve(rr + lam * q.T * wi * q, q.T * yv)
    g = yv - lam * wi * q * gam
    j = max(0, min(n - 2, int(np.searchsorted(x, x0, side="right")) - 1))
    u, v = mpmath.mpf(x0) - mpmath.mpf(x[j]), mpmath.mpf(x[j + 1]) - mpmath.mpf(x0)
    second = [0] + [gam[i] for i in range(n - 2)] + [0]
    return float(
        (u * g[j + 1] + v * g[j]) / h[j]
        - u * v / 6 * ((1 + u / h[j]) * second[j + 1] + (1 + v / h[j]) * second[j])
    )


def test_spline_matches_exact_arithmetic():
    rng = np.random.default_rng(5)
    for _ in range(6):
        x = np.unique(rng.random(25))
        x[0], x[-1] = 0.0, 1.0
        y = np.clip(x + rng.normal(0, 0.05, x.size), 0, 1)
        w = np.ones(x.size)
        w[0] = w[-1] = 1e-3
        x0, lam = float(rng.random()), float(10 ** rng.uniform(-4, 1))
        got = _core.testing.smoothing_spline_predict(x, y, w, lam, x0)
        assert got == pytest.approx(_exact_spline(x, y, w, lam, x0), rel=1e-11, abs=1e-13)


# ------------------------------------------------------------------ batch, threads, seeds


def test_batch_row_equals_single_call_and_threads_and_seed():
    s, r = suite(8, 80, 50, seed=2)
    batch = tf.constat_tests(s, r, n_bootstrap=40, seed=7, n_threads=1)
    for i in (0, 5):
        others = [j for j in range(8) if j != i]
        one = tf.constat_test(s[i], r[i], s[others], r[others], n_bootstrap=40, seed=7)
        assert np.array_equal(one.replicates, batch.replicates[i])
        assert (one.estimate, one.p_value) == (batch.estimate[i], batch.p_value[i])
        assert batch.test(i).to_dict() == one.to_dict()
    means = r.mean(axis=1)
    for i in range(8):
        others = np.delete(means, i)
        want = means[i] < others.min() or means[i] > others.max()
        assert batch.extrapolated[i] == want
        assert ("(extrapolated)" in batch.summary().splitlines()[2 + i]) == want
    assert batch.extrapolated.sum() == 2  # the best and the worst model here
    for threads in (2, 3, None):
        again = tf.constat_tests(s, r, n_bootstrap=40, seed=7, n_threads=threads)
        assert np.array_equal(again.replicates, batch.replicates)
    other = tf.constat_tests(s, r, n_bootstrap=40, seed=8)
    assert not np.array_equal(other.replicates, batch.replicates)
    assert batch.seed == 7 and batch.to_frame().shape == (8, 10)  # with testable
    gen = tf.constat_tests(s, r, n_bootstrap=40, seed=np.random.default_rng(3))
    replay = tf.constat_tests(s, r, n_bootstrap=40, seed=gen.seed)
    assert np.array_equal(gen.replicates, replay.replicates)


@every_kernel_path
def test_kernel_paths_agree_with_the_reference(avx512):
    # 1,200 items: the index draws run long enough for the AVX-512 cutting (where the CPU
    # has it); each path against the reference's draws.
    s, r = suite(7, 1200, 700, seed=9)
    with kernel_path(avx512):
        res = tf.constat_tests(s, r, n_bootstrap=4, seed=2, smoothing=0.2)
    reps, _, _ = ref_constat_replicates(s, r, list(range(7)), list(range(7)), 4, philox_key(2),
                                        lam=0.2)  # fmt: skip
    assert res.testable.all()
    np.testing.assert_allclose(res.replicates, reps, rtol=0, atol=1e-9)


# ------------------------------------------------------------------ argument checks

S, R = suite(7, 20, 15, seed=1)


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"scores": S[0, :5]}, ValueError, "models_scores"),
        ({"models_scores": S[1:5]}, ValueError, "models_scores"),
        ({"models_reference_scores": R[1:6]}, ValueError, "models_reference_scores"),
        ({"scores": np.r_[S[0, :-1], np.nan]}, ValueError, "scores"),
        ({"reference_scores": np.r_[R[0, :-1], np.inf]}, ValueError, "reference_scores"),
        ({"scores": np.r_[S[0, :-1], 1.5]}, ValueError, "scores"),
        ({"scores": S[:2]}, ValueError, "scores"),
        ({"scores": S[0, :1], "models_scores": S[1:, :1]}, ValueError, "scores"),
        (
            {"reference_scores": R[0, :1], "models_reference_scores": R[1:, :1]},
            ValueError,
            "reference_scores",
        ),
        ({"random_guess": (0.1, 0.2, 0.3)}, ValueError, "random_guess"),
        ({"random_guess": (0.1, -0.2)}, ValueError, "random_guess"),
        ({"sort": "yes"}, TypeError, "sort"),
        ({"scores": ["a"] * 20}, TypeError, "scores"),
        ({"alpha": 1.0}, ValueError, "alpha"),
        ({"alpha": "0.05"}, TypeError, "alpha"),
        ({"delta": math.nan}, ValueError, "delta"),
        ({"delta": 2.0}, ValueError, "delta"),
        ({"n_bootstrap": 2**63}, ValueError, "n_bootstrap"),
        ({"n_bootstrap": 1}, ValueError, "n_bootstrap"),
        ({"n_bootstrap": 10.0}, ValueError, "n_bootstrap"),
        ({"smoothing": -1.0}, ValueError, "smoothing"),
        ({"smoothing": 1e308 * 10}, ValueError, "smoothing"),
        ({"random_guess": 1.5}, ValueError, "random_guess"),
        ({"seed": None}, ValueError, "seed"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"n_threads": 0}, ValueError, "n_threads"),
    ],
)
def test_constat_test_refuses(kwargs, error, name):
    args = {
        "scores": S[0],
        "reference_scores": R[0],
        "models_scores": S[1:],
        "models_reference_scores": R[1:],
        "n_bootstrap": 10,
    }
    args.update(kwargs)
    with pytest.raises(error, match=name):
        tf.constat_test(**args)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"scores": S[:5], "reference_scores": R[:5]}, "scores"),
        ({"reference_scores": R[:6]}, "reference_scores"),
        ({"reference_models": (0, 1, 2, 3, 4)}, "reference_models"),
        ({"reference_models": (0, 1, 2, 3, 4, 9)}, "reference_models"),
        ({"reference_models": (0, 1, 2, 3, 4, 4)}, "reference_models"),
        ({"reference_models": "012345"}, "reference_models"),
    ],
)
def test_constat_tests_refuses(kwargs, name):
    args = {"scores": S, "reference_scores": R, "n_bootstrap": 10}
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=name):
        tf.constat_tests(**args)


def test_result_protocol():
    res = tf.constat_test(S[0], R[0], S[1:], R[1:], n_bootstrap=20)
    assert str(res) == res.summary() and "not proof of contamination" in res.summary()
    # Far below the smallest inflation: every replicate is within the bound, so p = 0.
    low_bound = tf.constat_test(S[0], R[0], S[1:], R[1:], n_bootstrap=20, delta=-1.0)
    assert low_bound.p_value == 0.0 and "below the resolution of 20" in low_bound.summary()
    assert res.to_dict()["random_guess"] == [0.0, 0.0] and res.to_dict()["sort"] is True
    assert "replicates" not in res.to_dict() and res.n_models == 6
    assert res.low <= res.estimate <= res.high or res.low <= res.high


# ------------------------------------------------------------------ error rates


def test_size_and_power_on_simulated_suites():
    """No contamination: the rejection rate at alpha = 0.1 is at most alpha + 3 Monte
    Carlo SEs (240 suites: SE = sqrt(0.1 * 0.9 / 240) = 0.019). A planted inflation of
    +0.1 (wrong answers turned right): rejected in at least 80% of 120 suites."""
    alpha, reps = 0.1, 240
    rejected = power = 0
    for rep in range(reps):
        s, r = suite(9, 300, 300, seed=1000 + rep)
        res = tf.constat_test(s[0], r[0], s[1:], r[1:], n_bootstrap=150, alpha=alpha, seed=rep)
        rejected += res.p_value < alpha
        if rep < 120:
            leaked = s[0].copy()
            wrong = np.flatnonzero(leaked == 0)
            rng = np.random.default_rng(rep)
            leaked[rng.choice(wrong, size=min(30, wrong.size), replace=False)] = 1.0
            res = tf.constat_test(
                leaked, r[0], s[1:], r[1:], n_bootstrap=150, alpha=alpha, seed=rep
            )
            power += res.p_value < alpha
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert rejected / reps <= alpha + 3 * se, rejected / reps
    assert power / 120 >= 0.8, power / 120


def test_replicates_all_at_delta_are_no_evidence():
    # Every model scores 1 everywhere (an easy benchmark): the old fit made every
    # replicate exactly 0 = delta and, before the strict rule, flagged every model. Now
    # their reference scores are one point: not testable, p = 1.
    t = tf.constat_tests(np.ones((7, 30)), np.ones((7, 20)), n_bootstrap=50, seed=1)
    assert not t.testable.any() and np.all(t.p_value == 1.0)
    # p = k / B for the first k with 2 mean - q(1 - k/B) > delta. Here mean 0, and the
    # quantiles at 1 - k/5 are 1, 0.2, 0, 0, -0.2 (k = 0 .. 4): the lower end passes 0
    # only at k = 4 (p = 0.8). ConStat's >= would stop at the plateau that touches the
    # bound (k = 2, p = 0.4); with delta = -0.5 both rules give k = 1.
    from truescore_fast.suite.constat import _summaries

    row = np.array([-1.0, 0.0, 0.0, 0.0, 1.0])
    assert _summaries(row[None, :], 0.0, 0.05)[3][0] == 0.8 == ref_constat_pvalue(row, 0.0)
    assert _summaries(row[None, :], -0.5, 0.05)[3][0] == 0.2 == ref_constat_pvalue(row, -0.5)


@pytest.mark.slow
def test_summaries_are_numpys_quantiles_bit_for_bit():
    # The summaries read NumPy's linear quantiles off each row sorted once; here they are
    # recomputed the plain way, one np.quantile call per row (ties, constant rows, B of 1
    # to 1,000, alpha near 0 and 1).
    from truescore_fast.suite.constat import _summaries

    rng = np.random.default_rng(7)
    for b in (1, 2, 3, 5, 17, 999, 1000):
        for kind in ("normal", "ties", "constant"):
            reps = rng.normal(0.01, 0.05, (6, b))
            if kind == "ties":
                reps = np.round(reps * 50) / 50
            elif kind == "constant":
                reps[:] = 0.03
            for alpha, delta in ((0.05, 0.0), (0.5, 0.01), (1e-6, -0.02), (0.999, 0.0)):
                est, low, high, p = _summaries(reps, delta, alpha)
                for i, row in enumerate(reps):
                    e = float(row.mean())
                    q = np.quantile(row, [1.0 - alpha / 2.0, alpha / 2.0])
                    assert (est[i], low[i], high[i]) == (e, 2.0 * e - q[0], 2.0 * e - q[1])
                    holds = 2.0 * e - np.quantile(row, 1.0 - np.arange(b) / b) > delta
                    assert p[i] == (float(np.argmax(holds)) / b if holds.any() else 1.0)
                    assert p[i] == ref_constat_pvalue(row, delta)


def test_a_huge_smoothing_is_the_line_not_an_overflow():
    # smoothing=1e308 overflowed the bands (the fit predicted 0 for every model: clean
    # models got p = 0); above 1e200 it is 1e200, where the fit is its limit, the line
    rng = np.random.default_rng(0)
    s = (rng.random((8, 50)) < 0.6).astype(float)
    r = (rng.random((8, 40)) < 0.6).astype(float)
    huge = tf.constat_tests(s, r, smoothing=1e308, n_bootstrap=50, seed=2)
    capped = tf.constat_tests(s, r, smoothing=1e200, n_bootstrap=50, seed=2)
    line = tf.constat_tests(s, r, smoothing=1e20, n_bootstrap=50, seed=2)
    np.testing.assert_array_equal(huge.replicates, capped.replicates)
    np.testing.assert_allclose(huge.replicates, line.replicates, rtol=0, atol=1e-9)
    assert np.all(huge.p_value > 0.05)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("references", "sort", "guess"),
    [(range(3, 34), True, 0.0), (range(3, 34), False, (0.25, 0.3)), (range(34), False, None)],
)
def test_many_references_draw_coupled_resamples(references, sort, guess):
    """From 30 references per model the rows' reference draws are coupled (u, then v,
    drawn from the stream after the items and the noise; a row's copies of itself in u
    replaced by v skipping it): the kernel equals the reference replaying those words,
    for rows that are references (30 draws) and rows that are not (31) together, sorted
    and unsorted, with and without the random-guess point."""
    s, r = suite(34, 120, 90, seed=21)
    refs = list(references)
    res = tf.constat_tests(
        s, r, n_bootstrap=5, seed=8, sort=sort, random_guess=guess, reference_models=refs
    )
    pair = (0.0, 0.0) if guess == 0.0 else guess
    reps, _, _ = ref_constat_replicates(
        s, r, refs, list(range(34)), 5, philox_key(8), random_guess=pair, sort=sort
    )
    np.testing.assert_allclose(res.replicates, reps, rtol=0, atol=1e-6)


def test_a_leaderboards_candidate_draws_have_constats_law_per_row():
    """A reference row takes the first candidate (30 draws below 31) whose draws avoid it:
    its draws never hold itself, each other model is drawn equally often (chi-square, fixed
    seed), and the number of distinct models drawn has the mean of 30 i.i.d. uniform draws
    on the 30 others (within 4 Monte Carlo SEs): ConStat's law, by rejection."""
    from reference import _ref_candidate_draws
    from scipy import stats

    class Stream:
        def __init__(self, seed):
            self.rng = np.random.default_rng(seed)

        def below(self, n):
            return int(self.rng.integers(n))

    own, k, n, runs = 3, 30, 31, 4000
    counts, distinct = np.zeros(n), []
    for seed in range(runs):
        (draws,), _ = _ref_candidate_draws(Stream(seed), n, 31, [(k, own)])
        assert own not in draws and len(draws) == k
        counts += np.bincount(draws, minlength=n)
        distinct.append(len(set(draws)))
    others = np.delete(counts, own)
    assert stats.chisquare(others).pvalue > 1e-3
    expected = (n - 1) * (1 - (1 - 1 / (n - 1)) ** k)
    assert abs(np.mean(distinct) - expected) <= 4 * np.std(distinct) / math.sqrt(runs)


@pytest.mark.slow
def test_many_references_share_each_resamples_lambda():
    """With 30 or more references per model, each resample's GCV lambda is chosen once
    (on the models its draws pick from the references) and shared by every row: the
    kernel equals the reference doing the same on the same draws, and every model's
    estimate and p-value stay within Monte Carlo error of ConStat's own per-row GCV
    (``ref_constat_test``, its own draws; 4 SEs)."""
    s, r = suite(32, 200, 150, seed=12)
    res = tf.constat_tests(s, r, n_bootstrap=6, seed=3)
    reps, _, _ = ref_constat_replicates(s, r, list(range(32)), list(range(32)), 6, philox_key(3))
    np.testing.assert_allclose(res.replicates, reps, rtol=0, atol=1e-6)
    b = 400
    res = tf.constat_tests(s, r, n_bootstrap=b, seed=4)
    for i in (0, 17):
        others = [j for j in range(32) if j != i]
        est, p = ref_constat_test(s[i], r[i], s[others], r[others], n_bootstrap=b, seed=i)
        se = math.sqrt(2) * res.replicates[i].std() / math.sqrt(b)
        assert abs(res.estimate[i] - est) <= 4 * se
        pbar = 0.5 * (p + res.p_value[i])
        assert abs(res.p_value[i] - p) <= 4 * math.sqrt(2 * pbar * (1 - pbar) / b) + 1 / b

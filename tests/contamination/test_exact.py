"""The exact order test and ``combine_shards`` of ``contamination/exact.py``: calibration
under the null, detection of a memorised order, Fisher/Stouffer/average pooling against the
references in tests/reference.py and mpmath, accurate moments at huge magnitudes, argument
errors, the result types and their explanations, and truescore's canonical edge cases."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
import truescore.contamination as ts
import truescore.contamination as ts_contamination
import truescore_fast as tf
from common import mc_se, same_bits, shards
from fuzzing import assert_sane_rank_test, wide_float
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import (
    ref_average_p,
    ref_chi2_even_log_sf_mpmath,
    ref_fisher,
    ref_moments_mpmath,
    ref_moments_scaled_numpy,
    ref_rank_test,
    ref_stouffer_midp,
)
from scipy import special, stats
from truescore_fast import _core
from truescore_fast.contamination import (
    CombinedContamination,
    ContaminationResult,
    ExchangeabilityTests,
)


def test_long_double_canonical_is_compared_at_its_own_precision():
    canonical = np.longdouble(-4.1) + np.longdouble(1e-18)
    permuted = [-4.1, -5.0, -3.0, -4.2]
    theirs = ts_contamination.exchangeability_test(canonical, permuted)
    ours = tf.exchangeability_test(canonical, permuted)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert ours.p_value != tf.exchangeability_test(-4.1, permuted).p_value


def test_zero_d_float32_canonical_gives_truescores_z():
    canonical = np.array(-4.1, dtype=np.float32)
    permuted = [-4.1, -5.0, -3.0, -4.2, -4.0]
    theirs = ts_contamination.exchangeability_test(canonical, permuted)
    ours = tf.exchangeability_test(canonical, permuted)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)


N_NULL = 4000  # null replications for every rate check


N_SE = 4.0  # tolerance, in Monte Carlo standard errors


# ---------------------------------------------------------------------------------------
# Calibration under the null
# ---------------------------------------------------------------------------------------


def test_false_positive_rate_matches_alpha_single_calls():
    # Canonical and permuted values i.i.d.: the null of exchangeability holds exactly.
    rng = np.random.default_rng(20260101)
    m, alpha = 999, 0.05
    rejections = 0
    p_at_most_alpha = 0
    for _ in range(N_NULL):
        values = rng.normal(-3000.0, 25.0, size=m + 1)
        result = tf.exchangeability_test(values[0], values[1:], alpha=alpha)
        rejections += result.contaminated
        p_at_most_alpha += result.p_value <= alpha
    # P(p < alpha) = (ceil(alpha (m+1)) - 1) / (m + 1) = 49/1000 for the strict verdict,
    # P(p <= alpha) = 50/1000 = alpha exactly; both within 4 SE of alpha.
    se = mc_se(alpha, N_NULL)
    assert abs(rejections / N_NULL - alpha) <= N_SE * se
    assert abs(p_at_most_alpha / N_NULL - alpha) <= N_SE * se


def test_ties_keep_the_test_valid():
    # Heavily tied, discrete log-likelihoods: counting ">=" makes p super-uniform.
    # Counting ">" instead would reject far more often than alpha.
    rng = np.random.default_rng(11)
    m, alpha = 99, 0.05
    values = rng.integers(0, 6, size=(N_NULL, m + 1)).astype(np.float64)
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    rate = float(np.mean(res.p_values <= alpha))
    assert rate <= alpha + N_SE * mc_se(alpha, N_NULL)


def test_p_values_uniform_on_the_permutation_grid():
    rng = np.random.default_rng(3)
    m = 19
    values = rng.standard_normal((N_NULL, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    grid = np.arange(1, m + 2) / (m + 1.0)
    # Every p-value lies exactly on the grid k / (m + 1), k = 1..m+1 ...
    k = np.rint(res.p_values * (m + 1)).astype(int)
    assert same_bits(res.p_values, k / (m + 1.0))
    assert same_bits(np.unique(res.p_values), grid)
    # ... and each grid point has probability 1/(m+1): chi-square goodness of fit,
    # rejected only if its p-value is below 1e-4 (fixed seed, so this is deterministic).
    observed = np.bincount(k, minlength=m + 2)[1:]
    chi2 = stats.chisquare(observed, np.full(m + 1, N_NULL / (m + 1)))
    assert chi2.pvalue > 1e-4
    # Per point: each frequency within 4 SE of 1/(m+1).
    q = 1.0 / (m + 1)
    assert np.all(np.abs(observed / N_NULL - q) <= N_SE * mc_se(q, N_NULL))


def test_fisher_calibrated_under_the_null_on_uniform_p_values():
    rng = np.random.default_rng(5)
    alpha, k = 0.05, 8
    rejections = sum(
        tf.combine_shards(rng.uniform(size=k), alpha=alpha).contaminated for _ in range(N_NULL)
    )
    assert abs(rejections / N_NULL - alpha) <= N_SE * mc_se(alpha, N_NULL)


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_fisher_pooled_shards_calibrated_under_the_null(alpha):
    # K = 8 null shards of m = 199 permutations, pooled: the discreteness of permutation
    # p-values makes Fisher slightly conservative, never liberal.
    rng = np.random.default_rng(17)
    k, m = 8, 199
    values = rng.standard_normal((N_NULL * k, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    pooled = np.array(
        [
            tf.exchangeability_tests(
                values[i * k : (i + 1) * k, 0], values[i * k : (i + 1) * k, 1:], alpha=alpha
            )
            .combine("fisher")
            .p_value
            for i in range(N_NULL)
        ]
    )
    # The batch pooled with combine_shards gives the same numbers.
    assert tf.combine_shards(res.p_values[:k]).p_value == pooled[0]
    rate = float(np.mean(pooled < alpha))
    assert abs(rate - alpha) <= N_SE * mc_se(alpha, N_NULL)


@pytest.mark.parametrize(
    ("method", "dependent"),
    [("stouffer", False), ("average", False), ("average", True)],
)
def test_stouffer_midp_and_average_are_conservative_under_the_null(method, dependent):
    # Coarse grid (m = 19) so the mid-p correction and discreteness matter. With
    # dependent=True every shard of a replication reuses the same null data: averaging
    # (doubled) stays valid under any dependence; Stouffer assumes independence.
    rng = np.random.default_rng(23 + dependent)
    k, m, alpha = 8, 19, 0.05
    if dependent:
        base = rng.standard_normal((N_NULL, m + 1))
        values = np.repeat(base, k, axis=0)
    else:
        values = rng.standard_normal((N_NULL * k, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    pooled = np.empty(N_NULL)
    for i in range(N_NULL):
        block = slice(i * k, (i + 1) * k)
        sub = ExchangeabilityTests(
            p_values=res.p_values[block],
            counts=res.counts[block],
            z_scores=res.z_scores[block],
            means=res.means[block],
            sds=res.sds[block],
            n_permutations=res.n_permutations[block],
            canonical=res.canonical[block],
            alpha=res.alpha,
        )
        pooled[i] = sub.combine(method).p_value
    assert np.all((pooled > 0.0) & (pooled <= 1.0))
    rate = float(np.mean(pooled < alpha))
    assert rate <= alpha + N_SE * mc_se(alpha, N_NULL)


def test_eight_non_significant_shards_pool_to_a_finding():
    # Each shard's canonical value sits just above a chosen number of its 99 shuffled
    # values, so its p-value is (1 + count) / 100 with counts 6..12: every shard is
    # individually non-significant (p between 0.07 and 0.13) but Fisher pools them well
    # below 0.01: -2 sum log p = 37.1 on 16 df.
    rng = np.random.default_rng(2023)
    m = 99
    counts = np.array([6, 8, 9, 10, 12, 7, 9, 11])
    canonical, permuted = [], []
    for c in counts:
        perm = rng.normal(-5000.0, 40.0, size=m)
        ordered = np.sort(perm)[::-1]
        canonical.append((ordered[c - 1] + ordered[c]) / 2.0)  # exactly c values above
        permuted.append(perm)
    singles = [tf.exchangeability_test(c, p) for c, p in zip(canonical, permuted, strict=True)]
    p_values = np.array([r.p_value for r in singles])
    assert np.array_equal(p_values, (1.0 + counts) / (m + 1.0))
    assert all(not r.contaminated and 0.06 <= r.p_value <= 0.2 for r in singles)

    pooled = tf.combine_shards(p_values)
    statistic, p_ref = ref_fisher(p_values)
    assert pooled.statistic == pytest.approx(statistic, rel=1e-14)
    assert pooled.p_value == pytest.approx(p_ref, rel=1e-12)
    assert pooled.p_value < 0.01 and pooled.contaminated
    batched = tf.exchangeability_tests(canonical, np.array(permuted)).combine("fisher")
    assert batched.p_value == pooled.p_value and batched.statistic == pooled.statistic


def test_memorised_order_is_detected():
    # Power check: canonical order shifted up by 3 sds in every shard.
    rng = np.random.default_rng(99)
    values = rng.standard_normal((50, 200))
    values[:, 0] += 3.0
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    assert np.mean(res.contaminated) > 0.7
    assert res.combine("fisher").log_p_value < math.log(1e-30)


# ---------------------------------------------------------------------------------------
# Pooling against the reference
# ---------------------------------------------------------------------------------------


def test_combine_methods_equal_reference():
    rng = np.random.default_rng(8)
    canonical, rows = shards(rng, 30, [1, 9, 99], ties=True)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    res = tf.exchangeability_tests(canonical, np.concatenate(rows), offsets=offsets, alpha=0.1)

    fisher = res.combine()
    statistic, p_ref = ref_fisher(res.p_values)
    assert fisher.method == "fisher"
    assert fisher.statistic == pytest.approx(statistic, rel=1e-14)
    assert fisher.p_value == pytest.approx(p_ref, rel=1e-12)
    assert fisher.log_p_value == pytest.approx(
        ref_chi2_even_log_sf_mpmath(fisher.statistic, 30), rel=1e-10, abs=1e-13
    )

    stouffer = res.combine("stouffer")
    z_ref, p_ref = ref_stouffer_midp(res.counts, res.n_permutations)
    assert stouffer.method == "stouffer"
    assert stouffer.statistic == pytest.approx(z_ref, rel=1e-12, abs=1e-14)
    assert stouffer.p_value == pytest.approx(p_ref, rel=1e-12)
    assert stouffer.log_p_value == pytest.approx(math.log(p_ref), rel=1e-12)
    assert np.isfinite(stouffer.statistic)  # p = 1 shards (count = m) do not send Z to -inf

    average = res.combine("average")
    mean_ref, p_ref = ref_average_p(res.p_values)
    assert average.method == "average"
    assert average.statistic == pytest.approx(mean_ref, rel=1e-14)
    assert average.p_value == pytest.approx(p_ref, rel=1e-14)
    for pooled in (fisher, stouffer, average):
        assert isinstance(pooled, CombinedContamination)
        assert pooled.n_shards == 30 and pooled.level == pytest.approx(0.9)
        assert np.array_equal(pooled.shard_p_values, res.p_values)
        assert pooled.contaminated == (pooled.p_value < 0.1)


def test_average_is_capped_at_one():
    res = tf.exchangeability_tests([0.0, 0.0], [[1.0, 1.0], [1.0, -1.0]])
    assert res.combine("average").p_value == 1.0  # 2 * mean(1, 2/3) > 1


def test_stouffer_detects_consistent_shift_and_log_p_is_finite():
    rng = np.random.default_rng(4)
    values = rng.standard_normal((2000, 100))
    values[:, 0] += 2.0
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    pooled = res.combine("stouffer")
    assert pooled.p_value == 0.0 or pooled.p_value < 1e-300
    assert np.isfinite(pooled.log_p_value)
    assert pooled.log_p_value == pytest.approx(float(special.log_ndtr(-pooled.statistic)))


# ---------------------------------------------------------------------------------------
# fisher_log_sf against mpmath
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 8, 50, 1000, 10000])
def test_fisher_log_sf_equals_mpmath(k):
    df = 2.0 * k
    for x in (
        0.0,
        1e-3,
        0.5,
        df / 2,
        df - math.sqrt(2 * df),
        df,
        df + 4 * math.sqrt(2 * df),
        10.0 * df,
        1e4,
        1e6,
    ):
        ref = ref_chi2_even_log_sf_mpmath(x, k)
        got = _core.fisher_log_sf(x, k)
        # log p to 1e-10 relative, or 1e-13 absolute where log p is near 0 (p near 1:
        # an absolute error in log p is a relative error in p).
        assert got == pytest.approx(ref, rel=1e-10, abs=1e-12), (k, x)
        p = special.chdtrc(df, x)
        if p > 1e-300:
            assert math.exp(got) == pytest.approx(p, rel=1e-9)


def test_log_p_value_finite_where_p_value_underflows():
    # Eight shards at p = 1e-50: the pooled p is about 1e-383, below the smallest double.
    pooled = tf.combine_shards([1e-50] * 8)
    assert pooled.p_value == 0.0
    ref = ref_chi2_even_log_sf_mpmath(pooled.statistic, 8)
    assert ref < math.log(1e-308) - 100  # far below the double range
    assert np.isfinite(pooled.log_p_value)
    assert pooled.log_p_value == pytest.approx(ref, rel=1e-12)
    assert "log p" in pooled.explain()
    deeper = tf.combine_shards(np.full(1000, 5e-324))
    assert deeper.log_p_value == pytest.approx(
        ref_chi2_even_log_sf_mpmath(deeper.statistic, 1000), rel=1e-11
    )


@pytest.mark.parametrize("statistic", [math.inf, math.nan, -1.0])
def test_fisher_log_sf_rejects_bad_statistic(statistic):
    with pytest.raises(ValueError, match="statistic"):
        _core.fisher_log_sf(statistic, 3)


@pytest.mark.parametrize("k", [0, -1])
def test_fisher_log_sf_rejects_no_shards(k):
    with pytest.raises(ValueError, match="n_shards"):
        _core.fisher_log_sf(1.0, k)


# ---------------------------------------------------------------------------------------
# Extreme magnitudes
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e150, 1e154, 1e200, 1e300, 1e307])
def test_huge_magnitudes_give_finite_accurate_moments(scale):
    # NumPy's squared deviations overflow beyond ~1e154; the kernel must not.
    rng = np.random.default_rng(int(math.log10(scale)))
    for m in (2, 7, 100, 1000):
        x = rng.uniform(-1.0, 1.0, size=m) * scale
        c = float(rng.uniform(-1.0, 1.0) * scale)
        p, mean, sd, z = _core.rank_test(c, x)
        mean_ref, sd_ref = ref_moments_mpmath(x)
        assert p == ref_rank_test(c, x)["p_value"]
        # NumPy's arithmetic on power-of-two-scaled values, bit for bit ...
        assert same_bits([mean, sd, z], ref_moments_scaled_numpy(x, c))
        # ... which is accurate.
        assert math.isfinite(mean) and math.isfinite(sd) and math.isfinite(z)
        assert mean == pytest.approx(mean_ref, rel=1e-12, abs=1e-12 * sd_ref)
        assert sd == pytest.approx(sd_ref, rel=1e-12)
        assert z == pytest.approx((c - mean_ref) / sd_ref, rel=1e-10, abs=1e-12)


def test_z_score_not_nan_when_sd_overflows():
    # True sd of (-M, -M, 0.9 M) is about 1.1 M > M = largest double, so sd = inf is the
    # correctly rounded answer; z = (M - mean) / sd must still be its true value (about
    # 1.25, computed in scaled units), not inf / inf = NaN.
    big = float(np.finfo(np.float64).max)
    values = [-big, -big, 0.9 * big]
    r = tf.exchangeability_test(big, values)
    assert r.permutation_std == math.inf
    _, _, z_ref = ref_moments_scaled_numpy(values, big)
    u = [-1.0, -1.0, 0.9]  # the same values in units of M: z is scale-free
    mu = sum(u) / 3
    z_exact = (1.0 - mu) / math.sqrt(sum((v - mu) ** 2 for v in u) / 2)
    assert r.z_score == z_ref and r.z_score == pytest.approx(z_exact, rel=1e-14)
    batched = tf.exchangeability_tests([big], [values])
    assert batched.z_scores[0] == r.z_score


# ---------------------------------------------------------------------------------------
# Errors: ValueError naming the argument
# ---------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


BAD_ALPHAS = [0.0, 1.0, -0.1, 1.5, NAN, INF]


@pytest.mark.parametrize("alpha", BAD_ALPHAS)
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        tf.exchangeability_test(0.0, [1.0, 2.0], alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        tf.combine_shards([0.5], alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        tf.exchangeability_tests([0.0], [[1.0]], alpha=alpha)


@pytest.mark.parametrize(
    ("canonical", "permuted", "name"),
    [
        (NAN, [1.0], "canonical_loglik"),
        (INF, [1.0], "canonical_loglik"),
        (-INF, [1.0], "canonical_loglik"),
        (0.0, [], "permuted_logliks"),
        (0.0, np.zeros(0), "permuted_logliks"),
        (0.0, [[1.0, 2.0]], "permuted_logliks"),
        (0.0, 3.0, "permuted_logliks"),
        (0.0, [1.0, NAN], "permuted_logliks"),
        (0.0, [INF, 1.0], "permuted_logliks"),
        (0.0, [-INF], "permuted_logliks"),
    ],
)
def test_exchangeability_test_errors(canonical, permuted, name):
    with pytest.raises(ValueError, match=name):
        tf.exchangeability_test(canonical, permuted)


@pytest.mark.parametrize("permuted", [["a", "b"], [1.0, None], [1j], {1.0}, {"a": 1.0}])
def test_unconvertible_permutations_raise_numpys_error_as_truescore_does(permuted):
    # truescore converts with np.asarray(..., dtype=float) and lets NumPy's TypeError or
    # ValueError through; the drop-in raises the same exception with the same message.
    with pytest.raises((TypeError, ValueError)) as theirs:
        ts.exchangeability_test(0.0, permuted)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
        tf.exchangeability_test(0.0, permuted)


@pytest.mark.parametrize(
    "p_values",
    [[], [[0.5, 0.5]], [0.0], [0.5, 0.0], [-0.1], [1.0000001], [2.0], [NAN], [INF], 0.5],
)
def test_combine_shards_errors(p_values):
    with pytest.raises(ValueError, match="p_values"):
        tf.combine_shards(p_values)


@pytest.mark.parametrize("method", ["Fisher", "mean", "", None, "tippett"])
def test_combine_unknown_method(method):
    res = tf.exchangeability_tests([0.0], [[1.0]])
    with pytest.raises(ValueError, match="method"):
        res.combine(method)


# ---------------------------------------------------------------------------------------
# Result objects and summaries
# ---------------------------------------------------------------------------------------


def test_result_fields_and_properties():
    r = tf.exchangeability_test(5.0, [1.0, 2.0, 3.0, 5.0], alpha=0.3)
    assert isinstance(r, ContaminationResult)
    assert r.p_value == 2 / 5 and r.n_permutations == 4 and r.canonical_loglik == 5.0
    assert r.resolution == 1 / 5 and r.level == pytest.approx(0.7)
    assert r.contaminated is False or r.contaminated == np.False_
    with pytest.raises(AttributeError):
        r.p_value = 0.1  # frozen


def test_explain_finding_and_floor():
    r = tf.exchangeability_test(10.0, np.arange(99.0) * 0.01, alpha=0.05)
    assert r.contaminated and r.p_value == r.resolution == 0.01
    text = r.explain()
    assert "finding" in text and "no finding" not in text
    assert "0.05" in text  # the level
    assert "99" in text  # the permutation budget
    assert "0.01" in text  # p-value and smallest possible p
    assert "floor" in text  # a p at the floor reflects the budget


def test_explain_negative_result_says_what_it_does_not_mean():
    r = tf.exchangeability_test(0.0, [1.0] * 19)
    assert not r.contaminated
    text = r.explain()
    assert "no finding" in text
    assert re.search(r"not evidence of a clean model", text)
    assert "shuffled" in text and "paraphrase" in text
    assert "0.05" in text  # resolution 1/20 printed as the smallest possible p-value
    assert "floor" not in text


# ---------------------------------------------------------------------------------------
# Property test: any input gives a finite result or a ValueError
# ---------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(canonical=wide_float, permuted=st.lists(wide_float, max_size=40))
def test_property_single(canonical, permuted):
    try:
        r = tf.exchangeability_test(canonical, permuted)
    except ValueError:
        return
    assert math.isfinite(canonical) and permuted and all(map(math.isfinite, permuted))
    assert_sane_rank_test(r.p_value, r.permutation_mean, r.permutation_std, r.z_score, permuted)
    # The mean lies between the extremes, up to the rounding of sum / m (NumPy's mean of
    # three equal values can be one ulp off them).
    lo, hi = min(permuted), max(permuted)
    assert lo - 1e-13 * abs(lo) <= r.permutation_mean <= hi + 1e-13 * abs(hi)


@settings(max_examples=200, deadline=None)
@given(st.lists(wide_float, max_size=20))
def test_property_combine_shards(p_values):
    try:
        pooled = tf.combine_shards(p_values)
    except ValueError:
        return
    assert all(0.0 < p <= 1.0 for p in p_values)
    assert 0.0 <= pooled.p_value <= 1.0
    assert math.isfinite(pooled.statistic) and pooled.statistic >= 0.0
    assert math.isfinite(pooled.log_p_value) and pooled.log_p_value <= 0.0


# --- item 11: what Stouffer's mid-p pooling does and does not promise -------------------


def _stouffer_rejections(n_shards: int, alpha: float, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):  # null: the canonical value exchangeable with 19 permutations
        values = rng.normal(size=(n_shards, 20))
        pooled = tf.exchangeability_tests(values[:, 0], values[:, 1:]).combine("stouffer")
        hits += pooled.p_value <= alpha
    return hits / reps


def test_stouffer_with_one_shard_is_the_mid_p_and_not_valid_as_documented() -> None:
    # Exactly: the pooled p is (0.5 + count) / 20, at most 0.025 only for count 0 (1/20).
    for count in range(20):
        permuted = np.where(np.arange(19) < count, 1.0, -1.0)
        tests = tf.exchangeability_tests([0.0], permuted[None, :])
        assert tests.counts[0] == count
        assert tests.combine("stouffer").p_value == pytest.approx((0.5 + count) / 20)
    assert "P(p <= 0.025) = 0.05" in tf.ExchangeabilityTests.combine.__doc__.replace("\n", " ")
    rate = _stouffer_rejections(1, 0.025, 4000, seed=1)
    se = math.sqrt(0.05 * 0.95 / 4000)
    assert abs(rate - 0.05) <= 3 * se


@pytest.mark.parametrize(
    ("n_shards", "alpha", "documented"), [(2, 0.05, 0.045), (10, 0.025, 0.021)]
)
def test_stouffer_with_several_shards_is_conservative_as_documented(
    n_shards: int, alpha: float, documented: float
) -> None:
    reps = 3000
    rate = _stouffer_rejections(n_shards, alpha, reps, seed=n_shards)
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert rate <= alpha + 3 * se
    assert abs(rate - documented) <= 3 * se


# --- Stouffer pooling: what its docstring says, tested ------------------------------------


def _stouffer(counts, n_permutations):
    from truescore_fast.contamination.batch import ExchangeabilityTests

    counts = np.asarray(counts, dtype=np.int64)
    m = np.asarray(n_permutations, dtype=np.int64)
    k = counts.size
    tests = ExchangeabilityTests(
        p_values=(1.0 + counts) / (m + 1.0),
        counts=counts,
        z_scores=np.zeros(k),
        means=np.zeros(k),
        sds=np.ones(k),
        n_permutations=m,
        canonical=np.zeros(k),
        alpha=0.05,
    )
    return tests.combine("stouffer")


def test_stouffer_weighs_every_shard_equally_and_is_one_sided() -> None:
    from statistics import NormalDist

    normal = NormalDist()
    # two shards, 9 and 999 permutations: mid-p 0.05 and 0.5005; unweighted Z
    pooled = _stouffer([0, 500], [9, 999])
    z = (normal.inv_cdf(1 - 0.05) + normal.inv_cdf(1 - 0.5005)) / math.sqrt(2)
    assert pooled.statistic == pytest.approx(z, rel=1e-12)
    assert pooled.p_value == pytest.approx(1 - normal.cdf(z), rel=1e-12)
    # swapping which shard has more permutations changes nothing but the mid-p values
    assert _stouffer([0, 0], [9, 999]).statistic == pytest.approx(
        (normal.inv_cdf(0.95) + normal.inv_cdf(1 - 0.5 / 1000)) / math.sqrt(2), rel=1e-12
    )
    # one-sided: published orders at the top give a small p, at the bottom a p near 1
    assert _stouffer([0] * 5, [19] * 5).p_value < 1e-4
    assert _stouffer([19] * 5, [19] * 5).p_value > 1 - 1e-4


@pytest.mark.parametrize(("n_shards", "alpha", "size"), [(100, 0.05, 0.045), (3, 0.025, 0.021)])
def test_stouffer_size_as_documented_up_to_100_shards(n_shards, alpha, size) -> None:
    # under the null each shard's count is uniform on 0..19 (19 permutations)
    rng = np.random.default_rng(n_shards)
    reps = 3000
    hits = sum(
        _stouffer(rng.integers(0, 20, n_shards), [19] * n_shards).p_value <= alpha
        for _ in range(reps)
    )
    se = math.sqrt(size * (1 - size) / reps)
    assert abs(hits / reps - size) <= 3 * se
    assert "size 0.045 at level 0.05 and 0.021 at 0.025 for 2 to 100 shards" in " ".join(
        tf.ExchangeabilityTests.combine.__doc__.split()
    )

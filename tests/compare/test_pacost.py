"""PaCoST paired confidence tests of ``compare/pacost.py`` against SciPy and brute-force
sign-flip enumeration, also at subnormal and huge differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as ts

# --- any input: a finite result or a ValueError ---------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from reference import ref_sign_flip_counts, ref_sign_flip_mc_counts, ref_sign_flip_p_at
from scipy import stats
from truescore_fast._random import philox_key
from truescore_fast.compare.pacost import paired_confidence_test

ALTERNATIVES = ("greater", "less", "two-sided")


def pairs(n, shift, seed):
    rng = np.random.default_rng(seed)
    rephrased = rng.normal(-1.0, 0.5, n)
    return rephrased + shift + rng.normal(0.0, 0.3, n), rephrased


# --- correctness against independent computations -------------------------------------


@pytest.mark.parametrize("alternative", ALTERNATIVES)
@pytest.mark.parametrize("n", [2, 7, 200])
def test_t_matches_scipy_ttest_rel(alternative, n):
    a, b = pairs(n, 0.05, n)
    res = paired_confidence_test(a, b, alternative=alternative, method="t", alpha=0.1)
    ref = stats.ttest_rel(a, b, alternative=alternative)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-12)
    ci = ref.confidence_interval(0.9)
    assert res.low == pytest.approx(ci.low, rel=1e-12)
    assert res.high == pytest.approx(ci.high, rel=1e-12)
    assert res.estimate == pytest.approx(np.mean(a - b), rel=1e-12)


@pytest.mark.parametrize("alternative", ALTERNATIVES)
def test_wilcoxon_matches_scipy(alternative):
    a, b = pairs(30, 0.1, 3)
    res = paired_confidence_test(a, b, alternative=alternative, method="wilcoxon")
    ref = stats.wilcoxon(a, b, alternative=alternative)
    assert res.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.statistic == ref.statistic


def test_hodges_lehmann_interval_is_the_inverted_signed_rank_test():
    # Independent check: W+(mu) from ranks, at points just inside and outside each end.
    a, b = pairs(25, 0.2, 4)
    d = a - b
    res = paired_confidence_test(a, b, alternative="two-sided", method="wilcoxon")
    n = d.size
    mean_w, sd_w = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = stats.norm.ppf(0.975)

    def accepted(mu):
        x = d - mu
        w_plus = stats.rankdata(np.abs(x))[x > 0].sum()
        return abs(w_plus - mean_w) <= z * sd_w + 1.0  # +1: W+ steps by whole ranks

    lo, hi = (res.low, res.high)
    eps = 1e-9
    assert accepted(lo + eps) and accepted(hi - eps)
    assert not accepted(lo - 0.05) and not accepted(hi + 0.05)


@pytest.mark.parametrize(
    "d",
    [
        [3, -1, 2, 5, 4, -2, 1, 6],
        [1, 1, 1, -1, 0, 2, -2, 0, 3],  # ties and zeros
        [-4],
        [2, 2, 2, 2, 2],
    ],
)
def test_exact_sign_flip_matches_enumeration(d):
    ref = ref_sign_flip_counts(d)
    for alternative in ALTERNATIVES:
        res = paired_confidence_test(
            np.array(d, float), np.zeros(len(d)), alternative=alternative, method="sign_flip"
        )
        assert res.exact and res.n_resamples == 2 ** len(d)
        assert res.p_value == ref[alternative] / 2 ** len(d)


def test_sign_flip_interval_inverts_the_test():
    # The lower bound is the smallest mu the one-sided test at alpha does not reject.
    rng = np.random.default_rng(5)
    d = np.round(rng.normal(0.4, 1.0, 8), 3)
    res = paired_confidence_test(d, np.zeros(8), method="sign_flip", alpha=0.1)
    lo = res.low
    assert ref_sign_flip_p_at(d, lo + 1e-7, "greater") > 0.1
    assert ref_sign_flip_p_at(d, lo - 1e-7, "greater") <= 0.1
    res = paired_confidence_test(d, np.zeros(8), method="sign_flip", alternative="less", alpha=0.1)
    hi = res.high
    assert ref_sign_flip_p_at(d, hi - 1e-7, "less") > 0.1
    assert ref_sign_flip_p_at(d, hi + 1e-7, "less") <= 0.1


@pytest.mark.parametrize("n", [25, 70])
def test_monte_carlo_sign_flip_matches_numpy_philox_stream(n):
    a, b = pairs(n, 0.03, n)
    seed, b_resamples = 11, 700
    ref = ref_sign_flip_mc_counts(a - b, philox_key(seed), b_resamples)
    for alternative in ALTERNATIVES:
        res = paired_confidence_test(
            a, b, method="sign_flip", alternative=alternative, n_resamples=b_resamples, seed=seed
        )
        assert not res.exact
        assert res.p_value == (1 + ref[alternative]) / (b_resamples + 1)


def test_sign_flip_is_thread_count_invariant_and_seeded():
    a, b = pairs(40, 0.05, 9)
    kw = dict(method="sign_flip", n_resamples=3000, alternative="two-sided")
    one = paired_confidence_test(a, b, seed=3, n_threads=1, **kw)
    two = paired_confidence_test(a, b, seed=3, n_threads=2, **kw)
    other = paired_confidence_test(a, b, seed=4, n_threads=2, **kw)
    assert one == two
    assert other.p_value != one.p_value


# --- calibration and coverage ----------------------------------------------------------

REPS = 400


MC_SE = math.sqrt(0.05 * 0.95 / REPS)  # 0.0109


@pytest.mark.parametrize("method", ["t", "wilcoxon", "sign_flip"])
def test_type_one_error_and_interval_coverage(method):
    # Null: symmetric differences about 0 -> rejection rate <= 0.05 (within 4 MC SE).
    # Shifted by 0.5: the two-sided 95% interval covers the centre 95% of the time.
    rng = np.random.default_rng(2024)
    rejections = covered = 0
    for _ in range(REPS):
        d = rng.standard_normal(12)
        rejections += paired_confidence_test(d, np.zeros(12), method=method).flagged
        shifted = paired_confidence_test(
            d + 0.5, np.zeros(12), method=method, alternative="two-sided"
        )
        covered += shifted.low <= 0.5 <= shifted.high
    assert rejections / REPS <= 0.05 + 4 * MC_SE
    assert abs(covered / REPS - 0.95) <= 4 * MC_SE


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("method", ["t", "wilcoxon", "sign_flip"])
def test_interval_coverage_beyond_exact_enumeration(method, alternative):
    # n = 30 > 20: the sign-flip interval is the Monte Carlo one. Differences centred on
    # 0.3, heavy-tailed (t with 3 df, symmetric) for the rank and sign-flip intervals,
    # normal for the t interval; one-sided intervals cover at the nominal 95% as well.
    rng = np.random.default_rng(31 + len(alternative) + len(method))
    covered = 0
    for rep in range(REPS):
        noise = rng.standard_normal(30) if method == "t" else rng.standard_t(3, 30)
        res = paired_confidence_test(
            noise + 0.3,
            np.zeros(30),
            method=method,
            alternative=alternative,
            n_resamples=2000,
            seed=rep,
        )
        assert not res.exact
        covered += res.low <= 0.3 <= res.high
    assert abs(covered / REPS - 0.95) <= 4 * MC_SE, covered / REPS


def test_power_against_a_real_form_effect():
    a, b = pairs(60, 0.15, 1)
    for method in ("t", "wilcoxon", "sign_flip"):
        assert paired_confidence_test(a, b, method=method).flagged


# --- result and summary ----------------------------------------------------------------


def test_summary_says_what_a_flag_does_and_does_not_establish():
    a, b = pairs(60, 0.15, 1)
    flagged = paired_confidence_test(a, b).summary()
    assert "any form effect" in flagged and "does not establish memorisation" in flagged
    quiet = paired_confidence_test(b, a).summary()
    assert "no flag" in quiet and "not evidence of a clean model" in quiet


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(confidence_original=[1.0, 2.0], confidence_rephrased=[1.0]), "same length"),
        (dict(confidence_original=[], confidence_rephrased=[]), "confidence_original"),
        (
            dict(confidence_original=[1.0, np.nan], confidence_rephrased=[1, 2]),
            "confidence_original",
        ),
        (
            dict(confidence_original=[1.0, 2.0], confidence_rephrased=[1, np.inf]),
            "confidence_rephrased",
        ),
        (dict(confidence_original=[[1.0]], confidence_rephrased=[[1.0]]), "1-D"),
        (dict(method="z"), "method"),
        (dict(alternative="bigger"), "alternative"),
        (dict(alpha=0.0), "alpha"),
        (dict(method="sign_flip", n_resamples=0), "n_resamples"),
        (dict(method="sign_flip", seed=-1), "seed"),
        (dict(method="sign_flip", n_threads=0), "n_threads"),
        (dict(method="t", confidence_original=[1.0], confidence_rephrased=[0.0]), "at least 2"),
        (
            dict(method="t", confidence_original=[2.0, 3.0], confidence_rephrased=[1.0, 2.0]),
            "zero variance",
        ),
        (
            dict(
                method="wilcoxon", confidence_original=[1.0, 2.0], confidence_rephrased=[1.0, 2.0]
            ),
            "zero for every pair",
        ),
    ],
)
def test_errors_name_the_problem(kwargs, name):
    args = dict(confidence_original=[1.0, 2.0, 4.0], confidence_rephrased=[0.5, 2.5, 3.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        paired_confidence_test(
            args.pop("confidence_original"), args.pop("confidence_rephrased"), **args
        )


def test_exact_true_refuses_large_n():
    with pytest.raises(ValueError, match="exact"):
        paired_confidence_test(np.arange(21.0), np.zeros(21), method="sign_flip", exact=True)


values = st.lists(
    st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=0, max_size=25
)


@settings(max_examples=60, deadline=None)
@given(
    values, values, st.sampled_from(["t", "wilcoxon", "sign_flip"]), st.sampled_from(ALTERNATIVES)
)
def test_any_input_gives_a_finite_result_or_value_error(a, b, method, alternative):
    try:
        res = paired_confidence_test(a, b, method=method, alternative=alternative, n_resamples=200)
    except ValueError:
        return
    assert 0.0 <= res.p_value <= 1.0
    assert not math.isnan(res.low) and not math.isnan(res.high)
    assert res.low <= res.high
    assert math.isfinite(res.estimate) and not math.isnan(res.statistic)


def test_huge_differences_are_scaled_not_overflowed():
    d = np.array([3.0, -1.0, 2.0, 5.0, 4.0, -2.0, 1.0, 6.0])
    small = paired_confidence_test(d, np.zeros(8), method="sign_flip")
    huge = paired_confidence_test(d * 2.0**1000, np.zeros(8), method="sign_flip")
    assert huge.p_value == small.p_value
    assert huge.low == small.low * 2.0**1000
    t_small = paired_confidence_test(d, np.zeros(8))
    t_huge = paired_confidence_test(d * 2.0**1000, np.zeros(8))
    assert t_huge.p_value == pytest.approx(t_small.p_value, rel=1e-12)


@pytest.mark.parametrize("method", ["t", "sign_flip"])
def test_interval_ends_beyond_float64_are_infinite_not_an_error(method):
    # Found by the property test above: the t interval's upper end for these two pairs
    # (and the sign-flip sum of two near-maximal differences) lies beyond the largest
    # double once scaled back; it is reported as infinite, not as an OverflowError.
    res = paired_confidence_test(
        [0.0, 1.7e308], [-4.9e307, 0.0], method=method, alternative="two-sided"
    )
    assert res.high == math.inf and math.isfinite(res.estimate)
    assert res.low <= res.estimate <= res.high
    if method == "sign_flip":
        assert res.statistic == math.inf


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_hodges_lehmann_bound_at_a_one_sided_level_below_a_half(alternative):
    # alpha = 0.999999 one-sided: the normal approximation's order statistic lies past
    # the last of the 21 Walsh averages of n = 6 (was an IndexError); the bound is the
    # extreme Walsh average, on the side the alternative names.
    d = np.array([0.0, 0.1, -0.2, 0.4, 0.3, 5e-324])
    result = paired_confidence_test(
        d, np.zeros(6), method="wilcoxon", alpha=0.999999, alternative=alternative
    )
    i, j = np.triu_indices(6)
    walsh = (d[i] + d[j]) / 2.0
    if alternative == "greater":
        assert result.low == walsh.max() and result.high == np.inf
    else:
        assert result.low == -np.inf and result.high == walsh.min()


def test_paired_confidence_test_at_subnormal_and_huge_differences() -> None:
    tiny = ts.paired_confidence_test([1e-320, 3e-320, 2e-320, 5e-320], [0] * 4)
    base = ts.paired_confidence_test([1.0, 3.0, 2.0, 5.0], [0] * 4)
    assert tiny.statistic == base.statistic and tiny.p_value == base.p_value
    assert 0.0 < tiny.low < tiny.estimate
    # The sign-flip p-value is computed in scaled units; the reported sum of differences
    # is infinite when it lies beyond the largest double (tests/compare/test_pacost.py pins this).
    huge = ts.paired_confidence_test(np.full(5, 1e308), np.zeros(5), method="sign_flip")
    assert (
        huge.p_value
        == ts.paired_confidence_test(np.ones(5), np.zeros(5), method="sign_flip").p_value
    )
    assert huge.statistic == math.inf and huge.estimate == 1e308
    with pytest.raises(ValueError, match="overflows float64"):
        ts.paired_confidence_test(np.full(5, 1e308), np.full(5, -1e308))

"""Issue 10, items 3-11: inputs that used to give a wrong or non-finite answer now give a
correct result or one clear error naming the argument."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as ts
from truescore_fast import _core
from truescore_fast.cli import main

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


# --- item 4: values that are not real numbers ------------------------------------------

NOT_REAL = {
    "complex": np.array([1.0 + 1j, 2.0, 3.0, 4.0]),
    "complex list": [1.0 + 1j, 2.0, 3.0, 4.0],
    "datetime64": np.array(["2020-01-01"] * 4, dtype="M8[D]"),
    "timedelta64": np.arange(4).astype("m8[s]"),
    "numeric strings": np.array(["1", "2", "3", "4"]),
    "string list": ["1", "2", "3", "4"],
    "None inside": np.array([1.0, None, 2.0, 3.0], dtype=object),
    "complex inside objects": np.array([1.0, 2j, 2.0, 3.0], dtype=object),
}


@pytest.mark.parametrize("bad", list(NOT_REAL.values()), ids=list(NOT_REAL))
def test_non_real_values_are_a_type_error_naming_the_argument(bad: object) -> None:
    with pytest.raises(TypeError, match="values must hold real numbers"):
        ts.seed_contrast(bad)
    with pytest.raises(TypeError, match="values must hold real numbers"):
        ts.finite_population_bootstrap(bad, population_size=10, replicates=10)
    with pytest.raises(TypeError, match="confidence_original must hold real numbers"):
        ts.paired_confidence_test(bad, np.zeros(4))
    with pytest.raises(TypeError, match="canonical must hold real numbers"):
        ts.sharded_likelihood_test(bad, np.zeros((4, 3)))
    with pytest.raises(TypeError, match="public must hold real numbers"):
        ts.matched_form_audit(bad, np.zeros((4, 2)))
    with pytest.raises(TypeError, match="d must hold real numbers"):
        ts.wald_interval(bad)


def test_real_values_of_any_real_dtype_are_converted() -> None:
    from decimal import Decimal
    from fractions import Fraction

    expect = ts.seed_contrast([1.0, 0.0, 1.0, 1.0]).estimate
    for same in (
        [True, False, True, True],
        np.array([1, 0, 1, 1], dtype=np.uint8),
        np.array([1, 0, 1, 1], dtype=np.float32),
        np.array([1, 0, 1, 1], dtype=np.longdouble),
        np.array([1, 0, 1, 1], dtype=object),
        [Decimal(1), Decimal(0), Fraction(1), 1],
    ):
        assert ts.seed_contrast(same).estimate == expect


def test_ragged_values_are_a_value_error_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="values must be an array of numbers"):
        ts.seed_contrast([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="values holds a number too large"):
        ts.seed_contrast([10**400, 1])


# --- item 5: disclosure records with NaN or a repeated key ----------------------------

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "disclosure" / "private_test_set.json"


@pytest.mark.parametrize("field", ["p_value", "statistic"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_in_a_record_mapping_is_a_problem(field: str, value: float) -> None:
    pytest.importorskip("jsonschema")
    record = json.loads(EXAMPLE.read_text())
    assert ts.validate_disclosure(record).valid
    record["audit_evidence"][0][field] = value
    result = ts.validate_disclosure(record)
    assert not result.valid
    assert result.problems[0] == (
        f"audit_evidence[0].{field}: {value!r} is not a JSON number (JSON has no NaN or Infinity)"
    )


def _with_p_value(text: str) -> str:
    """The example record's JSON text with its first p-value written as ``text``."""
    record = json.loads(EXAMPLE.read_text())
    record["audit_evidence"][0]["p_value"] = "@@"
    out = json.dumps(record, indent=2).replace('"p_value": "@@"', text)
    assert text in out
    return out


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_or_infinity_in_a_record_file_is_invalid(tmp_path: Path, literal: str) -> None:
    pytest.importorskip("jsonschema")
    text = _with_p_value(f'"p_value": {literal}')
    path = tmp_path / "record.json"
    path.write_text(text)
    result = ts.validate_disclosure(path)
    assert not result.valid
    assert "JSON has no NaN or Infinity" in result.problems[0]
    assert main(["disclose", "validate", str(path)]) == 1


def test_a_key_repeated_in_one_object_is_invalid(tmp_path: Path) -> None:
    pytest.importorskip("jsonschema")
    # The first copy is invalid; the parser's default (last wins) would hide it.
    text = _with_p_value('"p_value": "very small", "p_value": 0.011')
    path = tmp_path / "record.json"
    path.write_text(text)
    result = ts.validate_disclosure(path)
    assert not result.valid
    assert result.problems == (
        "(file): not valid JSON: the key 'p_value' appears twice in one object",
    )
    assert main(["disclose", "validate", str(path)]) == 1


# --- item 6: the SLCT at log-likelihoods whose squares overflow ------------------------


@pytest.mark.parametrize("variant", ["corrected", "published"])
@pytest.mark.parametrize("exponent", [520, 600, 1000])
def test_sharded_likelihood_test_is_scale_free_up_to_the_largest_double(
    variant: str, exponent: int
) -> None:
    rng = np.random.default_rng(1)
    canonical = rng.normal(size=8) + 0.5
    shuffled = rng.normal(size=(8, 5)) / 4
    base = ts.sharded_likelihood_test(canonical, shuffled, variant=variant)
    big = ts.sharded_likelihood_test(
        np.ldexp(canonical, exponent), np.ldexp(shuffled, exponent), variant=variant
    )
    assert big.statistic == base.statistic
    assert big.p_value == base.p_value
    assert big.contaminated == base.contaminated
    assert big.estimate == math.ldexp(base.estimate, exponent)
    assert big.sd_difference == math.ldexp(base.sd_difference, exponent)
    np.testing.assert_array_equal(big.differences, np.ldexp(base.differences, exponent))


def test_sharded_likelihood_test_refuses_differences_beyond_the_largest_double() -> None:
    with pytest.raises(ValueError, match="canonical minus the shuffled means overflows"):
        ts.sharded_likelihood_test(np.array([1e308, -1e308]), np.array([[-1e308], [1e308]]))


# --- item 7: quantiles for every alpha in (0, 1) ---------------------------------------


@pytest.mark.parametrize("p", [1e-300, 1e-100, 1e-17, 1e-10, 1e-3, 0.025, 0.5, 0.975, 1 - 1e-16])
def test_the_core_normal_quantile_equals_scipy_into_the_far_tail(p: float) -> None:
    from scipy.special import ndtri

    assert _core.testing.normal_quantile(p) == pytest.approx(float(ndtri(p)), rel=1e-15)


@pytest.mark.parametrize("alpha", [1e-10, 1e-17, 1e-300])
def test_tiny_alpha_gives_the_correct_finite_quantile(alpha: float) -> None:
    from scipy import special, stats

    d = np.linspace(-0.5, 0.5, 20)
    z = -float(stats.norm.ppf(alpha / 2))
    want = z * np.std(d, ddof=1) / math.sqrt(d.size)
    assert ts.wald_interval(d, alpha=alpha).half_width == pytest.approx(want, rel=1e-13)
    assert ts.wald_intervals(np.vstack([d, d]), alpha=alpha).half_width[1] == pytest.approx(
        want, rel=1e-13
    )
    x = np.array([0.3, -0.1, 0.5, 0.2, 0.4, 0.1])
    contrast = ts.seed_contrast(x, alpha=alpha)
    t_quantile = -float(stats.t.ppf(alpha / 2, x.size - 1))
    if not t_quantile > 0.0:  # SciPy's own t.ppf fails this far out; 1/x^5 tail of t_5
        x_beta = float(special.betaincinv(2.5, 0.5, alpha))
        t_quantile = math.sqrt(5.0 * (1.0 - x_beta) / x_beta)
    half = t_quantile * np.std(x, ddof=1) / math.sqrt(x.size)
    assert contrast.high - contrast.estimate == pytest.approx(half, rel=1e-12)
    for method in ("t", "wilcoxon", "sign_flip"):
        result = ts.paired_confidence_test(x, np.zeros(6), alpha=alpha, method=method)
        assert result.low <= result.estimate <= result.high
        assert result.alpha == alpha
    one_sided = ts.paired_confidence_test(x, np.zeros(6), alpha=alpha, method="t")
    assert math.isfinite(one_sided.low)
    table = ts.plan_audit_size(np.vstack([d, -d]), deltas=[0.05], alpha=alpha)
    assert np.isfinite(np.asarray(table.columns["n_normal"], dtype=float)).all()


def test_usual_alphas_keep_their_quantiles_bit_for_bit() -> None:
    from scipy import stats

    d = np.linspace(-0.5, 0.5, 20)
    for alpha in (0.05, 0.1, 0.01, 0.002):
        z = _core.testing.normal_quantile(1.0 - alpha / 2.0)  # the form used before
        assert ts.wald_interval(d, alpha=alpha).half_width == z * math.sqrt(
            np.var(d, ddof=1) / d.size
        )
        t_quantile = float(stats.t.ppf(1.0 - alpha / 2.0, d.size - 1))
        contrast = ts.seed_contrast(d, alpha=alpha)
        assert contrast.high - contrast.estimate == pytest.approx(
            t_quantile * np.std(d, ddof=1) / math.sqrt(d.size), rel=1e-15
        )


# --- item 10: an empty betting confidence set, a census --------------------------------


def test_a_census_betting_interval_is_the_known_mean() -> None:
    public = np.array([1.0] * 10 + [0.0] * 10)
    fresh = 1.0 - public
    audit = ts.matched_form_audit(public, fresh, population_size=20, seed=57)
    assert audit.estimate == 0.0
    assert not audit.claim
    assert (audit.primary.low, audit.primary.high) == (0.0, 0.0)
    gaps = np.array([1.0] * 10 + [-1.0] * 10)
    census = ts.betting_interval(gaps, population_size=20)
    assert (census.low, census.estimate, census.high) == (0.0, 0.0, 0.0)
    assert census.contains(0.0) and not census.empty


def test_an_empty_betting_set_is_reported_and_claims_nothing() -> None:
    gaps = np.array([1.0] * 5 + [-1.0] * 5)  # an order far from random
    iv = ts.betting_interval(gaps, population_size=11, alpha=0.2)
    assert iv.empty and iv.low > iv.high and iv.half_width == 0.0
    assert not iv.contains(iv.estimate) and not iv.contains(0.5 * (iv.low + iv.high))
    assert not iv.excludes_zero_above
    assert iv.to_dict()["empty"] is True
    assert "empty" in iv.summary()
    batch = ts.betting_intervals(np.vstack([gaps, np.zeros(10)]), population_size=11, alpha=0.2)
    assert batch.empty.tolist() == [True, False]
    assert batch.to_dict()["empty"] == [True, False]
    assert not batch.covers(np.array([iv.low, 0.0]))[0]
    assert "1 empty" in batch.summary() and "0 entirely above zero" in batch.summary()
    assert not ts.betting_interval(gaps, population_size=11).empty


def test_an_audit_on_an_empty_betting_set_claims_no_exposure() -> None:
    public = np.array([1.0] * 5 + [0.0] * 5)
    fresh = np.column_stack([1.0 - public, 1.0 - public])
    for seed in range(200):
        audit = ts.matched_form_audit(public, fresh, population_size=11, seed=seed, alpha=0.2)
        if audit.primary.empty:
            break
    else:
        pytest.skip("no seed in 0..199 orders the gaps into an empty betting set")
    assert audit.primary.method == "betting"
    assert not audit.claim and "empty" in audit.summary()


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


def test_paired_confidence_test_at_subnormal_and_huge_differences() -> None:
    tiny = ts.paired_confidence_test([1e-320, 3e-320, 2e-320, 5e-320], [0] * 4)
    base = ts.paired_confidence_test([1.0, 3.0, 2.0, 5.0], [0] * 4)
    assert tiny.statistic == base.statistic and tiny.p_value == base.p_value
    assert 0.0 < tiny.low < tiny.estimate
    # The sign-flip p-value is computed in scaled units; the reported sum of differences
    # is infinite when it lies beyond the largest double (tests/test_pacost.py pins this).
    huge = ts.paired_confidence_test(np.full(5, 1e308), np.zeros(5), method="sign_flip")
    assert (
        huge.p_value
        == ts.paired_confidence_test(np.ones(5), np.zeros(5), method="sign_flip").p_value
    )
    assert huge.statistic == math.inf and huge.estimate == 1e308
    with pytest.raises(ValueError, match="overflows float64"):
        ts.paired_confidence_test(np.full(5, 1e308), np.full(5, -1e308))


def test_matched_form_audit_with_a_radius_near_the_largest_double() -> None:
    audit = ts.matched_form_audit(np.ones(10), np.zeros((10, 2)), transport_radius=1e308)
    assert math.isfinite(audit.tau.half_width) and audit.tau.half_width >= 1e308
    assert audit.tau.low < 0.0 < audit.tau.high and not audit.claim


def test_batched_exchangeability_z_is_finite_or_an_error() -> None:
    permuted = np.array([[-1.7e308, -1.6e308, -1.65e308], [0.0, 1.0, 2.0]])
    tests = ts.exchangeability_tests(np.array([1.7e308, 1.0]), permuted)
    assert np.isfinite(tests.z_scores).all() and tests.z_scores[0] > 60
    tiny = np.array([[0.0, 1e-150, 2e-150], [0.0, 1.0, 2.0]])
    tests = ts.exchangeability_tests(np.array([1e158, 1.0]), tiny)
    assert tests.z_scores[0] == pytest.approx(1e308, rel=1e-12)
    with pytest.raises(ValueError, match=r"canonical\[0\].*z overflows"):
        ts.exchangeability_tests(np.array([2e162, 1.0]), tiny)


# --- item 11: what Stouffer's mid-p pooling does and does not promise -------------------


def _stouffer_rejections(n_shards: int, alpha: float, reps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):  # null: the canonical value exchangeable with 19 permutations
        values = rng.normal(size=(n_shards, 20))
        pooled = ts.exchangeability_tests(values[:, 0], values[:, 1:]).combine("stouffer")
        hits += pooled.p_value <= alpha
    return hits / reps


def test_stouffer_with_one_shard_is_the_mid_p_and_not_valid_as_documented() -> None:
    # Exactly: the pooled p is (0.5 + count) / 20, at most 0.025 only for count 0 (1/20).
    for count in range(20):
        permuted = np.where(np.arange(19) < count, 1.0, -1.0)
        tests = ts.exchangeability_tests([0.0], permuted[None, :])
        assert tests.counts[0] == count
        assert tests.combine("stouffer").p_value == pytest.approx((0.5 + count) / 20)
    assert "P(p <= 0.025) = 0.05" in ts.ExchangeabilityTests.combine.__doc__.replace("\n", " ")
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


# --- argument errors that used to escape as OverflowError, ZeroDivisionError, IndexError ---


def test_plan_audit_size_at_the_edges():
    gaps = np.array([0.1, -0.1, 0.2])
    tiny = ts.plan_audit_size(gaps, deltas=1e-300)  # delta**2 underflows to 0
    assert math.isinf(tiny["n_normal"][0]) and math.isinf(tiny["n_planned"][0])
    capped = ts.plan_audit_size(gaps, deltas=1e-300, population_size=1000)
    assert capped["n_normal"][0] == 1000  # no finite plan: the whole population
    with pytest.raises(ValueError, match="gaps"):
        ts.plan_audit_size(np.array(0.1))


def test_transport_radius_beyond_every_double_is_a_value_error():
    public, fresh = np.ones(5), np.zeros((5, 2))
    with pytest.raises(ValueError, match="transport_radius"):
        ts.matched_form_audit(public, fresh, control=(public, fresh), transport_radius=10**400)


def test_validate_disclosure_names_a_directory(tmp_path):
    pytest.importorskip("jsonschema")
    with pytest.raises(ValueError, match="is a directory"):
        ts.validate_disclosure(tmp_path)

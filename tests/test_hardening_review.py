"""Issue 10, review findings of the last session: scalar population sizes beyond int64,
tiny values in scale-free statistics, one check for real scalars, JSON Lines line
numbers, deep disclosure records, executor slices, Stouffer's docstring, CLI flags
beyond every double."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
import truescore_fast as ts
from truescore_fast import _numeric
from truescore_fast._validation import real_scalar

# --- scalar population sizes beyond int64 ------------------------------------------------

HUGE_SIZES = [2**63, 2**64, 1e300, 10**400, np.uint64(2**63), np.array(2.0**70)]


@pytest.mark.parametrize("size", HUGE_SIZES, ids=repr)
@pytest.mark.parametrize(
    "call",
    [
        lambda n: ts.wald_interval(np.linspace(-0.5, 0.5, 10), population_size=n),
        lambda n: ts.hoeffding_serfling_interval(np.linspace(-0.5, 0.5, 10), population_size=n),
        lambda n: ts.betting_interval(np.linspace(-0.5, 0.5, 10), population_size=n),
        lambda n: ts.wald_intervals(np.zeros((2, 10)), population_size=n),
        lambda n: ts.matched_form_intervals(np.zeros((2, 10)), population_size=n),
        lambda n: ts.matched_form_audit(np.ones(10), np.zeros((10, 2)), population_size=n),
        lambda n: ts.plan_audit_size(np.linspace(-0.5, 0.5, 20), population_size=n),
        lambda n: ts.finite_population_bootstrap(np.arange(10.0), population_size=n),
    ],
    ids=["wald", "hs", "betting", "wald_intervals", "mfi", "audit", "plan", "fpb"],
)
def test_a_scalar_population_size_beyond_int64_names_population_size(call, size) -> None:
    with pytest.raises(ValueError, match="population_size must be"):
        call(size)


def test_the_largest_int64_population_size_still_works() -> None:
    d = np.linspace(-0.5, 0.5, 10)
    near_infinite = ts.wald_interval(d, population_size=2**63 - 1)
    assert near_infinite.low == pytest.approx(ts.wald_interval(d).low, rel=1e-12)


# --- scale_exponent: both ways -----------------------------------------------------------


@pytest.mark.parametrize("largest", [5e-324, 1e-320, 1e-300, 2.0**-401, 1e300, 1e308])
def test_scale_exponent_brings_values_into_the_headroom(largest: float) -> None:
    e = _numeric.scale_exponent(largest, 2.0**400)
    scaled = math.ldexp(largest, e)
    assert 2.0**398 <= scaled <= 2.0**400
    assert math.ldexp(scaled, -e) == largest  # exact both ways


@pytest.mark.parametrize("largest", [0.0, 2.0**-400, 1e-100, 1.0, 1e100, 2.0**400])
def test_scale_exponent_leaves_ordinary_values_alone(largest: float) -> None:
    assert _numeric.scale_exponent(largest, 2.0**400) == 0


# --- tiny values: a scale-free statistic is the same at x * 2**-1070 ----------------------

X = np.array([3.0, 5.0, 1.0, 7.0, 2.0, 6.0, 4.0, -1.0])
TINY = 2.0**-1070  # X * TINY is exact: every value has at most 4 significant bits


@pytest.mark.parametrize(
    "statistic",
    [
        lambda x: ts.paired_confidence_test(x, np.zeros(8)).statistic,
        lambda x: ts.paired_confidence_test(x, np.zeros(8), method="wilcoxon").p_value,
        lambda x: ts.paired_confidence_test(x, x[::-1] / 2, method="sign_flip").p_value,
        lambda x: ts.sharded_likelihood_test(x, np.resize(x[::-1], (8, 3))).statistic,
        lambda x: (
            (
                ts.sharded_likelihood_test(x, np.resize(x[::-1], (8, 3)), variant="published")
            ).statistic
        ),
        lambda x: tuple(ts.exchangeability_tests(x[:2], np.resize(x, (2, 7))).z_scores),
        lambda x: tuple(
            ts.exchangeability_tests(x[:2], np.resize(x, 14), offsets=[0, 6, 14]).z_scores
        ),
        lambda x: (
            ts.exchangeability_tests(x[:2], np.resize(x, (2, 7))).combine("stouffer").p_value
        ),
        lambda x: (ts.seed_contrast(x).p_value, ts.seed_contrast(x).n_positive),
        lambda x: (
            ts.family_bootstrap_difference(x, x[::-1] * 2, families=np.arange(8) // 2).p_value
        ),
    ],
    ids=[
        "pacost t",
        "pacost wilcoxon",
        "pacost sign flip",
        "slct corrected",
        "slct published",
        "exchangeability z",
        "exchangeability z ragged",
        "stouffer",
        "seed contrast",
        "family bootstrap",
    ],
)
def test_scale_free_statistics_survive_subnormal_values(statistic) -> None:
    assert (X * TINY / TINY == X).all()
    assert statistic(X * TINY) == statistic(X)


def test_tiny_values_are_not_a_false_zero_variance() -> None:
    # each used to raise "zero variance" or report sd = 0, z = 0
    tiny = np.array([1e-320, 3e-320, 2e-320, 5e-320])
    assert ts.paired_confidence_test(tiny, np.zeros(4)).statistic > 0
    assert ts.sharded_likelihood_test(tiny, np.zeros((4, 2))).statistic > 0
    batch = ts.exchangeability_tests(tiny[:2], np.resize(tiny, (2, 4)))
    assert (batch.sds > 0).all() and batch.z_scores[0] < 0
    contrast = ts.seed_contrast(tiny)
    assert contrast.sd > 0 and contrast.low < contrast.high


def test_one_permutation_per_shard_has_z_zero() -> None:
    batch = ts.exchangeability_tests(np.array([1e-320, 2.0]), np.array([[3e-320], [1.0]]))
    assert list(batch.z_scores) == [0.0, 0.0]


# --- one check for real scalar arguments -------------------------------------------------


@pytest.mark.parametrize(
    "value", [True, np.True_, "0.05", 0.05 + 0j, None, np.array([0.05]), [0.05], object()]
)
def test_real_scalar_refuses_what_is_not_one_real_number(value) -> None:
    with pytest.raises(TypeError, match="^level must be a real number"):
        real_scalar("level", value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400, -(10**400)])
def test_real_scalar_refuses_non_finite_values(value) -> None:
    with pytest.raises(ValueError, match="^level "):
        real_scalar("level", value)


def test_real_scalar_range_and_accepted_forms() -> None:
    assert real_scalar("r", np.array(0.25), low=0.0) == 0.25
    assert real_scalar("r", np.float32(0.5), low=0.0) == 0.5
    assert real_scalar("r", Decimal("0.5"), low=0.0) == 0.5
    assert real_scalar("r", 3, low=0.0) == 3.0
    assert real_scalar("r", 0.0, low=0.0) == 0.0
    with pytest.raises(ValueError, match=r"r must lie in \(0, 1\)"):
        real_scalar("r", 0.0, low=0.0, high=1.0, low_open=True, high_open=True)
    with pytest.raises(ValueError, match=r"r must lie in \[0, inf\]"):
        real_scalar("r", -1e-300, low=0.0)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda v: ts.seed_contrast(np.arange(5.0), alpha=v), "alpha"),
        (lambda v: ts.wald_interval(np.zeros(5), alpha=v), "alpha"),
        (
            lambda v: ts.matched_form_audit(np.ones(5), np.zeros((5, 2)), transport_radius=v),
            "transport_radius",
        ),
        (lambda v: ts.plan_audit_size(np.linspace(-0.5, 0.5, 20), deltas=[0.1, v]), "deltas"),
        (lambda v: ts.plan_audit_size(np.linspace(-0.5, 0.5, 20), power=v), "power"),
        (lambda v: ts.leakage_audit(["q"] * 10, ["a"] * 10, ["b"] * 10, alpha=v), "alpha"),
    ],
    ids=["seed_contrast alpha", "wald alpha", "radius", "deltas", "power", "leakage alpha"],
)
@pytest.mark.parametrize("value", [np.array([0.05]), "0.05", True, 0.05j, None])
def test_every_real_scalar_argument_is_checked_alike(call, name, value) -> None:
    with pytest.raises(TypeError, match=f"^{name} must be a real number"):
        call(value)

"""``_numeric.py`` and the compiled core's numbers: the normal quantile against SciPy into the
far tail, ``scale_exponent``, and scale-free statistics that survive subnormal values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as ts
from truescore_fast import _core, _numeric

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

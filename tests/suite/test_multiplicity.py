"""``suite/multiplicity.py`` (``adjust``): Benjamini-Hochberg, Benjamini-Yekutieli and Holm
against the procedures run as procedures (tests/reference.py) and against the worked
example of Benjamini & Hochberg (1995); the FDR of BY under dependence, by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_adjusted_by_procedure, ref_holm
from truescore_fast.suite.multiplicity import FDR_METHODS, adjust

# Benjamini & Hochberg (1995), section 4: the 15 p-values of a multiple-endpoint study.
BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
           0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000]  # fmt: skip


def test_the_published_example_rejects_as_the_paper_says():
    # the paper: BH at 0.05 rejects the four smallest, Bonferroni-type procedures three;
    # BY (c(15) = 3.318) rejects p <= k x 0.05 / (15 x 3.318): the three smallest
    flagged = {m: int(np.sum(adjust(BH_1995, m) <= 0.05)) for m in FDR_METHODS}
    assert flagged == {"bh": 4, "by": 3, "holm": 3}


@pytest.mark.parametrize("method", FDR_METHODS)
@pytest.mark.parametrize("size", [1, 2, 7, 60])
def test_equals_the_procedure_run_at_every_level(method, size):
    rng = np.random.default_rng(size)
    p = rng.uniform(size=size) ** 3  # many small ones, so the procedures reject some
    if size > 2:
        p[1] = p[0]  # a tie
    got = adjust(p, method)
    want = ref_adjusted_by_procedure(p, method)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert np.all(got >= p) and np.all(got <= 1.0)


def test_holm_is_the_definition_and_by_is_bh_times_the_harmonic_sum():
    p = np.random.default_rng(3).uniform(size=40) ** 2
    np.testing.assert_allclose(adjust(p, "holm"), ref_holm(p), rtol=1e-15)
    c = sum(1.0 / i for i in range(1, 41))
    np.testing.assert_allclose(adjust(p, "by"), np.minimum(1.0, adjust(p, "bh") * c), rtol=1e-14)


def test_fdr_of_by_under_negative_dependence_stays_below_q():
    # pairs of two-sided-ish tests driven by one statistic with opposite signs: the kind of
    # dependence BH is not proven for; BY's FDR must stay <= q (checked within 3 MC SE)
    rng = np.random.default_rng(11)
    q, reps, m0, m1 = 0.1, 2000, 20, 5
    fdp = np.empty(reps)
    from scipy import stats

    for r in range(reps):
        z = rng.standard_normal(m0 // 2)
        null = stats.norm.sf(np.concatenate([z, -z]))
        alt = stats.norm.sf(rng.standard_normal(m1) + 3.0)
        flagged = adjust(np.concatenate([null, alt]), "by") <= q
        fdp[r] = flagged[:m0].sum() / max(flagged.sum(), 1)
    se = fdp.std(ddof=1) / np.sqrt(reps)
    assert fdp.mean() <= q + 3 * se
    assert fdp.mean() > 0  # the check can fail: some false flags do occur


@pytest.mark.parametrize(
    "bad, match",
    [([], "p_values"), ([0.1, float("nan")], "p_values"), ([1.5], "p_values"),
     ([[0.1, 0.2]], "p_values"), ([-0.1], "p_values")],
)  # fmt: skip
def test_bad_p_values_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        adjust(bad)


def test_unknown_method_is_refused():
    with pytest.raises(ValueError, match="method"):
        adjust([0.1], "bonferroni")

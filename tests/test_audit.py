"""Tests for the matched-form audit: intervals, the audit, the exact randomization test."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import (
    INTERVAL_REFERENCES,
    ref_randomization_binomial,
    ref_randomization_brute_force,
    ref_randomization_convolution,
)
from scipy import stats
from truescore_fast.audit import intervals as intervals_mod
from truescore_fast.audit import matched_form as audit_mod
from truescore_fast.audit import randomization as randomization_mod

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def one_interval(method, d, population_size=None, alpha=0.05):
    fn = getattr(tf, f"{method}_interval")
    if method in ("hoeffding", "bernstein"):
        return fn(d, alpha=alpha)
    return fn(d, population_size=population_size, alpha=alpha)


def gap_sample(rng, n, kind):
    if kind == "binary_k2":
        return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n, p=[0.05, 0.1, 0.6, 0.1, 0.15])
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, n)
    if kind == "zeros":
        return np.zeros(n)
    if kind == "extremes":
        return rng.choice([-1.0, 1.0], size=n)
    raise AssertionError(kind)


# --------------------------------------------------------------------- paper anchors


@pytest.mark.parametrize(
    ("n", "paper"), [(120, 0.2480), (200, 0.1921), (400, 0.1358), (800, 0.0960), (1200, 0.0784)]
)
def test_hoeffding_half_widths_match_the_paper(n, paper):
    # The formula, R sqrt(ln(2/alpha)/(2n)) with R = 2, evaluated here, against the
    # paper's printed four-decimal values, and the library against the formula.
    formula = 2.0 * math.sqrt(math.log(2.0 / 0.05) / (2.0 * n))
    assert round(formula, 4) == paper
    iv = tf.hoeffding_interval(np.zeros(n), alpha=0.05)
    assert iv.half_width == pytest.approx(formula, rel=1e-14)
    assert round(iv.half_width, 4) == paper


def test_bernstein_to_hoeffding_ratio_at_n200_spans_the_paper_range():
    n = 200
    hoeff = tf.hoeffding_interval(np.zeros(n)).half_width
    ratios = []
    # feasible unbiased variances: from all-equal gaps (s^2 = 0) to half at -1 and half
    # at +1 (the largest possible); in between, mixtures of 0 and +-1
    for n_extreme in range(0, n + 1, 20):
        d = np.zeros(n)
        d[:n_extreme:2] = -1.0
        d[1:n_extreme:2] = 1.0
        ratios.append(tf.bernstein_interval(d).half_width / hoeff)
    assert round(min(ratios), 3) == 0.535
    assert round(max(ratios), 3) == 1.628
    assert np.all(np.diff(ratios) > 0)


# ----------------------------------------------------------------- NumPy reference


@pytest.mark.parametrize(
    ("method", "with_population"),
    [
        (m, w)
        for m in tf.INTERVAL_METHODS
        for w in (False, True)
        if w or m != "hoeffding_serfling"
    ],  # Hoeffding-Serfling needs N
)
@pytest.mark.parametrize("n", [2, 7, 200, 1000])
@pytest.mark.parametrize("kind", ["binary_k2", "uniform", "zeros", "extremes"])
def test_every_interval_equals_the_numpy_reference(method, n, kind, with_population):
    rng = np.random.default_rng(n * 7 + len(kind))
    d = gap_sample(rng, n, kind)
    pop = 3 * n + 5 if with_population else None
    for alpha in (0.05, 0.2):
        got = one_interval(method, d, pop, alpha)
        want = INTERVAL_REFERENCES[method](d, pop, alpha)
        tol = 1e-9 if method == "betting" else 1e-12
        assert got.low == pytest.approx(want[0], abs=tol)
        assert got.high == pytest.approx(want[1], abs=tol)
        assert got.estimate == pytest.approx(want[2], abs=1e-15)
        assert got.half_width == pytest.approx(want[3], abs=tol)
        assert got.method == method and got.alpha == alpha
        assert got.low <= got.estimate <= got.high or method == "betting"


def test_betting_census_without_replacement_is_the_mean():
    # With N = n the last conditional mean is N (m - x-bar) + x_n, which leaves [0, 1]
    # once m is more than 1/N from the sample mean: the census pins the mean to +-2/N.
    rng = np.random.default_rng(5)
    d = gap_sample(rng, 60, "binary_k2")
    iv = tf.betting_interval(d, population_size=60)
    assert iv.low <= d.mean() <= iv.high
    assert iv.high - iv.low <= 4.0 / 60 + 1e-8
    assert iv.high - iv.low < 0.2 * (lambda w: w.high - w.low)(tf.betting_interval(d))


def test_betting_depends_on_order_and_is_narrower_than_hoeffding():
    rng = np.random.default_rng(11)
    d = gap_sample(rng, 200, "binary_k2")
    a = tf.betting_interval(d, population_size=1000)
    b = tf.betting_interval(d[::-1].copy(), population_size=1000)
    assert (a.low, a.high) != (b.low, b.high)
    assert a.half_width < 0.5 * tf.hoeffding_interval(d).half_width


# ------------------------------------------------------------------ batched, threads


def test_many_audits_at_once_equal_one_at_a_time():
    rng = np.random.default_rng(2)
    gaps = np.stack([gap_sample(rng, 50, "binary_k2") for _ in range(40)])
    pops = rng.integers(50, 400, size=40)
    out = tf.matched_form_intervals(gaps, population_size=pops)
    assert set(out) == set(tf.INTERVAL_METHODS)
    for method, ivs in out.items():
        assert len(ivs) == 40
        for a in range(40):
            one = one_interval(method, gaps[a], int(pops[a]))
            assert (ivs[a].low, ivs[a].high, ivs[a].estimate) == (one.low, one.high, one.estimate)
    single = tf.betting_intervals(gaps, population_size=int(pops[0]))
    assert single[0] == tf.betting_interval(gaps[0], population_size=int(pops[0]))


def test_thread_count_never_changes_results():
    rng = np.random.default_rng(3)
    gaps = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(301, 80))
    one = tf.matched_form_intervals(gaps, population_size=500, n_threads=1)
    two = tf.matched_form_intervals(gaps, population_size=500, n_threads=2)
    many = tf.matched_form_intervals(gaps, population_size=500, n_threads=7)
    for m in one:
        for field in ("low", "high", "estimate", "half_width"):
            np.testing.assert_array_equal(getattr(one[m], field), getattr(two[m], field))
            np.testing.assert_array_equal(getattr(one[m], field), getattr(many[m], field))


def test_batched_forms_without_population():
    rng = np.random.default_rng(4)
    gaps = rng.uniform(-1, 1, size=(5, 30))
    assert set(tf.matched_form_intervals(gaps)) == {"hoeffding", "bernstein", "wald", "betting"}
    for name in ("hoeffding", "bernstein", "wald", "betting"):
        ivs = getattr(tf, f"{name}_intervals")(gaps)
        assert ivs.covers(ivs.estimate).shape == (5,)
    hs = tf.hoeffding_serfling_intervals(gaps, population_size=np.full(5, 100))
    assert hs[2] == tf.hoeffding_serfling_interval(gaps[2], population_size=100)


# ------------------------------------------------------------------------- coverage

REPLICATIONS = 2000
COVERAGE_FLOOR = 0.95 - 3 * math.sqrt(0.95 * 0.05 / REPLICATIONS)


def population(kind: str, size: int = 1000) -> np.ndarray:
    """A finite population of gaps with exact proportions."""
    if kind == "sparse3pct":  # only 3% of gaps are nonzero
        counts = {1.0: 15, -1.0: 10, 0.5: 5, 0.0: size - 30}
    elif kind == "k2_realistic":
        counts = {-1.0: 50, -0.5: 100, 0.0: 600, 0.5: 100, 1.0: 150}
    elif kind == "averaged":  # averages of 4 samples, skewed
        counts = {-0.75: 40, -0.25: 160, 0.0: 300, 0.25: 250, 0.5: 150, 1.0: 100}
    else:
        raise AssertionError(kind)
    assert sum(counts.values()) == size
    return np.repeat(np.array(list(counts)), list(counts.values()))


def srs_samples(pop: np.ndarray, n: int, reps: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.ascontiguousarray(rng.permuted(np.tile(pop, (reps, 1)), axis=1)[:, :n])


def coverage(kind: str, n: int, seed: int) -> dict[str, float]:
    pop = population(kind)
    samples = srs_samples(pop, n, REPLICATIONS, seed)
    out = tf.matched_form_intervals(samples, population_size=pop.size)
    return {m: float(ivs.covers(pop.mean()).mean()) for m, ivs in out.items()}


@pytest.mark.parametrize("kind", ["sparse3pct", "k2_realistic", "averaged"])
@pytest.mark.parametrize("n", [10, 25, 50, 200])
def test_valid_intervals_cover_in_finite_populations(kind, n):
    cov = coverage(kind, n, seed=1000 + n)
    for method in ("hoeffding", "bernstein", "hoeffding_serfling", "betting"):
        assert cov[method] >= COVERAGE_FLOOR, (method, cov)


def test_wald_undercoverage_is_measured_and_documented():
    # The documented figures (wald_interval's docstring and the module docstring):
    # 0.25 at n = 10, 0.52 at n = 25 and 0.79 at n = 50 with 3% nonzero gaps. The
    # n = 10 figure is also the exact 1 - C(970, 10) / C(1000, 10) = 0.263 up to MC error:
    # the samples with no nonzero gap give the interval [0, 0], which misses the mean.
    se = 3 * math.sqrt(0.25 / REPLICATIONS)
    documented = {10: 0.25, 25: 0.52, 50: 0.79}
    for n, value in documented.items():
        measured = coverage("sparse3pct", n, seed=1000 + n)["wald"]
        assert abs(measured - value) <= se + 0.01, (n, measured)
        assert f"{value:.2f} at n = {n}" in tf.wald_interval.__doc__
    exact = 1 - math.comb(970, 10) / math.comb(1000, 10)
    assert abs(coverage("sparse3pct", 10, seed=1010)["wald"] - exact) <= se
    # Where the guardrail does not bite it is close to nominal.
    assert coverage("k2_realistic", 200, seed=7)["wald"] >= 0.93


# ------------------------------------------------------------------------ the audit


def k2_scores(rng, n, p_public=0.6, p_fresh=0.6):
    return (
        (rng.random(n) < p_public).astype(float),
        (rng.random((n, 2)) < p_fresh).astype(float),
    )


def test_audit_reports_scores_intervals_and_reproducible_order():
    rng = np.random.default_rng(8)
    pub, fr = k2_scores(rng, 200)
    res = tf.matched_form_audit(pub, fr, population_size=1000, seed=123)
    d = pub - fr.mean(axis=1)
    assert res.public_score == pytest.approx(pub.mean())
    assert res.fresh_score == pytest.approx(fr.mean())
    assert res.estimate == pytest.approx(d.mean())
    assert res.n == 200 and res.n_forms == 2
    assert res.nonzero_gaps == np.count_nonzero(d)
    assert set(res.intervals) == set(tf.INTERVAL_METHODS)
    assert res.primary.method == "wald" and "guardrail" in res.primary_reason
    assert res.seed == 123
    np.testing.assert_array_equal(np.sort(res.order), np.arange(200))
    assert res.intervals["betting"] == tf.betting_interval(d[res.order], population_size=1000)
    again = tf.matched_form_audit(pub, fr, population_size=1000, seed=123)
    assert again.intervals == res.intervals
    recorded = tf.matched_form_audit(pub, fr, population_size=1000)
    replay = tf.matched_form_audit(pub, fr, population_size=1000, seed=recorded.seed)
    assert replay.intervals == recorded.intervals
    text = res.summary()
    assert "does not mean" in text and "77%" in text


@pytest.mark.parametrize("fallback", ["betting", "hoeffding", "bernstein", "hoeffding_serfling"])
def test_guardrail_makes_the_fallback_primary(fallback):
    pub = np.zeros(100)
    fr = np.zeros((100, 2))
    pub[:10] = 1.0  # 10 nonzero gaps < 30
    res = tf.matched_form_audit(pub, fr, population_size=500, fallback=fallback, seed=0)
    assert res.nonzero_gaps == 10
    assert res.primary.method == fallback
    assert res.primary == res.intervals[fallback]
    res2 = tf.matched_form_audit(pub, fr, population_size=500, guardrail=5, seed=0)
    assert res2.primary.method == "wald"


def test_sensitivity_interval_and_claim_rule():
    rng = np.random.default_rng(9)
    pub, fr = k2_scores(rng, 400, p_public=0.9, p_fresh=0.5)
    cpub, cfr = k2_scores(rng, 150, p_public=0.55, p_fresh=0.5)
    r = 0.03
    res = tf.matched_form_audit(
        pub, fr, control=(cpub, cfr), transport_radius=r, population_size=2000, seed=4
    )
    d = pub - fr.mean(axis=1)
    dc = cpub - cfr.mean(axis=1)
    prim = tf.wald_interval(d, population_size=2000, alpha=0.025)
    cw = tf.wald_interval(dc, alpha=0.025)
    ch = tf.hoeffding_interval(dc, alpha=0.025)
    assert res.control.estimate == pytest.approx(dc.mean())
    assert res.tau.low == pytest.approx(prim.low - (cw.high + r), abs=1e-15)
    assert res.tau.high == pytest.approx(prim.high - (cw.low - r), abs=1e-15)
    assert res.tau_intervals["hoeffding"].low == pytest.approx(prim.low - (ch.high + r))
    assert res.tau_intervals["fixed"].low == pytest.approx(prim.low - (dc.mean() + r))
    assert res.claim == (res.primary.low > 0 and res.tau.low > 0)
    assert res.claim
    # a radius that swallows the effect removes the claim
    big = tf.matched_form_audit(pub, fr, control=(cpub, cfr), transport_radius=0.5, seed=4)
    assert not big.claim and big.primary.low > 0
    # no effect -> no claim
    pub0, fr0 = k2_scores(rng, 200)
    assert not tf.matched_form_audit(pub0, fr0, seed=1).claim


def test_audit_without_control_uses_the_radius_alone():
    rng = np.random.default_rng(10)
    pub, fr = k2_scores(rng, 100, p_public=0.8, p_fresh=0.5)
    res = tf.matched_form_audit(pub, fr, transport_radius=0.1, seed=2)
    half = tf.wald_interval(pub - fr.mean(axis=1), alpha=0.025)
    assert res.control is None
    assert res.tau.low == pytest.approx(half.low - 0.1)
    assert res.tau.high == pytest.approx(half.high + 0.1)
    assert "no control bank" in res.summary()
    assert res.to_dict()["claim"] == res.claim


def test_audit_accepts_one_fresh_form_and_averaged_labels():
    rng = np.random.default_rng(12)
    pub = rng.integers(0, 5, 80) / 4
    fr = rng.integers(0, 5, 80) / 4
    res = tf.matched_form_audit(pub, fr, seed=0)
    assert res.n_forms == 1
    assert res.estimate == pytest.approx(np.mean(pub - fr))


# ------------------------------------------------------------------ long-format table


def long_table(models: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    out = io.StringIO()
    out.write("model,parent,form,correct\n")
    for model, (pub, fr) in models.items():
        for i in range(pub.size):
            out.write(f"{model},p{i},public,{pub[i]}\n")
            for k in range(fr.shape[1]):
                out.write(f"{model},p{i},fresh{k},{fr[i, k]}\n")
    return out.getvalue()


def test_long_format_table_gives_one_audit_per_model(tmp_path):
    rng = np.random.default_rng(13)
    data = {"m1": k2_scores(rng, 60), "m2": k2_scores(rng, 60, p_public=0.9)}
    path = tmp_path / "audit.csv"
    path.write_text(long_table(data))
    tables = tf.read_audit_table(path)
    assert list(tables) == ["m1", "m2"]
    for model, (pub, fr) in data.items():
        np.testing.assert_array_equal(tables[model].public, pub)
        np.testing.assert_array_equal(tables[model].fresh, fr)
    results = tf.matched_form_audits(path, seed=3)
    direct = tf.matched_form_audit(*data["m2"], seed=3)
    assert results["m2"].intervals == direct.intervals
    # a mapping of columns works too, and no model column means one audit
    cols = {
        "parent": ["a", "a", "b", "b"],
        "form": ["public", "f", "public", "f"],
        "correct": [1, 0, 1, 1],
    }
    assert list(tf.read_audit_table(cols)) == ["all"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("parent,form,correct\na,fresh,1\na,fresh2,0\n", "missing its public form"),
        ("parent,form,correct\na,public,1\n", "no fresh form"),
        ("parent,form,correct\na,public,1\na,public,0\na,f,1\n", "duplicate"),
        ("parent,form,correct\na,public,x\na,f,1\n", "correct must be a number"),
        ("parent,form,correct\na,public,2\na,f,1\n", r"\[0, 1\]"),
        ("parent,correct\na,1\n", "missing the column 'form'"),
        ("parent,form,correct\na,public,1\na,f,1\nb,public,1\nb,f,1\nb,g,0\n", "same number"),
    ],
)
def test_table_errors_name_the_problem(text, match):
    with pytest.raises(ValueError, match=match):
        tf.read_audit_table(io.StringIO(text))


def test_control_table_must_cover_every_model(tmp_path):
    rng = np.random.default_rng(14)
    main = tmp_path / "a.csv"
    ctrl = tmp_path / "c.csv"
    main.write_text(long_table({"m1": k2_scores(rng, 20), "m2": k2_scores(rng, 20)}))
    ctrl.write_text(long_table({"m1": k2_scores(rng, 20)}))
    with pytest.raises(ValueError, match="control has no rows for model 'm2'"):
        tf.matched_form_audits(main, control=ctrl)


# ------------------------------------------------------------- randomization test


def brute_cases():
    rng = np.random.default_rng(20)
    cases = []
    for k in (1, 2, 3):
        for n in (2, 4, 5):
            cases.append(
                ((rng.random(n) < 0.6).astype(float), (rng.random((n, k)) < 0.4).astype(float))
            )
    for den, k in ((2, 2), (3, 1), (4, 2)):
        n = 4
        cases.append((rng.integers(0, den + 1, n) / den, rng.integers(0, den + 1, (n, k)) / den))
    return cases


@pytest.mark.parametrize("case", range(12))
def test_exact_test_equals_brute_force_enumeration(case):
    pub, fr = brute_cases()[case]
    want = ref_randomization_brute_force(pub, fr)
    for alt, w in zip(("greater", "less", "two-sided"), want, strict=True):
        res = tf.randomization_test(pub, fr, alternative=alt)
        assert res.method.startswith("exact")
        assert res.p_value == pytest.approx(w, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(6))
def test_one_fresh_form_is_mcnemars_exact_test(seed):
    rng = np.random.default_rng(seed)
    n = [30, 200, 1000, 5000, 17, 60][seed]
    pub = (rng.random(n) < 0.55).astype(float)
    fr = (rng.random(n) < 0.45).astype(float)
    b = int(np.sum((pub == 1) & (fr == 0)))
    c = int(np.sum((pub == 0) & (fr == 1)))
    for alt in ("greater", "less", "two-sided"):
        res = tf.randomization_test(pub, fr, alternative=alt)
        want = stats.binomtest(b, b + c, 0.5, alternative=alt).pvalue
        assert res.p_value == pytest.approx(want, rel=1e-10)


def test_binary_k2_matches_the_binomial_convolution_and_is_not_doubled():
    rng = np.random.default_rng(21)
    pub = (rng.random(3000) < 0.52).astype(float)
    fr = (rng.random((3000, 2)) < 0.5).astype(float)
    ints = np.column_stack([pub, fr]).astype(int)
    n_by_sum = np.bincount(ints.sum(axis=1), minlength=4)
    want = ref_randomization_binomial(n_by_sum, 2, int(pub.sum()))
    res = tf.randomization_test(pub, fr, alternative="two-sided")
    assert (res.p_greater, res.p_less, res.p_two_sided) == pytest.approx(want, rel=1e-9)
    assert res.p_two_sided != pytest.approx(min(1.0, 2 * min(res.p_greater, res.p_less)), rel=1e-6)


def test_lattice_matches_numpy_convolution_and_tiny_p_values_keep_precision():
    rng = np.random.default_rng(22)
    ints_pub = rng.integers(0, 5, 300)
    ints_fr = rng.integers(0, 5, (300, 2))
    want = ref_randomization_convolution(ints_pub, ints_fr)
    res = tf.randomization_test(ints_pub / 4, ints_fr / 4, alternative="two-sided")
    assert res.method == "exact-lattice" and res.lattice_denominator == 4
    assert (res.p_greater, res.p_less, res.p_two_sided) == pytest.approx(want, rel=1e-9)
    # an extreme case: p far below double epsilon stays relative-accurate
    pub = np.ones(60)
    fr = np.zeros((60, 1))
    res = tf.randomization_test(pub, fr)
    assert res.p_value == pytest.approx(0.5**60, rel=1e-12)


def test_monte_carlo_agrees_with_exact_within_its_error():
    rng = np.random.default_rng(23)
    pub = rng.integers(0, 3, 120) / 2
    fr = rng.integers(0, 3, (120, 2)) / 2
    exact = tf.randomization_test(pub, fr, alternative="two-sided")
    mc = tf.randomization_test(
        pub, fr, alternative="two-sided", method="monte_carlo", n_resamples=20000, seed=5
    )
    for a, b in ((exact.p_greater, mc.p_greater), (exact.p_two_sided, mc.p_two_sided)):
        se = math.sqrt(a * (1 - a) / 20000)
        assert abs(a - b) <= 4 * se + 1 / 20001
    again = tf.randomization_test(
        pub,
        fr,
        alternative="two-sided",
        method="monte_carlo",
        n_resamples=20000,
        seed=5,
        n_threads=1,
    )
    assert again == mc
    # scores on no lattice go to Monte Carlo under "auto", and are refused by "exact"
    noisy = np.clip(pub + rng.normal(0, 0.01, 120) * np.sqrt(2) / 7, 0, 1)
    assert tf.randomization_test(noisy, fr, seed=1).method == "monte-carlo"
    with pytest.raises(ValueError, match="lattice"):
        tf.randomization_test(noisy, fr, method="exact")


@pytest.mark.parametrize("labels", ["binary", "averaged"])
def test_type_one_error_is_at_most_alpha(labels):
    rng = np.random.default_rng(24)
    reps, n, alpha = 1500, 40, 0.05
    rejections = 0
    for _ in range(reps):
        p = rng.uniform(0.1, 0.9, size=(n, 1))
        if labels == "binary":
            vals = (rng.random((n, 3)) < p).astype(float)
        else:
            vals = (rng.random((n, 3, 4)) < p[:, :, None]).mean(axis=2)
        res = tf.randomization_test(vals[:, 0], vals[:, 1:])
        rejections += res.p_value <= alpha
    assert rejections / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)


def test_randomization_summary_says_it_is_not_a_contamination_test():
    res = tf.randomization_test(
        np.array([1.0, 0, 1, 1]), np.array([[0.0, 1], [0, 0], [1, 1], [0, 0]])
    )
    assert "does not identify contamination" in res.summary()
    assert "Table 13" in tf.randomization_test.__doc__


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tf.hoeffding_interval([0.1, np.nan]), "non-finite"),
        (lambda: tf.bernstein_interval([0.1, 1.5]), r"\[-1, 1\]"),
        (lambda: tf.betting_interval([0.1]), "at least 2"),
        (lambda: tf.wald_interval([0.1, 0.2, 0.3], population_size=2), "population_size"),
        (lambda: tf.wald_interval([0.1, 0.2], population_size=2.5), "population_size"),
        (
            lambda: tf.hoeffding_serfling_interval([0.1, 0.2], population_size=None),
            "population_size",
        ),
        (lambda: tf.hoeffding_interval([[0.1, 0.2]]), "1-D"),
        (lambda: tf.hoeffding_interval([0.1, 0.2], alpha=1.0), "alpha"),
        (lambda: tf.betting_intervals([0.1, 0.2]), "2-D"),
        (
            lambda: tf.betting_intervals(np.zeros((3, 4)), population_size=[5, 5]),
            "population_size",
        ),
        (lambda: tf.betting_intervals(np.zeros((3, 4)), n_threads=0), "n_threads"),
        (lambda: tf.matched_form_intervals(np.zeros((3, 4)), methods=("nope",)), "methods"),
        (lambda: tf.matched_form_audit([1, 0], [[0, 1]]), "one row per parent"),
        (lambda: tf.matched_form_audit([1, 0, 2], [0, 1, 1]), r"public must lie in \[0, 1\]"),
        (lambda: tf.matched_form_audit([1, 0], [0, np.nan]), "fresh contains non-finite"),
        (lambda: tf.matched_form_audit([1], [0]), "at least 2"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], population_size=1), "population_size"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], transport_radius=-1), "transport_radius"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], fallback="wald"), "fallback"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], guardrail=1.5), "guardrail"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], seed=-3), "seed"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], control=([1, 0],)), "control"),
        (lambda: tf.matched_form_audit([1, 0], [0, 1], control=([1], [0])), "control public"),
        (lambda: tf.randomization_test([1, 0], [0, 1], alternative="both"), "alternative"),
        (lambda: tf.randomization_test([1, 0], [0, 1], method="fast"), "method"),
        (
            lambda: tf.randomization_test([1, 0], [0, 1], method="monte_carlo", n_resamples=0),
            "n_resamples",
        ),
    ],
)
def test_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


finite_or_not = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    d=st.lists(finite_or_not | st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0]), max_size=12),
    pop=st.none() | st.integers(-2, 40),
    method=st.sampled_from(tf.INTERVAL_METHODS),
    alpha=st.floats(0.001, 0.999) | st.sampled_from([0.0, 1.0, -0.1]),
)
def test_property_intervals_are_finite_or_raise(d, pop, method, alpha):
    try:
        iv = one_interval(method, d, pop, alpha)
    except ValueError:
        return
    assert all(math.isfinite(v) for v in (iv.low, iv.high, iv.estimate, iv.half_width))
    assert -1.0 <= iv.low <= iv.high <= 1.0


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.5, 1.0, 0.3, 2.0, float("nan")]),
            st.sampled_from([0.0, 1.0, 0.25, -1.0]),
        ),
        max_size=10,
    ),
    radius=st.sampled_from([0.0, 0.05, -0.1, float("inf")]),
)
def test_property_audit_and_test_are_finite_or_raise(rows, radius):
    pub = [r[0] for r in rows]
    fr = [r[1] for r in rows]
    try:
        res = tf.matched_form_audit(pub, fr, transport_radius=radius, seed=0)
    except ValueError:
        pass
    else:
        assert math.isfinite(res.tau.low) and math.isfinite(res.tau.high)
    try:
        test = tf.randomization_test(pub, fr, alternative="two-sided", n_resamples=99, seed=0)
    except ValueError:
        return
    assert 0.0 <= test.p_value <= 1.0


def test_public_names_are_exported():
    for module in (intervals_mod, audit_mod, randomization_mod):
        for name in module.__all__:
            assert name in tf.__all__ and getattr(tf, name) is getattr(module, name)


# ------------------------------------------------------------------ tau interval coverage

TAU_REPS = 600
TAU_ALPHA = 0.2  # a low level, so that coverage is not 1 by construction and a wrong tau shows
TAU_FLOOR = (1 - TAU_ALPHA) - 3 * math.sqrt(TAU_ALPHA * (1 - TAU_ALPHA) / TAU_REPS)


def binary_forms(rng, n, p_public, p_fresh):
    """K = 1 binary scores, public and fresh independent: E[gap] = p_public - p_fresh."""
    return (rng.random(n) < p_public).astype(float), (rng.random(n) < p_fresh).astype(float)


@pytest.mark.parametrize(
    ("guardrail", "reading", "shift"),
    [
        (30, "wald", 0.0),  # Wald primary (many nonzero gaps), the registered bank reading
        (10_000, "hoeffding", 0.0),  # the betting fallback primary, Hoeffding bank reading
        (30, "wald", 0.04),  # b_C off from b by the whole transport radius r = 0.04
    ],
)
def test_tau_interval_covers_tau(guardrail, reading, shift):
    # The audit: Delta = 0.70 - 0.50 = 0.20 and its form-mismatch term b = 0.05, so
    # tau = 0.15. The control bank measures b_C = 0.05 + shift, and the audit is told
    # |b - b_C| <= r = shift. The bank is large (20,000 parents), so its interval is
    # narrow and the tau interval's coverage rests on Delta's interval at 1 - alpha/2:
    # measured 0.94, 0.97 and 0.96 against the nominal 0.80 (subtracting b_C with the
    # wrong sign drops the first to 0.37).
    rng = np.random.default_rng(4242 + guardrail + int(100 * shift))
    tau_true, covered = 0.15, 0
    for rep in range(TAU_REPS):
        pub, fr = binary_forms(rng, 200, 0.70, 0.50)
        cpub, cfr = binary_forms(rng, 20_000, 0.55 + shift, 0.50)
        res = tf.matched_form_audit(
            pub,
            fr,
            control=(cpub, cfr),
            transport_radius=shift,
            alpha=TAU_ALPHA,
            guardrail=guardrail,
            control_reading=reading,
            seed=rep,
        )
        assert res.primary.method == ("wald" if guardrail == 30 else "betting")
        covered += res.tau.contains(tau_true)
    assert covered / TAU_REPS >= TAU_FLOOR, covered / TAU_REPS


def test_audit_table_reads_json_lines_like_csv(tmp_path):
    import csv as csv_module
    import json

    from truescore_fast import read_audit_table

    with (EXAMPLES / "audit_example.csv").open(newline="") as handle:
        rows = list(csv_module.DictReader(handle))
    path = tmp_path / "audit.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    from_csv = read_audit_table(EXAMPLES / "audit_example.csv")
    from_jsonl = read_audit_table(path)
    assert list(from_csv) == list(from_jsonl)
    for model in from_csv:
        np.testing.assert_array_equal(from_csv[model].public, from_jsonl[model].public)
        np.testing.assert_array_equal(from_csv[model].fresh, from_jsonl[model].fresh)


def test_names_moved_out_of_the_audit_module_still_import_from_it():
    import truescore_fast.audit as audit
    from truescore_fast.audit import intervals, randomization

    for name in intervals.__all__:
        assert getattr(audit, name) is getattr(intervals, name)
    assert audit.randomization_test is randomization.randomization_test
    with pytest.raises(AttributeError):
        audit.no_such_name  # noqa: B018

"""The order-free and betting intervals of ``audit/intervals.py``: half-widths against the
paper and the NumPy references in tests/reference.py, batched forms equal to one at a time,
coverage in finite populations, the betting interval's endpoints at its edges (against the
reference bisection, on every vector level), and the radii and quantiles at tiny alpha."""

from __future__ import annotations

import math
import platform

import mpmath
import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import (
    INTERVAL_REFERENCES,
    ref_betting_interval,
    ref_within_feasible_range,
)
from truescore_fast import _numeric
from truescore_fast.audit._betting import FEASIBLE_SLACK


def one_interval(method, d, population_size=None, alpha=0.05):
    fn = getattr(tf, f"{method}_interval")
    if method in ("hoeffding", "bernstein"):
        if population_size is not None:  # only the batch call takes N for these two
            out = tf.matched_form_intervals(
                np.asarray(d)[None, :],
                population_size=population_size,
                alpha=alpha,
                methods=(method,),
            )
            return out[method][0]
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


def _cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(2, 400))
        kind = trial % 5
        if kind == 0:
            d = rng.choice([-1, -0.5, 0, 0.5, 1], size=n, p=[0.05, 0.1, 0.6, 0.1, 0.15])
        elif kind == 1:
            d = rng.uniform(-1, 1, n)
        elif kind == 2:
            d = np.clip(rng.normal(rng.uniform(-0.9, 0.9), 0.2, n), -1, 1)
        elif kind == 3:
            d = rng.choice([-1.0, 1.0], size=n, p=[0.03, 0.97])  # edges near the bounds
        else:
            d = np.full(n, rng.choice([-1.0, 0.0, 1.0]))  # constant gaps
        pop = None if trial % 3 == 0 else int(n + rng.integers(0, 3 * n))
        alpha = (0.05, 0.1, 0.01, 0.2, 0.5)[trial % 5]
        yield d, pop, alpha


def _same_public_ends(got, raw, d, pop):
    """The public betting ends ``got`` against the raw betting ends ``raw`` (the search's
    or the bisection's) within the exact feasible range: the very same where the range
    does not bind, else the range's end rounded outward by at most 2 FEASIBLE_SLACK."""
    want = ref_within_feasible_range((raw[0], raw[1], 0.0, 0.0), d, pop, betting=True)
    for k, outward in ((0, -1.0), (1, 1.0)):
        if want[k] == raw[k]:
            if got[k] != raw[k]:
                return False
        elif not 0.0 <= outward * (got[k] - want[k]) <= 2 * FEASIBLE_SLACK:
            return False
    return True


@pytest.mark.parametrize("seed", [1, 2])
def test_endpoints_never_move_inward_of_the_exact_bisection(seed):
    same = bound = 0
    for d, pop, alpha in _cases(seed, 300):
        iv = tf.betting_interval(d, population_size=pop, alpha=alpha)
        low, high = ref_betting_interval(d, pop, alpha)[:2]
        want = ref_within_feasible_range((low, high, 0.0, 0.0), d, pop, betting=True)
        assert iv.low <= want[0] and iv.high >= want[1], (d, pop, alpha, iv, low, high)
        # the search visits the bisection's grid: with monotone rejections it lands on
        # the very same grid points, then the feasible range (when it binds) cuts them
        same += _same_public_ends((iv.low, iv.high), (low, high), d, pop)
        bound += want[:2] != (low, high)
    assert same == 300
    assert bound > 0  # the range binds in some of the cases (the last gap narrows it)


def test_batched_intervals_use_the_same_endpoints():
    rng = np.random.default_rng(3)
    gaps = rng.choice([-1, -0.5, 0, 0.5, 1], size=(50, 120), p=[0.05, 0.1, 0.6, 0.1, 0.15])
    out = tf.matched_form_intervals(gaps, population_size=1000)
    for a in range(50):
        want = ref_betting_interval(gaps[a], 1000)
        assert _same_public_ends(
            (out["betting"].low[a], out["betting"].high[a]), want, gaps[a], 1000
        )


def test_matches_the_compiled_bisection_on_many_inputs():
    # the pre-issue-13 bisection, kept in the core as _core.testing.betting_interval_bisection
    from truescore_fast import _core

    bisect = _core.testing.betting_interval_bisection
    for d, pop, alpha in _cases(9, 3000):
        iv = tf.betting_interval(d, population_size=pop, alpha=alpha)
        low, high = bisect(d, 0.0 if pop is None else float(pop), alpha)
        assert _same_public_ends((iv.low, iv.high), (low, high), d, pop), (d, pop, alpha)


def _edge_case_inputs():
    """Inputs at the corners of the search and of the vectorised passes."""
    rng = np.random.default_rng(13)
    for n in (2, 3, 4):  # the smallest sizes (n = 1 is refused, by the kernel's call too)
        for v in (-1.0, -0.25, 0.0, 0.5, 1.0):
            yield np.full(n, v), None, 0.05
            yield np.full(n, v), 10 * n, 0.05
        yield rng.uniform(-1, 1, n), 5 * n, 0.2
    for n in (50, 400, 5000):
        for rate in (0.5, 0.9, 0.99, 1.0):  # binary correctness (gaps -1/+1)
            d = np.where(rng.uniform(size=n) < rate, 1.0, -1.0)
            yield d, None, 0.05
            yield d, 20 * n, 0.05
        yield rng.uniform(-1, 1, n), 20 * n, 0.05  # continuous
        yield np.clip(rng.normal(0.3, 0.1, n), -1, 1), None, 0.01
        grid = rng.choice([-1, -0.5, 0, 0.5, 1], size=n, p=[0.05, 0.1, 0.6, 0.1, 0.15])
        yield grid, 20 * n, 0.05
        yield np.full(n, 0.25), 3 * n, 0.05  # constant
        yield grid, n + 1, 0.05  # nearly a census
    d = rng.choice([-1, -0.5, 0, 0.5, 1], size=300, p=[0.05, 0.1, 0.6, 0.1, 0.15])
    # 2/alpha overflows below ~1.1e-308: the bisection with the log-tracked capital
    for alpha in (1e-6, 1e-12, 1e-100, 1e-300, 1e-310, 5e-324):
        yield d, 2000, alpha
        yield d, None, alpha
        yield np.full(5, 1.0), None, alpha


def test_edge_cases_give_the_bisections_endpoints():
    from truescore_fast import _core

    bisect = _core.testing.betting_interval_bisection
    checked = 0
    for d, pop, alpha in _edge_case_inputs():
        population = 0.0 if pop is None else float(pop)
        got = bisect(d, population, alpha, False)  # the search, through the same thin call
        want = bisect(d, population, alpha)
        assert got == want, (d.size, pop, alpha, got, want)
        if alpha >= 1e-300:  # the NumPy reference compares 0.5 * capital with 1 / alpha
            low, high = ref_betting_interval(d, pop, alpha)[:2]
            assert got[0] <= low and got[1] >= high, (d.size, pop, alpha, got, low, high)
            assert got == (low, high)
        checked += 1
    assert checked == 90  # every case above ran


def test_a_single_gap_is_refused_by_the_kernel_call():
    from truescore_fast import _core

    with pytest.raises(ValueError, match="at least 2"):
        _core.testing.betting_interval_bisection(np.array([0.5]), 10.0, 0.05, False)


@pytest.fixture
def simd_level():
    """Caps the betting kernels' vector level for one test, then restores the best."""
    from truescore_fast import _core

    best = _core.testing.simd_level(3)
    yield min(best, 2)  # the betting kernels' widest: AVX
    _core.testing.simd_level(best)


def test_every_vector_level_gives_the_same_bits(simd_level):
    # AVX (where the CPU has it), SSE2 (x86-64) and the plain loops: the same operations
    # lane by lane, so the same endpoints as the compiled bisection at every level
    from truescore_fast import _core

    testing = _core.testing
    cases = list(_edge_case_inputs())[::3] + list(_cases(21, 200))
    want = [testing.betting_interval_bisection(d, float(p or 0), a) for d, p, a in cases]
    levels = set()
    for level in range(simd_level + 1):
        testing.simd_level(level)
        assert testing.betting_vector_level() == level
        levels.add(level)
        for (d, pop, alpha), w in zip(cases, want, strict=True):
            got = testing.betting_interval_bisection(d, float(pop or 0), alpha, False)
            assert got == w, (level, d.size, pop, alpha)
    assert 0 in levels
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert 1 in levels  # SSE2 is part of x86-64


def test_every_vector_level_reads_a_nan_gap_as_the_plain_loop_does(simd_level):
    """Outside the validated domain (the public functions refuse NaN gaps, so only the
    unvalidated kernel call gets here), the vector kernels still do the plain loop's
    comparisons: ``least = m < least ? m : least`` skips a NaN in that order only. The
    vector minimum once took its operands the other way round, and a NaN gap turned the
    SSE2 and AVX interval into [-1, 1] where the plain loops gave (-0.657, 0.771)."""
    from truescore_fast import _core

    testing = _core.testing
    cases = [
        (np.array([0.2, np.nan, 0.3]), 3.5),
        (np.array([0.2, np.nan, 0.3, -0.4, 0.1]), 0.0),
        (np.array([np.nan, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]), 20.0),
        (np.array([0.2, 0.1, 0.3, np.nan]), 2.0),  # a population below n, unvalidated too
    ]
    testing.simd_level(0)
    plain = [testing.betting_interval_bisection(d, pop, 0.05, False) for d, pop in cases]
    assert plain[0] != (-1.0, 1.0)  # the plain loop's reading is not the whole range
    for level in range(1, simd_level + 1):
        testing.simd_level(level)
        for (d, pop), want in zip(cases, plain, strict=True):
            got = testing.betting_interval_bisection(d, pop, 0.05, False)
            assert np.array_equal(got, want, equal_nan=True), (level, d, pop, got, want)


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


# --- alpha down to the smallest subnormal -------------------------------------------------


@pytest.mark.parametrize("method", ["hoeffding", "bernstein", "wald", "betting"])
def test_half_widths_stay_numbers_for_subnormal_alpha(method) -> None:
    # log(4 / alpha) overflowed below alpha ~ 4e-308: inf, and inf * 0 = NaN at zero spread
    fn = getattr(ts, f"{method}_interval")
    for d in (np.zeros(6), np.array([0.0, 1.0, 0.0, -1.0, 0.0, 0.5])):
        widths = [fn(d, alpha=a).half_width for a in (1e-300, 2.2250738585072014e-308, 1e-323)]
        assert all(not math.isnan(w) for w in widths), widths
        assert widths == sorted(widths)  # a smaller alpha never gives a narrower interval


def test_an_alpha_whose_half_underflows_is_refused() -> None:
    for call in (
        lambda: ts.wald_interval(np.zeros(6), alpha=5e-324),
        lambda: ts.seed_contrast(np.arange(6.0), alpha=5e-324),
        lambda: ts.matched_form_audit(np.ones(6), np.zeros((6, 2)), alpha=5e-324),
    ):
        with pytest.raises(ValueError, match="alpha must be at least 1e-323"):
            call()
    assert ts.seed_contrast(np.zeros(6), alpha=1e-310).high == 0.0  # no spread, no width


# --- the Wald quantile: where its bits are the classic ones (the CHANGELOG's claim) --------


@pytest.mark.parametrize("alpha", [0.5, 0.05, 0.01, 0.002, 0.0019, 1e-3, 1e-10, 1e-300])
def test_wald_uses_the_classic_quantile_from_alpha_2e_3_up(alpha) -> None:
    from truescore_fast import _core

    quantile = _core.testing.normal_quantile
    d = np.array([0.5, -0.5, 0.0, 1.0, 0.5, 0.0, -1.0, 0.5])
    root = math.sqrt(1.0 * float(np.var(d, ddof=1)) / d.size)
    tail = alpha / 2
    z = quantile(1.0 - tail) if tail >= _numeric.SMALL_TAIL else -quantile(tail)
    assert ts.wald_interval(d, alpha=alpha).half_width == z * root
    # the Python side switches at the same tail
    assert _numeric.upper_quantile(quantile, tail) == z


def test_an_empty_object_array_of_population_sizes_names_the_argument() -> None:
    # found by the fuzz module (500 examples): max() of no Python ints
    with pytest.raises(ValueError, match="population_size must"):
        ts.wald_intervals(np.zeros((3, 10)), population_size=np.array([], dtype=object))


# --- ln(2/alpha) at alpha = 1e-300 and subnormal alphas ---------------------------------

TINY = [1e-300, 1e-310, 1e-320, 1e-323]  # 1e-323: the smallest alpha accepted


def _ln(c: int, alpha: float) -> float:
    """ln(c / alpha) at 50 digits: the quotient of the exact binary alpha, never inf."""
    with mpmath.workdps(50):
        return float(mpmath.log(c / mpmath.mpf(alpha)))


@pytest.mark.parametrize("alpha", TINY)
def test_hoeffding_bernstein_serfling_radii_at_tiny_alpha(alpha: float) -> None:
    d = np.tile([-0.5, 0.0, 0.5, 1.0], 50_000)  # n large enough for radii below 1
    n = d.size
    half = 2.0 * math.sqrt(_ln(2, alpha) / (2 * n))
    assert ts.hoeffding_interval(d, alpha=alpha).half_width == pytest.approx(half, rel=1e-14)
    big_n = 10 * n
    serfling = 2.0 * math.sqrt((1 - (n - 1) / big_n) * _ln(2, alpha) / (2 * n))
    got = ts.hoeffding_serfling_interval(d, population_size=big_n, alpha=alpha)
    assert got.half_width == pytest.approx(serfling, rel=1e-14)
    s2, ln4 = float(np.var(d, ddof=1)), _ln(4, alpha)
    bernstein = math.sqrt(2 * s2 * ln4 / n) + 14 * ln4 / (3 * (n - 1))
    got = ts.bernstein_interval(d, alpha=alpha)
    assert got.half_width == pytest.approx(bernstein, rel=1e-14)
    assert -1.0 < got.low < got.high < 1.0


@pytest.mark.parametrize("alpha", TINY)
def test_wald_quantile_at_tiny_alpha(alpha: float) -> None:
    # z solves Phi(-z) = alpha / 2, found by mpmath at 50 digits; the core's quantile is
    # good to ~1e-9 where 1/phi overflows (below ~1e-308).
    with mpmath.workdps(50):
        tail = mpmath.mpf(alpha) / 2
        log_tail = mpmath.log(tail)
        z = float(
            mpmath.findroot(
                lambda x: mpmath.log(mpmath.erfc(x / mpmath.sqrt(2)) / 2) - log_tail,
                mpmath.sqrt(-2 * log_tail),
            )
        )
    d = np.linspace(-0.5, 0.5, 20)
    want = z * float(np.std(d, ddof=1)) / math.sqrt(d.size)
    assert ts.wald_interval(d, alpha=alpha).half_width == pytest.approx(want, rel=1e-8)


def _betting_lower_all_ones(n: int, alpha: float) -> float:
    """The betting interval's lower end for n gaps all +1 (x_t = 1), from the definition:
    the bet on "mean > m" at step t is min(lambda_t, 3/4 / m), each factor 1 + l (1 - m) >
    1, so the capital is largest at t = n and m is rejected when sum_t ln(1 + l_t (1 - m))
    >= ln(2/alpha). Logs throughout: no capital or threshold ever overflows."""
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + t) / (t + 1.0)
    var = (0.25 + np.cumsum((1.0 - mu) ** 2)) / (t + 1.0)
    var_prev = np.concatenate([[0.25], var[:-1]])
    lam = np.sqrt(2.0 * _ln(2, alpha) / (n * var_prev))
    target = _ln(2, alpha)

    def rejects(m: float) -> bool:
        return math.fsum(np.log1p(np.minimum(lam, 0.75 / m) * (1.0 - m))) >= target

    lo, hi = 1e-12, 1.0  # rejected, kept
    while hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejects(mid) else (lo, mid)
    return 2.0 * lo - 1.0


@pytest.mark.parametrize("alpha", [1e-300, 1e-320, 1e-323])
def test_betting_interval_at_tiny_alpha_rejects_what_its_threshold_rejects(alpha: float) -> None:
    # 2/alpha overflows for the subnormals: the capital is compared in logs. (Before, the
    # threshold was inf and a capital that overflowed to inf near e^709 "reached" it, an
    # interval narrower than level 1 - alpha allows.)
    n = 3000
    got = ts.betting_interval(np.ones(n), alpha=alpha)
    want = _betting_lower_all_ones(n, alpha)
    assert got.low == pytest.approx(want, abs=1e-8)
    assert got.high == 1.0
    assert got.low > -1.0  # the data do reject something at this level


def test_betting_intervals_nest_as_alpha_shrinks_into_the_subnormals() -> None:
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, 0.0, 1.0], size=4000, p=[0.1, 0.3, 0.6])
    ends = [ts.betting_interval(d, alpha=a) for a in (1e-3, 1e-100, 1e-300, 1e-320, 1e-323)]
    for wide, narrow in zip(ends[1:], ends[:-1], strict=True):
        assert wide.low <= narrow.low and narrow.high <= wide.high
    assert all(math.isfinite(e.half_width) for e in ends)


# --- the single-interval fast path (issue 24) --------------------------------------------

FAST = {
    "hoeffding": lambda d, **kw: tf.hoeffding_interval(d, **kw),
    "bernstein": lambda d, **kw: tf.bernstein_interval(d, **kw),
    "wald": lambda d, **kw: tf.wald_interval(d, population_size=5000, **kw),
    "hoeffding_serfling": lambda d, **kw: tf.hoeffding_serfling_interval(
        d, population_size=5000, **kw
    ),
    "betting": lambda d, **kw: tf.betting_interval(d, population_size=5000, **kw),  # issue 37
}
WITH_POPULATION = ("wald", "hoeffding_serfling", "betting")


@pytest.mark.parametrize("method", FAST)
def test_fast_path_gives_the_batch_path_interval(method):
    # A float64 array goes straight to the core; a list takes the validating path (and
    # the batch kernel); both must give the same interval, bit for bit.
    rng = np.random.default_rng(24)
    for n in (2, 3, 200, 1001):
        d = rng.choice([-1.0, -0.5, 0.0, 0.0, 0.25, 1.0], size=n)
        for alpha in (0.05, 0.5, 1e-300):
            fast = FAST[method](d, alpha=alpha)
            slow = FAST[method](d.tolist(), alpha=alpha)
            assert fast == slow
            batch = getattr(tf, method + "_intervals")(
                d[None, :],
                alpha=alpha,
                **({"population_size": 5000} if method in WITH_POPULATION else {}),
            )[0]
            assert fast == batch


def test_betting_fast_path_gives_the_batch_path_interval_without_a_population_and_empty():
    # issue 37: the betting interval takes the fast path too; without a population, and
    # on an order that rejects every mean (an empty set: low > high), the same bits
    rng = np.random.default_rng(37)
    cases = [rng.choice([-1.0, 0.0, 0.5, 1.0], size=n) for n in (2, 5, 200, 3000)]
    cases.append(np.concatenate([np.ones(60), -np.ones(60)]))
    for d in cases:
        for pop in (None, 4 * d.size):
            fast = tf.betting_interval(d, population_size=pop)
            assert fast == tf.betting_interval(d.tolist(), population_size=pop)
            assert fast == tf.betting_intervals(d[None, :], population_size=pop)[0]
    assert tf.betting_interval(cases[-1]).empty


@pytest.mark.parametrize(
    ("d", "kwargs", "message"),
    [
        (np.array([0.1, np.nan]), {}, "d contains non-finite"),
        (np.array([0.1, 1.5]), {}, r"d must lie in \[-1, 1\]"),
        (np.array([0.1]), {}, "d needs at least 2 parents"),
        (np.zeros((2, 3)), {}, "d must be 1-D"),
        (np.zeros(4), {"alpha": float("nan")}, "alpha"),
        (np.zeros(4), {"alpha": 1.0}, "alpha"),
        (np.zeros(4), {"alpha": 5e-324}, "alpha"),
        (np.zeros(4), {"population_size": 3}, "population_size"),
        (np.zeros(4), {"population_size": 0}, "population_size"),
        (np.zeros(4), {"population_size": -5}, "population_size"),
        (np.zeros(4), {"population_size": 2**63}, "population_size"),
        (np.zeros(4), {"population_size": 10**400}, "population_size"),
    ],
)
@pytest.mark.parametrize("function", [tf.wald_interval, tf.betting_interval])
def test_fast_path_input_still_fails_by_name(d, kwargs, message, function):
    with pytest.raises(ValueError, match=message):
        function(d, **kwargs)


def test_fast_path_needs_the_population_where_the_method_does():
    with pytest.raises((ValueError, TypeError), match="population_size"):
        tf.hoeffding_serfling_interval(np.zeros(4), population_size=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, [0.0, np.nan]])
def test_covers_refuses_a_value_that_is_not_finite_as_contains_does(value) -> None:
    ivs = ts.wald_intervals(np.array([[0.0, 1.0, 0.0, -1.0]] * 2), population_size=50)
    with pytest.raises(ValueError, match="value must be a finite number"):
        ivs.covers(value)
    with pytest.raises(ValueError, match="value must be a finite number"):
        ivs[0].contains(np.ravel(value)[-1])
    assert ivs.covers(1e308).tolist() == [False, False]  # finite: an answer

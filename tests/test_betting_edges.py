"""The betting interval's endpoints (issue 13): found by a search on the bisection's grid
(two grid points per capital pass, in SIMD lanes), they never move inward relative to the
exact bisection -- and are the bisection's very endpoints.

The reference is tests/reference.py's NumPy bisection to 1e-9 (the outer, last rejected,
point on each side), sharing none of the compiled search."""

from __future__ import annotations

import platform

import numpy as np
import pytest
import truescore_fast as tf
from reference import ref_betting_interval


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


@pytest.mark.parametrize("seed", [1, 2])
def test_endpoints_never_move_inward_of_the_exact_bisection(seed):
    same = 0
    for d, pop, alpha in _cases(seed, 300):
        iv = tf.betting_interval(d, population_size=pop, alpha=alpha)
        low, high = ref_betting_interval(d, pop, alpha)[:2]
        assert iv.low <= low and iv.high >= high, (d, pop, alpha, iv, low, high)
        same += (iv.low, iv.high) == (low, high)
    # the search visits the bisection's grid: with monotone rejections it lands on the
    # very same grid points
    assert same == 300


def test_batched_intervals_use_the_same_endpoints():
    rng = np.random.default_rng(3)
    gaps = rng.choice([-1, -0.5, 0, 0.5, 1], size=(50, 120), p=[0.05, 0.1, 0.6, 0.1, 0.15])
    out = tf.matched_form_intervals(gaps, population_size=1000)
    for a in range(50):
        want = ref_betting_interval(gaps[a], 1000)
        assert (out["betting"].low[a], out["betting"].high[a]) == want[:2]


def test_matches_the_compiled_bisection_on_many_inputs():
    # the pre-issue-13 bisection, kept in the core as _core.testing.betting_interval_bisection
    from truescore_fast import _core

    bisect = _core.testing.betting_interval_bisection
    for d, pop, alpha in _cases(9, 3000):
        iv = tf.betting_interval(d, population_size=pop, alpha=alpha)
        low, high = bisect(d, 0.0 if pop is None else float(pop), alpha)
        assert iv.low <= low and iv.high >= high, (d, pop, alpha)
        assert (iv.low, iv.high) == (low, high)


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

    best = _core.testing.betting_simd_level(3)
    yield best
    _core.testing.betting_simd_level(best)


def test_every_vector_level_gives_the_same_bits(simd_level):
    # AVX (where the CPU has it), SSE2 (x86-64) and the plain loops: the same operations
    # lane by lane, so the same endpoints as the compiled bisection at every level
    from truescore_fast import _core

    testing = _core.testing
    cases = list(_edge_case_inputs())[::3] + list(_cases(21, 200))
    want = [testing.betting_interval_bisection(d, float(p or 0), a) for d, p, a in cases]
    levels = set()
    for level in range(simd_level + 1):
        assert testing.betting_simd_level(level) == level
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
    testing.betting_simd_level(0)
    plain = [testing.betting_interval_bisection(d, pop, 0.05, False) for d, pop in cases]
    assert plain[0] != (-1.0, 1.0)  # the plain loop's reading is not the whole range
    for level in range(1, simd_level + 1):
        testing.betting_simd_level(level)
        for (d, pop), want in zip(cases, plain, strict=True):
            got = testing.betting_interval_bisection(d, pop, 0.05, False)
            assert np.array_equal(got, want, equal_nan=True), (level, d, pop, got, want)

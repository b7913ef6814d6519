"""The randomization test of ``audit/randomization.py``: the exact test against brute-force
enumeration, McNemar and the binomial convolution, the lattice path against exact integer
counts down to 1e-300 and mpmath in the far tail, Monte Carlo against exact, and its size."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import truescore_fast as tf
from reference import (
    ref_lattice_null_counts,
    ref_lattice_p_values,
    ref_randomization_binomial,
    ref_randomization_brute_force,
    ref_randomization_convolution,
)
from scipy import stats

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


REL = 1e-12


def _assign_public(rows: np.ndarray, target: int) -> np.ndarray:
    """Reorder each row so that the public values (column 0) sum, above the row minima,
    to `target`: greedy, the smallest value that leaves the rest reachable. The null (the
    multisets) is unchanged by the reordering."""
    out = rows.copy()
    remaining = target
    spans = rows.max(axis=1) - rows.min(axis=1)
    rest = int(spans.sum())
    for i, row in enumerate(rows):
        rest -= int(spans[i])
        shifted = sorted(set(int(v - row.min()) for v in row))
        pick = next(v for v in shifted if v <= remaining and remaining - v <= rest)
        remaining -= pick
        j = int(np.flatnonzero(row - row.min() == pick)[0])
        out[i, 0], out[i, j] = row[j], row[0]
    assert remaining == 0
    return out


def _check(rows: np.ndarray, den: int, want: tuple[float, float, float]) -> float:
    res = tf.randomization_test(rows[:, 0] / den, rows[:, 1:] / den, alternative="two-sided")
    assert res.method == "exact-lattice" and res.lattice_denominator == den
    worst = 0.0
    for got, exact in zip((res.p_greater, res.p_less, res.p_two_sided), want, strict=True):
        assert exact > 0.0
        worst = max(worst, abs(got - exact) / exact)
    assert worst <= REL, (worst, want)
    return min(want)


def _tail_targets(counts: list[int], levels: list[float]) -> list[int]:
    """For each level, the smallest x with P(V >= x) >= level and the largest x with
    P(V <= x) >= level (x in units above the row minima)."""
    total = sum(counts)
    upper, lower, acc = [0] * len(counts), [0] * len(counts), 0
    for v in range(len(counts) - 1, -1, -1):
        acc += counts[v]
        upper[v] = acc
    acc = 0
    for v in range(len(counts)):
        acc += counts[v]
        lower[v] = acc
    out = []
    for level in levels:
        thr = Fraction(level) * total
        out.append(max(v for v in range(len(counts)) if upper[v] >= thr))
        out.append(min(v for v in range(len(counts)) if lower[v] >= thr))
    return out


def test_five_level_grid_matches_exact_integer_counts_down_to_1e_300():
    rng = np.random.default_rng(1301)
    rows = rng.integers(0, 5, (800, 3))  # K = 2, scores in {0, 1/4, ..., 1}
    counts, shift, n_inf = ref_lattice_null_counts(rows)
    assert 3.0**-n_inf < 1e-300  # the far tail is reachable
    levels = [1e-300, 1e-250, 1e-150, 1e-60, 1e-9, 1e-3, 0.2, 0.5]
    smallest = 1.0
    for target in _tail_targets(counts, levels):
        case = _assign_public(rows, target)
        want = ref_lattice_p_values(counts, shift, n_inf, 3, case)  # same multisets, same null
        smallest = min(smallest, _check(case, 4, want))
    assert smallest < 1e-299


@pytest.mark.parametrize(
    ("k", "den", "n", "seed"), [(3, 3, 300, 1), (1, 5, 500, 2), (4, 2, 250, 3)]
)
def test_other_forms_and_grids_match_exact_integer_counts(k, den, n, seed):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, den + 1, (n, k + 1))
    rows[: n // 10] = rows[: n // 10, :1]  # some parents with all scores equal
    null = ref_lattice_null_counts(rows)
    for target in _tail_targets(null[0], [1e-100, 1e-6, 0.3]):
        case = _assign_public(rows, target)
        _check(case, den, ref_lattice_p_values(*null, k + 1, case))


def test_wide_spans_match_exact_integer_counts():
    # span up to 60 grid steps: the tilt grid is coarse (powers of two) and the truncation
    # certificate decides; still exact
    rng = np.random.default_rng(7)
    rows = rng.integers(0, 61, (150, 2))
    null = ref_lattice_null_counts(rows)
    smallest = 1.0
    for q in (0.97, 0.8, 0.5, 0.3, 0.03):  # public = the row's larger value with probability q
        take = rng.random(150) < q
        case = np.column_stack(
            [np.where(take, rows.max(1), rows.min(1)), np.where(take, rows.min(1), rows.max(1))]
        )
        smallest = min(smallest, _check(case, 60, ref_lattice_p_values(*null, 2, case)))
    assert smallest < 1e-20


def _binomial_pmf_mp(c: int, p: mpmath.mpf) -> list[mpmath.mpf]:
    out = [(1 - p) ** c]
    for j in range(c):
        out.append(out[-1] * (c - j) / (j + 1) * p / (1 - p))
    return out


def _binomial_tail_mp(c1: int, c2: int, x: int) -> mpmath.mpf:
    """P(4 B1 + 2 B2 >= x), B1 ~ Bin(c1, 1/3), B2 ~ Bin(c2, 2/3), by mpmath sums."""
    third = mpmath.mpf(1) / 3
    pmf1, pmf2 = _binomial_pmf_mp(c1, third), _binomial_pmf_mp(c2, 2 * third)
    ge2 = [mpmath.mpf(0)] * (c2 + 2)
    for j in range(c2, -1, -1):
        ge2[j] = ge2[j + 1] + pmf2[j]
    total = mpmath.mpf(0)
    for i in range(c1 + 1):
        need = max(0, -((4 * i - x) // 2))  # ceil((x - 4 i) / 2)
        if need <= c2:
            total += pmf1[i] * ge2[need]
    return total


def test_n_20000_far_upper_tail_matches_mpmath():
    # 20,000 parents on the quarter grid: 9,000 of type {0, 0, 1}, 9,000 of type
    # {1/4, 3/4, 3/4}, 2,000 with all scores equal. V = 4 Bin(9000, 1/3) + 2 Bin(9000, 2/3).
    c1 = c2 = 9000
    with mpmath.workdps(30):
        levels = {}
        for x in (24_400, 27_000, 30_000, 31_000, 31_600):  # the mean is 24,000, the sd 200
            levels[x] = _binomial_tail_mp(c1, c2, x)
        smallest = min(levels.values())
        assert mpmath.mpf("1e-308") < smallest < mpmath.mpf("1e-300")
        for x, want in levels.items():
            i1 = min(c1, x // 4)
            i2 = (x - 4 * i1) // 2
            assert 4 * i1 + 2 * i2 == x and i2 <= c2
            pub = np.concatenate(
                [
                    np.where(np.arange(c1) < i1, 4, 0),
                    np.where(np.arange(c2) < i2, 3, 1),
                    np.full(2000, 2),
                ]
            )
            fr = np.concatenate(
                [np.zeros((c1, 2)), np.tile([1, 3], (c2, 1)), np.full((2000, 2), 2)]
            )
            fr[np.arange(c1)[np.arange(c1) >= i1], 0] = 4  # the 4 sits in a fresh form
            fr[c1 + np.arange(c2)[np.arange(c2) >= i2], 0] = 3
            fr[c1 + np.arange(c2)[np.arange(c2) >= i2], 1] = 3
            res = tf.randomization_test(pub / 4, fr / 4)
            assert res.method == "exact-lattice"
            got = res.p_greater
            assert abs(got - float(want)) <= REL * float(want), (x, got, want)
    assert math.isfinite(float(smallest))

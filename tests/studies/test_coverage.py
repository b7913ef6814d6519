"""The coverage study of ``studies/coverage.py``: equal to the NumPy reference on shared
Philox streams (simple random and stratified designs, the counts sampler), statistically
right coverage, Wald's undercoverage, the compiled kernel's checks, and argument errors
of every study."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import truescore_fast as tf
from common import bank, lattice_population
from reference import (
    ref_coverage_sums,
    ref_proportional_allocation,
)
from truescore_fast import studies as cal
from truescore_fast._random import philox_key

BLOCK = cal.REPLICATIONS_PER_TASK


ALL = ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting")


def rows_of(table, interval):
    return np.flatnonzero(table["interval"] == interval)


# ---------------------------------------------------------------------------- coverage


def test_coverage_equals_reference_on_shared_streams():
    pop = lattice_population(60, [0.1, 0.15, 0.5, 0.15, 0.1], seed=1)
    reps = BLOCK + 13  # two tasks, the second partial
    table = tf.coverage_study(
        pop, [10, 25], intervals=ALL, replications=reps, seed=42, sampler="sequence"
    )
    key = philox_key(42)
    for cell, n in enumerate([10, 25]):
        want = ref_coverage_sums(
            pop, [0, 60], [n], ALL, 0.05, float(np.mean(pop)), key, cell, reps, BLOCK
        )
        rows = np.flatnonzero(table["n"] == n)
        for k, m in enumerate(ALL):
            r = rows[k]
            assert table["interval"][r] == m
            assert round(table["coverage"][r] * reps) == want[k, 0], m
            tol = 1e-9 if m == "betting" else 1e-13
            assert table["half_width"][r] == pytest.approx(want[k, 1] / reps, abs=tol, rel=tol)


def test_stratified_coverage_equals_reference():
    rng = np.random.default_rng(5)
    pop = lattice_population(90, [0.05, 0.1, 0.7, 0.1, 0.05], seed=2)
    strata = rng.choice(["b", "a", "c"], size=90)
    reps = 300
    table = tf.coverage_study(
        pop,
        20,
        design="stratified",
        strata=strata,
        intervals=("wald", "bernstein"),
        replications=reps,
        seed=3,
        sampler="sequence",
    )
    order = np.argsort(strata, kind="stable")
    sizes = [int((strata == s).sum()) for s in ("a", "b", "c")]
    offsets = np.concatenate(([0], np.cumsum(sizes))).tolist()
    alloc = ref_proportional_allocation(sizes, 20)
    want = ref_coverage_sums(
        pop[order],
        offsets,
        alloc,
        ("wald", "bernstein"),
        0.05,
        float(np.mean(pop)),
        philox_key(3),
        0,
        reps,
        BLOCK,
    )
    assert np.round(table["coverage"] * reps).tolist() == want[:, 0].tolist()
    np.testing.assert_allclose(table["half_width"], want[:, 1] / reps, rtol=1e-13)


def test_given_allocation_targets_the_allocation_weighted_mean():
    pop = np.concatenate([np.zeros(50), np.full(50, 0.5)])
    strata = np.repeat([0, 1], 50)
    # all 10 from the zero stratum: the pooled mean is 0, the population mean 0.25
    t = tf.coverage_study(
        pop,
        10,
        design="stratified",
        strata=strata,
        allocation=[10, 0],
        intervals="wald",
        replications=50,
        seed=0,
    )
    assert t["coverage"][0] == 1.0  # covers its target, 0, with a zero-width interval


def test_counts_sampler_agrees_with_sequence_within_mc_error():
    pop = lattice_population(2000, [0.03, 0.07, 0.8, 0.07, 0.03], seed=3)
    kw = dict(intervals=("hoeffding", "bernstein", "wald"), replications=20000, seed=8)
    a = tf.coverage_study(pop, [30, 200], sampler="counts", **kw)
    b = tf.coverage_study(pop, [30, 200], sampler="sequence", **kw)
    assert a.meta["sampler"] == ["counts"] and b.meta["sampler"] == ["sequence"]
    for col, se in (("coverage", "coverage_se"), ("half_width", "half_width_se")):
        z = (a[col] - b[col]) / np.sqrt(a[se] ** 2 + b[se] ** 2 + 1e-300)
        assert np.abs(z[a[se] > 0]).max() < 4.0, (col, z)


@pytest.mark.parametrize(
    "distinct, intervals, want",
    [
        (64, ("wald", "bernstein"), "counts"),  # at most 64 distinct gap values
        (65, ("wald", "bernstein"), "sequence"),
        (5, ("wald", "betting"), "sequence"),  # betting depends on the sample's order
    ],
)
def test_auto_sampler_picks_counts_only_for_small_lattices_without_betting(
    distinct, intervals, want
):
    pop = np.repeat(np.linspace(-1, 1, distinct), 3)
    t = tf.coverage_study(pop, 10, intervals=intervals, replications=20, seed=0)
    assert t.meta["sampler"] == [want]


def test_counts_sampler_handles_strata_of_different_sizes():
    # strata of 100, 300 and 600 units with different gap mixes; the counts sampler draws
    # each stratum's counts from its own lattice row, and agrees with Fisher-Yates
    rng = np.random.default_rng(12)
    strata = np.repeat([0, 1, 2], [100, 300, 600])
    pop = np.concatenate(
        [
            rng.choice([0.0, 1.0], size=100),
            rng.choice([-0.5, 0.0, 0.5], p=[0.2, 0.6, 0.2], size=300),
            rng.choice([-1.0, 0.0], p=[0.1, 0.9], size=600),
        ]
    )
    kw = dict(design="stratified", strata=strata, intervals="wald", replications=6000, seed=5)
    a = tf.coverage_study(pop, [20, 100], **kw)
    b = tf.coverage_study(pop, [20, 100], sampler="sequence", **kw)
    assert a.meta["sampler"] == ["counts"] and b.meta["sampler"] == ["sequence"]
    for col, se in (("coverage", "coverage_se"), ("half_width", "half_width_se")):
        z = (a[col] - b[col]) / np.sqrt(a[se] ** 2 + b[se] ** 2)
        assert np.abs(z).max() < 4.0, (col, z)


def test_coverage_is_statistically_right():
    # Dense lattice population, N = 5000: Wald covers near 95% at n = 400 (the paper's
    # Table 2); Hoeffding and Bernstein are conservative, Hoeffding's half-width is the
    # closed form 0.1358.
    pop = lattice_population(5000, [0.1, 0.15, 0.5, 0.15, 0.1], seed=4)
    t = tf.coverage_study(
        pop, 400, intervals=("hoeffding", "bernstein", "wald"), replications=20000, seed=11
    )
    wald = rows_of(t, "wald")[0]
    assert abs(t["coverage"][wald] - 0.95) < 4 * t["coverage_se"][wald] + 0.005
    for m in ("hoeffding", "bernstein"):
        assert t["coverage"][rows_of(t, m)[0]] >= 0.99
    assert t["half_width"][rows_of(t, "hoeffding")[0]] == pytest.approx(0.13581, abs=1e-5)


def test_wald_undercovers_small_sparse_audits():
    # 3% nonzero gaps, n = 10: most samples hold no nonzero gap at all (SPEC: ~26%).
    pop = np.zeros(1000)
    pop[:30] = 1.0
    t = tf.coverage_study(pop, 10, intervals=("wald", "betting"), replications=4000, seed=1)
    p_any = 1 - math.comb(970, 10) / math.comb(1000, 10)  # P(at least one nonzero)
    wald = rows_of(t, "wald")[0]
    # Wald covers 0.03 only when the sample shows some nonzero gap, and not always then
    assert t["coverage"][wald] <= p_any + 4 * t["coverage_se"][wald]
    assert t["coverage"][wald] < 0.5
    assert t["coverage"][rows_of(t, "betting")[0]] >= 0.95


# ---------------------------------------------------------------------------- output, errors


def test_tables_convert_and_print():
    pop = lattice_population(200, [0.1, 0.1, 0.6, 0.1, 0.1])
    t = tf.coverage_study(pop, 20, replications=50, seed=0, intervals=("wald", "hoeffding"))
    d = t.to_dict()
    json.dumps(d)
    assert d["meta"]["replications"] == 50
    assert "coverage" in str(t) and "Monte Carlo" in str(t)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: tf.coverage_study([0.1, 2.0], 2), "population"),
        (lambda: tf.coverage_study(np.zeros(10), 11), "n must not exceed"),
        (lambda: tf.coverage_study(np.zeros(10), 1), "n must be at least 2"),
        (lambda: tf.coverage_study(np.zeros(10), 5, design="cluster"), "design"),
        (lambda: tf.coverage_study(np.zeros(10), 5, design="stratified"), "strata"),
        (lambda: tf.coverage_study(np.zeros(10), 5, intervals=("nope",)), "intervals"),
        (lambda: tf.coverage_study(np.zeros(10), 5, replications=1), "replications"),
        (lambda: tf.coverage_study(np.zeros(10), 5, alpha=1.5), "alpha"),
        (lambda: tf.coverage_study(np.zeros(10), 5, seed=-1), "seed"),
        (lambda: tf.coverage_study(np.zeros(10), 5, n_threads=0), "n_threads"),
        (lambda: tf.coverage_study(np.zeros(10), 5, sampler="counts"), "sampler"),
        (lambda: tf.coverage_study(np.zeros(10), 5, progress="yes"), "progress"),
        (lambda: tf.coverage_study(np.zeros(10), 5, executor=object()), "executor"),
        (
            lambda: tf.coverage_study(
                np.zeros(10), 5, design="stratified", strata=[0] * 5 + [1] * 5, allocation=[4, 4]
            ),
            "allocation",
        ),
        (lambda: tf.detection_study([0.5, 1], [[0, 1], [1, 1]], sizes=2), "binary"),
        (lambda: tf.detection_study(*bank(50), sizes=60), "sizes"),
        (lambda: tf.detection_study(*bank(50), sizes=10, deltas=0.99), "cannot be planted"),
        (lambda: tf.detection_study(*bank(50), sizes=10, fallback="wald"), "fallback"),
        (lambda: tf.budget_study(np.zeros((1, 10)), sizes=5), "2 models"),
        (lambda: tf.budget_study(np.zeros((2, 10)), sizes=5), "ties every model"),
        (lambda: tf.plan_audit_size(np.zeros(10), 0.1, power=1.0), "power"),
        (lambda: tf.stress_grid([1, 2]), "StressSetting"),
    ],
)
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _coverage_kernel(values, offsets, allocation, lattice_values, lattice_counts):
    return tf._core.coverage_tasks(
        np.asarray(values, float),
        np.asarray(offsets, np.int64),
        np.asarray(allocation, np.int64),
        np.asarray(lattice_values, float),
        np.asarray(lattice_counts, np.int64).reshape(len(allocation), len(lattice_values)),
        np.array([2], np.int64),  # wald
        0.05,
        0.0,
        1,
        2,
        0,
        10,
        BLOCK,
        0,
        1,
    )


@pytest.mark.parametrize(
    "offsets, allocation, lattice_counts, match",
    [
        ([0, 4, 12], [2, 2], [], "offsets must run from 0"),  # ends beyond the 10 values
        ([0, 6, 4, 10], [1, 0, 1], [], "non-decreasing"),
        ([0, 4, 10], [5, 1], [], "allocation exceeds"),
        ([0, 4, 10], [2, 2], [[4, 0], [7, -1]], "non-negative"),
        ([0, 4, 10], [2, 2], [[4, 0], [5, 0]], "sum to each stratum"),
    ],
)
def test_kernels_reject_inconsistent_strata_and_lattices(
    offsets, allocation, lattice_counts, match
):
    # The compiled kernels index the population with these: bad ones must raise, not read
    # out of bounds (the Python layer never builds them, so call the kernel directly).
    lattice_values = [0.0, 1.0] if lattice_counts else []
    with pytest.raises(ValueError, match=match):
        _coverage_kernel(np.zeros(10), offsets, allocation, lattice_values, lattice_counts)
    assert _coverage_kernel(np.zeros(10), [0, 4, 10], [2, 2], [], []).shape == (1, 1, 3)

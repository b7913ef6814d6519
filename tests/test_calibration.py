"""Calibration studies: against slow NumPy references on small grids (identical where the
random streams are shared), statistical checks within Monte Carlo error, invariance to
thread count, chunking and executor (threads and a real Dask cluster), Ctrl-C, memory."""

from __future__ import annotations

import json
import math
import os
import sys
import textwrap
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from interrupting import interrupt_after
from reference import (
    ref_budget_sums,
    ref_coverage_sums,
    ref_detection_sums,
    ref_proportional_allocation,
    ref_wald_interval,
)
from truescore_fast import studies as cal
from truescore_fast._random import philox_key
from truescore_fast.studies import _engine

BLOCK = cal.REPLICATIONS_PER_TASK
ALL = ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting")


def lattice_population(big_n, probs, seed=0):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=probs, size=big_n)


def same_table(a, b):
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


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


# ---------------------------------------------------------------------------- invariance


def test_thread_count_chunking_and_executor_never_change_results(monkeypatch):
    pop = lattice_population(400, [0.1, 0.15, 0.5, 0.15, 0.1], seed=6)
    kw = dict(intervals=ALL, replications=1100, seed=9, progress=False)
    one = tf.coverage_study(pop, [20, 60], n_threads=1, **kw)
    two = tf.coverage_study(pop, [20, 60], n_threads=2, **kw)
    assert same_table(one, two)
    monkeypatch.setattr(_engine, "_CHUNK_SECONDS", 1e-9)  # one task per call
    assert same_table(one, tf.coverage_study(pop, [20, 60], n_threads=2, **kw))
    with ThreadPoolExecutor(2) as pool:
        assert same_table(one, tf.coverage_study(pop, [20, 60], executor=pool, **kw))


def test_stress_grid_on_a_dask_cluster_is_identical():
    distributed = pytest.importorskip("distributed")
    settings = cal.stress_settings()[::9]  # 4 of the 36 settings
    kw = dict(replications=300, seed=5, progress=False)
    local = tf.stress_grid(settings, **kw)
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = tf.stress_grid(settings, executor=client.get_executor(), n_threads=1, **kw)
    assert same_table(local, remote)


def test_a_cell_does_not_depend_on_its_neighbours():
    settings = cal.stress_settings()
    grid = tf.stress_grid(settings[:3], replications=300, seed=2, intervals="wald")
    # cell 2 alone, at index 2 of a grid whose other cells differ, gives the same row
    other = [settings[10], settings[20], settings[2]]
    alone = tf.stress_grid(other, replications=300, seed=2, intervals="wald")
    assert grid["wald"][2] == alone["wald"][2]


# ---------------------------------------------------------------------------- stress grid


def test_default_stress_grid_has_36_distinct_settings():
    settings = cal.stress_settings()
    assert len(settings) == 36 == len(set(settings))
    for s in settings:
        pop = cal.stress_population(s)
        assert pop.size == s.population_size
        assert np.count_nonzero(pop) == round(s.nonzero_share * s.population_size)
        assert set(np.unique(pop)) <= {-1.0, -0.5, 0.0, 0.5, 1.0}


@pytest.mark.parametrize("shape", sorted(cal.STRESS_SHAPES))
@pytest.mark.parametrize("big_n, share", [(1000, 0.05), (5000, 0.2), (333, 0.5), (7, 0.3)])
def test_stress_population_splits_nonzero_gaps_by_largest_remainder(shape, big_n, share):
    pop = cal.stress_population(cal.StressSetting(big_n, 2, shape, share))
    nonzero = round(share * big_n)
    weights = np.asarray(cal.STRESS_SHAPES[shape], dtype=float)
    # Hamilton's method, written out: floor of each quota, then one more unit to each of
    # the largest fractional parts (first value first on ties)
    quotas = [w * nonzero for w in weights]
    want = [math.floor(q) for q in quotas]
    by_remainder = sorted(range(4), key=lambda v: (-(quotas[v] - want[v]), v))
    for v in by_remainder[: nonzero - sum(want)]:
        want[v] += 1
    got = [int((pop == value).sum()) for value in (-1.0, -0.5, 0.5, 1.0)]
    assert got == want
    assert (np.diff(pop) >= 0).all() and int((pop == 0).sum()) == big_n - nonzero


def test_stress_grid_equals_reference():
    settings = [
        cal.StressSetting(200, 12, "bimodal", 0.05),
        cal.StressSetting(300, 30, "one-sided", 0.5),
    ]
    reps = 260
    t = tf.stress_grid(settings, replications=reps, seed=17)
    key = philox_key(17)
    for c, s in enumerate(settings):
        pop = cal.stress_population(s)
        want = ref_coverage_sums(
            pop, [0, s.population_size], [s.n], ALL, 0.05, float(np.mean(pop)), key, c, reps, BLOCK
        )
        for k, m in enumerate(ALL):
            assert round(t[m][c] * reps) == want[k, 0], (c, m)
        ratio = want[1, 1] / want[0, 1]
        assert t["bernstein/hoeffding"][c] == pytest.approx(ratio, rel=1e-12)
    assert any("settings below" in line for line in t.notes)


# ---------------------------------------------------------------------------- detection


def bank(big_n=120, k=2, seed=0):
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2, 2, size=big_n)
    public = (rng.random(big_n) < difficulty).astype(float)
    fresh = (rng.random((big_n, k)) < difficulty[:, None]).astype(float)
    return public, fresh


@pytest.mark.parametrize("relabel, fallback", [(False, "hoeffding"), (True, "bernstein")])
def test_detection_equals_reference(relabel, fallback):
    pub, fr = bank()
    reps = 270
    t = tf.detection_study(
        pub,
        fr,
        sizes=(15, 40),
        deltas=(0.0, 0.1),
        form_gaps=(0.0, 0.05),
        relabel=relabel,
        replications=reps,
        guardrail=20,
        fallback=fallback,
        seed=4,
    )
    key = philox_key(4)
    labels = (pub.sum() + fr.sum()) / (pub.size + fr.size)
    p_pub = labels if relabel else pub.mean()
    p_fr = labels if relabel else fr.mean()
    row = 0
    for n in (15, 40):
        for delta in (0.0, 0.1):
            for gap in (0.0, 0.05):
                q = delta / (1 - p_pub)
                h = gap / p_fr
                want = ref_detection_sums(
                    pub, fr, n, relabel, q, h, 20, fallback, 0.05, key, row, reps, BLOCK
                )
                assert (t["n"][row], t["delta"][row], t["form_gap"][row]) == (n, delta, gap)
                assert round(t["interval_rate"][row] * reps) == want[0]
                assert round(t["test_rate"][row] * reps) == want[1]
                assert t["mean_delta_hat"][row] == pytest.approx(want[2] / reps, abs=1e-14)
                row += 1


def test_detection_with_betting_fallback_equals_reference():
    pub, fr = bank(60, seed=3)
    t = tf.detection_study(pub, fr, sizes=12, deltas=0.2, replications=30, seed=1)
    q = 0.2 / (1 - pub.mean())
    want = ref_detection_sums(
        pub, fr, 12, False, q, 0.0, 30, "betting", 0.05, philox_key(1), 0, 30, BLOCK
    )
    assert round(t["interval_rate"][0] * 30) == want[0]
    assert round(t["test_rate"][0] * 30) == want[1]


def test_exact_test_holds_its_level_under_relabelling():
    # Fig. 10: relabelled real labels, the null holds by construction.
    pub, fr = bank(1000, seed=7)
    t = tf.detection_study(
        pub, fr, sizes=(50, 200, 800), deltas=0.0, relabel=True, replications=3000, seed=21
    )
    assert (t["test_rate"] <= 0.05 + 3 * t["test_se"]).all(), t["test_rate"]
    assert (np.abs(t["mean_delta_hat"]) < 0.01).all()
    # detection_study's docstring: under this super-population null the interval rule's
    # rate exceeds alpha at large sampling fractions, about 0.19 at n = 800 of N = 1,000
    rate, se = t["interval_rate"][2], t["interval_se"][2]
    assert rate > 0.05 + 4 * se
    assert abs(rate - 0.19) < 4 * se, (rate, se)


def test_planting_raises_the_gap_by_delta_in_expectation():
    pub, fr = bank(1000, seed=8)
    base = float(np.mean(pub - fr.mean(axis=1)))
    t = tf.detection_study(
        pub, fr, sizes=200, deltas=(0.0, 0.1), form_gaps=(0.0, 0.05), replications=4000, seed=2
    )
    # sd of Delta-hat at n = 200 is at most ~0.05; over 4000 audits the SE is < 0.001
    want = base + t["delta"] + t["form_gap"]  # fresh harder by g raises the gap by g
    np.testing.assert_allclose(t["mean_delta_hat"], want, atol=0.004)
    # more advantage, more detection, by both rules
    assert t["interval_rate"][2] > t["interval_rate"][0] + 0.1
    assert t["test_rate"][2] > t["test_rate"][0] + 0.1


def test_form_mismatch_makes_the_test_reject():
    # Table 13: no contamination, fresh forms harder: the exact test rejects more often.
    pub, fr = bank(1000, seed=9)
    t = tf.detection_study(
        pub,
        fr,
        sizes=400,
        deltas=0.0,
        form_gaps=(0.0, 0.05, 0.088),
        relabel=True,
        replications=1500,
        seed=3,
    )
    assert t["test_rate"][0] <= 0.05 + 3 * t["test_se"][0]
    assert t["test_rate"][1] > 0.15 and t["test_rate"][2] > t["test_rate"][1]


def test_detection_pools_models_with_equal_weight():
    (p1, f1), (p2, f2) = bank(100, seed=1), bank(100, seed=2)
    both = tf.detection_study(
        np.stack([p1, p2]), np.stack([f1, f2]), sizes=30, deltas=0.1, replications=300, seed=6
    )
    # each model is its own cell (cells 0 and 1 of the same key)
    one = tf.detection_study(p1, f1, sizes=30, deltas=0.1, replications=300, seed=6)
    assert both.meta["models"] == 2
    q2 = 0.1 / (1 - p2.mean())
    want2 = ref_detection_sums(
        p2, f2, 30, False, q2, 0.0, 30, "betting", 0.05, philox_key(6), 1, 300, BLOCK
    )
    rate = (one["interval_rate"][0] + want2[0] / 300) / 2
    assert both["interval_rate"][0] == pytest.approx(rate, abs=1e-15)


# ---------------------------------------------------------------------------- budget


def test_budget_equals_reference():
    rng = np.random.default_rng(4)
    gaps = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.05, 0.1, 0.6, 0.15, 0.1], size=(4, 150))
    gaps[1] = np.clip(gaps[1] + 0.5 * (rng.random(150) < 0.1), -1, 1)
    reps = 260
    t = tf.budget_study(gaps, sizes=(10, 40), replications=reps, seed=12)
    for c, n in enumerate((10, 40)):
        want = ref_budget_sums(gaps, n, "wald", 0.05, philox_key(12), c, reps, BLOCK)
        assert t["half_width"][c] == pytest.approx(want[0] / reps, rel=1e-12)
        assert round(t["exact_order"][c] * reps) == want[2]
        assert t["pairs_correct"][c] == pytest.approx(want[3] / reps, rel=1e-12)
    assert (np.diff(t["half_width"]) < 0).all()


def test_budget_with_all_parents_recovers_the_ordering():
    rng = np.random.default_rng(1)
    gaps = {f"m{i}": rng.choice([-0.5, 0, 0.5], size=80) for i in range(3)}
    t = tf.budget_study(gaps, sizes=80, replications=20, seed=0)
    assert t["exact_order"][0] == 1.0 and t["pairs_correct"][0] == 1.0
    assert t.meta["models"] == ["m0", "m1", "m2"]


def test_plan_audit_size_follows_its_closed_form():
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    gaps = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.05, 0.1, 0.7, 0.1, 0.05], size=(2, 400))
    plan = tf.plan_audit_size(
        gaps, [0.02, 0.1], power=0.9, alpha=0.1, population_size=3000, guardrail=30
    )
    s2 = (gaps[0].var(ddof=1) + gaps[1].var(ddof=1)) / 2  # averaged over models
    share = np.count_nonzero(gaps) / gaps.size
    z = norm.ppf(0.95) + norm.ppf(0.9)
    for k, delta in enumerate((0.02, 0.1)):
        n0 = z**2 * s2 / delta**2
        assert plan["n_normal"][k] == math.ceil(n0 * 3000 / (n0 + 3000))
        assert plan["n_guardrail"][k] == math.ceil(30 / share)
        assert plan["n_planned"][k] == max(plan["n_normal"][k], plan["n_guardrail"][k])
    assert plan["gap_sd"][0] == pytest.approx(math.sqrt(s2), rel=1e-12)
    # without population_size there is no finite-population shrinkage
    bare = tf.plan_audit_size(gaps[0], 0.02, guardrail=0)
    assert bare["n_normal"][0] == math.ceil(
        (norm.ppf(0.975) + norm.ppf(0.8)) ** 2 * gaps[0].var(ddof=1) / 0.02**2
    )
    assert bare["n_guardrail"][0] == 0
    # no nonzero gap in the pilot: the guardrail can never be met
    assert tf.plan_audit_size(np.zeros(50), 0.1)["n_planned"][0] == math.inf


def test_plan_audit_size_reaches_the_power_by_simulation():
    # A population with true mean gap delta = 0.1; the plan for delta = 0.1 should detect
    # it with the Wald rule about 80% of the time (normal approximation).
    rng = np.random.default_rng(0)
    pop = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.1, 0.15, 0.4, 0.2, 0.15], size=5000)
    delta = float(pop.mean())
    plan = tf.plan_audit_size(pop, [delta], population_size=5000)
    n = int(plan["n_planned"][0])
    assert plan["n_planned"][0] >= plan["n_guardrail"][0]
    claims = 0
    sims = 2000
    for _ in range(sims):
        d = rng.choice(pop, size=n, replace=False)
        low = ref_wald_interval(d, 5000, 0.05)[0]
        claims += low > 0
    assert abs(claims / sims - 0.8) < 0.04


# ---------------------------------------------------------------------------- output, errors


def test_tables_convert_and_print():
    pop = lattice_population(200, [0.1, 0.1, 0.6, 0.1, 0.1])
    t = tf.coverage_study(pop, 20, replications=50, seed=0, intervals=("wald", "hoeffding"))
    d = t.to_dict()
    json.dumps(d)
    assert d["meta"]["replications"] == 50
    assert "coverage" in str(t) and "Monte Carlo" in str(t)


def test_progress_bar_does_not_change_results(capsys):
    pop = lattice_population(300, [0.1, 0.1, 0.6, 0.1, 0.1])
    kw = dict(intervals=("wald",), replications=600, seed=3)
    assert same_table(
        tf.coverage_study(pop, 30, progress=True, **kw),
        tf.coverage_study(pop, 30, progress=False, **kw),
    )


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


# ---------------------------------------------------------------------------- Ctrl-C, memory


def test_ctrl_c_stops_a_sweep_within_a_second():
    code = textwrap.dedent(
        """
        import sys, threading
        import truescore_fast as tf
        print("ready", flush=True)
        try:
            tf.stress_grid(replications=10_000_000, seed=0, progress=False)
        except KeyboardInterrupt:
            print("interrupted", threading.active_count(), flush=True)
            sys.exit(130)
        print("finished", flush=True)
        """
    )
    code_, out, err, elapsed = interrupt_after(
        [sys.executable, "-c", code], 0.8, env=dict(os.environ), timeout=10
    )  # 0.8 s: well inside the sweep
    assert code_ == 130, (out, err)
    assert out.split() == ["interrupted", "1"]  # KeyboardInterrupt surfaced, no thread left
    assert elapsed < 2.0, elapsed


def _peak_bytes(replications):
    pop = lattice_population(2000, [0.05, 0.1, 0.7, 0.1, 0.05])
    tracemalloc.start()
    tf.coverage_study(
        pop,
        100,
        intervals=("wald", "hoeffding", "bernstein"),
        replications=replications,
        seed=0,
        n_threads=1,
        progress=False,
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_memory_is_flat_in_replications():
    _peak_bytes(1000)  # warm-up: imports and caches
    small, large = _peak_bytes(20_000), _peak_bytes(200_000)
    assert large < small + 64 * 1024, (small, large)


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


@pytest.mark.parametrize("which", ["public", "fresh"])
def test_detection_kernel_rejects_non_binary_labels(which):
    pub, fr = bank(20, seed=1)
    if which == "public":
        pub[3] = 2.0
    else:
        fr[5, 1] = 0.5
    with pytest.raises(ValueError, match=f"{which} must hold binary"):
        tf._core.detection_tasks(
            pub, fr, 5, False, 0.0, 0.0, 30, 0, 0.05, 1, 2, 0, 10, BLOCK, 0, 1
        )


def test_stub_lists_the_calibration_kernels():
    stub = (Path(tf.__file__).with_name("_core.pyi")).read_text()
    for name in ("coverage_tasks", "detection_tasks", "budget_tasks", "sample_indices"):
        assert f"def {name}(" in stub


def test_row_layouts_are_checked_against_the_compiled_core():
    from truescore_fast import _core
    from truescore_fast.studies import _engine

    assert {m.name: int(m) for m in _engine.BudgetSums} == _core.BUDGET_SUMS
    with pytest.raises(ImportError, match="rebuild"):
        _engine._check_layout(_engine.CoverageSums, {"COVERED": 1, "HALF_WIDTH": 0})

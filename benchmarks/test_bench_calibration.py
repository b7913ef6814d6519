"""Benchmarks of the calibration engine against baselines measured in the same run.

Groups (compare the rows within a group; the README quotes the ratios):
* coverage, 1 thread: coverage_study, n = 400 of N = 5,000, Wald + Hoeffding + Bernstein,
  on one thread (target <= 1 us per replication) vs the plain NumPy loop over
  ``rng.choice`` (target >= 30x; timed on a subset and scaled); the Fisher-Yates sampler
  (``sampler="sequence"``) is shown as a variant;
* coverage, threads: the same study on 2 threads vs 1 (target >= 1.7x on 2 free cores);
* stress grid: the default 36 settings x 4,000 audits with every interval, betting
  included, on every core (target under 2 s on 2 cores) vs 1 thread, and vs the Python
  reference loop (tests/reference.py) timed on 2 audits per setting and scaled;
* memory: replications x10 -- the time grows 10x (the ratio stays ~1) while the traced
  peak memory, recorded in extra_info, does not grow.
Every benchmark asserts correctness; no time is asserted anywhere. ``extra_info`` marks
each entry's role for ``benchmarks/ratios.py``; ``replications`` lets a reader turn a median
into a time per replication.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
import truescore_fast as tf
from reference import ref_coverage_sums
from truescore_fast import studies as cal
from truescore_fast._random import philox_key

BIG_N, N = 5000, 400
REPS = 100_000
LOOP_REPS = 1_000  # the NumPy loop is timed on this many replications, then scaled
THREE = ("wald", "hoeffding", "bernstein")


@pytest.fixture(scope="module")
def population():
    rng = np.random.default_rng(2026)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.04, 0.11, 0.70, 0.10, 0.05], size=BIG_N)


def numpy_coverage_loop(population, n, alpha, replications, rng):
    """The plain NumPy way: rng.choice per replication, then the three intervals."""
    truth = population.mean()
    big_n = population.size
    z = 1.959963984540054
    hoeffding = 2.0 * math.sqrt(math.log(2 / alpha) / (2 * n))
    l4 = math.log(4 / alpha)
    covered = np.zeros(3)
    for _ in range(replications):
        d = rng.choice(population, size=n, replace=False)
        m, s2 = d.mean(), d.var(ddof=1)
        halves = (
            z * math.sqrt((1 - n / big_n) * s2 / n),
            hoeffding,
            math.sqrt(2 * s2 * l4 / n) + 14 * l4 / (3 * (n - 1)),
        )
        covered += [abs(m - truth) <= h for h in halves]
    return covered / replications


def _check_three(table, population):
    wald = np.flatnonzero(table["interval"] == "wald")[0]
    hoeff = np.flatnonzero(table["interval"] == "hoeffding")[0]
    assert abs(table["coverage"][wald] - 0.95) < 5 * table["coverage_se"][wald] + 0.005
    assert table["coverage"][hoeff] == 1.0
    assert table["half_width"][hoeff] == pytest.approx(0.1358, abs=1e-4)


GROUP1 = f"coverage_study n = {N} of N = {BIG_N:,}, 3 intervals, 1 thread"


@pytest.mark.benchmark(group=GROUP1)
def test_coverage_one_thread(benchmark, population, record_role):
    record_role("ours", "coverage_study (counts per value)", replications=REPS)
    table = benchmark(
        tf.coverage_study,
        population,
        N,
        intervals=THREE,
        replications=REPS,
        seed=1,
        n_threads=1,
        progress=False,
    )
    assert table.meta["sampler"] == ["counts"]
    _check_three(table, population)


@pytest.mark.benchmark(group=GROUP1)
def test_coverage_one_thread_fisher_yates(benchmark, population, record_role):
    record_role(
        "ours-variant",
        "coverage_study, sampler='sequence' (Fisher-Yates)",
        replications=REPS,
    )
    table = benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(
            intervals=THREE,
            replications=REPS,
            seed=1,
            n_threads=1,
            progress=False,
            sampler="sequence",
        ),
        rounds=3,
    )
    assert table.meta["sampler"] == ["sequence"]
    _check_three(table, population)


@pytest.mark.benchmark(group=GROUP1)
def test_coverage_numpy_loop(benchmark, population, record_role):
    record_role(
        "baseline",
        "NumPy loop over rng.choice",
        scale=REPS / LOOP_REPS,
        replications=LOOP_REPS,
    )
    rng = np.random.default_rng(5)
    got = benchmark.pedantic(
        numpy_coverage_loop, args=(population, N, 0.05, LOOP_REPS, rng), rounds=3
    )
    table = tf.coverage_study(population, N, intervals=THREE, replications=REPS, seed=1)
    ours = dict(zip(table["interval"], table["coverage"], strict=True))
    se = math.sqrt(0.05 * 0.95 / LOOP_REPS)
    assert abs(got[0] - ours["wald"]) < 5 * se  # same study, within Monte Carlo error
    assert got[1] == 1.0 and got[2] == 1.0


GROUP_BET = f"coverage_study n = {N} of N = {BIG_N:,}, betting only, 1 thread"
BET_REPS = 5_000
BET_LOOP_REPS = 500


@pytest.mark.benchmark(group=GROUP_BET)
def test_coverage_betting_one_thread(benchmark, population, record_role):
    record_role("ours", "coverage_study(intervals=('betting',))", replications=BET_REPS)
    table = benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(
            intervals=("betting",), replications=BET_REPS, seed=1, n_threads=1, progress=False
        ),
        rounds=5,
    )
    # valid: coverage at least 95% within 4 Monte Carlo SEs
    assert table["coverage"][0] >= 0.95 - 4 * table["coverage_se"][0]


@pytest.mark.benchmark(group=GROUP_BET)
def test_coverage_betting_bisection_loop(benchmark, population, record_role):
    record_role(
        "baseline",
        "loop: rng.choice + the compiled bisection (the search before issue 13)",
        scale=BET_REPS / BET_LOOP_REPS,
        replications=BET_LOOP_REPS,
    )
    bisect = tf._core.testing.betting_interval_bisection
    truth = population.mean()

    def loop():
        rng = np.random.default_rng(7)
        hits = 0
        for _ in range(BET_LOOP_REPS):
            d = rng.choice(population, size=N, replace=False)
            low, high = bisect(d, float(BIG_N), 0.05)
            hits += low <= truth <= high
        return hits / BET_LOOP_REPS

    got = benchmark.pedantic(loop, rounds=3)
    assert got >= 0.95 - 4 * math.sqrt(0.05 * 0.95 / BET_LOOP_REPS)


GROUP2 = f"coverage_study n = {N} of N = {BIG_N:,}, 2 threads vs 1"
THREAD_REPS = 1_000_000


@pytest.mark.benchmark(group=GROUP2)
def test_coverage_two_threads(benchmark, population, record_role):
    record_role("ours", "2 threads", replications=THREAD_REPS)
    two = benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(
            intervals=THREE, replications=THREAD_REPS, seed=2, n_threads=2, progress=False
        ),
        rounds=3,
    )
    one = tf.coverage_study(
        population,
        N,
        intervals=THREE,
        replications=THREAD_REPS,
        seed=2,
        n_threads=1,
        progress=False,
    )
    assert two.to_dict() == one.to_dict()


@pytest.mark.benchmark(group=GROUP2)
def test_coverage_one_thread_baseline(benchmark, population, record_role):
    record_role("baseline", "1 thread", replications=THREAD_REPS)
    table = benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(
            intervals=THREE, replications=THREAD_REPS, seed=2, n_threads=1, progress=False
        ),
        rounds=3,
    )
    _check_three(table, population)


GROUP3 = "stress grid: 36 settings x 4,000 audits, every interval incl. betting"


def _check_grid(grid):
    assert len(grid) == 36
    for m in ("hoeffding", "bernstein", "hoeffding_serfling"):
        assert (grid[m] == 1.0).all()
    assert (grid["betting"] >= 0.95 - 4 * grid["betting_se"]).all()
    assert grid["wald"].min() < 0.93  # the sparse small audits undercover
    assert 0.6 < grid["bernstein/hoeffding"].min() < 1.0 < grid["bernstein/hoeffding"].max()


@pytest.mark.benchmark(group=GROUP3)
def test_stress_grid_all_cores(benchmark, record_role):
    record_role("ours", "stress_grid, every core", replications=36 * 4000)
    grid = benchmark.pedantic(
        tf.stress_grid, kwargs=dict(replications=4000, seed=0, progress=False), rounds=2
    )
    _check_grid(grid)


@pytest.mark.benchmark(group=GROUP3)
def test_stress_grid_one_thread(benchmark, record_role):
    record_role("baseline", "stress_grid, 1 thread", replications=36 * 4000)
    grid = benchmark.pedantic(
        tf.stress_grid,
        kwargs=dict(replications=4000, seed=0, n_threads=1, progress=False),
        rounds=1,
    )
    _check_grid(grid)


@pytest.mark.benchmark(group=GROUP3)
def test_stress_grid_python_reference(benchmark, record_role):
    per_setting = 2
    record_role(
        "baseline",
        "Python reference loop (tests/reference.py)",
        scale=4000 / per_setting,
        replications=36 * per_setting,
    )
    settings = cal.stress_settings()
    key = philox_key(0)
    methods = ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting")

    def loop():
        out = []
        for c, s in enumerate(settings):
            pop = cal.stress_population(s)
            out.append(
                ref_coverage_sums(
                    pop,
                    [0, pop.size],
                    [s.n],
                    methods,
                    0.05,
                    float(pop.mean()),
                    key,
                    c,
                    per_setting,
                    cal.REPLICATIONS_PER_TASK,
                )
            )
        return out

    got = benchmark.pedantic(loop, rounds=1)
    small = tf.stress_grid(replications=per_setting, seed=0)
    for c, want in enumerate(got):  # the first audits of every cell, identical
        for k, m in enumerate(methods):
            assert round(small[m][c] * per_setting) == want[k, 0]


GROUP4 = "memory: coverage_study, replications x10"


def _peak(population, replications):
    tracemalloc.start()
    tf.coverage_study(
        population,
        N,
        intervals=THREE,
        replications=replications,
        seed=3,
        n_threads=1,
        progress=False,
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


@pytest.mark.benchmark(group=GROUP4)
def test_memory_ten_times_the_replications(benchmark, population, record_role):
    small, large = _peak(population, 100_000), _peak(population, 1_000_000)
    record_role(
        "ours",
        "1,000,000 replications",
        replications=1_000_000,
        peak_bytes_small=small,
        peak_bytes_large=large,
    )
    benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(intervals=THREE, replications=1_000_000, seed=3, n_threads=1, progress=False),
        rounds=2,
    )
    assert large < small + 64 * 1024, (small, large)


@pytest.mark.benchmark(group=GROUP4)
def test_memory_baseline_replications(benchmark, population, record_role):
    record_role("baseline", "100,000 replications (time x10)", scale=10.0, replications=100_000)
    table = benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(intervals=THREE, replications=100_000, seed=3, n_threads=1, progress=False),
        rounds=3,
    )
    _check_three(table, population)

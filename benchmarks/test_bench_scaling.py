"""Thread scaling: the same job on 1, 2, 4, ... threads, up to every core of the machine.

``benchmarks/ratios.py`` prints the speed-up over one thread and the efficiency (speed-up
/ threads) per thread count, so a reader with more cores than the development machines
(2) can see where the curve bends on theirs. Two jobs:

* ``exchangeability_tests``, 10,000 shards x 999 permutations (80 MB): shards are split
  into one contiguous block per thread and nothing is shared until each thread's final
  first-bad-shard merge, so the job scales until memory bandwidth runs out (it reads the
  array once; a plain ``np.sum`` of it is the floor);
* ``coverage_study``, n = 400 of N = 5,000, three intervals: replications run in tasks of
  250 (``_core.CALIBRATION_BLOCK``), a thread takes a contiguous range of tasks and keeps
  its own integer tallies, merged once at the end: compute-bound, it should scale with
  the cores.

Every row asserts that its result is bit-identical to the one-thread result (the
library's contract: results never depend on the thread count) and checks the one-thread
result against an independent computation. No time is asserted.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import truescore_fast as tf


def thread_counts(cores: int) -> list[int]:
    """1, 2, 4, ... below ``cores``, then ``cores`` itself."""
    counts, t = [], 1
    while t < cores:
        counts.append(t)
        t *= 2
    return [*counts, cores]


THREADS = thread_counts(os.cpu_count() or 1)


def _record(record_role, threads, **extra):
    record_role(
        "scaling", f"{threads} thread{'s' if threads > 1 else ''}", threads=threads, **extra
    )


# ---------------------------------------------------------------------------------------
# exchangeability_tests, 10,000 x 999
# ---------------------------------------------------------------------------------------

N_SHARDS, M = 10_000, 999
EXCHANGE = f"scaling: exchangeability_tests, {N_SHARDS:,} shards x {M}"


@pytest.fixture(scope="module")
def shards():
    rng = np.random.default_rng(2024)
    permuted = rng.normal(-3000.0, 20.0, size=(N_SHARDS, M))
    canonical = rng.normal(-3000.0, 20.0, size=N_SHARDS)
    canonical[::7] += 60.0
    one = tf.exchangeability_tests(canonical, permuted, n_threads=1)
    # The one-thread result against NumPy, independently of our code.
    assert np.array_equal(one.counts, (permuted >= canonical[:, None]).sum(axis=1))
    assert np.allclose(one.means, permuted.mean(axis=1), rtol=1e-14, atol=0)
    return canonical, permuted, one


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.benchmark(group=EXCHANGE)
def test_exchangeability_scaling(benchmark, shards, threads, record_role):
    canonical, permuted, one = shards
    _record(record_role, threads)
    res = benchmark(tf.exchangeability_tests, canonical, permuted, n_threads=threads)
    for field in ("counts", "p_values", "means", "sds", "z_scores"):
        assert np.array_equal(getattr(res, field), getattr(one, field))


# ---------------------------------------------------------------------------------------
# coverage_study, three intervals
# ---------------------------------------------------------------------------------------

BIG_N, N, REPS = 5000, 400, 200_000
THREE = ("wald", "hoeffding", "bernstein")
COVERAGE = f"scaling: coverage_study, n = {N} of N = {BIG_N:,}, 3 intervals, {REPS:,} reps"


@pytest.fixture(scope="module")
def coverage_one():
    rng = np.random.default_rng(2026)
    population = rng.choice(
        [-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.04, 0.11, 0.70, 0.10, 0.05], size=BIG_N
    )
    one = tf.coverage_study(
        population, N, intervals=THREE, replications=REPS, seed=3, n_threads=1, progress=False
    )
    # Wald's coverage within 5 Monte Carlo SEs of its nominal 95% (plus its known
    # finite-sample shortfall); Hoeffding's half-width is 2 sqrt(log(2/alpha) / (2n)).
    cov = dict(zip(one["interval"], one["coverage"], strict=True))
    width = dict(zip(one["interval"], one["half_width"], strict=True))
    assert abs(cov["wald"] - 0.95) < 5 * math.sqrt(0.05 * 0.95 / REPS) + 0.005
    assert width["hoeffding"] == pytest.approx(2 * math.sqrt(math.log(40) / (2 * N)), rel=1e-12)
    return population, one


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.benchmark(group=COVERAGE)
def test_coverage_scaling(benchmark, coverage_one, threads, record_role):
    population, one = coverage_one
    _record(record_role, threads, replications=REPS)
    table = benchmark.pedantic(
        tf.coverage_study,
        args=(population, N),
        kwargs=dict(intervals=THREE, replications=REPS, seed=3, n_threads=threads, progress=False),
        rounds=3,
    )
    assert table.to_dict() == one.to_dict()

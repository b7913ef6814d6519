"""Speed of the resampling kernels against plain NumPy implementations.

Each group holds our implementation (every core, and one thread as a variant) and a
vectorised NumPy baseline, measured in the same run; every benchmark asserts that its
output is correct. ``extra_info`` marks each entry's role for ``benchmarks/ratios.py``.
No time is asserted anywhere. With ``--benchmark-disable`` each function runs once.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
from kernel_paths import kernel_path

N_VALUES, POPULATION, REPLICATES = 10_000, 50_000, 10_000
CHUNK = 100  # NumPy baseline: replicates per vectorised chunk (CHUNK x n indices)


# Ours on every core, and on one thread as a variant: (n_threads, role, label suffix).
THREADS = pytest.mark.parametrize(
    ("n_threads", "role", "label"),
    [(None, "ours", " (all cores)"), (1, "ours-variant", ", n_threads=1")],
    ids=["all-cores", "one-thread"],
)


# ---------------------------------------------------------------------------------------
# Rao-Wu bootstrap, n = 10^4, B = 10^4
# ---------------------------------------------------------------------------------------

RAO_WU = f"Rao-Wu bootstrap, n = {N_VALUES:,} of N = {POPULATION:,}, B = {REPLICATES:,}"


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(1)
    values = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.05, 0.1, 0.6, 0.15, 0.1], size=N_VALUES)
    f = N_VALUES / POPULATION
    unbiased_se = math.sqrt((1 - f) * values.var(ddof=1) / N_VALUES)
    return values, unbiased_se


def numpy_rao_wu(values, population, replicates, rng):
    """Vectorised Rao-Wu (m = n - 1): CHUNK replicates at a time."""
    n = values.size
    m = n - 1
    lam = math.sqrt(m * (1 - n / population) / (n - 1))
    ybar = values.mean()
    out = np.empty(replicates)
    for first in range(0, replicates, CHUNK):
        count = min(CHUNK, replicates - first)
        idx = rng.integers(0, n, size=(count, m))
        out[first : first + count] = ybar + lam * (values[idx].mean(axis=1) - ybar)
    return out


def _se_ok(replicates, unbiased_se):
    # B = 10^4: the bootstrap SD estimates the unbiased SE with relative MC SE ~0.7%.
    return abs(np.std(replicates, ddof=1) / unbiased_se - 1) < 0.03


def _rao_wu(values, n_threads):
    """The Rao-Wu job every "ours" row of the group times."""
    return tf.finite_population_bootstrap(
        values, population_size=POPULATION, replicates=REPLICATES, seed=1, n_threads=n_threads
    )


@THREADS
@pytest.mark.benchmark(group=RAO_WU)
def test_rao_wu_ours(benchmark, sample, n_threads, role, label, record_role):
    values, unbiased_se = sample
    record_role(role, "truescore_fast.finite_population_bootstrap" + label)
    result = benchmark(_rao_wu, values, n_threads=n_threads)
    assert _se_ok(result.replicates, unbiased_se)


@pytest.mark.benchmark(group=RAO_WU)
def test_rao_wu_portable_kernel(benchmark, sample, record_role):
    """One thread with the AVX-512 kernels switched off (what a CPU without AVX-512 runs;
    the same replicates): the README's "about 2.7x as long without AVX-512" is this row
    over the n_threads=1 row. On a CPU without AVX-512 the two rows time the same code."""
    values, unbiased_se = sample
    record_role(
        "ours-variant", "truescore_fast.finite_population_bootstrap, n_threads=1, no AVX-512"
    )
    with kernel_path(avx512=False):
        result = benchmark(_rao_wu, values, n_threads=1)
    assert _se_ok(result.replicates, unbiased_se)
    expected = _rao_wu(values, n_threads=1)
    np.testing.assert_array_equal(result.replicates, expected.replicates)  # same draws


@pytest.mark.benchmark(group=RAO_WU)
def test_rao_wu_numpy(benchmark, sample, record_role):
    values, unbiased_se = sample
    record_role("baseline", f"NumPy, rng.integers in chunks of {CHUNK} replicates")
    reps = benchmark(numpy_rao_wu, values, POPULATION, REPLICATES, np.random.default_rng(2))
    assert _se_ok(reps, unbiased_se)


# ---------------------------------------------------------------------------------------
# Pattern permutation test, 5 models x 200 parents, 20,000 draws (Table 8)
# ---------------------------------------------------------------------------------------

MODELS, PARENTS, DRAWS = 5, 200, 20_000
PATTERN = f"pattern permutation test, {MODELS} x {PARENTS}, {DRAWS:,} draws"


@pytest.fixture(scope="module")
def pattern_gaps():
    rng = np.random.default_rng(8)
    values = rng.choice([-1.0, -0.5, 0.5, 1.0], size=(MODELS, PARENTS))
    return np.where(rng.random((MODELS, PARENTS)) < 0.15, values, 0.0)


def numpy_pattern_test(gaps, min_models, draws, rng, chunk=2000):
    """Vectorised: each model's row permuted by rng.permuted over a (chunk, N) block."""
    mask = gaps > 0
    observed = int((mask.sum(axis=0) >= min_models).sum())
    stats = np.empty(draws, dtype=np.int64)
    for first in range(0, draws, chunk):
        count = min(chunk, draws - first)
        counts = np.zeros((count, mask.shape[1]), dtype=np.int64)
        for row in mask:
            counts += rng.permuted(np.broadcast_to(row, (count, row.size)), axis=1)
        stats[first : first + count] = (counts >= min_models).sum(axis=1)
    return observed, stats.mean(), (1 + np.sum(stats >= observed)) / (draws + 1)


def _pattern_ok(observed, null_mean, p, gaps):
    # Independent check of the observed count and of the null mean: under the null each
    # model's pattern parents are a uniform random subset of size c_m, so for any one
    # parent the models' indicators are independent Bernoulli(c_m / N) and
    # E[T*] = N * P(at least 2 of them) exactly. The MC SE of the mean over 20,000 draws
    # is about 0.012; 0.06 is 5 SE.
    mask = gaps > 0
    rates = mask.sum(axis=1) / mask.shape[1]
    none = np.prod(1 - rates)
    one = sum(rates[m] * np.prod(np.delete(1 - rates, m)) for m in range(rates.size))
    expected_mean = mask.shape[1] * (1 - none - one)
    return (
        observed == int((mask.sum(axis=0) >= 2).sum())
        and abs(null_mean - expected_mean) < 0.06
        and 0 < p <= 1
    )


@THREADS
@pytest.mark.benchmark(group=PATTERN)
def test_pattern_ours(benchmark, pattern_gaps, n_threads, role, label, record_role):
    record_role(role, "truescore_fast.pattern_permutation_test" + label)
    result = benchmark(
        tf.pattern_permutation_test,
        pattern_gaps,
        min_models=2,
        draws=DRAWS,
        seed=1,
        n_threads=n_threads,
    )
    assert _pattern_ok(result.observed, result.null_mean, result.p_value, pattern_gaps)


@pytest.mark.benchmark(group=PATTERN)
def test_pattern_numpy(benchmark, pattern_gaps, record_role):
    record_role("baseline", "NumPy, rng.permuted over blocks of 2,000 draws")
    observed, null_mean, p = benchmark(
        numpy_pattern_test, pattern_gaps, 2, DRAWS, np.random.default_rng(3)
    )
    assert _pattern_ok(observed, null_mean, p, pattern_gaps)


# ---------------------------------------------------------------------------------------
# Booth-Butler-Hall bootstrap, n = 10^4 of N = 5 x 10^4 (issue 24)
# ---------------------------------------------------------------------------------------

BBH_REPLICATES = 2_000
BBH = f"BBH bootstrap, n = {N_VALUES:,} of N = {POPULATION:,}, B = {BBH_REPLICATES:,}"


def numpy_bbh(values, population, replicates, rng):
    """BBH with NumPy: the pseudo-population (each value N // n times, plus N mod n of them
    drawn without replacement), then per replicate n of its N units without replacement
    by np.argpartition of N uniforms; replicate = resample mean - pseudo-population mean."""
    n = values.size
    k, r = divmod(population, n)
    out = np.empty(replicates)
    for b in range(replicates):
        pseudo = np.concatenate([np.tile(values, k), values[rng.choice(n, r, replace=False)]])
        chosen = np.argpartition(rng.random(population), n)[:n]
        out[b] = pseudo[chosen].mean() - pseudo.mean()
    return out


def _bbh_ok(replicates, unbiased_se):
    # B = 2,000: the SD's relative MC SE is ~1.6%; 6% is under 4 SE.
    return abs(np.std(replicates, ddof=1) / unbiased_se - 1) < 0.06


@THREADS
@pytest.mark.benchmark(group=BBH)
def test_bbh_ours(benchmark, sample, n_threads, role, label, record_role):
    values, unbiased_se = sample
    record_role(role, "truescore_fast.finite_population_bootstrap(method='bbh')" + label)
    result = benchmark(
        tf.finite_population_bootstrap,
        values,
        population_size=POPULATION,
        method="bbh",
        replicates=BBH_REPLICATES,
        seed=1,
        n_threads=n_threads,
    )
    assert _bbh_ok(result.replicates - result.replicates.mean(), unbiased_se)


@pytest.mark.benchmark(group=BBH)
def test_bbh_numpy(benchmark, sample, record_role):
    values, unbiased_se = sample
    record_role("baseline", "NumPy, np.argpartition of N uniforms per replicate")
    reps = benchmark.pedantic(
        numpy_bbh,
        args=(values, POPULATION, BBH_REPLICATES, np.random.default_rng(2)),
        rounds=3,
        iterations=1,
    )
    assert _bbh_ok(reps, unbiased_se)

"""Speed of the exchangeability test against truescore 0.7.4 and against NumPy.

Each group holds our implementation and its baselines, measured in the same run; every
benchmark also asserts that its output is correct. ``extra_info`` marks each entry's role
("ours" or "baseline") and, for a baseline timed on a subset, the factor that scales it
to the full job; ``benchmarks/ratios.py`` turns a saved JSON run into the README table.
No time is asserted anywhere. With ``--benchmark-disable`` each function runs once.
"""

from __future__ import annotations

import numpy as np
import pytest
import truescore.contamination as ts
import truescore_fast as tf
from scipy import stats

N_SHARDS, M = 10_000, 999
LOOP_SUBSET = 1_000  # truescore's Python loop is timed on this many shards, then scaled
N_P_VALUES = 10_000


def _same_result(a, b) -> bool:
    fields = ("p_value", "canonical_loglik", "permutation_mean", "permutation_std", "z_score")
    return all(
        np.float64(getattr(a, f)).view(np.int64) == np.float64(getattr(b, f)).view(np.int64)
        for f in fields
    ) and (a.n_permutations, a.level) == (b.n_permutations, b.level)


# ---------------------------------------------------------------------------------------
# (a) One call, m = 99
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_shard():
    rng = np.random.default_rng(99)
    permuted = rng.normal(-4200.0, 15.0, size=99)
    canonical = float(permuted[10] + 0.5)
    return canonical, permuted, ts.exchangeability_test(canonical, permuted)


@pytest.mark.benchmark(group="one call, m = 99")
def test_single_ours(benchmark, one_shard, record_role):
    canonical, permuted, expected = one_shard
    record_role("ours", "truescore_fast.exchangeability_test")
    result = benchmark(tf.exchangeability_test, canonical, permuted)
    assert _same_result(result, expected)


@pytest.mark.benchmark(group="one call, m = 99")
def test_single_truescore(benchmark, one_shard, record_role):
    canonical, permuted, _ = one_shard
    record_role("baseline", "truescore.exchangeability_test")
    result = benchmark(ts.exchangeability_test, canonical, permuted)
    assert result.p_value == (1 + int(np.sum(permuted >= canonical))) / 100


# ---------------------------------------------------------------------------------------
# (b) 10,000 shards x 999 permutations, the full per-shard result
# ---------------------------------------------------------------------------------------

BATCH = f"{N_SHARDS:,} shards x {M} permutations"


def numpy_rank_tests(canonical, permuted):
    """The best plain-NumPy expression of the full per-shard result."""
    counts = (permuted >= canonical[:, None]).sum(axis=1)
    p = (1.0 + counts) / (permuted.shape[1] + 1.0)
    means = permuted.mean(axis=1)
    sds = permuted.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sds > 0, (canonical - means) / sds, 0.0)
    return counts, p, means, sds, z


@pytest.fixture(scope="module")
def batch():
    rng = np.random.default_rng(2024)
    permuted = rng.normal(-3000.0, 20.0, size=(N_SHARDS, M))
    canonical = rng.normal(-3000.0, 20.0, size=N_SHARDS)
    canonical[::7] += 60.0  # some contaminated shards
    return canonical, permuted, numpy_rank_tests(canonical, permuted)


def _assert_matches_numpy(res, expected, rows=slice(None)):
    counts, p, means, sds, z = (e[rows] for e in expected)
    assert np.array_equal(res.counts, counts)
    assert np.array_equal(res.p_values, p)
    assert np.allclose(res.means, means, rtol=1e-14, atol=0)
    assert np.allclose(res.sds, sds, rtol=1e-12, atol=0)
    assert np.allclose(res.z_scores, z, rtol=1e-10, atol=1e-12)


@pytest.mark.benchmark(group=BATCH)
def test_batch_ours(benchmark, batch, record_role):
    canonical, permuted, expected = batch
    record_role("ours", "truescore_fast.exchangeability_tests (all cores)")
    res = benchmark(tf.exchangeability_tests, canonical, permuted)
    _assert_matches_numpy(res, expected)


@pytest.mark.benchmark(group=BATCH)
def test_batch_ours_one_thread(benchmark, batch, record_role):
    canonical, permuted, expected = batch
    record_role("ours-variant", "truescore_fast.exchangeability_tests (n_threads=1)")
    res = benchmark(tf.exchangeability_tests, canonical, permuted, n_threads=1)
    _assert_matches_numpy(res, expected)


@pytest.mark.benchmark(group=BATCH)
def test_batch_truescore_loop(benchmark, batch, record_role):
    # truescore has no batch API: one exchangeability_test per shard in a Python loop.
    # Timed on the first LOOP_SUBSET shards; ratios.py multiplies by `scale`.
    canonical, permuted, expected = batch
    record_role(
        "baseline",
        f"truescore.exchangeability_test in a Python loop (timed on {LOOP_SUBSET:,} "
        f"shards, x{N_SHARDS // LOOP_SUBSET})",
        scale=N_SHARDS / LOOP_SUBSET,
    )

    def loop():
        return [ts.exchangeability_test(canonical[i], permuted[i]) for i in range(LOOP_SUBSET)]

    results = benchmark.pedantic(loop, rounds=3, iterations=1)
    counts, p, means, sds, z = expected
    assert np.array_equal([r.p_value for r in results], p[:LOOP_SUBSET])
    assert np.allclose([r.permutation_std for r in results], sds[:LOOP_SUBSET], rtol=1e-12)


@pytest.mark.benchmark(group=BATCH)
def test_batch_numpy(benchmark, batch, record_role):
    canonical, permuted, _ = batch
    record_role("baseline", "NumPy: (perm >= c[:, None]).sum(1), mean, std(ddof=1), z")
    counts, p, means, sds, z = benchmark(numpy_rank_tests, canonical, permuted)
    # Cross-check a few rows against truescore, independently of our code.
    for i in (0, 7, 4321, N_SHARDS - 1):
        ref = ts.exchangeability_test(canonical[i], permuted[i])
        assert p[i] == ref.p_value and means[i] == ref.permutation_mean
        assert sds[i] == pytest.approx(ref.permutation_std, rel=1e-13)


@pytest.mark.benchmark(group=BATCH)
def test_batch_numpy_sum_floor(benchmark, batch, record_role):
    canonical, permuted, expected = batch
    record_role("baseline", "memory floor: NumPy perm.sum() (one pass, no result)")
    total = benchmark(permuted.sum)
    assert total == pytest.approx(float(np.sum(expected[2] * M)), rel=1e-10)


# ---------------------------------------------------------------------------------------
# (c) combine_shards on 10^4 p-values
# ---------------------------------------------------------------------------------------

COMBINE = f"combine_shards, {N_P_VALUES:,} p-values"


@pytest.fixture(scope="module")
def p_values():
    rng = np.random.default_rng(4)
    p = (1.0 + rng.integers(0, 1000, size=N_P_VALUES)) / 1000.0
    return p, ts.combine_shards(p)


@pytest.mark.benchmark(group=COMBINE)
def test_combine_ours(benchmark, p_values, record_role):
    p, expected = p_values
    record_role("ours", "truescore_fast.combine_shards")
    result = benchmark(tf.combine_shards, p)
    assert result.statistic == expected.statistic and result.p_value == expected.p_value


@pytest.mark.benchmark(group=COMBINE)
def test_combine_truescore(benchmark, p_values, record_role):
    p, _ = p_values
    record_role("baseline", "truescore.combine_shards")
    result = benchmark(ts.combine_shards, p)
    statistic = -2.0 * float(np.sum(np.log(p)))
    assert result.statistic == pytest.approx(statistic, rel=1e-14)
    assert result.p_value == pytest.approx(stats.chi2(2 * N_P_VALUES).sf(statistic), rel=1e-12)


@pytest.mark.benchmark(group=COMBINE)
def test_combine_log_floor(benchmark, p_values, record_role):
    # The part both libraries must do identically: the logarithms of the p-values. It
    # bounds how much faster a bit-identical combine_shards can be.
    p, expected = p_values
    record_role("baseline", "floor: np.log of the p-values alone")
    logs = benchmark(np.log, p)
    assert -2.0 * float(np.sum(logs)) == expected.statistic

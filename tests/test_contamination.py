"""The exchangeability (permutation-rank) test: calibration, kernels, pooling, errors.

Statistical claims are checked with fixed seeds against rates derived from first
principles, within a stated number of Monte Carlo standard errors. Kernel outputs are
compared with the plain NumPy implementations in ``tests/reference.py``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import truescore.contamination as ts
import truescore_fast as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import (
    ref_average_p,
    ref_chi2_even_log_sf_mpmath,
    ref_fisher,
    ref_moments_mpmath,
    ref_moments_scaled_numpy,
    ref_rank_test,
    ref_rank_tests_rows,
    ref_row_means,
    ref_stouffer_midp,
)
from scipy import special, stats
from truescore_fast import _core
from truescore_fast.contamination import (
    CombinedContamination,
    ContaminationResult,
    ExchangeabilityTests,
)

N_NULL = 4000  # null replications for every rate check
N_SE = 4.0  # tolerance, in Monte Carlo standard errors


def same_bits(a, b) -> bool:
    """Bitwise equality of float arrays (distinguishes -0.0 from 0.0; NaN never passes)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if a.shape != b.shape or np.isnan(a).any() or np.isnan(b).any():
        return False
    return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


def mc_se(rate: float, n: int) -> float:
    return math.sqrt(rate * (1.0 - rate) / n)


# ---------------------------------------------------------------------------------------
# Calibration under the null
# ---------------------------------------------------------------------------------------


def test_false_positive_rate_matches_alpha_single_calls():
    # Canonical and permuted values i.i.d.: the null of exchangeability holds exactly.
    rng = np.random.default_rng(20260101)
    m, alpha = 999, 0.05
    rejections = 0
    p_at_most_alpha = 0
    for _ in range(N_NULL):
        values = rng.normal(-3000.0, 25.0, size=m + 1)
        result = tf.exchangeability_test(values[0], values[1:], alpha=alpha)
        rejections += result.contaminated
        p_at_most_alpha += result.p_value <= alpha
    # P(p < alpha) = (ceil(alpha (m+1)) - 1) / (m + 1) = 49/1000 for the strict verdict,
    # P(p <= alpha) = 50/1000 = alpha exactly; both within 4 SE of alpha.
    se = mc_se(alpha, N_NULL)
    assert abs(rejections / N_NULL - alpha) <= N_SE * se
    assert abs(p_at_most_alpha / N_NULL - alpha) <= N_SE * se


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
def test_false_positive_rate_matches_alpha_batched(alpha):
    rng = np.random.default_rng(7)
    m = 199
    values = rng.standard_normal((N_NULL, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    rate = float(np.mean(res.contaminated))
    # The verdict is p < 1 - level with level = 1 - alpha (as in truescore), and
    # 1 - (1 - alpha) is not always alpha in floating point (0.01 -> 0.010000000000000009),
    # so the exact rejection rate is counted on the grid with that threshold.
    grid = np.arange(1, m + 2) / (m + 1.0)
    exact = float(np.sum(grid < 1.0 - (1.0 - alpha))) / (m + 1)
    assert exact <= alpha
    assert abs(rate - exact) <= N_SE * mc_se(exact, N_NULL)
    assert abs(rate - alpha) <= N_SE * mc_se(alpha, N_NULL)


def test_ties_keep_the_test_valid():
    # Heavily tied, discrete log-likelihoods: counting ">=" makes p super-uniform.
    # Counting ">" instead would reject far more often than alpha.
    rng = np.random.default_rng(11)
    m, alpha = 99, 0.05
    values = rng.integers(0, 6, size=(N_NULL, m + 1)).astype(np.float64)
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    rate = float(np.mean(res.p_values <= alpha))
    assert rate <= alpha + N_SE * mc_se(alpha, N_NULL)


def test_p_values_uniform_on_the_permutation_grid():
    rng = np.random.default_rng(3)
    m = 19
    values = rng.standard_normal((N_NULL, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    grid = np.arange(1, m + 2) / (m + 1.0)
    # Every p-value lies exactly on the grid k / (m + 1), k = 1..m+1 ...
    k = np.rint(res.p_values * (m + 1)).astype(int)
    assert same_bits(res.p_values, k / (m + 1.0))
    assert same_bits(np.unique(res.p_values), grid)
    # ... and each grid point has probability 1/(m+1): chi-square goodness of fit,
    # rejected only if its p-value is below 1e-4 (fixed seed, so this is deterministic).
    observed = np.bincount(k, minlength=m + 2)[1:]
    chi2 = stats.chisquare(observed, np.full(m + 1, N_NULL / (m + 1)))
    assert chi2.pvalue > 1e-4
    # Per point: each frequency within 4 SE of 1/(m+1).
    q = 1.0 / (m + 1)
    assert np.all(np.abs(observed / N_NULL - q) <= N_SE * mc_se(q, N_NULL))


def test_fisher_calibrated_under_the_null_on_uniform_p_values():
    rng = np.random.default_rng(5)
    alpha, k = 0.05, 8
    rejections = sum(
        tf.combine_shards(rng.uniform(size=k), alpha=alpha).contaminated for _ in range(N_NULL)
    )
    assert abs(rejections / N_NULL - alpha) <= N_SE * mc_se(alpha, N_NULL)


@pytest.mark.parametrize("alpha", [0.01, 0.05])
def test_fisher_pooled_shards_calibrated_under_the_null(alpha):
    # K = 8 null shards of m = 199 permutations, pooled: the discreteness of permutation
    # p-values makes Fisher slightly conservative, never liberal.
    rng = np.random.default_rng(17)
    k, m = 8, 199
    values = rng.standard_normal((N_NULL * k, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    pooled = np.array(
        [
            tf.exchangeability_tests(
                values[i * k : (i + 1) * k, 0], values[i * k : (i + 1) * k, 1:], alpha=alpha
            )
            .combine("fisher")
            .p_value
            for i in range(N_NULL)
        ]
    )
    # The batch pooled with combine_shards gives the same numbers.
    assert tf.combine_shards(res.p_values[:k]).p_value == pooled[0]
    rate = float(np.mean(pooled < alpha))
    assert abs(rate - alpha) <= N_SE * mc_se(alpha, N_NULL)


@pytest.mark.parametrize(
    ("method", "dependent"),
    [("stouffer", False), ("average", False), ("average", True)],
)
def test_stouffer_midp_and_average_are_conservative_under_the_null(method, dependent):
    # Coarse grid (m = 19) so the mid-p correction and discreteness matter. With
    # dependent=True every shard of a replication reuses the same null data: averaging
    # (doubled) stays valid under any dependence; Stouffer assumes independence.
    rng = np.random.default_rng(23 + dependent)
    k, m, alpha = 8, 19, 0.05
    if dependent:
        base = rng.standard_normal((N_NULL, m + 1))
        values = np.repeat(base, k, axis=0)
    else:
        values = rng.standard_normal((N_NULL * k, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    pooled = np.empty(N_NULL)
    for i in range(N_NULL):
        block = slice(i * k, (i + 1) * k)
        sub = ExchangeabilityTests(
            p_values=res.p_values[block],
            counts=res.counts[block],
            z_scores=res.z_scores[block],
            means=res.means[block],
            sds=res.sds[block],
            n_permutations=res.n_permutations[block],
            canonical=res.canonical[block],
            alpha=res.alpha,
        )
        pooled[i] = sub.combine(method).p_value
    assert np.all((pooled > 0.0) & (pooled <= 1.0))
    rate = float(np.mean(pooled < alpha))
    assert rate <= alpha + N_SE * mc_se(alpha, N_NULL)


def test_eight_non_significant_shards_pool_to_a_finding():
    # Each shard's canonical value sits just above a chosen number of its 99 shuffled
    # values, so its p-value is (1 + count) / 100 with counts 6..12: every shard is
    # individually non-significant (p between 0.07 and 0.13) but Fisher pools them well
    # below 0.01: -2 sum log p = 37.1 on 16 df.
    rng = np.random.default_rng(2023)
    m = 99
    counts = np.array([6, 8, 9, 10, 12, 7, 9, 11])
    canonical, permuted = [], []
    for c in counts:
        perm = rng.normal(-5000.0, 40.0, size=m)
        ordered = np.sort(perm)[::-1]
        canonical.append((ordered[c - 1] + ordered[c]) / 2.0)  # exactly c values above
        permuted.append(perm)
    singles = [tf.exchangeability_test(c, p) for c, p in zip(canonical, permuted, strict=True)]
    p_values = np.array([r.p_value for r in singles])
    assert np.array_equal(p_values, (1.0 + counts) / (m + 1.0))
    assert all(not r.contaminated and 0.06 <= r.p_value <= 0.2 for r in singles)

    pooled = tf.combine_shards(p_values)
    statistic, p_ref = ref_fisher(p_values)
    assert pooled.statistic == pytest.approx(statistic, rel=1e-14)
    assert pooled.p_value == pytest.approx(p_ref, rel=1e-12)
    assert pooled.p_value < 0.01 and pooled.contaminated
    batched = tf.exchangeability_tests(canonical, np.array(permuted)).combine("fisher")
    assert batched.p_value == pooled.p_value and batched.statistic == pooled.statistic


def test_memorised_order_is_detected():
    # Power check: canonical order shifted up by 3 sds in every shard.
    rng = np.random.default_rng(99)
    values = rng.standard_normal((50, 200))
    values[:, 0] += 3.0
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    assert np.mean(res.contaminated) > 0.7
    assert res.combine("fisher").log_p_value < math.log(1e-30)


# ---------------------------------------------------------------------------------------
# Kernels against the NumPy reference
# ---------------------------------------------------------------------------------------

SIZES = [0, 1, 7, 1000]


def _shards(rng, n_shards, m_choices, *, ties):
    """Ragged rows with realistic log-likelihoods, some ties, and canonical values that
    sometimes equal a permuted value exactly (the >= boundary)."""
    rows, canonical = [], []
    for _ in range(n_shards):
        m = int(rng.choice(m_choices))
        row = rng.normal(-2000.0, 30.0, size=m)
        if ties:
            row = np.round(row / 5.0) * 5.0
        c = rng.normal(-2000.0, 30.0)
        if rng.uniform() < 0.3:
            c = float(row[rng.integers(m)])
        rows.append(row)
        canonical.append(c)
    return np.array(canonical, dtype=np.float64), rows


def _assert_matches_reference(out, ref):
    assert np.array_equal(out["count"], ref["count"])
    assert out["count"].dtype == np.int64
    for key in ("p_value", "mean", "sd", "z_score"):
        assert same_bits(out[key], ref[key]), key


@pytest.mark.parametrize("n_shards", SIZES)
@pytest.mark.parametrize("m", [1, 7, 1000])
@pytest.mark.parametrize("ties", [False, True])
def test_dense_kernel_equals_reference(n_shards, m, ties):
    rng = np.random.default_rng(1000 * n_shards + m + ties)
    canonical, rows = _shards(rng, n_shards, [m], ties=ties)
    dense = np.array(rows, dtype=np.float64).reshape(n_shards, m)
    ref = ref_rank_tests_rows(canonical, rows)
    outs = [_core.rank_tests_dense(canonical, dense, n_threads=t) for t in (1, 2, None, 3)]
    for out in outs:
        _assert_matches_reference(out, ref)
    for out in outs[1:]:  # thread counts bitwise identical
        for key in out:
            assert np.array_equal(out[key].view(np.int64), outs[0][key].view(np.int64))


@pytest.mark.parametrize("n_shards", SIZES)
@pytest.mark.parametrize("ties", [False, True])
def test_ragged_kernel_equals_reference(n_shards, ties):
    rng = np.random.default_rng(5000 + n_shards + ties)
    canonical, rows = _shards(rng, n_shards, [1, 2, 7, 8, 9, 127, 128, 129, 1000], ties=ties)
    lengths = [len(r) for r in rows]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.concatenate(rows) if rows else np.zeros(0)
    ref = ref_rank_tests_rows(canonical, rows)
    outs = [_core.rank_tests_ragged(canonical, values, offsets, n_threads=t) for t in (1, 2)]
    for out in outs:
        _assert_matches_reference(out, ref)
    for key in outs[0]:
        assert np.array_equal(outs[0][key].view(np.int64), outs[1][key].view(np.int64))
    means = [_core.row_means_ragged(values, offsets, n_threads=t) for t in (1, 2)]
    assert same_bits(means[0], ref_row_means(rows))
    assert same_bits(means[0], means[1])


@pytest.mark.parametrize("m", [1, 2, 7, 8, 9, 16, 127, 128, 129, 1000, 8193])
def test_single_kernel_equals_reference(m):
    rng = np.random.default_rng(m)
    for trial in range(20):
        x = rng.normal(-1e4, 10.0 ** rng.uniform(-3, 3), size=m)
        c = float(x[0]) if trial % 3 == 0 else float(rng.normal(-1e4, 5.0))
        p, mean, sd, z = _core.rank_test(c, x)
        ref = ref_rank_test(c, x)
        assert same_bits(
            [p, mean, sd, z], [ref["p_value"], ref["mean"], ref["sd"], ref["z_score"]]
        )


@pytest.mark.parametrize("n_shards", [1, 7, 1000])
def test_public_batch_equals_single_calls_and_reference(n_shards):
    rng = np.random.default_rng(n_shards)
    canonical, rows = _shards(rng, n_shards, [1, 3, 50], ties=True)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    res = tf.exchangeability_tests(canonical, np.concatenate(rows), offsets=offsets)
    ref = ref_rank_tests_rows(canonical, rows)
    assert np.array_equal(res.counts, ref["count"])
    assert same_bits(res.p_values, ref["p_value"])
    assert same_bits(res.means, ref["mean"])
    assert same_bits(res.sds, ref["sd"])
    assert same_bits(res.z_scores, ref["z_score"])
    assert np.array_equal(res.n_permutations, [len(r) for r in rows])
    assert same_bits(res.resolutions, [1.0 / (len(r) + 1) for r in rows])
    assert len(res) == n_shards
    for i in range(0, n_shards, max(1, n_shards // 10)):
        assert res.shard(i) == tf.exchangeability_test(canonical[i], rows[i])


def test_converted_inputs_equal_float64_contiguous():
    rng = np.random.default_rng(42)
    base = rng.normal(-100.0, 3.0, size=(40, 30))
    canonical = rng.normal(-100.0, 3.0, size=40)
    expected = tf.exchangeability_tests(canonical, base)

    def check(c, p, **kw):
        got = tf.exchangeability_tests(c, p, **kw)
        for field in ("p_values", "counts", "means", "sds", "z_scores", "canonical"):
            assert np.array_equal(getattr(got, field), getattr(expected, field)), field

    check(canonical.tolist(), base.tolist())
    check(canonical, np.asfortranarray(base))
    wide = np.zeros((40, 60))
    wide[:, ::2] = base
    check(canonical, wide[:, ::2])  # non-contiguous view
    check(canonical[::-1][::-1].copy(), base[::-1][::-1])  # negative strides

    f32 = base.astype(np.float32)
    ints = np.rint(base).astype(np.int64)
    for converted in (f32, ints, ints.astype(np.int32)):
        got = tf.exchangeability_tests(canonical, converted)
        ref = ref_rank_tests_rows(canonical, list(converted.astype(np.float64)))
        _assert_matches_reference(
            {
                "count": got.counts,
                "p_value": got.p_values,
                "mean": got.means,
                "sd": got.sds,
                "z_score": got.z_scores,
            },
            ref,
        )
        single = tf.exchangeability_test(canonical[3], converted[3])
        assert single == got.shard(3)
        assert tf.exchangeability_test(canonical[3], converted[3].tolist()) == single

    # Ragged with float32 values and int32 offsets.
    offsets = np.arange(0, 40 * 30 + 1, 30, dtype=np.int32)
    got = tf.exchangeability_tests(canonical, f32.ravel(), offsets=offsets)
    assert np.array_equal(got.means, tf.exchangeability_tests(canonical, f32).means)


def _peak_bytes(call) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_dense_float64_input_is_read_in_place():
    # NumPy reports its buffers to tracemalloc, so a converted copy of the input shows
    # in the peak. C-contiguous float64 (8 MB here) must not be copied; float32 input
    # must be converted exactly once (which also shows the check can see a copy).
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1000, 999))
    canonical = np.zeros(1000)
    in_place = _peak_bytes(lambda: tf.exchangeability_tests(canonical, x))
    assert in_place < x.nbytes / 20, in_place
    x32 = x.astype(np.float32)
    converted = _peak_bytes(lambda: tf.exchangeability_tests(canonical, x32))
    assert x.nbytes <= converted < 2.5 * x.nbytes, converted


def test_batch_releases_the_gil():
    # While the core works on a large batch in another thread, this thread keeps
    # running. Were the GIL held, this thread would stall for the whole call (a pause as
    # long as the call itself); with it released, its longest pause is an OS time slice.
    import threading
    import time

    rng = np.random.default_rng(2)
    x = rng.standard_normal((20000, 999))
    canonical = np.zeros(20000)
    done = threading.Event()

    def work() -> None:
        tf.exchangeability_tests(canonical, x, n_threads=1)
        done.set()

    worker = threading.Thread(target=work)
    start = last = time.perf_counter()
    longest = 0.0
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now
    worker.join()
    elapsed = time.perf_counter() - start
    assert longest < 0.5 * elapsed, (longest, elapsed)


# ---------------------------------------------------------------------------------------
# Pooling against the reference
# ---------------------------------------------------------------------------------------


def test_combine_methods_equal_reference():
    rng = np.random.default_rng(8)
    canonical, rows = _shards(rng, 30, [1, 9, 99], ties=True)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    res = tf.exchangeability_tests(canonical, np.concatenate(rows), offsets=offsets, alpha=0.1)

    fisher = res.combine()
    statistic, p_ref = ref_fisher(res.p_values)
    assert fisher.method == "fisher"
    assert fisher.statistic == pytest.approx(statistic, rel=1e-14)
    assert fisher.p_value == pytest.approx(p_ref, rel=1e-12)
    assert fisher.log_p_value == pytest.approx(
        ref_chi2_even_log_sf_mpmath(fisher.statistic, 30), rel=1e-10, abs=1e-13
    )

    stouffer = res.combine("stouffer")
    z_ref, p_ref = ref_stouffer_midp(res.counts, res.n_permutations)
    assert stouffer.method == "stouffer"
    assert stouffer.statistic == pytest.approx(z_ref, rel=1e-12, abs=1e-14)
    assert stouffer.p_value == pytest.approx(p_ref, rel=1e-12)
    assert stouffer.log_p_value == pytest.approx(math.log(p_ref), rel=1e-12)
    assert np.isfinite(stouffer.statistic)  # p = 1 shards (count = m) do not send Z to -inf

    average = res.combine("average")
    mean_ref, p_ref = ref_average_p(res.p_values)
    assert average.method == "average"
    assert average.statistic == pytest.approx(mean_ref, rel=1e-14)
    assert average.p_value == pytest.approx(p_ref, rel=1e-14)
    for pooled in (fisher, stouffer, average):
        assert isinstance(pooled, CombinedContamination)
        assert pooled.n_shards == 30 and pooled.level == pytest.approx(0.9)
        assert np.array_equal(pooled.shard_p_values, res.p_values)
        assert pooled.contaminated == (pooled.p_value < 0.1)


def test_average_is_capped_at_one():
    res = tf.exchangeability_tests([0.0, 0.0], [[1.0, 1.0], [1.0, -1.0]])
    assert res.combine("average").p_value == 1.0  # 2 * mean(1, 2/3) > 1


def test_stouffer_detects_consistent_shift_and_log_p_is_finite():
    rng = np.random.default_rng(4)
    values = rng.standard_normal((2000, 100))
    values[:, 0] += 2.0
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    pooled = res.combine("stouffer")
    assert pooled.p_value == 0.0 or pooled.p_value < 1e-300
    assert np.isfinite(pooled.log_p_value)
    assert pooled.log_p_value == pytest.approx(float(special.log_ndtr(-pooled.statistic)))


# ---------------------------------------------------------------------------------------
# fisher_log_sf against mpmath
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 8, 50, 1000, 10000])
def test_fisher_log_sf_equals_mpmath(k):
    df = 2.0 * k
    for x in (
        0.0,
        1e-3,
        0.5,
        df / 2,
        df - math.sqrt(2 * df),
        df,
        df + 4 * math.sqrt(2 * df),
        10.0 * df,
        1e4,
        1e6,
    ):
        ref = ref_chi2_even_log_sf_mpmath(x, k)
        got = _core.fisher_log_sf(x, k)
        # log p to 1e-10 relative, or 1e-13 absolute where log p is near 0 (p near 1:
        # an absolute error in log p is a relative error in p).
        assert got == pytest.approx(ref, rel=1e-10, abs=1e-12), (k, x)
        p = special.chdtrc(df, x)
        if p > 1e-300:
            assert math.exp(got) == pytest.approx(p, rel=1e-9)


def test_log_p_value_finite_where_p_value_underflows():
    # Eight shards at p = 1e-50: the pooled p is about 1e-383, below the smallest double.
    pooled = tf.combine_shards([1e-50] * 8)
    assert pooled.p_value == 0.0
    ref = ref_chi2_even_log_sf_mpmath(pooled.statistic, 8)
    assert ref < math.log(1e-308) - 100  # far below the double range
    assert np.isfinite(pooled.log_p_value)
    assert pooled.log_p_value == pytest.approx(ref, rel=1e-12)
    assert "log p" in pooled.explain()
    deeper = tf.combine_shards(np.full(1000, 5e-324))
    assert deeper.log_p_value == pytest.approx(
        ref_chi2_even_log_sf_mpmath(deeper.statistic, 1000), rel=1e-11
    )


@pytest.mark.parametrize("statistic", [math.inf, math.nan, -1.0])
def test_fisher_log_sf_rejects_bad_statistic(statistic):
    with pytest.raises(ValueError, match="statistic"):
        _core.fisher_log_sf(statistic, 3)


@pytest.mark.parametrize("k", [0, -1])
def test_fisher_log_sf_rejects_no_shards(k):
    with pytest.raises(ValueError, match="n_shards"):
        _core.fisher_log_sf(1.0, k)


# ---------------------------------------------------------------------------------------
# Extreme magnitudes
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale", [1e150, 1e154, 1e200, 1e300, 1e307])
def test_huge_magnitudes_give_finite_accurate_moments(scale):
    # NumPy's squared deviations overflow beyond ~1e154; the kernel must not.
    rng = np.random.default_rng(int(math.log10(scale)))
    for m in (2, 7, 100, 1000):
        x = rng.uniform(-1.0, 1.0, size=m) * scale
        c = float(rng.uniform(-1.0, 1.0) * scale)
        p, mean, sd, z = _core.rank_test(c, x)
        mean_ref, sd_ref = ref_moments_mpmath(x)
        assert p == ref_rank_test(c, x)["p_value"]
        # NumPy's arithmetic on power-of-two-scaled values, bit for bit ...
        assert same_bits([mean, sd, z], ref_moments_scaled_numpy(x, c))
        # ... which is accurate.
        assert math.isfinite(mean) and math.isfinite(sd) and math.isfinite(z)
        assert mean == pytest.approx(mean_ref, rel=1e-12, abs=1e-12 * sd_ref)
        assert sd == pytest.approx(sd_ref, rel=1e-12)
        assert z == pytest.approx((c - mean_ref) / sd_ref, rel=1e-10, abs=1e-12)


def test_z_score_not_nan_when_sd_overflows():
    # True sd of (-M, -M, 0.9 M) is about 1.1 M > M = largest double, so sd = inf is the
    # correctly rounded answer; z = (M - mean) / sd must still be its true value (about
    # 1.25, computed in scaled units), not inf / inf = NaN.
    big = float(np.finfo(np.float64).max)
    values = [-big, -big, 0.9 * big]
    r = tf.exchangeability_test(big, values)
    assert r.permutation_std == math.inf
    _, _, z_ref = ref_moments_scaled_numpy(values, big)
    u = [-1.0, -1.0, 0.9]  # the same values in units of M: z is scale-free
    mu = sum(u) / 3
    z_exact = (1.0 - mu) / math.sqrt(sum((v - mu) ** 2 for v in u) / 2)
    assert r.z_score == z_ref and r.z_score == pytest.approx(z_exact, rel=1e-14)
    batched = tf.exchangeability_tests([big], [values])
    assert batched.z_scores[0] == r.z_score


# ---------------------------------------------------------------------------------------
# Errors: ValueError naming the argument
# ---------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")
BAD_ALPHAS = [0.0, 1.0, -0.1, 1.5, NAN, INF]


@pytest.mark.parametrize("alpha", BAD_ALPHAS)
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        tf.exchangeability_test(0.0, [1.0, 2.0], alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        tf.combine_shards([0.5], alpha=alpha)
    with pytest.raises(ValueError, match="alpha"):
        tf.exchangeability_tests([0.0], [[1.0]], alpha=alpha)


@pytest.mark.parametrize(
    ("canonical", "permuted", "name"),
    [
        (NAN, [1.0], "canonical_loglik"),
        (INF, [1.0], "canonical_loglik"),
        (-INF, [1.0], "canonical_loglik"),
        (0.0, [], "permuted_logliks"),
        (0.0, np.zeros(0), "permuted_logliks"),
        (0.0, [[1.0, 2.0]], "permuted_logliks"),
        (0.0, 3.0, "permuted_logliks"),
        (0.0, [1.0, NAN], "permuted_logliks"),
        (0.0, [INF, 1.0], "permuted_logliks"),
        (0.0, [-INF], "permuted_logliks"),
    ],
)
def test_exchangeability_test_errors(canonical, permuted, name):
    with pytest.raises(ValueError, match=name):
        tf.exchangeability_test(canonical, permuted)


@pytest.mark.parametrize("permuted", [["a", "b"], [1.0, None], [1j], {1.0}, {"a": 1.0}])
def test_unconvertible_permutations_raise_numpys_error_as_truescore_does(permuted):
    # truescore converts with np.asarray(..., dtype=float) and lets NumPy's TypeError or
    # ValueError through; the drop-in raises the same exception with the same message.
    with pytest.raises((TypeError, ValueError)) as theirs:
        ts.exchangeability_test(0.0, permuted)
    with pytest.raises(type(theirs.value), match=re.escape(str(theirs.value))):
        tf.exchangeability_test(0.0, permuted)


@pytest.mark.parametrize(
    "p_values",
    [[], [[0.5, 0.5]], [0.0], [0.5, 0.0], [-0.1], [1.0000001], [2.0], [NAN], [INF], 0.5],
)
def test_combine_shards_errors(p_values):
    with pytest.raises(ValueError, match="p_values"):
        tf.combine_shards(p_values)


@pytest.mark.parametrize(
    ("canonical", "permuted", "kwargs", "name"),
    [
        ([], np.zeros((0, 3)), {}, "canonical"),
        ([[0.0]], [[1.0]], {}, "canonical"),
        ([NAN], [[1.0]], {}, "canonical"),
        ([INF, 0.0], [[1.0], [2.0]], {}, "canonical"),
        ([0.0], [1.0], {}, "permuted"),
        ([0.0], np.zeros((1, 1, 1)), {}, "permuted"),
        ([0.0, 1.0], [[1.0, 2.0]], {}, "permuted"),
        ([0.0], np.zeros((1, 0)), {}, "permuted"),
        ([0.0, 1.0], [[1.0], [NAN]], {}, "permuted"),
        ([0.0], [[INF, 1.0]], {}, "permuted"),
        ([0.0], [[1.0]], {"offsets": [0, 1]}, "permuted"),
        ([0.0], [1.0, NAN], {"offsets": [0, 2]}, "permuted"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, 1]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [1, 2]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [0, 1]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [0, 3]}, "offsets"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, 0, 2]}, "offsets"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, 3, 2]}, "offsets"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, -1, 2]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [0.0, 2.0]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [[0, 2]]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": np.array([0, 2**64 - 1], dtype=np.uint64)}, "offsets"),
        ([0.0], [[1.0]], {"n_threads": 0}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": -1}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": 1.5}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": True}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": "2"}, "n_threads"),
    ],
)
def test_exchangeability_tests_errors(canonical, permuted, kwargs, name):
    with pytest.raises(ValueError, match=name):
        tf.exchangeability_tests(canonical, permuted, **kwargs)


@pytest.mark.parametrize(
    ("canonical", "permuted", "name"),
    [
        ([0.0], [["a"]], "permuted"),
        ([1j], [[1.0]], "canonical"),
        ([0.0], np.array([[1.0 + 2j]]), "permuted"),
    ],
)
def test_exchangeability_tests_non_real_input_is_a_type_error(canonical, permuted, name):
    with pytest.raises(TypeError, match=name):
        tf.exchangeability_tests(canonical, permuted)


@pytest.mark.parametrize("method", ["Fisher", "mean", "", None, "tippett"])
def test_combine_unknown_method(method):
    res = tf.exchangeability_tests([0.0], [[1.0]])
    with pytest.raises(ValueError, match="method"):
        res.combine(method)


def test_core_kernel_errors():
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_test(0.0, np.zeros(0))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_test(0.0, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_test(0.0, np.array([1.0, NAN]))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_tests_dense(np.zeros(2), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_tests_dense(np.zeros(1), np.zeros((1, 0)))
    with pytest.raises(ValueError, match="offsets"):
        _core.rank_tests_ragged(np.zeros(1), np.zeros(2), np.array([0, 1]))
    with pytest.raises(ValueError, match="offsets"):
        _core.row_means_ragged(np.zeros(2), np.array([0, 0, 2]))
    with pytest.raises(ValueError, match="offsets"):
        _core.row_means_ragged(np.zeros(2), np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="shuffled"):
        _core.row_means_ragged(np.array([1.0, INF]), np.array([0, 2]))
    with pytest.raises(ValueError, match="n_threads"):
        _core.rank_tests_dense(np.zeros(1), np.zeros((1, 1)), n_threads=0)


def test_first_bad_shard_is_reported_whatever_the_thread_count():
    values = np.zeros((1000, 3))
    values[700, 1] = NAN
    values[300, 2] = INF
    for threads in (1, 2, 4):
        with pytest.raises(ValueError, match=r"shard 300\b"):
            _core.rank_tests_dense(np.zeros(1000), values, n_threads=threads)


# ---------------------------------------------------------------------------------------
# Result objects and summaries
# ---------------------------------------------------------------------------------------


def test_result_fields_and_properties():
    r = tf.exchangeability_test(5.0, [1.0, 2.0, 3.0, 5.0], alpha=0.3)
    assert isinstance(r, ContaminationResult)
    assert r.p_value == 2 / 5 and r.n_permutations == 4 and r.canonical_loglik == 5.0
    assert r.resolution == 1 / 5 and r.level == pytest.approx(0.7)
    assert r.contaminated is False or r.contaminated == np.False_
    with pytest.raises(AttributeError):
        r.p_value = 0.1  # frozen


def test_explain_finding_and_floor():
    r = tf.exchangeability_test(10.0, np.arange(99.0) * 0.01, alpha=0.05)
    assert r.contaminated and r.p_value == r.resolution == 0.01
    text = r.explain()
    assert "finding" in text and "no finding" not in text
    assert "0.05" in text  # the level
    assert "99" in text  # the permutation budget
    assert "0.01" in text  # p-value and smallest possible p
    assert "floor" in text  # a p at the floor reflects the budget


def test_explain_negative_result_says_what_it_does_not_mean():
    r = tf.exchangeability_test(0.0, [1.0] * 19)
    assert not r.contaminated
    text = r.explain()
    assert "no finding" in text
    assert re.search(r"not evidence of a clean model", text)
    assert "shuffled" in text and "paraphrase" in text
    assert "0.05" in text  # resolution 1/20 printed as the smallest possible p-value
    assert "floor" not in text


def test_combined_and_batch_summaries():
    rng = np.random.default_rng(0)
    values = rng.standard_normal((12, 50))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    text = res.summary()
    assert "12 shards" in text and "49" in text and "Fisher" in text
    assert "expected by chance" in text
    for method in ("fisher", "stouffer", "average"):
        pooled = res.combine(method)
        s = pooled.summary()
        assert "12 shards" in s and "smallest shard p-value" in s
        assert ("no pooled finding" in s) == (not pooled.contaminated)
        if not pooled.contaminated:
            assert "not evidence of a clean model" in s
    strong = tf.combine_shards([1e-4] * 5)
    assert strong.contaminated and "finding: pooled evidence" in strong.explain()


# ---------------------------------------------------------------------------------------
# Property test: any input gives a finite result or a ValueError
# ---------------------------------------------------------------------------------------

any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
wide_float = st.one_of(
    st.floats(min_value=-1e308, max_value=1e308, allow_nan=False),
    any_float,
    st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 1.7976931348623157e308, -1.7976931348623157e308]),
)


def _assert_sane(p, mean, sd, z, values):
    m = len(values)
    assert 0.0 < p <= 1.0 and p >= 1.0 / (m + 1) - 1e-15
    assert math.isfinite(mean)
    assert sd >= 0.0
    if not math.isfinite(sd):
        # Only where the true sd exceeds the largest double (values near +-1.8e308).
        assert ref_moments_mpmath(values)[1] == math.inf
    assert not math.isnan(z)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(canonical=wide_float, permuted=st.lists(wide_float, max_size=40))
def test_property_single(canonical, permuted):
    try:
        r = tf.exchangeability_test(canonical, permuted)
    except ValueError:
        return
    assert math.isfinite(canonical) and permuted and all(map(math.isfinite, permuted))
    _assert_sane(r.p_value, r.permutation_mean, r.permutation_std, r.z_score, permuted)
    # The mean lies between the extremes, up to the rounding of sum / m (NumPy's mean of
    # three equal values can be one ulp off them).
    lo, hi = min(permuted), max(permuted)
    assert lo - 1e-13 * abs(lo) <= r.permutation_mean <= hi + 1e-13 * abs(hi)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    n_shards=st.integers(0, 6),
    ragged=st.booleans(),
)
def test_property_batch(data, n_shards, ragged):
    canonical = data.draw(st.lists(wide_float, min_size=n_shards, max_size=n_shards))
    if ragged:
        lengths = data.draw(st.lists(st.integers(0, 6), min_size=n_shards, max_size=n_shards))
        values = data.draw(st.lists(wide_float, min_size=sum(lengths), max_size=sum(lengths)))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        kwargs = {"offsets": offsets}
    else:
        m = data.draw(st.integers(0, 6))
        values = np.array(
            data.draw(st.lists(wide_float, min_size=n_shards * m, max_size=n_shards * m))
        ).reshape(n_shards, m)
        kwargs = {"offsets": None}
    try:
        res = tf.exchangeability_tests(canonical, values, **kwargs)
    except ValueError:
        return
    assert len(res) == n_shards > 0
    rows = (
        [values[offsets[i] : offsets[i + 1]] for i in range(n_shards)] if ragged else list(values)
    )
    for i in range(n_shards):
        _assert_sane(res.p_values[i], res.means[i], res.sds[i], res.z_scores[i], rows[i])
    for method in ("fisher", "stouffer", "average"):
        pooled = res.combine(method)
        assert 0.0 <= pooled.p_value <= 1.0 and not math.isnan(pooled.log_p_value)


@settings(max_examples=200, deadline=None)
@given(st.lists(wide_float, max_size=20))
def test_property_combine_shards(p_values):
    try:
        pooled = tf.combine_shards(p_values)
    except ValueError:
        return
    assert all(0.0 < p <= 1.0 for p in p_values)
    assert 0.0 <= pooled.p_value <= 1.0
    assert math.isfinite(pooled.statistic) and pooled.statistic >= 0.0
    assert math.isfinite(pooled.log_p_value) and pooled.log_p_value <= 0.0

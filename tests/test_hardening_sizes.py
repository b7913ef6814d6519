"""Issue 10, items 3 and 14 (compiled side): ln(2/alpha)-type radii at alphas whose
quotient overflows, and size checks before allocating -- memory that does not grow with
draws where the docs promise streaming, and a clear MemoryError naming the argument
otherwise."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mpmath
import numpy as np
import pytest
import truescore_fast as ts
from reference import ref_rao_wu_replicates
from truescore_fast._random import philox_key
from truescore_fast._validation import format_bytes, memory_error, memory_limit

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


# --- memory: one message for every size check -------------------------------------------


def test_format_bytes_reads_like_a_person_would_write_it() -> None:
    assert format_bytes(512) == "512 bytes"
    assert format_bytes(24e9) == "24.0 GB"
    assert format_bytes(3.2e6) == "3.2 MB"
    assert format_bytes(8e18) == "8.0 EB"
    assert format_bytes(2.5e21) == "2,500.0 EB"


def test_memory_error_names_the_argument_size_and_remedy() -> None:
    message = str(memory_error("n_resamples", 24e9, "use fewer n_resamples"))
    assert message.startswith("n_resamples needs 24.0 GB of memory")
    assert message.endswith("use fewer n_resamples")


def _beyond_memory() -> int:
    limit = memory_limit()
    assert limit is not None
    return limit


def test_kappa_resamples_beyond_memory_are_refused_before_drawing() -> None:
    n = _beyond_memory() // 8  # 25 bytes a resample needed: about 3 times the machine
    with pytest.raises(MemoryError, match=r"^n_resamples needs [\d.,]+ [GTPE]B of memory"):
        ts.linear_weighted_kappa([1, 2, 3, 1], [1, 2, 2, 1], categories=[1, 2, 3], n_resamples=n)


def test_kappa_resamples_are_unchanged_by_the_preallocated_array() -> None:
    # The seeded result is what the chunked draws give: a small case against a loop.
    a, b = [1, 2, 3, 1, 2, 3, 3, 1], [1, 2, 2, 1, 3, 3, 2, 1]
    got = ts.linear_weighted_kappa(a, b, categories=[1, 2, 3], n_resamples=300, seed=4)
    rng = np.random.Generator(np.random.Philox(key=np.array(philox_key(4), dtype=np.uint64)))
    rows = rng.integers(0, 8, size=(300, 8))
    w = np.abs(np.subtract.outer(np.arange(3), np.arange(3))) / 2
    ai, bi = np.array(a) - 1, np.array(b) - 1
    kappas = []
    for r in rows:
        pa, pb = np.bincount(ai[r], minlength=3) / 8, np.bincount(bi[r], minlength=3) / 8
        e = pa @ w @ pb
        kappas.append(1 - w[ai[r], bi[r]].mean() / e if e > 0 else np.nan)
    k = np.array(kappas)
    assert got.n_undefined == int(np.isnan(k).sum())
    lo, hi = np.percentile(k[~np.isnan(k)], [2.5, 97.5])
    assert (got.low, got.high) == pytest.approx((lo, hi), abs=1e-12)


@pytest.mark.parametrize(
    ("args", "name"),
    [((10**9, 10**9, 1), "n_shards"), ((10**9, 10, 10**3), "permutations_per_shard")],
)
def test_shard_orders_too_large_for_memory_name_the_argument(args, name) -> None:
    with pytest.raises(MemoryError, match=rf"^{name} needs [\d.,]+ [GTPE]B of memory.*fewer"):
        ts.shard_orders(*args)


def test_shard_orders_made_one_seed_at_a_time_equal_spawned_seeds() -> None:
    orders = ts.shard_orders(20, 4, 3, seed=9)
    for i, child in enumerate(np.random.SeedSequence(9).spawn(4)):
        gen = np.random.Generator(np.random.Philox(child))
        shard = np.arange(orders.offsets[i], orders.offsets[i + 1])
        assert np.array_equal(orders.permutations[i], gen.permuted(np.tile(shard, (3, 1)), axis=1))


def test_a_zero_stride_input_beyond_memory_is_refused_by_name_not_copied() -> None:
    row = np.linspace(-1, 1, 10**6)
    huge = np.broadcast_to(row, (10**7, 10**6))  # 80 TB if copied
    with pytest.raises(MemoryError, match=r"^d needs 80.0 TB of memory.*C-contiguous"):
        ts.betting_intervals(huge)
    with pytest.raises(MemoryError, match=r"^values needs"):
        ts.finite_population_bootstrap(np.broadcast_to(1.0, (2 * 10**13,)), population_size=None)


def test_dense_rank_tests_read_a_zero_stride_input_in_place() -> None:
    # 20,000 shards sharing one row of 1,000 permutations: read at row stride 0, never
    # copied; every shard's count is that of its canonical value against the row.
    rng = np.random.default_rng(5)
    row = rng.normal(size=1000)
    canonical = rng.normal(size=20000)
    got = ts.exchangeability_tests(canonical, np.broadcast_to(row, (20000, 1000)))
    counts = (row[None, :] >= canonical[:, None]).sum(axis=1)
    assert np.array_equal(got.counts, counts)
    assert np.array_equal(got.p_values, (1 + counts) / 1001)
    assert np.all(got.sds == np.std(row, ddof=1))
    strided = np.asfortranarray(rng.normal(size=(6, 50)))  # column-major: one checked copy
    got = ts.exchangeability_tests(np.zeros(6), strided)
    want = ts.exchangeability_tests(np.zeros(6), np.ascontiguousarray(strided))
    assert np.array_equal(got.sds, want.sds)
    sliced = rng.normal(size=(10, 80))[::2, 5:60]  # rows in place at twice the row stride
    got = ts.exchangeability_tests(np.zeros(5), sliced)
    want = ts.exchangeability_tests(np.zeros(5), sliced.copy())
    assert np.array_equal(got.means, want.means)
    assert np.array_equal(got.z_scores, want.z_scores)


def test_rao_wu_resamples_above_the_buffer_are_summed_as_drawn_bit_for_bit() -> None:
    # m = 5000 per stratum (above the 4096 gathered in a buffer): the streamed sum equals
    # NumPy's sum of the same draws.
    rng = np.random.default_rng(8)
    values = rng.normal(size=40)
    result = ts.finite_population_bootstrap(
        values, population_size=400, replicates=3, resample_size=5000, seed=6
    )
    lam = math.sqrt(5000 * (1 - 40 / 400) / 39)
    want = ref_rao_wu_replicates([values], [5000], [lam], [1.0], 3, philox_key(6))
    assert np.array_equal(result.replicates, want)


# Peak resident memory of a child that runs `code` (MB), from the kernel's own count.
PEAK = """
import resource, numpy as np, truescore_fast as tf
{code}
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def _peak_mb(code: str) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(ts.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", PEAK.format(code=textwrap.dedent(code))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1])


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="ASan's own memory")
def test_memory_does_not_grow_with_draws_where_the_docs_promise_streaming() -> None:
    # Rao-Wu with m = 2 * 10^7 (was 160 MB per thread), the Monte Carlo randomization test
    # with 10^7 draws (240 MB at 24 bytes a draw) and the pattern test with 4 * 10^7 draws
    # (was 160 MB): peaks within 40 MB of a run with 100 times fewer draws.
    cases = {
        "rao_wu": (
            "tf.finite_population_bootstrap(np.arange(50.0), population_size=500, "
            "replicates=2, resample_size={}, n_threads=2)",
            2 * 10**7,
        ),
        "randomization": (
            "tf.randomization_test(np.random.default_rng(0).random(20), "
            "np.random.default_rng(1).random((20, 1)), method='monte_carlo', n_resamples={})",
            10**7,
        ),
        "pattern": (
            "tf.pattern_permutation_test(-np.eye(3)[:2], min_models=1, draws={}, n_threads=2)",
            4 * 10**7,
        ),
    }
    for name, (code, size) in cases.items():
        big, small = _peak_mb(code.format(size)), _peak_mb(code.format(size // 100))
        assert big - small < 40, (name, big, small)


NO_RLIMIT_UNDER_ASAN = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""), reason="no RLIMIT_AS under ASan"
)


@NO_RLIMIT_UNDER_ASAN
def test_pattern_test_memory_is_estimated_before_allocating() -> None:
    # Under a 2 GB address-space limit, 8 workers of ~24 bytes per parent for 2^24
    # parents (3.2 GB) are refused by name before any of it is allocated.
    code = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (2 * 10**9, 2 * 10**9))
import numpy as np
from truescore_fast import _core
ind = np.zeros((1, 2**24), dtype=np.uint8)
ind[0, ::3] = 1
try:
    _core.pattern_test(ind, 1, 1000, 1, 2, n_threads=8)
except MemoryError as error:
    print(error)
"""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(ts.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = "indicator needs 3.2 GB of memory, more than the 2.0 GB available"
    assert proc.stdout.startswith(want)
    assert "n_threads" in proc.stdout

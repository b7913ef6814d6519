"""Speed of the sign-flip and family-bootstrap kernels against plain NumPy.

Each group holds the compiled kernel and a vectorised NumPy baseline measured in the same
run; each benchmark asserts its result (exact counts equal; bootstrap intervals within
Monte Carlo error of each other). No time is asserted. With ``--benchmark-disable`` each
function runs once.
"""

from __future__ import annotations

import numpy as np
import pytest
from truescore_fast.compare.families import family_bootstrap_difference
from truescore_fast.compare.pacost import paired_confidence_test

N_EXACT = 18  # 262,144 sign patterns
N_FAMILIES, PER_FAMILY, N_BOOT = 500, 8, 4000


@pytest.fixture(scope="module")
def differences():
    return np.round(np.random.default_rng(18).normal(0.2, 1.0, N_EXACT), 6)


def numpy_exact_count(d):
    masks = np.arange(2**d.size, dtype=np.int64)
    flips = ((masks[:, None] >> np.arange(d.size)) & 1).astype(bool)
    totals = np.where(flips, -d, d).sum(axis=1)
    return int(np.count_nonzero(totals >= d.sum() - 1e-9))


@pytest.mark.benchmark(group=f"exact sign-flip test, n = {N_EXACT}")
def test_sign_flip_ours(benchmark, differences, record_role):
    record_role("ours", "paired_confidence_test(method='sign_flip')")
    res = benchmark(paired_confidence_test, differences, np.zeros(N_EXACT), method="sign_flip")
    assert res.p_value == numpy_exact_count(differences) / 2**N_EXACT


@pytest.mark.benchmark(group=f"exact sign-flip test, n = {N_EXACT}")
def test_sign_flip_numpy(benchmark, differences, record_role):
    record_role("baseline", "NumPy enumeration")
    count = benchmark(numpy_exact_count, differences)
    assert 0 < count <= 2**N_EXACT


@pytest.fixture(scope="module")
def clustered():
    rng = np.random.default_rng(3)
    fam = np.repeat(np.arange(N_FAMILIES), PER_FAMILY)
    base = rng.normal(0, 1, N_FAMILIES)[fam]
    return base + 0.1 + rng.normal(0, 0.5, fam.size), base + rng.normal(0, 0.5, fam.size), fam


def numpy_family_bootstrap(treated, control, fam, seed):
    rng = np.random.default_rng(seed)
    t_sum, c_sum = np.bincount(fam, weights=treated), np.bincount(fam, weights=control)
    n = np.bincount(fam).astype(float)
    draws = rng.integers(0, N_FAMILIES, size=(N_BOOT, N_FAMILIES))
    reps = t_sum[draws].sum(1) / n[draws].sum(1) - c_sum[draws].sum(1) / n[draws].sum(1)
    return np.quantile(reps, [0.025, 0.975])


@pytest.mark.benchmark(group=f"family bootstrap, {N_FAMILIES} families x {N_BOOT}")
def test_family_bootstrap_ours(benchmark, clustered, record_role):
    record_role("ours", "family_bootstrap_difference")
    res = benchmark(
        family_bootstrap_difference,
        *clustered[:2],
        families=clustered[2],
        n_resamples=N_BOOT,
        seed=1,
    )
    lo, hi = numpy_family_bootstrap(*clustered, seed=1)
    width = hi - lo
    assert abs(res.low - lo) < 0.1 * width and abs(res.high - hi) < 0.1 * width


@pytest.mark.benchmark(group=f"family bootstrap, {N_FAMILIES} families x {N_BOOT}")
def test_family_bootstrap_numpy(benchmark, clustered, record_role):
    record_role("baseline", "NumPy vectorised resampling")
    lo, hi = benchmark(numpy_family_bootstrap, *clustered, seed=1)
    assert lo < hi


# --- the thread pool (issue 24): a loop's cost per call, pool against threads per call ---

POOL_BLOCKS, POOL_PER_BLOCK, POOL_CALLS = 2, 5_000, 100
POOL_GROUP = (
    f"threaded loop, {POOL_BLOCKS} blocks of {POOL_PER_BLOCK:,} additions on 2 threads, "
    f"{POOL_CALLS} calls"
)


@pytest.fixture(scope="module")
def pool_values():
    return np.random.default_rng(24).normal(size=POOL_BLOCKS * POOL_PER_BLOCK)


@pytest.mark.parametrize(
    ("pool", "role", "label"),
    [
        (True, "ours", "parallel_for_blocks on the persistent pool"),
        (
            False,
            "baseline",
            "a std::thread started and joined per block per call (before issue 24)",
        ),
    ],
    ids=["pool", "threads-per-call"],
)
@pytest.mark.benchmark(group=POOL_GROUP)
def test_thread_pool(benchmark, pool_values, pool, role, label, record_role):
    from truescore_fast import _core

    record_role(role, label)
    sums = benchmark(
        _core.testing.parallel_block_sums, pool_values, POOL_BLOCKS, 2, pool=pool, calls=POOL_CALLS
    )
    np.testing.assert_allclose(sums, pool_values.reshape(POOL_BLOCKS, -1).sum(axis=1), rtol=1e-12)

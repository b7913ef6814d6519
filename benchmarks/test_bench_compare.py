"""Speed and memory of the paired comparisons against truescore 0.7.4.

Each group pairs truescore_fast ("ours") with truescore ("baseline"), measured in the
same run; ``benchmarks/ratios.py`` turns a saved JSON run into the README table. Every
benchmark asserts its result is correct -- against a normal approximation of the
resampling distribution that neither implementation uses -- and none asserts a time.
truescore's bootstrap at n = 10^4, B = 10^4 allocates ~1.6 GB, so its baselines run one
round. ``test_bootstrap_peak_memory`` measures peak traced memory of both with
tracemalloc and prints it (run with ``-s``).
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
import truescore.compare as ts
from scipy import stats

import truescore_fast as tf

PERM_N, PERM_B = 1_000, 10_000
BOOT_N, BOOT_B = 10_000, 10_000


def _mark(benchmark, role, label, scale=1.0):
    benchmark.extra_info.update({"role": role, "label": label, "scale": scale})


def scores(n, seed, effect):
    """Rubric-style scores on a 0-1 grid of 0.05 (so ties occur), paired and correlated."""
    rng = np.random.default_rng(seed)
    skill = rng.random(n)
    a = np.clip(np.round((skill + rng.normal(effect, 0.25, n)) * 20) / 20, 0, 1)
    b = np.clip(np.round((skill + rng.normal(0.0, 0.25, n)) * 20) / 20, 0, 1)
    return a, b


def sign_flip_normal_p(a, b):
    """Large-n approximation of the sign-flip p-value: sum d_i over sqrt(sum d_i^2)."""
    d = a - b
    return float(2 * stats.norm.sf(abs(d.sum()) / math.sqrt(np.sum(d * d))))


def check_permutation(result, a, b):
    expected = sign_flip_normal_p(a, b)
    q = max(expected / 2, 1 / PERM_B)
    assert abs(result.p_value - expected) < 5 * 2 * math.sqrt(q * (1 - q) / PERM_B) + 0.01
    assert result.difference == pytest.approx(float(np.mean(a - b)), abs=1e-15)


def check_bootstrap(result, a, b):
    d = a - b
    sd = d.std() / math.sqrt(d.size)
    z = stats.norm.ppf(0.975)
    assert result.low == pytest.approx(d.mean() - z * sd, abs=0.1 * sd)
    assert result.high == pytest.approx(d.mean() + z * sd, abs=0.1 * sd)
    expected_p = float(2 * stats.norm.sf(abs(d.mean()) / sd))
    assert abs(result.p_value - expected_p) < 0.02


@pytest.fixture(scope="module")
def perm_data():
    return scores(PERM_N, 1, effect=0.02)


@pytest.fixture(scope="module")
def boot_data():
    return scores(BOOT_N, 2, effect=0.006)


PERM_GROUP = f"paired_permutation, n = {PERM_N:,}, {PERM_B:,} resamples"


@pytest.mark.benchmark(group=PERM_GROUP)
def test_permutation_ours(benchmark, perm_data):
    a, b = perm_data
    _mark(benchmark, "ours", "truescore_fast.paired_permutation")
    result = benchmark(tf.paired_permutation, a, b, n_resamples=PERM_B)
    check_permutation(result, a, b)


@pytest.mark.benchmark(group=PERM_GROUP)
def test_permutation_truescore(benchmark, perm_data):
    a, b = perm_data
    _mark(benchmark, "baseline", "truescore.paired_permutation")
    result = benchmark.pedantic(
        ts.paired_permutation, args=(a, b), kwargs={"n_resamples": PERM_B}, rounds=1,
        iterations=1,
    )
    check_permutation(result, a, b)


BOOT_GROUP = f"paired_bootstrap, n = {BOOT_N:,}, B = {BOOT_B:,}"


@pytest.mark.benchmark(group=BOOT_GROUP)
def test_bootstrap_ours(benchmark, boot_data):
    a, b = boot_data
    _mark(benchmark, "ours", "truescore_fast.paired_bootstrap")
    result = benchmark(tf.paired_bootstrap, a, b, n_bootstrap=BOOT_B)
    check_bootstrap(result, a, b)


@pytest.mark.benchmark(group=BOOT_GROUP)
def test_bootstrap_truescore(benchmark, boot_data):
    a, b = boot_data
    _mark(benchmark, "baseline", "truescore.paired_bootstrap")
    result = benchmark.pedantic(
        ts.paired_bootstrap, args=(a, b), kwargs={"n_bootstrap": BOOT_B}, rounds=1,
        iterations=1,
    )
    check_bootstrap(result, a, b)


def traced_peak(fn, *args, **kwargs):
    tracemalloc.start()
    try:
        result = fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def test_bootstrap_peak_memory(boot_data):
    """Peak traced memory at n = B = 10^4: ours must be under 1% of truescore's."""
    a, b = boot_data
    ours, ours_peak = traced_peak(tf.paired_bootstrap, a, b, n_bootstrap=BOOT_B)
    theirs, theirs_peak = traced_peak(ts.paired_bootstrap, a, b, n_bootstrap=BOOT_B)
    check_bootstrap(ours, a, b)
    check_bootstrap(theirs, a, b)
    print(
        f"\npaired_bootstrap n={BOOT_N:,} B={BOOT_B:,} peak traced memory: "
        f"truescore {theirs_peak / 2**20:.1f} MiB, truescore_fast {ours_peak / 2**20:.3f} MiB "
        f"({100 * ours_peak / theirs_peak:.3f}%)"
    )
    assert ours_peak < 50 * 2**20
    assert ours_peak < 0.01 * theirs_peak

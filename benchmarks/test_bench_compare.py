"""Speed and memory of the paired comparisons against truescore 0.7.4.

Each group pairs truescore_fast ("ours") with truescore ("baseline"), measured in the
same run; ``benchmarks/ratios.py`` turns a saved JSON run into the README table. Every
benchmark asserts its result is correct -- against a normal approximation of the
resampling distribution that neither implementation uses -- and none asserts a time.
truescore's bootstrap at n = 10^4, B = 10^4 allocates ~1.6 GB, so its baselines run a
warm-up call and three rounds (not pytest-benchmark's calibrated many; see
``BASELINE_ROUNDS`` for why not one). ``test_bootstrap_peak_memory`` measures peak
traced memory of both with tracemalloc and prints it (run with ``-s``).
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
import truescore.compare as ts
import truescore_fast as tf
from scipy import stats

PERM_N, PERM_B = 1_000, 10_000
BOOT_N, BOOT_B = 10_000, 10_000


ROLES = ("ours", "baseline")

# Rounds of each truescore baseline, after one warm-up call; the table shows their
# median. One round was not enough: truescore materialises a B x n index array and its
# gather (1.6 GB for the bootstrap at n = B = 10^4, 80 MB for the permutation test at
# n = 10^3), and the kernel time of first touching that fresh memory swings from call to
# call while the computation itself does not. Measured on the 2-core development VM
# (getrusage around each call of truescore.compare.paired_bootstrap, continuous scores):
# user time 0.41 to 0.55 s in every call; system time 1.7 to 3.4 s in the first call of
# a process and mostly 0.1 to 0.2 s (once 1.05 s) in the calls right after it, with the
# same ~1,760 page faults each time -- NumPy asks for transparent huge pages on large
# arrays, so these are 2 MB pages, and memory the process has not used lately costs the
# virtual machine far more to hand out (the host backs it again). In a benchmark run
# (three rounds, no warm-up, under load) the first baseline call was the slowest of its
# group in four of the five groups (first calls 1.5 to 3.4 s, the others 0.65 to 2.4 s),
# the groups' own benchmarks running in between. Wall time adds waiting
# for a core on a shared machine. So a one-round baseline took 0.65 s in one run and
# 3.9 s in another, and the printed speed-up swung 8x to 50x. The warm-up call takes the
# first touch; the median of three drops one more slow call. The calls run one after
# another, so peak memory stays that of one call; the whole run takes about 10 s longer.
BASELINE_WARMUP, BASELINE_ROUNDS = 1, 3


def _run(benchmark, record_role, role, name, a, b, **kwargs):
    """Benchmark ``name`` (a function of truescore.compare's API) for ``role``: ours
    (truescore_fast, pytest-benchmark's calibrated rounds) or the baseline (truescore,
    a warm-up call and BASELINE_ROUNDS rounds: its bootstrap allocates ~1.6 GB)."""
    if role == "ours":
        record_role(role, f"truescore_fast.{name}")
        return benchmark(getattr(tf, name), a, b, **kwargs)
    record_role(role, f"truescore.{name}")
    return benchmark.pedantic(
        getattr(ts, name),
        args=(a, b),
        kwargs=kwargs,
        rounds=BASELINE_ROUNDS,
        iterations=1,
        warmup_rounds=BASELINE_WARMUP,
    )


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


# --- rubric-style scores on a 0.05 grid: 41 distinct differences ------------------------

PERM_GROUP = f"paired_permutation, rubric scores, n = {PERM_N:,}, {PERM_B:,} resamples"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.benchmark(group=PERM_GROUP)
def test_permutation(benchmark, perm_data, role, record_role):
    a, b = perm_data
    result = _run(benchmark, record_role, role, "paired_permutation", a, b, n_resamples=PERM_B)
    check_permutation(result, a, b)


BOOT_GROUP = f"paired_bootstrap, rubric scores, n = {BOOT_N:,}, B = {BOOT_B:,}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.benchmark(group=BOOT_GROUP)
def test_bootstrap(benchmark, boot_data, role, record_role):
    a, b = boot_data
    result = _run(benchmark, record_role, role, "paired_bootstrap", a, b, n_bootstrap=BOOT_B)
    check_bootstrap(result, a, b)


# --- binary pass/fail outcomes: the common case in evaluation (few distinct differences) ---


def pass_fail(n, seed, rate_a, rate_b):
    rng = np.random.default_rng(seed)
    easy = rng.random(n)
    a = (easy < rate_a).astype(float)
    b = (easy + rng.normal(0, 0.15, n) < rate_b).astype(float)
    return a, b


def binary_sign_flip_p(a, b):
    """Exact sign-flip p-value of binary pairs: 2 P(2 Binomial(m, 1/2) - m >= |net|)."""
    d = a - b
    m, net = int(np.count_nonzero(d)), int(abs(d.sum()))
    return float(min(1.0, 2 * stats.binom.sf((m + net) / 2 - 1, m, 0.5)))


def check_binary_permutation(result, a, b):
    expected = binary_sign_flip_p(a, b)
    q = max(expected / 2, 1 / PERM_B)
    assert abs(result.p_value - expected) < 5 * 2 * math.sqrt(q * (1 - q) / PERM_B) + 2e-4
    check_bootstrap_interval(result, a, b)


def check_bootstrap_interval(result, a, b):
    d = a - b
    sd = d.std() / math.sqrt(d.size)
    z = stats.norm.ppf(0.975)
    assert result.low == pytest.approx(d.mean() - z * sd, abs=0.15 * sd + 1 / d.size)
    assert result.high == pytest.approx(d.mean() + z * sd, abs=0.15 * sd + 1 / d.size)


@pytest.fixture(scope="module")
def binary_perm_data():
    return pass_fail(PERM_N, 3, 0.90, 0.88)


@pytest.fixture(scope="module")
def binary_boot_data():
    return pass_fail(BOOT_N, 4, 0.90, 0.895)


BIN_PERM_GROUP = f"paired_permutation, pass/fail, n = {PERM_N:,}, {PERM_B:,} resamples"
BIN_BOOT_GROUP = f"paired_bootstrap, pass/fail, n = {BOOT_N:,}, B = {BOOT_B:,}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.benchmark(group=BIN_PERM_GROUP)
def test_binary_permutation(benchmark, binary_perm_data, role, record_role):
    a, b = binary_perm_data
    result = _run(benchmark, record_role, role, "paired_permutation", a, b, n_resamples=PERM_B)
    check_binary_permutation(result, a, b)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.benchmark(group=BIN_BOOT_GROUP)
def test_binary_bootstrap(benchmark, binary_boot_data, role, record_role):
    a, b = binary_boot_data
    result = _run(benchmark, record_role, role, "paired_bootstrap", a, b, n_bootstrap=BOOT_B)
    check_bootstrap_interval(result, a, b)


# --- memory ---------------------------------------------------------------------------


def traced_peak(fn, *args, **kwargs):
    tracemalloc.start()
    try:
        result = fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def continuous(a, b):
    rng = np.random.default_rng(5)
    return a + rng.normal(0, 0.01, a.size), b + rng.normal(0, 0.01, b.size)


CONT_BOOT_GROUP = f"paired_bootstrap, continuous scores, n = {BOOT_N:,}, B = {BOOT_B:,}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.benchmark(group=CONT_BOOT_GROUP)
def test_continuous_bootstrap(benchmark, boot_data, role, record_role):
    a, b = continuous(*boot_data)
    result = _run(benchmark, record_role, role, "paired_bootstrap", a, b, n_bootstrap=BOOT_B)
    check_bootstrap(result, a, b)


def test_bootstrap_peak_memory(boot_data):
    """Peak traced memory at n = B = 10^4: ours must be under 1% of truescore's.

    Ours is measured on rubric scores (41 distinct differences: the multinomial path) and
    on continuous scores (10^4 distinct: the streaming index path); truescore's peak does
    not depend on the data.
    """
    theirs, theirs_peak = traced_peak(ts.paired_bootstrap, *boot_data, n_bootstrap=BOOT_B)
    check_bootstrap(theirs, *boot_data)
    for label, (a, b) in (("rubric", boot_data), ("continuous", continuous(*boot_data))):
        ours, ours_peak = traced_peak(tf.paired_bootstrap, a, b, n_bootstrap=BOOT_B)
        check_bootstrap(ours, a, b)
        print(
            f"\npaired_bootstrap ({label}) n={BOOT_N:,} B={BOOT_B:,} peak traced memory: "
            f"truescore {theirs_peak / 2**20:.1f} MiB, truescore_fast "
            f"{ours_peak / 2**20:.3f} MiB ({100 * ours_peak / theirs_peak:.3f}%)"
        )
        assert ours_peak < 50 * 2**20
        assert ours_peak < 0.01 * theirs_peak


# --- issue 24: clustered bootstrap and the Monte Carlo permutation test at n = 10^4 -------

CLUSTER_N, CLUSTER_G = 10_000, 500


@pytest.fixture(scope="module")
def cluster_data():
    """n = 10^4 continuous scores in G = 500 clusters of unequal size (a cluster effect
    shared by A and B, so the clusters matter)."""
    rng = np.random.default_rng(24)
    clusters = np.sort(rng.integers(0, CLUSTER_G, CLUSTER_N))
    shared = rng.normal(0, 1, CLUSTER_G)[clusters]
    a = shared + 0.02 + rng.normal(0, 0.5, CLUSTER_N)
    b = shared + rng.normal(0, 0.5, CLUSTER_N)
    return a, b, clusters


def check_cluster_bootstrap(result, a, b, clusters):
    """The percentile interval against the ratio estimator's linearised SE, which neither
    implementation uses: sqrt(sum_g (s_g - r n_g)^2) / n, r the overall mean difference."""
    d = a - b
    r = d.mean()
    s = np.bincount(clusters, weights=d)
    m = np.bincount(clusters)
    se = math.sqrt(np.sum((s - r * m) ** 2)) / d.size
    z = stats.norm.ppf(0.975)
    assert result.low == pytest.approx(r - z * se, abs=0.1 * se)
    assert result.high == pytest.approx(r + z * se, abs=0.1 * se)


CLUSTER_GROUP = (
    f"paired_bootstrap(clusters=...), n = {CLUSTER_N:,}, G = {CLUSTER_G}, B = {BOOT_B:,}"
)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.benchmark(group=CLUSTER_GROUP)
def test_cluster_bootstrap(benchmark, cluster_data, role, record_role):
    a, b, clusters = cluster_data
    result = _run(
        benchmark,
        record_role,
        role,
        "paired_bootstrap",
        a,
        b,
        n_bootstrap=BOOT_B,
        clusters=clusters,
    )
    check_cluster_bootstrap(result, a, b, clusters)


MC_N, MC_B = 10_000, 10_000
MC_GROUP = f"paired_permutation (Monte Carlo), rubric scores, n = {MC_N:,}, {MC_B:,} resamples"


@pytest.fixture(scope="module")
def mc_data():
    return scores(MC_N, 6, effect=0.003)


def scipy_permutation(a, b):
    """What truescore runs: SciPy's permutation test of mean(x) - mean(y), paired samples,
    vectorised, at SciPy's defaults otherwise (batch=None: every resample at once)."""

    def statistic(x, y, axis):
        return np.mean(x, axis=axis) - np.mean(y, axis=axis)

    return stats.permutation_test(
        (a, b),
        statistic,
        vectorized=True,
        permutation_type="samples",
        n_resamples=MC_B,
        random_state=np.random.default_rng(1),
    ).pvalue


def check_mc_p(p, a, b):
    expected = sign_flip_normal_p(a, b)
    assert 0.05 < expected < 0.95  # a p-value away from the edges, as the row intends
    q = expected / 2
    assert abs(p - expected) < 5 * 2 * math.sqrt(q * (1 - q) / MC_B) + 0.01


@pytest.mark.benchmark(group=MC_GROUP)
def test_mc_permutation_ours(benchmark, mc_data, record_role):
    a, b = mc_data
    record_role("ours", "truescore_fast.paired_permutation")
    result = benchmark(tf.paired_permutation, a, b, n_resamples=MC_B)
    check_mc_p(result.p_value, a, b)
    # The screen changes no count: the same p-value as evaluating SciPy's statistic on
    # every pattern (the ours-variant row times that kernel alone).
    from truescore_fast._random import dropin_philox_key

    key = dropin_philox_key(0)
    tweak = 0x5065726D75746521
    args = {"n_resamples": MC_B, "key0": key[0], "key1": key[1] ^ tweak}
    from truescore_fast import _core

    slow = _core.sign_flip_monte_carlo_pairs(a, b, screen=False, **args)
    lower = (slow["count_less"] + 1) / (MC_B + 1)
    upper = (slow["count_greater"] + 1) / (MC_B + 1)
    assert result.p_value == min(1.0, 2.0 * min(lower, upper))


@pytest.mark.benchmark(group=MC_GROUP)
def test_mc_permutation_every_pattern(benchmark, mc_data, record_role):
    from truescore_fast import _core

    a, b = mc_data
    record_role("ours-variant", "the sign-flip kernel alone, SciPy's statistic on every pattern")
    args = {"n_resamples": MC_B, "key0": 1, "key1": 2}
    slow = benchmark.pedantic(
        _core.sign_flip_monte_carlo_pairs, args=(a, b), kwargs={**args, "screen": False}, rounds=3
    )
    assert slow == _core.sign_flip_monte_carlo_pairs(a, b, **args)


@pytest.mark.benchmark(group=MC_GROUP)
def test_mc_permutation_screened_kernel(benchmark, mc_data, record_role):
    from truescore_fast import _core

    a, b = mc_data
    record_role("ours-variant", "the sign-flip kernel alone, screened")
    counts = benchmark(_core.sign_flip_monte_carlo_pairs, a, b, n_resamples=MC_B, key0=1, key1=2)
    p = 2 * (min(counts["count_less"], counts["count_greater"]) + 1) / (MC_B + 1)
    check_mc_p(p, a, b)


@pytest.mark.benchmark(group=MC_GROUP)
def test_mc_permutation_scipy(benchmark, mc_data, record_role):
    a, b = mc_data
    record_role("baseline", "scipy.stats.permutation_test (vectorised, batch=None)")
    p = benchmark.pedantic(scipy_permutation, args=(a, b), rounds=2, iterations=1)
    check_mc_p(p, a, b)

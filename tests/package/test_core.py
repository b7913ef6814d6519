"""The compiled core in a hostile process: an address-space limit (``ulimit -v``), refused or
huge thread counts, index and value arrays mutated by another thread during a call, and
Ctrl-C stopping a long kernel within a block (bounded in CPU time, not wall clock)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from interrupting import interrupt_after
from truescore_fast import _core

# Subprocesses import the package this process imported (tools/sanitize.sh's copy, say).
PYTHON_DIR = str(Path(tf.__file__).resolve().parents[1])


# AddressSanitizer reserves terabytes of address space for its shadow memory, so a
# process under it cannot run with an address-space limit at all.
needs_address_space = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""), reason="no RLIMIT_AS under ASan"
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(code: str, timeout: float = 120.0, preexec_fn=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=timeout,
        preexec_fn=preexec_fn,
    )


def _survived(proc: subprocess.CompletedProcess[str]) -> None:
    """Exit 0, or a clean MemoryError; never a signal."""
    assert proc.returncode >= 0, (proc.returncode, proc.stderr[-2000:])
    if proc.returncode != 0:
        assert "MemoryError" in proc.stderr, proc.stderr[-2000:]


# ------------------------------------------------------------ threads the system refuses

ISSUE_EXAMPLE = """
import numpy as np, truescore_fast as t
t.exchangeability_tests(np.zeros(8192), np.zeros((8192, 2)), n_threads=128)
print("ok")
"""


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1_500_000 * 1024, 1_500_000 * 1024))


@needs_address_space
def test_issue_example_under_ulimit_v_does_not_abort():
    _survived(_run(ISSUE_EXAMPLE, preexec_fn=_limit_address_space))


@needs_address_space
def test_refused_threads_run_inline_with_the_same_result():
    # The address-space limit is set just above what the process already maps, so a
    # worker's stack (8 MiB) cannot be mapped: every thread after the first is refused.
    code = """
    import resource, numpy as np, truescore_fast as t
    rng = np.random.default_rng(1)
    canon, perm = rng.normal(size=4096), rng.normal(size=(4096, 16))
    a, b = rng.normal(size=40), rng.normal(size=40)
    want = t.exchangeability_tests(canon, perm, n_threads=1).p_values
    mc = t._core.sign_flip_monte_carlo_pairs
    want_pp = mc(a, b, n_resamples=200000, key0=1, key1=2, n_threads=1)
    status = open("/proc/self/status").read().splitlines()
    vm = next(int(line.split()[1]) for line in status if line.startswith("VmSize"))
    limit = (vm + 4096) * 1024
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    got = t.exchangeability_tests(canon, perm, n_threads=8).p_values
    got_pp = mc(a, b, n_resamples=200000, key0=1, key1=2, n_threads=8)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    assert np.array_equal(want, got)
    assert want_pp == got_pp
    print("ok")
    """
    proc = _run(code)
    _survived(proc)
    if proc.returncode == 0:
        assert proc.stdout.split() == ["ok"]


def test_thread_count_is_capped_at_four_per_core():
    cores = os.cpu_count() or 1
    assert _core.resolve_threads(10**6) == 4 * cores
    assert _core.resolve_threads(2**31 - 1) == 4 * cores


def test_python_asks_the_core_for_the_thread_cap(monkeypatch):
    # the cap is written once, in parallel.hpp: Python reads it through resolve_threads
    # (a cap copied into Python would not follow this stand-in)
    from truescore_fast._validation import threads_used

    assert _core.resolve_threads(0) == _core.default_threads()
    monkeypatch.setattr(_core, "resolve_threads", lambda n: 1000 + n)
    assert threads_used(None) == 1000
    assert threads_used(7) == 1007


@pytest.mark.parametrize("n_threads", [None, 1, 2, 3, 7, 64, 10**6, 2**31 - 1])
def test_python_sizes_its_work_by_the_threads_the_core_runs(n_threads):
    # One policy: the engine's chunks (and anything else split by thread in Python) use
    # the count the core resolves, so n_threads=2**31 - 1 does not make one giant chunk
    # (whose progress bar and checkpoint would wait for the whole sweep).
    from truescore_fast._validation import threads_used
    from truescore_fast.studies._engine import _run_cell

    assert threads_used(n_threads) == _core.resolve_threads(n_threads or 0)
    calls = []

    class Cell:
        n_tasks = 64 * (os.cpu_count() or 1)

        def run(self, begin, end, threads):
            calls.append(end - begin)
            return np.zeros((end - begin, 1))

    _run_cell(Cell(), n_threads)
    assert calls[0] == threads_used(n_threads) <= 4 * (os.cpu_count() or 1)


def test_every_public_n_threads_takes_none_and_a_huge_count_alike():
    # None is every core; 2**31 - 1 is capped at four per core, not refused; the result is
    # the same for both and for one thread.
    rng = np.random.default_rng(2)
    d = rng.normal(size=300)
    calls = [
        lambda t: (
            tf.exchangeability_tests(np.zeros(70), rng.normal(size=(70, 9)), n_threads=t).p_values
        ),
        lambda t: tf.seed_contrast(d, method="monte_carlo", draws=2000, n_threads=t).p_value,
        lambda t: (
            tf.finite_population_bootstrap(
                d, population_size=900, replicates=50, n_threads=t
            ).replicates
        ),
        lambda t: tf.betting_intervals(np.clip(d, -1, 1)[None, :], n_threads=t).low,
    ]
    for call in calls:
        state = rng.bit_generator.state
        results = []
        for t in (None, 1, 2**31 - 1):
            rng.bit_generator.state = state
            results.append(np.asarray(call(t)))
        assert np.array_equal(results[0], results[1]) and np.array_equal(results[0], results[2])


@pytest.mark.parametrize("n_threads", [2**31, 2**32, 2**63, 2**64])
def test_huge_thread_counts_are_refused_by_name(n_threads):
    with pytest.raises(ValueError, match="n_threads"):
        tf.exchangeability_tests(np.zeros(4), np.zeros((4, 2)), n_threads=n_threads)


# ------------------------------------------------- callers that mutate arrays mid-call

MUTATE_PRELUDE = """
import threading, time
import numpy as np
import truescore_fast as tf
from truescore_fast import _core

rng = np.random.default_rng(0)
stop = threading.Event()

def hammer(arr, index, wild):
    keep = arr[index]
    while not stop.is_set():
        arr[index] = wild
        arr[index] = keep

def during(arrays, call, seconds=0.6):
    # Another thread rewrites an entry of each array (to a value that would index far
    # out of bounds) while call() runs again and again: each call returns or raises
    # ValueError; it never reads past a buffer.
    stop.clear()
    threads = [threading.Thread(target=hammer, args=a) for a in arrays]
    for t in threads:
        t.start()
    end, calls = time.monotonic() + seconds, 0
    try:
        while time.monotonic() < end:
            try:
                call()
            except ValueError:
                pass
            calls += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    return calls
"""


MUTATE = (
    MUTATE_PRELUDE
    + """
S, m = 2000, 50
canon = rng.normal(size=S)
values = rng.normal(size=S * m)
offs = np.arange(0, S * m + 1, m, dtype=np.int64)
during([(offs, 1, 10**12), (offs, S // 2, -(10**12))],
       lambda: tf.exchangeability_tests(canon, values, offsets=offs))
during([(offs, 1, 10**12)], lambda: _core.row_means_ragged(values, offs))

vals, counts = rng.normal(size=50), np.full(50, 3, dtype=np.int64)
during([(counts, 7, -(10**15))], lambda: _core.bootstrap_means_discrete(vals, counts, 20000, 1, 2))
sums, sizes = rng.normal(size=200), np.full(200, 2, dtype=np.int64)
during([(sizes, 3, -(10**15))], lambda: _core.cluster_bootstrap_means(sums, sizes, 20000, 1, 2))

n = 4000
x = rng.normal(size=n)
strata = np.array([0, 1000, 2500, n], dtype=np.int64)
size = np.array([500, 700, 800], dtype=np.int64)
lam, weight = np.full(3, 0.5), np.full(3, 1.0 / 3)
during([(strata, 1, 10**12), (size, 0, 10**12)],
       lambda: _core.rao_wu_replicates(x, strata, size, lam, weight, 500, 1, 2))
during([(strata, 2, -5)], lambda: _core.rao_wu_weights(strata, size, lam, weight, 0, 20, 1, 2))
pop = np.array([2000, 3000, 3000], dtype=np.int64)
during([(strata, 1, 10**12), (pop, 1, -(10**12))],
       lambda: _core.bbh_replicates(x, strata, pop, weight, 200, 1, 2))
e_off = np.arange(0, 3 * 400 + 1, 400, dtype=np.int64)
y = x[:1200]
during([(e_off, 1, 10**12)],
       lambda: _core.did_replicates(y, y, e_off, y, y, e_off, True, 200, 1, 2))
pub = (rng.random(3000) < 0.5).astype(float)
fresh = np.round(rng.random((3000, 2)) * 4) / 4
during([(pub, 5, np.nan), (fresh, (6, 0), 7.0)],
       lambda: _core.randomization_test(pub, fresh, 0, 1000, 200, 1, 2))
print("ok")
"""
)


@pytest.mark.slow
def test_mutating_index_arrays_during_calls_never_crashes():
    proc = _run(MUTATE, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert proc.stdout.split() == ["ok"]


# Arrays whose values (not only their shape) a binding checks and the kernel then relies
# on without the GIL: labels that index a table, values it sorts or selects from, counts
# it divides by, the matrix both the statistic and its null are computed from. Each is
# rewritten to a value the check refuses while calls run.
MUTATE_VALUES = (
    MUTATE_PRELUDE
    + """
N, K = 400, 2
pub = (rng.random(N) < 0.5).astype(float)
fresh = (rng.random((N, K)) < 0.5).astype(float)
during([(pub, 3, 1e9), (fresh, (5, 1), -9.0), (pub, 11, np.nan)],
       lambda: tf.detection_study(pub, fresh, sizes=[50], deltas=[0.0], replications=300,
                                  fallback="betting", progress=False))
during([(pub, 3, 1e9), (fresh, (5, 1), 3.0)],
       lambda: _core.detection_tasks(pub, fresh, 50, True, 0.0, 0.0, 1, 4, 0.05,
                                     1, 2, 0, 200, 50, 0, 4))
d = rng.normal(size=16)
during([(d, 3, np.nan)], lambda: _core.sign_flip_test(
    d, exact=True, n_resamples=0, key0=1, key1=2, alpha_tail=0.025))
d40 = rng.normal(size=30)
during([(d40, 20, np.nan)], lambda: _core.sign_flip_count_two_sided(d40))
fam = np.full(300, 2.0)
during([(fam, 4, 0.0)], lambda: _core.cluster_bootstrap_difference(
    rng.normal(size=300), fam, rng.normal(size=300), fam.copy(), n_resamples=3000,
    key0=1, key1=2))
ind = (rng.random((5, 300)) < 0.3).astype(np.uint8)
during([(ind, (2, 7), 9)], lambda: _core.pattern_test(ind, 2, 3000, 1, 2))
gaps = rng.choice([-1.0, 0.0, 1.0], size=(40, 200))
popn = np.full(40, 1000.0)
during([(popn, 5, 3.0)], lambda: _core.gap_intervals(gaps, np.array([2, 3, 4]),
                                                     population_size=popn))
print("ok")
"""
)


@pytest.mark.slow
def test_mutating_checked_values_during_calls_never_crashes():
    proc = _run(MUTATE_VALUES, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert proc.stdout.split() == ["ok"]


# ----------------------------------------------------------------- Ctrl-C in a kernel

KERNELS = {
    "monte_carlo": """
        a, b = np.arange(200.0), np.arange(200.0)[::-1].copy()
        tf.paired_permutation(a, b, n_resamples=10**12)
    """,
    "seed_contrast": """
        tf.seed_contrast(np.linspace(-1, 2, 500), method="monte_carlo", draws=10**12)
    """,
    "exact_enumeration": """
        rng = np.random.default_rng(0)
        tf.paired_permutation(rng.normal(size=30), rng.normal(size=30), n_resamples=np.inf)
    """,
    "lattice_convolution": """
        rng = np.random.default_rng(0)
        pub = rng.integers(0, 1001, size=5000) / 1000  # ~10 s (2,000 parents: 1.3 s)
        fresh = rng.integers(0, 1001, size=(5000, 1)) / 1000
        tf.randomization_test(pub, fresh, method="exact")
    """,
    # Batched kernels: a block of shards or audits between checks, one thread or many.
    # (the 320 MB input is built before "ready": the call itself takes about 1 s here,
    # since betting intervals got 3x faster, so the signal comes 0.3 s into it)
    "gap_intervals": (
        """
        gaps = np.empty((20000, 2000))
        gaps[:] = np.random.default_rng(0).choice([-1.0, 0.0, 1.0], size=2000)
        """,
        "tf.betting_intervals(gaps, n_threads=1)",
        0.3,
    ),
    "rank_tests": """
        row = np.random.default_rng(0).normal(size=20000)
        tf.exchangeability_tests(np.zeros(10**6), np.broadcast_to(row, (10**6, 20000)))
    """,
    "constat_bootstrap": """
        s = np.linspace(0.1, 0.9, 6 * 50).reshape(6, 50)
        tf.constat_tests(s, s[:, ::-1].copy(), n_bootstrap=10**6)
    """,
    # paired_confidence_test's sign-flip interval: its kernel (3 * 10^7 patterns of 200
    # pairs, about 5 s), then two selections among the patterns' critical values
    "sign_flip_interval": """
        rng = np.random.default_rng(0)
        tf.paired_confidence_test(rng.random(200), rng.random(200), method="sign_flip",
                                  n_resamples=3 * 10**7)
    """,
    # those selections alone (std::nth_element, which has no check, ran 14 s uninterrupted
    # at 10^9 patterns): 1,000 of them over 2 * 10^7 values (the first 0.24 s, the rest
    # 0.025 s each on 2 loaded cores: 25 s), with no check between them but their own
    "sign_flip_selection": (
        """
        from truescore_fast import _core
        values = np.random.default_rng(0).random(2 * 10**7)
        ranks = np.arange(0, 2 * 10**7, 2 * 10**4)
        """,
        "_core.testing.sign_flip_select(values, ranks)",
        1.0,
    ),
    # one call of a study's task kernel over 10^5 tasks of betting intervals (about 1,000
    # s): stopped by the core's poll like the kernels above, not only between the
    # engine's chunks (issue 38: one Ctrl-C mechanism)
    "study_tasks": (
        """
        from truescore_fast import _core
        values = np.random.default_rng(0).random(10000)
        """,
        """
        _core.coverage_tasks(values, np.array([0, 10000]), np.array([400]), np.zeros(0),
                             np.zeros((1, 0), dtype=np.int64), np.array([4]), 0.05, 0.5, 1, 2,
                             0, 10**9, _core.CALIBRATION_BLOCK, 0, 10**5)
        """,
        1.0,
    ),
    "rao_wu_one_huge_replicate": """
        tf.finite_population_bootstrap(np.arange(100.0), population_size=1000,
                                       replicates=2, resample_size=10**12)
    """,
}


@pytest.mark.slow
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_ctrl_c_stops_a_long_kernel_within_a_block(kernel):
    # A kernel is its code, or (set-up run before "ready", the call, seconds to wait).
    setup, call, wait = (
        ("", KERNELS[kernel], 1.0) if isinstance(KERNELS[kernel], str) else (KERNELS[kernel])
    )
    code = (
        "import sys, threading, numpy as np, truescore_fast as tf\n"
        + textwrap.dedent(setup).strip()
        + "\nprint('ready', flush=True)\n"
        "try:\n"
        + textwrap.indent(textwrap.dedent(call).strip(), "    ")
        + "\nexcept KeyboardInterrupt:\n"
        "    print('interrupted', threading.active_count(), flush=True)\n"
        "    sys.exit(130)\n"
        "print('finished', flush=True)\n"
    )
    code_, out, err, cpu = interrupt_after(
        [sys.executable, "-c", code], wait, env=_env()
    )  # well inside the kernel
    assert code_ == 130, (out, err)
    assert out.split() == ["interrupted", "1"]  # KeyboardInterrupt surfaced, no thread left
    # CPU seconds from the signal to the exit, every thread's (tests/interrupting.py: the
    # machine's load does not change them): 0.05-0.13 s measured idle on 2 cores for each
    # kernel; bound 1 s, a margin of 8x (4 s under tools/sanitize.sh, whose allocator and
    # checks slow every step)
    sanitized = "libasan" in os.environ.get("LD_PRELOAD", "")
    assert cpu < (4.0 if sanitized else 1.0), cpu


def test_sign_flip_selection_is_numpys_partition_bit_for_bit():
    # sign_flip_test's selection (quickselect with Ctrl-C checks, std::nth_element below
    # 2^16 entries): the value of each rank exactly as a full sort gives it, on data with
    # many ties, all equal, sorted either way, and with the NaNs (patterns that flip
    # nothing) dropped first
    rng = np.random.default_rng(36)
    n = 300_000
    cases = {
        "uniform": rng.random(n),
        "ties": rng.integers(0, 5, n).astype(float),
        "equal": np.ones(n),
        "sorted": np.sort(rng.normal(size=n)),
        "reversed": np.sort(rng.normal(size=n))[::-1].copy(),
        "nans": np.where(rng.random(n) < 0.3, np.nan, rng.normal(size=n)),
    }
    for name, values in cases.items():
        kept = np.sort(values[~np.isnan(values)])
        ranks = np.array([0, 1, 7, len(kept) // 40, len(kept) // 2, len(kept) - 8, len(kept) - 1])
        got = _core.testing.sign_flip_select(values, ranks)
        assert np.array_equal(got, kept[ranks]), name
    with pytest.raises(ValueError, match="ranks must be in"):
        _core.testing.sign_flip_select(cases["nans"], np.array([n - 1]))

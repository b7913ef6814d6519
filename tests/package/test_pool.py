"""The core's persistent thread pool (issue 24): threads are started once and kept, results
do not depend on the thread count, and a forked child (ProcessPoolExecutor, Dask) gets a
pool of its own instead of waiting on the parent's threads, which do not exist in it."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from truescore_fast import _core

PYTHON_DIR = str(Path(tf.__file__).resolve().parents[1])
needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="fork() is POSIX only"
)
needs_proc = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _block_sums(values: np.ndarray, blocks: int) -> np.ndarray:
    return values.reshape(blocks, -1).sum(axis=1)


def test_block_sums_match_numpy_through_the_pool_and_the_old_threads():
    values = np.random.default_rng(1).normal(size=48 * 500)
    want = np.array([np.sum(row) for row in values.reshape(48, -1)])  # pairwise, as NumPy
    for n_threads in (1, 2, 3, 8):
        for pool in (True, False):
            got = _core.testing.parallel_block_sums(values, 48, n_threads, pool=pool)
            # Each block is summed left to right (not NumPy's pairwise order): equal to
            # rounding, and bit-identical across thread counts and both loops.
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
            np.testing.assert_array_equal(
                got, _core.testing.parallel_block_sums(values, 48, 1, pool=False)
            )


@needs_proc
def test_threads_are_started_once_and_kept():
    values = np.ones(8 * 10)
    _core.testing.parallel_block_sums(values, 8, 4)
    workers = _core.testing.pool_workers()
    assert workers >= 3  # four threads: the caller and three workers
    before = _threads()
    for _ in range(20):
        _core.testing.parallel_block_sums(values, 8, 4, calls=5)
        _core.bootstrap_means(np.arange(2000.0), 2048, 1, 2, n_threads=4)
    assert _threads() == before  # no thread started or left behind per call
    assert _core.testing.pool_workers() == workers


def test_the_old_loop_leaves_no_thread_behind_either():
    # The baseline the benchmark times joins its threads: it is a fair comparison.
    values = np.ones(8 * 10)
    _core.testing.parallel_block_sums(values, 8, 4)
    before = _threads() if Path("/proc/self/task").exists() else 0
    _core.testing.parallel_block_sums(values, 8, 4, pool=False, calls=10)
    assert (_threads() if Path("/proc/self/task").exists() else 0) == before


def test_results_are_identical_for_every_thread_count():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=5000), rng.normal(size=5000)
    want = _core.bootstrap_means(a - b, 3000, 11, 12, n_threads=1)
    for n_threads in (2, 3, 5, 16):
        np.testing.assert_array_equal(
            _core.bootstrap_means(a - b, 3000, 11, 12, n_threads=n_threads), want
        )


def _bootstrap_low(seed: int) -> float:
    rng = np.random.default_rng(seed)
    return float(_core.bootstrap_means(rng.normal(size=4000), 5000, seed, 1, n_threads=2).min())


@needs_fork
def test_forked_process_pool_workers_get_their_own_pool():
    # The parent's pool exists (and is idle) when the workers fork; each child's threaded
    # call must run (a child waiting on the parent's threads would hang) and agree.
    want = [_bootstrap_low(s) for s in range(4)]
    assert _core.testing.pool_workers() >= 1
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as ex:
        got = list(ex.map(_bootstrap_low, range(4), timeout=120))
    assert got == want


@needs_fork
def test_fork_in_a_fresh_script_then_threads_in_both():
    code = textwrap.dedent(
        """
        import os, sys, numpy as np
        from truescore_fast import _core
        v = np.arange(16 * 100.0)
        want = _core.testing.parallel_block_sums(v, 16, 1)
        assert np.array_equal(_core.testing.parallel_block_sums(v, 16, 4), want)
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(_core.testing.parallel_block_sums(v, 16, 4, calls=50), want)
            ok = ok and _core.testing.pool_workers() >= 1
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert np.array_equal(_core.testing.parallel_block_sums(v, 16, 4, calls=50), want)
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": PYTHON_DIR}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok"]


def test_loops_from_several_python_threads_share_the_pool():
    from concurrent.futures import ThreadPoolExecutor

    values = np.random.default_rng(2).normal(size=32 * 2000)
    want = _core.testing.parallel_block_sums(values, 32, 1)
    with ThreadPoolExecutor(max_workers=4) as ex:
        results = list(
            ex.map(
                lambda t: _core.testing.parallel_block_sums(values, 32, t, calls=20),
                [2, 3, 4, 8] * 4,
            )
        )
    for got in results:
        np.testing.assert_array_equal(got, want)

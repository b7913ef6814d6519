"""The core's persistent thread pool (issue 24): threads are started once and kept, results
do not depend on the thread count, and a forked child (ProcessPoolExecutor, Dask) gets a
pool of its own instead of waiting on the parent's threads, which do not exist in it. At
its edges: a loop never waits on a block queued behind another loop's, a loop inside a
worker runs there, a failing block's error reaches the caller, and Ctrl-C withdraws the
blocks still queued."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from common import run_python
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


# ---- The pool's edges, through _core.testing.pool_probe ---------------------------------
# A probe task records in its row of `marks` that it started (column 0) and whether on a
# pool worker (column 1); "nested" tasks record where their inner loop's tasks ran
# (column 2: the outer task's own thread, column 3: elsewhere). "busy" tasks can be held
# until the test sets stop[0], so the tests choose which workers are free, not the clock.


def _marks(tasks: int) -> np.ndarray:
    return np.zeros((tasks, 4), dtype=np.int64)


def _in_thread(fn, *args):
    """fn(*args) on a daemon thread: a deadlock fails the test instead of hanging the run."""
    out: dict[str, object] = {}

    def target() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), f"{fn.__name__} hung"
    if "error" in out:
        raise out["error"]  # type: ignore[misc]
    return out.get("value")


def _hold_every_worker() -> tuple[threading.Thread, np.ndarray, np.ndarray]:
    """A loop on a background thread whose blocks occupy every pool worker until stop[0]."""
    tasks = _core.resolve_threads(1 << 20)  # the most blocks a loop gets
    _core.testing.pool_probe("busy", _marks(tasks), tasks, tasks)  # grows the pool to its cap
    workers = _core.testing.pool_workers()
    held, stop = _marks(tasks), np.zeros(1, dtype=np.int64)
    thread = threading.Thread(
        target=_core.testing.pool_probe,
        args=("busy", held, tasks, tasks, 120_000.0, stop),
        daemon=True,
    )
    thread.start()
    deadline = time.monotonic() + 60
    while held[:, 1].sum() < workers and time.monotonic() < deadline:
        time.sleep(0.005)
    if held[:, 1].sum() != workers:
        stop[0] = 1  # free the workers for the tests after this one
        thread.join(60)
        raise AssertionError(f"{held[:, 1].sum()} of {workers} workers held: {held}")
    return thread, held, stop


def test_a_loop_whose_workers_are_all_busy_runs_every_block_on_its_own_thread():
    thread, held, stop = _hold_every_worker()
    try:
        tasks = _core.resolve_threads(8)
        marks = _marks(tasks)
        _in_thread(_core.testing.pool_probe, "busy", marks, tasks, tasks)
        # It finished while every worker is still held: it waited on no queued block.
        assert thread.is_alive()
        assert (marks[:, 0] == 1).all() and (marks[:, 1] == 0).all(), marks
    finally:
        stop[0] = 1
        thread.join(60)
    assert not thread.is_alive()
    assert (held[:, 0] == 1).all(), held


def test_a_loop_inside_a_worker_runs_its_blocks_inline():
    # Two outer tasks, each running a loop of two inner tasks, while most of the pool is
    # idle: a worker's inner loop must still run on that worker (an idle worker taking
    # its blocks would make workers wait on each other). Every task waits 20 ms, so an
    # idle worker would have time to take a block.
    width = _core.resolve_threads(8)
    _core.testing.pool_probe("busy", _marks(width), width, width)  # idle workers exist
    assert _core.testing.pool_workers() >= 2
    for _ in range(10):  # until an outer task ran on a worker (the first call, as a rule)
        marks = _marks(2)
        _in_thread(_core.testing.pool_probe, "nested", marks, 2, 2, 20.0)
        assert (marks[:, 0] == 1).all(), marks
        assert (marks[:, 2] + marks[:, 3] == 2).all(), marks  # each inner task once
        on_worker = marks[:, 1] == 1
        assert (marks[on_worker, 2] == 2).all(), marks
        if on_worker.any():
            break
    assert on_worker.any(), "no outer task ever ran on a pool worker"


def test_a_failing_block_raises_its_error_and_the_pool_goes_on():
    tasks = _core.resolve_threads(8)
    values = np.arange(16 * 50.0)
    want = _core.testing.parallel_block_sums(values, 16, 1)
    for n_threads in (1, 2, tasks):
        marks = _marks(tasks)
        with pytest.raises(ValueError, match=r"^pool probe: task 1$"):  # the first, by block
            _in_thread(_core.testing.pool_probe, "throw", marks, tasks, n_threads)
        if n_threads == tasks:  # one task a block: every block ran, failing or not
            assert (marks[:, 0] == 1).all(), marks
        workers = _core.testing.pool_workers()
        np.testing.assert_array_equal(
            _core.testing.parallel_block_sums(values, 16, tasks, calls=5), want
        )
        assert _core.testing.pool_workers() == workers


def test_pool_probe_takes_only_the_arrays_it_writes_in_place():
    bad = [
        np.zeros((4, 4), dtype=np.int32),
        np.zeros((4, 4), dtype=np.int64)[:, ::-1],
        np.zeros((4, 3), dtype=np.int64),
        [[0] * 4] * 4,
    ]
    frozen = np.zeros((4, 4), dtype=np.int64)
    frozen.setflags(write=False)
    for marks in [*bad, frozen]:
        with pytest.raises(ValueError, match="marks must be a writable"):
            _core.testing.pool_probe("busy", marks, 4, 2)
    with pytest.raises(ValueError, match="stop must be a writable"):
        _core.testing.pool_probe("busy", _marks(4), 4, 2, 0.0, np.zeros(1, dtype=np.float64))
    with pytest.raises(ValueError, match="marks must be a writable"):
        _core.testing.pool_probe("busy", _marks(5), 4, 2)  # rows are not tasks
    with pytest.raises(ValueError, match="mode must be"):
        _core.testing.pool_probe("sleep", _marks(4), 4, 2)
    for tasks in (0, -1, 4097):
        with pytest.raises(ValueError, match="tasks must be"):
            _core.testing.pool_probe("busy", _marks(4), tasks, 2)
    with pytest.raises(TypeError):
        _core.testing.pool_probe("busy", _marks(4), 2**63, 2)
    for block_ms in (float("nan"), float("inf"), -1.0, 1e308):
        with pytest.raises(ValueError, match="block_ms must be"):
            _core.testing.pool_probe("busy", _marks(4), 4, 2, block_ms)


CTRL_C_WITH_QUEUED_BLOCKS = """
import os, signal, sys, threading, time
sys.path[:0] = sys.argv[1:]  # this file's folder and tests/ (for common.py)
from truescore_fast import _core
from test_pool import _hold_every_worker, _marks

def press_ctrl_c_once_the_caller_runs_its_block():
    while marks[-1, 0] == 0:
        time.sleep(0.005)
    os.kill(os.getpid(), signal.SIGINT)


thread, held, stop = _hold_every_worker()
tasks = _core.resolve_threads(8)
marks = _marks(tasks)
threading.Thread(target=press_ctrl_c_once_the_caller_runs_its_block, daemon=True).start()
try:
    _core.testing.pool_probe("busy", marks, tasks, tasks, 120_000.0)
    print("never interrupted", flush=True)
except KeyboardInterrupt:
    print("caught", "held" if thread.is_alive() else "released", flush=True)
print("started", *marks[:, 0], "on-workers", int(marks[:, 1].sum()), flush=True)
stop[0] = 1
thread.join(60)
print("held-tasks", "all-once" if (held[:, 0] == 1).all() else held[:, 0], flush=True)
after = _marks(tasks)
_core.testing.pool_probe("busy", after, tasks, tasks)
print("after", "all-once" if (after[:, 0] == 1).all() else after[:, 0], flush=True)
"""


def test_ctrl_c_while_the_loops_blocks_are_queued_withdraws_them():
    # Every worker is held by another thread's loop, so the interrupted loop's blocks sit
    # in the queue while the caller runs its own block (the last), and Ctrl-C comes once
    # that block has started, whatever the clock. Ctrl-C stops that block; the queued
    # ones are taken back and stopped before they start; the other loop is untouched and
    # the pool serves the next call.
    here = Path(__file__).resolve().parent
    proc = run_python(CTRL_C_WITH_QUEUED_BLOCKS, str(here), str(here.parent))
    assert proc.returncode == 0, (proc.stdout, proc.stderr[-2000:])
    tasks = _core.resolve_threads(8)
    started = " ".join(["0"] * (tasks - 1) + ["1"])
    assert proc.stdout.splitlines() == [
        "caught held",
        f"started {started} on-workers 0",
        "held-tasks all-once",
        "after all-once",
    ], proc.stderr[-2000:]

"""The process survives hostile conditions: threads the system refuses, callers that
mutate arrays during a call, Ctrl-C inside a long kernel.

Each case runs in a subprocess, so a crash (SIGABRT, SIGSEGV) or a hang fails the test
instead of killing the run.
"""

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
from truescore_fast import _core  # noqa: F401

PYTHON_DIR = str(Path(__file__).resolve().parents[1] / "python")


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


def test_issue_example_under_ulimit_v_does_not_abort():
    _survived(_run(ISSUE_EXAMPLE, preexec_fn=_limit_address_space))


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
    assert _core.testing.resolved_threads(10**6) == 4 * cores
    assert _core.testing.resolved_threads(2**31 - 1) == 4 * cores


@pytest.mark.parametrize("n_threads", [2**31, 2**32, 2**63, 2**64])
def test_huge_thread_counts_are_refused_by_name(n_threads):
    with pytest.raises(ValueError, match="n_threads"):
        tf.exchangeability_tests(np.zeros(4), np.zeros((4, 2)), n_threads=n_threads)

"""Ctrl-C inside a long compiled call, caught by the script: the process goes on. Later
calls work and give the same results, and it exits with its own status, never by SIGINT."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest
import truescore_fast as tf
from common import run_python
from interrupting import interrupt_after

PYTHON_DIR = str(Path(tf.__file__).resolve().parents[1])

# A batch of rank tests long enough to be interrupted in the kernel (0.1-1 s a call),
# called until the signal comes; then a short batch whose result is checked against the
# one computed before the signal.
SCRIPT = """
import os, signal, sys, threading, time
import numpy as np, truescore_fast as tf
n_threads = int(sys.argv[1])
rng = np.random.default_rng(0)
permuted = rng.standard_normal((200, 50_000))
canonical = rng.standard_normal(200)
before = tf.exchangeability_tests(canonical[:5], permuted[:5, :999], n_threads=n_threads)
{arm}
print("ready", flush=True)
deadline = time.monotonic() + 60
try:
    while time.monotonic() < deadline:
        tf.exchangeability_tests(canonical, permuted, n_threads=n_threads)
    print("never interrupted", flush=True)
except KeyboardInterrupt:
    print("caught", flush=True)
after = tf.exchangeability_tests(canonical[:5], permuted[:5, :999], n_threads=n_threads)
print("same" if np.array_equal(after.p_values, before.p_values) else "different", flush=True)
sys.exit(3)  # a status of its own: a death by SIGINT would show as -2 instead
"""

SELF_SIGNAL = "threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGINT)).start()"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.parametrize("trial", range(3))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_caught_ctrl_c_from_a_timer_thread_leaves_the_process_healthy(
    n_threads: int, trial: int
) -> None:
    proc = run_python(SCRIPT.format(arm=SELF_SIGNAL), str(n_threads))
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.split() == ["ready", "caught", "same"], proc.stderr[-2000:]
    assert proc.returncode != -signal.SIGINT


@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_caught_ctrl_c_from_outside_leaves_the_process_healthy(n_threads: int) -> None:
    code, out, err, _ = interrupt_after(
        [sys.executable, "-c", textwrap.dedent(SCRIPT.format(arm="")), str(n_threads)],
        0.5,
        env=_env(),
        timeout=120,
    )
    assert code == 3, (code, out, err[-2000:])
    assert out.split() == ["caught", "same"], err[-2000:]

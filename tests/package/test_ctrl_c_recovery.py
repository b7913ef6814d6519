"""Ctrl-C inside a long compiled call, caught by the script: the process goes on. Later
calls work and give the same results, and it exits with its own status, never by SIGINT."""

from __future__ import annotations

import os
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
# ends by running off the end (sys.exit would skip CPython's check for an unhandled
# interrupt, which is how a death by SIGINT at exit shows)
"""

SELF_SIGNAL = "threading.Timer(0.4, os.kill, (os.getpid(), signal.SIGINT)).start()"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_caught_ctrl_c_from_a_timer_thread_leaves_the_process_healthy(
    n_threads: int, trial: int
) -> None:
    proc = run_python(SCRIPT.format(arm=SELF_SIGNAL), str(n_threads))
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    assert proc.stdout.split() == ["ready", "caught", "same"], proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_caught_ctrl_c_from_outside_leaves_the_process_healthy(n_threads: int) -> None:
    code, out, err, _ = interrupt_after(
        [sys.executable, "-c", textwrap.dedent(SCRIPT.format(arm="")), str(n_threads)],
        0.5,
        env=_env(),
        timeout=120,
    )
    assert code == 0, (code, out, err[-2000:])
    assert out.split() == ["caught", "same"], err[-2000:]


# A Ctrl-C that lands while the first call imports the library: the import runs code that
# CPython compiles from strings (dataclasses, namedtuple), and an interrupt passing through
# such code is marked unhandled, so a script that caught it and then simply ended died by
# SIGINT (CPython 3.10-3.13; a script ending in sys.exit never showed it). The interrupt is
# put there deterministically: a finder raising it from a string while the first public
# subpackage is being imported.
FIRST_CALL_SCRIPT = """
import sys
import truescore_fast as tf

class CtrlCInImport:
    def find_spec(self, name, path=None, target=None):
        if name == "truescore_fast.patch":
            sys.meta_path.remove(self)
            exec("raise KeyboardInterrupt")
        return None

sys.meta_path.insert(0, CtrlCInImport())
try:
    tf.exchangeability_tests([1.0, 2.0], [[0.5, 0.1], [0.3, 0.2]])
    print("not interrupted")
except KeyboardInterrupt:
    print("caught")
"""


def test_a_caught_ctrl_c_during_the_first_calls_import_ends_the_script_normally() -> None:
    proc = run_python(FIRST_CALL_SCRIPT)
    assert proc.stdout.split() == ["caught"], proc.stderr[-2000:]
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])

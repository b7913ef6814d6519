"""One way for the tests to press Ctrl-C: start a child, wait, SIGINT, time the exit."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable, Sequence


def interrupt_after(
    argv: Sequence[str],
    seconds: float,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 30,
    when: Callable[[], bool] | None = None,
) -> tuple[int, str, str, float]:
    """Run ``argv``, wait for it to print ``ready``, then ``seconds``, then send SIGINT.

    With ``when``, wait instead until ``when()`` is true (polled every 10 ms; at most
    ``timeout`` seconds): the signal then comes at a point of the child's work, not of the
    clock, however fast the machine is.

    Returns (exit code, stdout after "ready", stderr, seconds from the signal to the exit).
    The child is killed whatever happens, so a hang fails the test instead of the run.
    """
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        if when is None:
            time.sleep(seconds)
        else:
            deadline = time.monotonic() + timeout
            while not when() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
        elapsed = time.monotonic() - sent
    finally:
        proc.kill()
    return proc.returncode, out, err, elapsed

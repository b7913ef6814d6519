"""One way for the tests to press Ctrl-C: start a child, wait, SIGINT, measure the stop.

The stop is measured in CPU seconds, never in wall-clock seconds: the CPU time the child
(its threads, and the processes it started and waited for) spent between the signal and
its exit. On a machine busy with other work the child gets fewer of the wall-clock seconds,
so a wall-clock bound fails there however promptly the child stops; the CPU time it needs
to stop is the work it does after the signal, which the load does not change. A hang is
still caught by ``timeout`` (a wall-clock guard that only decides a test that never ends).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:  # gone, or no /proc
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from the third (state) on


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and every live descendant (user + system, all
    threads, and the children each has already waited for)."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is None:
            continue
        parent[int(entry)] = int(fields[1])  # ppid (field 4)
        ticks[int(entry)] = sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    tree, grew = {pid}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in tree} - tree
        grew = bool(more)
        tree |= more
    return sum(ticks.get(p, 0) for p in tree) / CLOCK_TICKS


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def signal_and_wait(
    proc: subprocess.Popen, timeout: float, sig: int = signal.SIGINT
) -> tuple[str, str, float]:
    """Send ``sig`` to ``proc``, wait for its exit (at most ``timeout`` seconds of wall
    clock: a hang guard) and return (stdout, stderr, CPU seconds from the signal to the
    exit). ``proc`` must be a child of this process, waited for here only."""
    before = _children_cpu() + tree_cpu_seconds(proc.pid)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=timeout)
    # the child's whole CPU time is now in RUSAGE_CHILDREN; what it had at the signal was
    # counted in ``before``. 10 ms ticks: the result may read up to 0.01 s per process low.
    return out, err, max(0.0, _children_cpu() - before)


def interrupt_after(
    argv: Sequence[str],
    seconds: float,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    when: Callable[[], bool] | None = None,
) -> tuple[int, str, str, float]:
    """Run ``argv``, wait for it to print ``ready``, then ``seconds``, then send SIGINT.

    With ``when``, wait instead until ``when()`` is true (polled every 10 ms; at most
    ``timeout`` seconds): the signal then comes at a point of the child's work, not of the
    clock, however fast the machine is.

    Returns (exit code, stdout after "ready", stderr, CPU seconds from the signal to the
    exit: see the module docstring). The child is killed whatever happens, so a hang fails
    the test instead of the run.
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
        out, err, cpu = signal_and_wait(proc, timeout)
    finally:
        proc.kill()
    return proc.returncode, out, err, cpu

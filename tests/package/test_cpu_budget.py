"""The default thread count is the CPUs the process may use: its affinity mask and its
cgroup CPU quota (src/cpp/truescore/cpu_budget.hpp), and Python's view of it agrees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from common import run_python
from truescore_fast import _core
from truescore_fast._validation import threads_used

has_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this system"
)


def _child(code: str) -> str:
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@has_affinity
def test_one_allowed_cpu_means_one_thread_by_default() -> None:
    # The affinity is set before the package is imported, as taskset -c would.
    out = _child(
        """
        import os
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        import numpy as np, truescore_fast as tf
        from truescore_fast import _core
        from truescore_fast._validation import threads_used
        rows = np.random.default_rng(0).normal(size=(50, 99))
        r = tf.exchangeability_tests(rows[:, 0], rows)  # a threaded kernel still runs
        print(_core.default_threads(), threads_used(None), _core.resolve_threads(0),
              threads_used(9), len(r.p_values))
        """
    )
    assert out.split() == ["1", "1", "1", "4", "50"]  # 9 asked: capped at 4 per usable CPU


@has_affinity
def test_the_default_is_the_affinity_mask_when_no_quota_binds() -> None:
    allowed = len(os.sched_getaffinity(0))
    quota = _core.testing.cgroup_cpu_quota("/proc/self/cgroup", "/sys/fs/cgroup")
    expected = min(allowed, quota) if quota > 0 else allowed
    assert _core.default_threads() == min(expected, os.cpu_count() or 1)
    assert threads_used(None) == _core.default_threads()


def _fake(tmp_path: Path, proc: str, files: dict[str, str]) -> int:
    (tmp_path / "cgroup").write_text(proc)
    root = tmp_path / "fs"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return _core.testing.cgroup_cpu_quota(str(tmp_path / "cgroup"), str(root))


@pytest.mark.parametrize(
    ("proc", "files", "quota"),
    [
        # cgroup v2: quota / period rounded up, at the process's cgroup
        ("0::/job/step\n", {"job/step/cpu.max": "150000 100000\n"}, 2),
        ("0::/job/step\n", {"job/step/cpu.max": "100000 100000\n"}, 1),
        ("0::/job/step\n", {"job/step/cpu.max": "max 100000\n"}, 0),
        # a parent's quota binds the child; the smallest along the path counts
        (
            "0::/job/step\n",
            {"job/step/cpu.max": "400000 100000\n", "job/cpu.max": "50000 100000\n"},
            1,
        ),
        # a container: its own cgroup is the root of the mount, the path is "/"
        ("0::/\n", {"cpu.max": "300000 100000\n"}, 3),
        # a hybrid system mounts v2 at unified/
        ("0::/s\n", {"unified/s/cpu.max": "250000 100000\n"}, 3),
        # cgroup v1: cfs_quota_us / cfs_period_us (-1: none), under the cpu controller
        (
            "4:cpu,cpuacct:/job\n1:name=systemd:/\n",
            {"cpu/job/cpu.cfs_quota_us": "250000\n", "cpu/job/cpu.cfs_period_us": "100000\n"},
            3,
        ),
        (
            "4:cpuacct,cpu:/job\n",
            {"cpu/job/cpu.cfs_quota_us": "-1\n", "cpu/job/cpu.cfs_period_us": "100000\n"},
            0,
        ),
        # other controllers' lines, missing or unreadable files: no quota
        ("3:memory:/job\n", {"memory/job/cpu.cfs_quota_us": "100000\n"}, 0),
        ("0::/job\n", {}, 0),
        ("0::/job\n", {"job/cpu.max": "lots 100000\n"}, 0),
        ("0::/job\n", {"job/cpu.max": "100000 0\n"}, 0),
        # not finite, trailing junk, absurdly large: none, or a whole count within reason
        ("0::/job\n", {"job/cpu.max": "inf 100000\n"}, 0),
        ("0::/job\n", {"job/cpu.max": "nan 100000\n"}, 0),
        ("0::/job\n", {"job/cpu.max": "100000abc 100000\n"}, 0),
        ("0::/job\n", {"job/cpu.max": "1e300 1e-300\n"}, 0),
        ("0::/job\n", {"job/cpu.max": "1e300 100000\n"}, 65536),
        ("", {}, 0),
    ],
)
def test_the_cgroup_quota_is_read_as_the_kernel_writes_it(tmp_path, proc, files, quota) -> None:
    assert _fake(tmp_path, proc, files) == quota


def test_the_budget_is_at_least_one_and_at_most_the_machine() -> None:
    assert 1 <= _core.testing.cpu_budget() <= (os.cpu_count() or 1)

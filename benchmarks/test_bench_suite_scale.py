"""The whole ``truescore-fast suite`` command at leaderboard scale, against merely reading
its table with pandas, in the same run.

Groups:
* suite command, 200 x 20 x 1,000: a simulated suite (``simulate_suite``: 200 models, 20
  benchmarks, 1,000 parents, one fresh form, two planted leaks), written as one CSV of
  8,000,000 rows; ``pandas.read_csv`` of the file (baseline) vs the command with every
  test (the matched-form audit, the randomization test, ConStat at its default 1,000
  resamples) as a child process. The ratio of CPU times (user + system, all threads) and
  the child's peak resident memory (its own VmHWM) are saved in ``extra_info``
  (``cpu_s``, ``peak_mb``).
* suite command, 1,000 x 10 x 1,000: the same with 1,000 models (10,000,000 rows); it takes
  minutes, so it runs only with ``TRUESCORE_BENCH_LARGE=1`` (skipped with that reason
  otherwise; CI runs the 200-model one).
Every benchmark asserts correctness (the planted leaks are flagged). No time is asserted.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import numpy as np
import pytest
import truescore_fast as tf

SIZES = {"200x20": (200, 20, 1000), "1000x10": (1000, 10, 1000)}
LEAKS = ((0, 0, 0.3), (37, 7, 0.3))


def _write(path, data):
    """The suite as one long CSV (pyarrow's writer: Python would take longer than the job)."""
    pa = pytest.importorskip("pyarrow")
    pa_csv = pytest.importorskip("pyarrow.csv")
    columns = {"model": [], "benchmark": [], "parent": [], "form": [], "correct": []}
    for p in data.pairs:
        n = len(p.parents)
        for form, values in (("public", p.public), ("fresh1", p.fresh[:, 0])):
            columns["model"].append(np.full(n, p.model, dtype=object))
            columns["benchmark"].append(np.full(n, p.benchmark, dtype=object))
            columns["parent"].append(np.asarray(p.parents, dtype=object))
            columns["form"].append(np.full(n, form, dtype=object))
            columns["correct"].append(values)
    table = pa.table({k: np.concatenate(v) for k, v in columns.items()})
    pa_csv.write_csv(table, path)


@pytest.fixture(scope="module", params=sorted(SIZES))
def suite_file(request, tmp_path_factory):
    if request.param == "1000x10" and os.environ.get("TRUESCORE_BENCH_LARGE") != "1":
        pytest.skip("1,000 models take minutes: set TRUESCORE_BENCH_LARGE=1 to run it")
    m, b, n = SIZES[request.param]
    path = tmp_path_factory.mktemp("suite") / f"suite_{request.param}.csv"
    data = tf.simulate_suite(models=m, benchmarks=b, parents=n, leaks=LEAKS, seed=1)
    _write(path, data)
    planted = {(data.models[i], data.benchmarks[j]) for i, j, _ in LEAKS}
    return request.param, path, planted


# The command in a child that reports its own peak memory: VmHWM of /proc/self/status,
# the high-water mark of the child's own address space. (getrusage's ru_maxrss would not
# do: Linux carries the parent's resident size across fork and exec into it, and this
# parent holds the simulated suite.)
_CHILD = """
import sys
from truescore_fast.cli import main
code = main(sys.argv[2:])
with open("/proc/self/status") as f:
    peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
with open(sys.argv[1], "w") as f:
    f.write(peak)
sys.exit(code)
"""


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def test_pandas_reads_the_table(benchmark, suite_file, record_role):
    pd = pytest.importorskip("pandas")
    size, path, _ = suite_file
    benchmark.group = f"suite command, {size} x 1,000"
    record_role("baseline", "pandas.read_csv of the same file")
    before = _cpu()
    frame = benchmark.pedantic(pd.read_csv, args=(path,), rounds=1, iterations=1)
    benchmark.extra_info["cpu_s"] = _cpu() - before
    m, b, n = SIZES[size]
    assert frame.shape == (m * b * n * 2, 5)


def test_the_suite_command(benchmark, suite_file, record_role):
    size, path, planted = suite_file
    benchmark.group = f"suite command, {size} x 1,000"
    record_role("ours", "truescore-fast suite FILE --json (every test, B = 1,000)")
    peak_file = path.with_suffix(".peak")
    command = [sys.executable, "-c", _CHILD, str(peak_file), "suite", str(path), "--json",
               "--no-progress"]  # fmt: skip
    start = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = benchmark.pedantic(subprocess.run, args=(command,), kwargs={"capture_output": True},
                              rounds=1, iterations=1)  # fmt: skip
    wall = time.perf_counter() - wall
    end = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (end.ru_utime - start.ru_utime) + (end.ru_stime - start.ru_stime)
    assert done.returncode == 2, done.stderr.decode()[-2000:]
    peak_mb = int(peak_file.read_text()) / 1024
    benchmark.extra_info.update({"cpu_s": cpu, "wall_s": wall, "peak_mb": peak_mb})
    result = json.loads(done.stdout)
    flagged = {(m, b) for m, b, f in zip(result["model"], result["benchmark"], result["flagged"],
                                         strict=True) if f}  # fmt: skip
    assert planted <= flagged, planted - flagged

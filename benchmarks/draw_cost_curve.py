"""The bootstrap's cost per draw from n = 10^3 to 10^7 (docs/performance.md's curve).

Usage: ``PYTHONPATH=python python benchmarks/draw_cost_curve.py``. For each n, the
resampled means of ``_core.bootstrap_means`` on one thread (about 2 x 10^7 draws, best of
three, CPU time of this process so that waiting for a shared core is not counted) and the
cost of the Philox words alone (``_core.testing.philox_words``), per draw: a word makes
three draws up to n = 2^16, two up to 2^26. Every resample is checked against the mean
of the data (it must lie within 6 standard errors), so a broken kernel cannot report a
fast time. Prints a Markdown table.
"""

from __future__ import annotations

import math
import time

import numpy as np
from truescore_fast import _core

SIZES = [1_000, 3_000, 10_000, 30_000, 65_536, 70_000, 300_000, 1_000_000, 3_000_000, 10_000_000]
DRAWS = 20_000_000


def cpu_best(fn, repeats: int = 3) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    rng = np.random.default_rng(24)
    # The words alone: 2^16 words (512 KB, cache-resident) 64 times over.
    runs = np.full(64, 2**16, dtype=np.int64)
    word_ns = 1e9 * cpu_best(lambda: _core.testing.philox_words(1, 2, 0, runs)) / runs.sum()
    print("| n | bytes of data | ns per draw | Philox words alone, ns per draw |")
    print("|---:|---:|---:|---:|")
    for n in SIZES:
        d = rng.normal(size=n)
        b = max(4, DRAWS // n)
        means = _core.bootstrap_means(d, b, 1, 2, n_threads=1)
        se = d.std() / math.sqrt(n)
        assert np.all(np.abs(means - d.mean()) < 6 * se + 1e-12), n
        seconds = cpu_best(lambda: _core.bootstrap_means(d, b, 1, 2, n_threads=1))  # noqa: B023
        per_word = 3 if n <= 2**16 else 2
        print(f"| {n:,} | {8 * n:,} | {1e9 * seconds / (b * n):.2f} | {word_ns / per_word:.2f} |")


if __name__ == "__main__":
    main()

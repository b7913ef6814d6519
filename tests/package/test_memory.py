"""Peak memory of the functions the documentation promises stream their draws: it does not
grow with the number of draws."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import truescore_fast as ts

# Peak resident memory of a child that runs `code` (MB), from the kernel's own count.
PEAK = """
import resource, numpy as np, truescore_fast as tf
{code}
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def _peak_mb(code: str) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(ts.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", PEAK.format(code=textwrap.dedent(code))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1])


@pytest.mark.slow
@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""), reason="ASan's own memory")
def test_memory_does_not_grow_with_draws_where_the_docs_promise_streaming() -> None:
    # Rao-Wu with m = 2 * 10^7 (was 160 MB per thread), the Monte Carlo randomization test
    # with 10^7 draws (240 MB at 24 bytes a draw) and the pattern test with 4 * 10^7 draws
    # (was 160 MB): peaks within 40 MB of a run with 100 times fewer draws.
    cases = {
        "rao_wu": (
            "tf.finite_population_bootstrap(np.arange(50.0), population_size=500, "
            "replicates=2, resample_size={}, n_threads=2)",
            2 * 10**7,
        ),
        "randomization": (
            "tf.randomization_test(np.random.default_rng(0).random(20), "
            "np.random.default_rng(1).random((20, 1)), method='monte_carlo', n_resamples={})",
            10**7,
        ),
        "pattern": (
            "tf.pattern_permutation_test(-np.eye(3)[:2], min_models=1, draws={}, n_threads=2)",
            4 * 10**7,
        ),
    }
    for name, (code, size) in cases.items():
        big, small = _peak_mb(code.format(size)), _peak_mb(code.format(size // 100))
        assert big - small < 40, (name, big, small)

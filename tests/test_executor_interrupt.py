"""Ctrl-C during a calibration study run on an executor: the caller gets KeyboardInterrupt,
the slices not started are cancelled, the running ones end within a second, so the
interpreter exits within a few seconds and (threads) no core stays busy."""

from __future__ import annotations

import sys
import textwrap

import pytest
from interrupting import interrupt_after

CHILD = textwrap.dedent(
    """
    import sys, threading, time
    from concurrent.futures import {pool}
    import numpy as np
    import truescore_fast as tf

    if __name__ == "__main__":
        population = np.linspace(-0.5, 0.5, 20_000)
        print("ready", flush=True)
        try:
            with {pool}(2) as executor:
                tf.coverage_study(
                    population, [200, 400, 800, 1600], replications=10**9,
                    n_threads=1, progress=False, executor=executor,
                )
        except KeyboardInterrupt:
            start = time.process_time()
            time.sleep(0.5)
            busy = time.process_time() - start
            print("interrupted", threading.active_count(), f"{{busy:.3f}}", flush=True)
            sys.exit(130)
        print("finished", flush=True)
    """
)


@pytest.mark.parametrize("pool", ["ThreadPoolExecutor", "ProcessPoolExecutor"])
def test_ctrl_c_stops_an_executor_run_within_seconds(pool, tmp_path):
    script = tmp_path / "child.py"  # a file, so a spawned process pool can import __main__
    script.write_text(CHILD.format(pool=pool))
    code, out, err, elapsed = interrupt_after([sys.executable, str(script)], 1.5)
    assert code == 130, (out, err)  # 1.5 s: the cells are running on the workers
    word, threads, busy = out.split()
    assert word == "interrupted"
    assert elapsed < 5.0, elapsed
    if pool == "ThreadPoolExecutor":
        assert threads == "1"  # every worker thread has ended
        assert float(busy) < 0.1  # and the cores are idle: no cell still running

"""The stress grid of ``studies/stress.py``: its 36 default settings, populations split by
largest remainder, equal to the reference, cells independent of their neighbours, on a
dask cluster, and stopped by Ctrl-C within a block (bounded in CPU time, not wall clock)."""

from __future__ import annotations

import math
import os
import sys
import textwrap

import numpy as np
import pytest
import truescore_fast as tf
from common import same_table
from interrupting import interrupt_after
from reference import (
    ref_coverage_sums,
)
from truescore_fast import studies as cal
from truescore_fast._random import philox_key

BLOCK = cal.REPLICATIONS_PER_TASK


ALL = ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting")


def test_stress_grid_on_a_dask_cluster_is_identical():
    distributed = pytest.importorskip("distributed")
    settings = cal.stress_settings()[::9]  # 4 of the 36 settings
    kw = dict(replications=300, seed=5, progress=False)
    local = tf.stress_grid(settings, **kw)
    with (
        # dashboard_address=None would still serve HTTP on port 8787 (and warn, an error
        # here, when that port is taken): any free port of the loopback interface instead
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = tf.stress_grid(settings, executor=client.get_executor(), n_threads=1, **kw)
    assert same_table(local, remote)


def test_a_cell_does_not_depend_on_its_neighbours():
    settings = cal.stress_settings()
    grid = tf.stress_grid(settings[:3], replications=300, seed=2, intervals="wald")
    # cell 2 alone, at index 2 of a grid whose other cells differ, gives the same row
    other = [settings[10], settings[20], settings[2]]
    alone = tf.stress_grid(other, replications=300, seed=2, intervals="wald")
    assert grid["wald"][2] == alone["wald"][2]


# ---------------------------------------------------------------------------- stress grid


def test_default_stress_grid_has_36_distinct_settings():
    settings = cal.stress_settings()
    assert len(settings) == 36 == len(set(settings))
    for s in settings:
        pop = cal.stress_population(s)
        assert pop.size == s.population_size
        assert np.count_nonzero(pop) == round(s.nonzero_share * s.population_size)
        assert set(np.unique(pop)) <= {-1.0, -0.5, 0.0, 0.5, 1.0}


@pytest.mark.parametrize("shape", sorted(cal.STRESS_SHAPES))
@pytest.mark.parametrize("big_n, share", [(1000, 0.05), (5000, 0.2), (333, 0.5), (7, 0.3)])
def test_stress_population_splits_nonzero_gaps_by_largest_remainder(shape, big_n, share):
    pop = cal.stress_population(cal.StressSetting(big_n, 2, shape, share))
    nonzero = round(share * big_n)
    weights = np.asarray(cal.STRESS_SHAPES[shape], dtype=float)
    # Hamilton's method, written out: floor of each quota, then one more unit to each of
    # the largest fractional parts (first value first on ties)
    quotas = [w * nonzero for w in weights]
    want = [math.floor(q) for q in quotas]
    by_remainder = sorted(range(4), key=lambda v: (-(quotas[v] - want[v]), v))
    for v in by_remainder[: nonzero - sum(want)]:
        want[v] += 1
    got = [int((pop == value).sum()) for value in (-1.0, -0.5, 0.5, 1.0)]
    assert got == want
    assert (np.diff(pop) >= 0).all() and int((pop == 0).sum()) == big_n - nonzero


def test_stress_grid_equals_reference():
    settings = [
        cal.StressSetting(200, 12, "bimodal", 0.05),
        cal.StressSetting(300, 30, "one-sided", 0.5),
    ]
    reps = 260
    t = tf.stress_grid(settings, replications=reps, seed=17)
    key = philox_key(17)
    for c, s in enumerate(settings):
        pop = cal.stress_population(s)
        want = ref_coverage_sums(
            pop, [0, s.population_size], [s.n], ALL, 0.05, float(np.mean(pop)), key, c, reps, BLOCK
        )
        for k, m in enumerate(ALL):
            assert round(t[m][c] * reps) == want[k, 0], (c, m)
        ratio = want[1, 1] / want[0, 1]
        assert t["bernstein/hoeffding"][c] == pytest.approx(ratio, rel=1e-12)
    assert any("settings below" in line for line in t.notes)


# ---------------------------------------------------------------------------- Ctrl-C, memory


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_within_a_block():
    code = textwrap.dedent(
        """
        import sys, threading
        import truescore_fast as tf
        print("ready", flush=True)
        try:
            tf.stress_grid(replications=10_000_000, seed=0, progress=False)
        except KeyboardInterrupt:
            print("interrupted", threading.active_count(), flush=True)
            sys.exit(130)
        print("finished", flush=True)
        """
    )
    code_, out, err, cpu = interrupt_after(
        [sys.executable, "-c", code], 0.8, env=dict(os.environ), timeout=300
    )  # 0.8 s: well inside the sweep
    assert code_ == 130, (out, err)
    assert out.split() == ["interrupted", "1"]  # KeyboardInterrupt surfaced, no thread left
    # CPU seconds from the signal to the exit, every thread's (tests/interrupting.py: the
    # machine's load does not change them): 0.1 s measured idle on 2 cores; bound 1 s
    assert cpu < 1.0, cpu

"""The pattern permutation test of ``resampling/patterns.py``: its null draw for draw against
the NumPy reference, variants, a planted cluster found, calibration, thread-count
invariance, errors, and memory estimated before allocating."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from reference import (
    ref_pattern_null,
    ref_pattern_statistic,
)
from truescore_fast._random import philox_key

# ---------------------------------------------------------------------------------------
# Pattern permutation test
# ---------------------------------------------------------------------------------------


def _sparse_gaps(rng, models, parents, rate=0.1):
    values = rng.choice([-1.0, -0.5, 0.5, 1.0], size=(models, parents))
    return np.where(rng.random((models, parents)) < rate, values, 0.0)


def test_pattern_null_equals_numpy_reference_draw_for_draw():
    rng = np.random.default_rng(11)
    gaps = _sparse_gaps(rng, 4, 25, rate=0.3)
    gaps[1] = np.where(rng.random(25) < 0.8, 0.5, -0.5)  # a mostly-"harder" row: complement path
    key = philox_key(7)
    result = tf.pattern_permutation_test(gaps, pattern="harder", min_models=2, draws=300, seed=7)
    null = ref_pattern_null(gaps > 0, 2, 300, key)
    assert np.array_equal(result.null_histogram, np.bincount(null, minlength=26))
    observed = ref_pattern_statistic(gaps > 0, 2)
    assert result.observed == observed
    assert result.p_value == (1 + np.sum(null >= observed)) / 301
    assert result.null_mean == pytest.approx(null.mean(), rel=1e-12)
    assert result.null_sd == pytest.approx(null.std(ddof=1), rel=1e-12)
    assert np.array_equal(result.per_model, (gaps > 0).sum(axis=1))
    assert np.array_equal(result.parents, np.flatnonzero((gaps > 0).sum(axis=0) >= 2))


def test_pattern_variants_agree():
    rng = np.random.default_rng(3)
    gaps = _sparse_gaps(rng, 5, 40, rate=0.25)
    common = {"min_models": 2, "draws": 200, "seed": 5}
    easier = tf.pattern_permutation_test(gaps, pattern="easier", **common)
    by_callable = tf.pattern_permutation_test(gaps, pattern=lambda g: g < 0, **common)
    by_mask = tf.pattern_permutation_test(gaps, pattern=gaps < 0, **common)
    for other in (by_callable, by_mask):
        assert other.observed == easier.observed
        assert np.array_equal(other.null_histogram, easier.null_histogram)
    nonzero = tf.pattern_permutation_test(gaps, pattern="nonzero", **common)
    assert nonzero.observed == int((((gaps != 0).sum(axis=0)) >= 2).sum())


def test_pattern_planted_cluster_is_detected():
    rng = np.random.default_rng(4)
    gaps = _sparse_gaps(rng, 5, 200, rate=0.02)
    gaps[:, :6] = 0.5  # six parents where every model shows the pattern
    result = tf.pattern_permutation_test(gaps, min_models=4, draws=2000, seed=1)
    assert result.observed >= 6
    assert result.p_value < 0.01


@pytest.mark.slow
def test_pattern_test_is_calibrated_under_the_null():
    # 600 null data sets (rows exchangeable over parents), 399 draws each. A wide null
    # (N = 600, 30% pattern rate) keeps the statistic's atoms small, so the rejection rate
    # should match alpha within Monte Carlo error: SE = sqrt(alpha (1 - alpha) / 600),
    # 0.0089 at alpha = 0.05 and 0.0122 at alpha = 0.10.
    rng = np.random.default_rng(2024)
    replications, alphas = 600, np.array([0.05, 0.10])
    rejections = np.zeros(2)
    row = np.r_[np.ones(180, bool), np.zeros(420, bool)]
    for r in range(replications):
        mask = np.array([rng.permutation(row) for _ in range(5)])
        result = tf.pattern_permutation_test(
            np.zeros((5, 600)), pattern=mask, min_models=2, draws=399, seed=r
        )
        rejections += result.p_value <= alphas
    rate = rejections / replications
    se = np.sqrt(alphas * (1 - alphas) / replications)
    assert np.all(np.abs(rate - alphas) <= 3 * se), (rate, se)


def test_pattern_thread_count_does_not_change_the_result():
    gaps = _sparse_gaps(np.random.default_rng(8), 5, 200)
    one = tf.pattern_permutation_test(gaps, draws=3000, seed=9, n_threads=1)
    two = tf.pattern_permutation_test(gaps, draws=3000, seed=9, n_threads=2)
    assert np.array_equal(one.null_histogram, two.null_histogram)
    assert one.p_value == two.p_value


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"pattern": "bogus"}, "pattern"),
        ({"pattern": np.zeros((2, 3), bool)}, "pattern"),
        ({"pattern": lambda g: g}, "pattern"),
        ({"min_models": 0}, "min_models"),
        ({"min_models": 6}, "min_models"),
        ({"draws": 0}, "draws"),
        ({"seed": -1}, "seed"),
        ({"seed": None}, "seed"),
        ({"n_threads": 0}, "n_threads"),
    ],
)
def test_pattern_errors_name_the_argument(kwargs, name):
    gaps = _sparse_gaps(np.random.default_rng(1), 5, 20)
    args = {"seed": 1, **kwargs}
    with pytest.raises(ValueError, match=name):
        tf.pattern_permutation_test(gaps, **args)


def test_pattern_rejects_bad_gaps():
    with pytest.raises(ValueError, match="gaps"):
        tf.pattern_permutation_test(np.zeros(10), seed=1)
    with pytest.raises(ValueError, match="gaps"):
        tf.pattern_permutation_test(np.full((3, 10), 2.0), seed=1)
    with pytest.raises(ValueError, match="gaps"):
        tf.pattern_permutation_test([[0.0, np.nan], [0.0, 0.0]], seed=1)


NO_RLIMIT_UNDER_ASAN = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""), reason="no RLIMIT_AS under ASan"
)


@NO_RLIMIT_UNDER_ASAN
def test_pattern_test_memory_is_estimated_before_allocating() -> None:
    # Under a 2 GB address-space limit, 8 workers of ~24 bytes per parent for 2^24
    # parents (3.2 GB) are refused by name before any of it is allocated.
    code = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (2 * 10**9, 2 * 10**9))
import numpy as np
from truescore_fast import _core
ind = np.zeros((1, 2**24), dtype=np.uint8)
ind[0, ::3] = 1
try:
    _core.pattern_test(ind, 1, 1000, 1, 2, n_threads=8)
except MemoryError as error:
    print(error)
"""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(ts.__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = "indicator needs 3.2 GB of memory, more than the 2.0 GB available"
    assert proc.stdout.startswith(want)
    assert "n_threads" in proc.stdout

"""The C++ Philox4x64-10 stream against numpy.random.Philox, and seed handling."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_philox
from truescore_fast import _core
from truescore_fast._random import philox_key


@pytest.mark.parametrize(
    "key, task",
    [((0, 0), 0), ((1, 2), 1), ((12345, 987654321), 7), ((2**64 - 1, 2**63), 2**64 - 1)],
)
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1001])
def test_raw_stream_equals_numpy_philox(key, task, n):
    ours = _core.philox_raw(key[0], key[1], task, n)
    np.testing.assert_array_equal(ours, ref_philox(key, task).random_raw(n))


def test_tasks_get_distinct_streams():
    a = _core.philox_raw(5, 6, 0, 64)
    b = _core.philox_raw(5, 6, 1, 64)
    assert not np.intersect1d(a, b).size


def test_seed_forms():
    assert philox_key(7) == philox_key(np.int64(7))
    assert philox_key(7) == philox_key(np.random.SeedSequence(7))
    assert philox_key(7) != philox_key(8)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert philox_key(g1) == philox_key(g2)
    for bad in (-1, 1.5, None, "7", True):
        with pytest.raises(ValueError, match="seed"):
            philox_key(bad)


def test_default_thread_count_is_every_core():
    # n_threads=None (0 in the core) means every core. The thread pool itself resolves
    # it, so no kernel can pass "all cores" through and run on one thread by mistake.
    import os

    assert _core.resolved_threads(0) == (os.cpu_count() or 1)
    assert _core.resolved_threads(-3) == (os.cpu_count() or 1)
    assert _core.resolved_threads(5) == 5

"""The C++ Philox4x64-10 stream against numpy.random.Philox, and seed handling."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from reference import ref_philox
from truescore_fast import _core
from truescore_fast._random import dropin_philox_key, philox_key, philox_stream


@pytest.mark.parametrize(
    "key, task",
    [((0, 0), 0), ((1, 2), 1), ((12345, 987654321), 7), ((2**64 - 1, 2**63), 2**64 - 1)],
)
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1001])
def test_raw_stream_equals_numpy_philox(key, task, n):
    ours = _core.testing.philox_raw(key[0], key[1], task, n)
    np.testing.assert_array_equal(ours, ref_philox(key, task).random_raw(n))


@pytest.mark.parametrize("key, task", [((0, 0), 0), ((1, 2), 1), ((2**64 - 1, 2**63), 2**64 - 1)])
def test_the_librarys_numpy_stream_is_the_cores(key, task):
    # philox_stream is the one place Python builds a Philox from a key: its draws are
    # the compiled core's stream of the same task, word for word
    ours = _core.testing.philox_raw(key[0], key[1], task, 9)
    np.testing.assert_array_equal(philox_stream(key, task).bit_generator.random_raw(9), ours)
    if task == 0:
        np.testing.assert_array_equal(philox_stream(key).bit_generator.random_raw(9), ours)


def _philox_from_a_key(source: str) -> list[int]:
    """Lines that call ``Philox(...)`` with a ``key=`` or ``counter=`` argument."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "Philox"
        and any(k.arg in ("key", "counter") for k in node.keywords)
    ]


def test_no_module_but_random_builds_a_philox_from_a_key():
    package = Path(__file__).resolve().parents[2] / "python" / "truescore_fast"
    found = {
        path.relative_to(package).as_posix(): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := _philox_from_a_key(path.read_text(encoding="utf-8")))
    }
    assert list(found) == ["_random.py"]
    # the check sees a key built by hand
    planted = "rng = np.random.Generator(np.random.Philox(key=np.array(k, dtype=np.uint64)))"
    assert _philox_from_a_key(planted) == [1]


def test_tasks_get_distinct_streams():
    a = _core.testing.philox_raw(5, 6, 0, 64)
    b = _core.testing.philox_raw(5, 6, 1, 64)
    assert not np.intersect1d(a, b).size


def test_seed_forms():
    assert philox_key(7) == philox_key(np.int64(7))
    assert philox_key(7) == philox_key(np.random.SeedSequence(7))
    assert philox_key(7) != philox_key(8)
    g1, g2 = np.random.default_rng(3), np.random.default_rng(3)
    assert philox_key(g1) == philox_key(g2)
    # every seed numpy.random.default_rng takes: bool, sequences, bit generators, RandomState
    assert philox_key(True) == philox_key(1)
    seq = np.random.SeedSequence([4, 5]).generate_state(2, np.uint64)
    assert philox_key([4, 5]) == philox_key(np.array([4, 5])) == (int(seq[0]), int(seq[1]))
    assert philox_key(np.random.PCG64(9)) == philox_key(np.random.Generator(np.random.PCG64(9)))
    mt = np.random.RandomState(2)
    words = np.random.default_rng(np.random.RandomState(2)).integers(0, 2**64, 2, np.uint64)
    assert philox_key(mt) == (int(words[0]), int(words[1]))
    assert philox_key(mt) != (int(words[0]), int(words[1]))  # drawing advanced it
    for bad, error in (
        (-1, ValueError),
        ([3, -1], ValueError),
        (None, ValueError),
        (1.5, TypeError),
        ("7", TypeError),
        ((1, 2.5), TypeError),
    ):
        with pytest.raises(error, match="seed"):
            philox_key(bad)


@pytest.mark.parametrize(
    "seed", [None, True, 7, [1, 2], np.random.PCG64(0), np.random.RandomState(0), -1, 1.5, "x"]
)
def test_dropin_seeds_accept_and_refuse_what_default_rng_does(seed):
    try:
        np.random.default_rng(seed)
    except (TypeError, ValueError) as theirs:
        with pytest.raises(type(theirs), match=re.escape(str(theirs))):
            dropin_philox_key(seed)
    else:
        key = dropin_philox_key(seed)
        assert all(0 <= word < 2**64 for word in key)


def test_default_thread_count_is_every_core():
    # n_threads=None (0 in the core) means every core. The thread pool itself resolves
    # it, so no kernel can pass "all cores" through and run on one thread by mistake.
    import os

    assert _core.resolve_threads(0) == (os.cpu_count() or 1)
    assert _core.resolve_threads(-3) == (os.cpu_count() or 1)
    assert _core.resolve_threads(5) == min(5, 4 * (os.cpu_count() or 1))


def test_seed_int_keeps_ints_and_turns_other_seeds_into_a_replayable_int():
    from truescore_fast._random import seed_int

    assert seed_int(7) == 7 and seed_int(np.int64(2**40)) == 2**40
    assert seed_int(np.random.SeedSequence(3)) == seed_int([3]) == philox_key(3)[0] >> 32
    assert 0 <= seed_int(np.random.default_rng(1)) < 2**32
    with pytest.raises(ValueError, match="seed"):
        seed_int(None)
    with pytest.raises(ValueError, match="seed"):
        seed_int(-1)

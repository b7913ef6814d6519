"""The drop-in at its edges: truescore 0.7.4's exceptions, seeds and numbers, case by case.

Each case runs truescore and truescore_fast on the same input and demands the same
exception type and message, or equal results.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import truescore.compare as ts_compare
import truescore.contamination as ts_contamination
import truescore_fast as tf
from hypothesis import given, settings
from hypothesis import strategies as st

A, B = [0.1, 0.5, 0.3, 0.9], [0.2, 0.1, 0.3, 0.4]


def _numbers():
    yield from [1.0, 2.0]


def truescore_function(name):
    return getattr(ts_compare, name, None) or getattr(ts_contamination, name)


def outcome(function, *args, **kwargs):
    """("ok", result) or (exception type, message)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", function(*args, **kwargs))
    except Exception as error:  # noqa: BLE001 - comparing whatever is raised
        return (type(error), str(error))


BAD_ARRAYS = {
    "set": {1.0, 2.0},
    "dict": {1: 2},
    "generator": _numbers,
    "complex": [1 + 2j, 3],
    "string": "abc",
    "strings": ["a", "b"],
    "2-D": [[1, 2], [3, 4]],
    "empty": [],
    "nan": [np.nan, 1.0],
    "inf": [np.inf, 1.0],
    "None": None,
    "scalar": 3.0,
    "ragged": [[1], [1, 2]],
    "numeric strings": ["1", "2"],
    "object": np.array([1, None], dtype=object),
    "datetime": np.array(["2020-01-01"], dtype="datetime64[D]"),
}


def cases():
    for label, value in BAD_ARRAYS.items():

        def fresh(v=value):
            return v() if callable(v) else v

        for name in ("paired_bootstrap", "paired_permutation"):
            yield name, lambda f=fresh: ((f(), B), {}), f"a={label}"
            yield name, lambda f=fresh: ((A, f()), {}), f"b={label}"
        for name in ("holm", "benjamini_hochberg", "combine_shards"):
            yield name, lambda f=fresh: ((f(),), {}), label
        yield "exchangeability_test", lambda f=fresh: ((-4.0, f()), {}), f"permuted={label}"
        yield "exchangeability_test", lambda f=fresh: ((f(), [1.0, 2.0]), {}), f"canon={label}"
    for count in (1.5, True, False, None, "10", 0, -1, np.nan, np.inf, 2**63, 10.0):
        yield "paired_bootstrap", lambda c=count: ((A, B), {"n_bootstrap": c}), f"n_boot={count!r}"
        yield (
            "paired_permutation",
            lambda c=count: ((A, B), {"n_resamples": c}),
            f"n_res={count!r}",
        )
    for seed in (-1, 1.5, "a", (1, 2.5), [-1]):
        for name in ("paired_bootstrap", "paired_permutation"):
            yield name, lambda s=seed: ((A, B), {"seed": s}), f"seed={seed!r}"
    for alpha in (0, 1, -0.1, np.nan, "0.05", None):
        yield "paired_bootstrap", lambda a=alpha: ((A, B), {"alpha": a}), f"alpha={alpha!r}"
        yield "combine_shards", lambda a=alpha: (([0.5],), {"alpha": a}), f"alpha={alpha!r}"
        yield (
            "exchangeability_test",
            lambda a=alpha: ((-4.0, [1.0]), {"alpha": a}),
            f"alpha={alpha!r}",
        )
    yield "combine_shards", lambda: (([0.0, 0.5],), {}), "p = 0"
    yield "combine_shards", lambda: (([1.5],), {}), "p > 1"
    yield "paired_permutation", lambda: (([1.0], [0.0]), {}), "n = 1"
    yield "paired_bootstrap", lambda: ((A, B[:3]), {}), "lengths"
    yield "paired_bootstrap", lambda: ((A, B), {"clusters": [1, 1, 2]}), "cluster length"
    yield "paired_bootstrap", lambda: ((A, B), {"clusters": [[1, 1], [2, 2]]}), "clusters 2-D"
    yield "paired_bootstrap", lambda: ((A, B), {"clusters": [1, 1, 1, 1]}), "one cluster"
    yield "exchangeability_test", lambda: (([-4.0], [1.0, 2.0]), {}), "canonical list"
    yield "exchangeability_test", lambda: ((np.nan, [1.0, 2.0]), {}), "canonical nan"


CASES = list(cases())


@pytest.mark.parametrize(("name", "make", "label"), CASES, ids=[c[2] + "-" + c[0] for c in CASES])
def test_bad_input_raises_what_truescore_raises(name, make, label):
    args, kwargs = make()
    theirs = outcome(truescore_function(name), *args, **kwargs)
    args, kwargs = make()
    ours = outcome(getattr(tf, name), *args, **kwargs)
    assert ours[0] == theirs[0]
    if theirs[0] != "ok":
        assert ours[1] == theirs[1]


@pytest.mark.parametrize(
    "seed",
    [
        None,
        True,
        False,
        3,
        [1, 2],
        np.array([3, 4]),
        np.random.SeedSequence(1),
        np.random.PCG64(0),
        np.random.default_rng(1),
        np.random.RandomState(0),
    ],
    ids=lambda s: type(s).__name__,
)
@pytest.mark.parametrize("name", ["paired_bootstrap", "paired_permutation"])
def test_every_truescore_seed_type_is_accepted(name, seed):
    result = getattr(tf, name)(A, B, seed=seed)
    assert 0.0 <= result.p_value <= 1.0 and result.low <= result.high


def test_long_double_canonical_is_compared_at_its_own_precision():
    canonical = np.longdouble(-4.1) + np.longdouble(1e-18)
    permuted = [-4.1, -5.0, -3.0, -4.2]
    theirs = ts_contamination.exchangeability_test(canonical, permuted)
    ours = tf.exchangeability_test(canonical, permuted)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)
    assert ours.p_value != tf.exchangeability_test(-4.1, permuted).p_value


def test_zero_d_float32_canonical_gives_truescores_z():
    canonical = np.array(-4.1, dtype=np.float32)
    permuted = [-4.1, -5.0, -3.0, -4.2, -4.0]
    theirs = ts_contamination.exchangeability_test(canonical, permuted)
    ours = tf.exchangeability_test(canonical, permuted)
    assert dataclasses.astuple(ours) == dataclasses.astuple(theirs)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 0.01, 0.3, 0.5, 1.0]), min_size=1, max_size=9))
def test_holm_and_benjamini_hochberg_keep_truescores_sign_of_zero(p):
    for name in ("holm", "benjamini_hochberg"):
        theirs = getattr(ts_compare, name)(p)
        ours = getattr(tf, name)(p)
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))

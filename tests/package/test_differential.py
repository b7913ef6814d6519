"""Differential tests against truescore 0.7.4, the library truescore_fast replaces.

On thousands of seeded random inputs the two must agree bit for bit (compared through
the float's bit pattern, so even the sign of a zero counts), and raise the same exception
types on the same bad inputs.

Known, deliberate deviations, each tested explicitly below:

* Where NumPy's intermediate sums overflow (|log-likelihoods| beyond ~1e154 make the
  squared deviations infinite; beyond ~1e306 the plain sum can overflow), truescore
  reports sd = inf (or nan) and z = 0 (or nan); we report the finite, correctly rounded
  values, checked against an mpmath reference.
* A permuted input that cannot be converted to float64 at all (complex numbers, a dict)
  raises ``ValueError`` here and ``TypeError`` in truescore (project rule: bad input is a
  ValueError naming the argument).
* A NumPy float32 *scalar* canonical log-likelihood: truescore computes z in float32
  (NumPy's scalar promotion), we compute it in float64.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import warnings

import numpy as np
import pytest
import truescore.contamination as ts
import truescore_fast as tf
from reference import ref_moments_mpmath, ref_moments_scaled_numpy

FIELDS = (
    "p_value",
    "canonical_loglik",
    "permutation_mean",
    "permutation_std",
    "z_score",
    "n_permutations",
    "level",
)


STAT_FIELDS = ("permutation_mean", "permutation_std", "z_score")


BOUNDARY_M = [1, 2, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 136, 255, 256, 257, 999, 1000, 1025]


def bits(x) -> int:
    return int(np.float64(x).view(np.int64))


def truescore_quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def assert_bitwise_same_result(ours, theirs):
    for field in FIELDS:
        a, b = getattr(ours, field), getattr(theirs, field)
        assert type(a) is type(b), field
        assert bits(a) == bits(b), (field, a, b)
    assert ours.contaminated == theirs.contaminated
    assert bits(ours.resolution) == bits(theirs.resolution)


def truescore_stats_finite(result) -> bool:
    return all(math.isfinite(getattr(result, f)) for f in STAT_FIELDS)


def assert_overflow_deviation(ours, theirs, permuted):
    """Where truescore's mean/sd/z are not finite: ours are finite and correct."""
    for field in ("p_value", "canonical_loglik", "n_permutations", "level"):
        assert bits(getattr(ours, field)) == bits(getattr(theirs, field)), field
    assert ours.contaminated == theirs.contaminated
    assert math.isfinite(ours.permutation_mean) and math.isfinite(ours.permutation_std)
    assert math.isfinite(ours.z_score)
    # NumPy's arithmetic on the values scaled by a power of two (exact), bit for bit ...
    scaled = ref_moments_scaled_numpy(permuted, ours.canonical_loglik)
    assert [bits(v) for v in scaled] == [
        bits(ours.permutation_mean),
        bits(ours.permutation_std),
        bits(ours.z_score),
    ]
    # ... and close to the exact values. Two-pass sd error is (eps * |mean| / sd)^2
    # relative, so a spread of 1e-10 of the mean allows ~1e-12: 1e-9 is loose but safe.
    mean_ref, sd_ref = ref_moments_mpmath(permuted)
    assert ours.permutation_mean == pytest.approx(mean_ref, rel=1e-12, abs=1e-12 * sd_ref)
    assert ours.permutation_std == pytest.approx(sd_ref, rel=1e-9, abs=1e-15 * abs(mean_ref))
    # ... and truescore's are the overflowed ones.
    assert not math.isfinite(theirs.permutation_std) or not math.isfinite(theirs.permutation_mean)


# ---------------------------------------------------------------------------------------
# Random inputs
# ---------------------------------------------------------------------------------------


def _values(rng, kind, m):
    if kind == "normal":
        return rng.normal(-rng.uniform(10, 1e5), 10.0 ** rng.uniform(-4, 3), size=m)
    if kind == "ties":
        return np.round(rng.normal(-500.0, 20.0, size=m) / 10.0) * 10.0
    if kind == "constant":
        return np.full(m, rng.normal(-500.0, 20.0))
    if kind == "tiny":
        return rng.normal(0.0, 1.0, size=m) * 10.0 ** rng.uniform(-320, -300)
    if kind == "e150":  # straddles the overflow of squared deviations
        return rng.normal(0.0, 1.0, size=m) * 10.0 ** rng.uniform(150, 158)
    if kind == "e300":
        return rng.uniform(-1.0, 1.0, size=m) * 10.0 ** rng.uniform(295, 308)
    if kind == "e300_offset":  # large common value, small spread
        return -(10.0 ** rng.uniform(295, 305)) * (1.0 + 1e-10 * rng.standard_normal(m))
    if kind == "e300_offset_wide":  # large common value, moderate spread
        return -(10.0 ** rng.uniform(295, 305)) * (1.0 + 1e-3 * rng.standard_normal(m))
    if kind == "mixed_sign_zero":
        return rng.choice([-0.0, 0.0, 1.0, -1.0], size=m)
    raise AssertionError(kind)


KINDS = [
    "normal",
    "normal",
    "ties",
    "constant",
    "tiny",
    "e150",
    "e300",
    "e300_offset",
    "e300_offset_wide",
    "mixed_sign_zero",
]


CONTAINERS = ["float64", "float32", "int64", "int32", "list_float", "list_int", "strided"]


def _container(rng, values, container):
    if container == "float64":
        return values
    if container == "float32":
        with np.errstate(over="ignore"):
            out = values.astype(np.float32)
        return out if np.isfinite(out).all() else np.ones(values.shape[0], dtype=np.float32)
    if container in ("int64", "int32", "list_int"):
        clipped = np.clip(np.rint(values), -1e9, 1e9)
        ints = clipped.astype(np.int64 if container != "int32" else np.int32)
        return ints.tolist() if container == "list_int" else ints
    if container == "list_float":
        return values.tolist()
    if container == "strided":
        wide = np.empty(2 * values.shape[0])
        wide[::2] = values
        return wide[::2]
    raise AssertionError(container)


def _canonical(rng, permuted_as_float):
    pick = rng.uniform()
    if pick < 0.3:
        c = float(permuted_as_float[rng.integers(permuted_as_float.shape[0])])  # a tie
    elif pick < 0.6:
        with np.errstate(over="ignore", invalid="ignore"):
            spread = float(np.std(permuted_as_float))
        spread = spread if math.isfinite(spread) else 1.0
        c = float(rng.choice(permuted_as_float)) + float(rng.normal()) * spread
    else:
        c = float(np.max(permuted_as_float)) + abs(float(rng.normal()))
    if not math.isfinite(c):
        c = 0.0
    form = rng.integers(4)
    if form == 1 and abs(c) < 2**62:
        return int(round(c))
    if form == 2:
        return np.float64(c)
    if form == 3 and abs(c) < 2**62:
        return np.int64(round(c))
    return c


def random_cases(seed, n):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        m = int(rng.choice(BOUNDARY_M)) if rng.uniform() < 0.7 else int(rng.integers(1, 3000))
        kind = KINDS[rng.integers(len(KINDS))]
        values = _values(rng, kind, m)
        permuted = _container(rng, values, CONTAINERS[rng.integers(len(CONTAINERS))])
        as_float = np.asarray(permuted, dtype=np.float64)
        yield _canonical(rng, as_float), permuted, float(rng.choice([0.01, 0.05, 0.1, 0.3]))


@pytest.mark.slow
def test_exchangeability_test_identical_to_truescore():
    deviations = identical = 0
    for canonical, permuted, alpha in random_cases(1234, 4000):
        theirs = truescore_quietly(ts.exchangeability_test, canonical, permuted, alpha=alpha)
        ours = tf.exchangeability_test(canonical, permuted, alpha=alpha)
        if truescore_stats_finite(theirs):
            assert_bitwise_same_result(ours, theirs)
            identical += 1
        else:
            assert_overflow_deviation(ours, theirs, np.asarray(permuted, dtype=np.float64))
            deviations += 1
    # Both branches were exercised substantially.
    assert identical > 3000 and deviations > 100


@pytest.mark.parametrize("m", [1, 2, 5])
def test_tiny_m_and_constant_permutations(m):
    rng = np.random.default_rng(m)
    for _ in range(200):
        value = float(rng.normal(-100, 10))
        for permuted in ([value] * m, np.full(m, value), [int(value)] * m):
            for canonical in (value, value - 1.0, value + 1.0, int(value)):
                theirs = ts.exchangeability_test(canonical, permuted)
                ours = tf.exchangeability_test(canonical, permuted)
                assert_bitwise_same_result(ours, theirs)


def test_overflow_deviation_is_explicit():
    # The documented deviation, on a fixed example: |values| ~ 1e200 squared overflow.
    permuted = [1e200, -1e200, 3e200]
    theirs = truescore_quietly(ts.exchangeability_test, 0.0, permuted)
    ours = tf.exchangeability_test(0.0, permuted)
    assert theirs.permutation_std == math.inf and theirs.z_score == 0.0
    assert_overflow_deviation(ours, theirs, np.array(permuted))
    assert ours.permutation_std == pytest.approx(2e200, rel=1e-15)
    assert ours.z_score == pytest.approx(-0.5, rel=1e-15)
    # Sum overflow: 100 values of 1e307 -> truescore mean = inf, z = nan.
    permuted = np.full(100, 1e307)
    theirs = truescore_quietly(ts.exchangeability_test, 0.0, permuted)
    ours = tf.exchangeability_test(0.0, permuted)
    assert theirs.permutation_mean == math.inf and math.isnan(theirs.z_score)
    assert_overflow_deviation(ours, theirs, permuted)
    # NumPy's rounding of 100 equal values (as on 1e7 instead of 1e307) leaves an sd of
    # ~1e-16 of the mean rather than exactly 0.
    assert ours.permutation_mean == pytest.approx(1e307, rel=1e-15)
    assert ours.permutation_std <= 1e-15 * 1e307


def test_overflow_path_accuracy_with_large_offset():
    # A small spread on a huge common value (realistic log-likelihood shape, scaled up):
    # the overflow path must be as accurate as NumPy's two-pass sd on the same numbers
    # scaled into range. (An earlier version divided by max|x|, which rounds, and lost
    # up to 1e-8 relative accuracy here.)
    rng = np.random.default_rng(300)
    for i in range(50):
        x = _values(rng, "e300_offset" if i % 2 else "e300_offset_wide", 500)
        ours = tf.exchangeability_test(0.0, x)
        theirs = truescore_quietly(ts.exchangeability_test, 0.0, x)
        assert_overflow_deviation(ours, theirs, x)
        scaled_down = ts.exchangeability_test(0.0, np.ldexp(x, -900))
        assert ours.permutation_std == math.ldexp(scaled_down.permutation_std, 900)


def test_float32_scalar_canonical_matches_truescore():
    # truescore's z = (np.float32 - float) / float stays in float32 (NumPy's scalar
    # promotion). A drop-in gives the same z, so ours reproduces that rounding too.
    rng = np.random.default_rng(32)
    for dtype in (np.float32, np.float16):
        for _ in range(200):
            size = int(rng.integers(2, 200))
            permuted = rng.normal(-50.0, 3.0, size=size).astype(dtype)
            canonical = permuted[0] + dtype(rng.normal())
            theirs = truescore_quietly(ts.exchangeability_test, canonical, permuted)
            ours = tf.exchangeability_test(canonical, permuted)
            for field in FIELDS:
                assert bits(getattr(ours, field)) == bits(getattr(theirs, field)), field
        exact = tf.exchangeability_test(float(canonical), permuted)
        assert abs(exact.z_score - ours.z_score) < 1e-2 * max(1.0, abs(exact.z_score))


# ---------------------------------------------------------------------------------------
# combine_shards
# ---------------------------------------------------------------------------------------


def _p_value_cases(seed, n):
    rng = np.random.default_rng(seed)
    for i in range(n):
        k = int(rng.choice([1, 2, 3, 8, 50, 1000, 10000])) if i % 10 else int(rng.integers(1, 40))
        kind = i % 6
        if kind == 0:
            p = rng.uniform(size=k)
            p[p == 0.0] = 0.5
        elif kind == 1:
            m = int(rng.choice([1, 19, 99, 999]))
            p = (1.0 + rng.integers(0, m + 1, size=k)) / (m + 1.0)
        elif kind == 2:
            p = 10.0 ** -rng.uniform(0, 320, size=k)
            p[rng.uniform(size=k) < 0.1] = 5e-324
        elif kind == 3:
            p = np.ones(k)
        elif kind == 4:
            p = rng.uniform(0.01, 1.0, size=k).astype(np.float32)
        else:
            p = rng.uniform(1e-6, 1.0, size=k).tolist()
        yield p, float(rng.choice([0.01, 0.05, 0.2]))


def test_combine_shards_identical_to_truescore():
    for p_values, alpha in _p_value_cases(99, 2000):
        theirs = ts.combine_shards(p_values, alpha=alpha)
        ours = tf.combine_shards(p_values, alpha=alpha)
        for field in ("statistic", "p_value", "level"):
            a, b = getattr(ours, field), getattr(theirs, field)
            assert type(a) is type(b) and bits(a) == bits(b), (field, a, b)
        assert ours.n_shards == theirs.n_shards
        assert ours.contaminated == theirs.contaminated
        assert ours.shard_p_values.dtype == theirs.shard_p_values.dtype
        assert np.array_equal(ours.shard_p_values, theirs.shard_p_values)


def test_combine_shards_integer_ones():
    for p in ([1], [1, 1, 1], np.ones(5, dtype=np.int64)):
        theirs, ours = ts.combine_shards(p), tf.combine_shards(p)
        assert bits(ours.p_value) == bits(theirs.p_value)
        assert bits(ours.statistic) == bits(theirs.statistic)


# ---------------------------------------------------------------------------------------
# The batched API, shard by shard
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_batched_shards_identical_to_truescore_per_row(seed):
    rng = np.random.default_rng(seed)
    kind = KINDS[seed % len(KINDS)] if seed < 4 else ["e150", "e300"][seed - 4]
    alpha = 0.05
    # Dense
    s, m = int(rng.integers(1, 300)), int(rng.choice(BOUNDARY_M))
    dense = np.array([_values(rng, kind, m) for _ in range(s)])
    canonical = np.array([float(_canonical(rng, row)) for row in dense])
    res = tf.exchangeability_tests(canonical, dense, alpha=alpha)
    ragged_rows = [_values(rng, kind, int(rng.choice(BOUNDARY_M))) for _ in range(s)]
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in ragged_rows])])
    canonical2 = np.array([float(_canonical(rng, row)) for row in ragged_rows])
    res2 = tf.exchangeability_tests(
        canonical2, np.concatenate(ragged_rows), offsets=offsets, alpha=alpha, n_threads=2
    )
    for batch, canon, rows in ((res, canonical, dense), (res2, canonical2, ragged_rows)):
        for i in range(s):
            theirs = truescore_quietly(ts.exchangeability_test, canon[i], rows[i], alpha=alpha)
            ours = batch.shard(i)
            if truescore_stats_finite(theirs):
                assert_bitwise_same_result(ours, theirs)
            else:
                assert_overflow_deviation(ours, theirs, np.asarray(rows[i]))
        pooled = batch.combine("fisher")
        theirs = ts.combine_shards(batch.p_values, alpha=alpha)
        assert bits(pooled.p_value) == bits(theirs.p_value)
        assert bits(pooled.statistic) == bits(theirs.statistic)


# ---------------------------------------------------------------------------------------
# Same exceptions on the same bad inputs
# ---------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


BAD_SINGLE = [
    # alpha outside (0, 1)
    (0.0, [1.0, 2.0], {"alpha": 0.0}),
    (0.0, [1.0, 2.0], {"alpha": 1.0}),
    (0.0, [1.0, 2.0], {"alpha": -0.5}),
    (0.0, [1.0, 2.0], {"alpha": 2.0}),
    (0.0, [1.0, 2.0], {"alpha": NAN}),
    # non-finite canonical
    (NAN, [1.0], {}),
    (INF, [1.0], {}),
    (-INF, [1.0], {}),
    (np.float32(NAN), [1.0], {}),
    # empty, non-1-D, non-finite permutations
    (0.0, [], {}),
    (0.0, np.zeros(0), {}),
    (0.0, np.zeros(0, dtype=np.int64), {}),
    (0.0, [[1.0, 2.0]], {}),
    (0.0, np.zeros((3, 2)), {}),
    (0.0, 5.0, {}),
    (0.0, None, {}),
    (0.0, [1.0, NAN], {}),
    (0.0, [INF], {}),
    (0.0, np.array([-INF, 1.0], dtype=np.float32), {}),
    (0.0, [1.0, None], {}),
    (0.0, ["a"], {}),
    (0.0, "abc", {}),
    # not even a number: both raise TypeError from NumPy before validation
    (None, [1.0], {}),
    ("x", [1.0], {}),
]


@pytest.mark.parametrize(("canonical", "permuted", "kwargs"), BAD_SINGLE)
def test_exchangeability_test_same_exceptions(canonical, permuted, kwargs):
    with pytest.raises(Exception) as theirs:  # noqa: B017 - the type is what we compare
        truescore_quietly(ts.exchangeability_test, canonical, permuted, **kwargs)
    with pytest.raises(Exception) as ours:  # noqa: B017
        tf.exchangeability_test(canonical, permuted, **kwargs)
    assert isinstance(ours.value, theirs.type)  # an ArgumentError is truescore's ValueError
    assert str(ours.value) == str(theirs.value)


BAD_P_VALUES = [
    ([0.5], {"alpha": 0.0}),
    ([0.5], {"alpha": 1.0}),
    ([0.5], {"alpha": -1.0}),
    ([], {}),
    (np.zeros(0), {}),
    ([[0.5, 0.5]], {}),
    (0.5, {}),
    ([0.0], {}),
    ([0.5, 0.0], {}),
    ([-0.0], {}),
    ([-0.1], {}),
    ([1.0000000000000002], {}),
    ([2.0], {}),
    ([NAN], {}),
    ([INF], {}),
    ([0.5, -INF], {}),
    ([0], {}),
    (["a"], {}),
]


@pytest.mark.parametrize(("p_values", "kwargs"), BAD_P_VALUES)
def test_combine_shards_same_exceptions(p_values, kwargs):
    with pytest.raises(Exception) as theirs:  # noqa: B017
        truescore_quietly(ts.combine_shards, p_values, **kwargs)
    with pytest.raises(Exception) as ours:  # noqa: B017
        tf.combine_shards(p_values, **kwargs)
    assert isinstance(ours.value, theirs.type)  # an ArgumentError is truescore's ValueError
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("permuted", [[1j], [1.0, 2j], {1: 2}])
def test_unconvertible_permutations_raise_truescores_type_error(permuted):
    with pytest.raises(TypeError) as theirs:
        ts.exchangeability_test(0.0, permuted)
    with pytest.raises(TypeError) as ours:
        tf.exchangeability_test(0.0, permuted)
    assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------------------------
# Interface
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["exchangeability_test", "combine_shards"])
def test_same_signature(name):
    assert inspect.signature(getattr(tf, name)) == inspect.signature(getattr(ts, name))


@pytest.mark.parametrize("name", ["ContaminationResult", "CombinedContamination"])
def test_result_types_have_truescores_fields(name):
    theirs = [(f.name, f.type) for f in dataclasses.fields(getattr(ts, name))]
    ours = [(f.name, f.type) for f in dataclasses.fields(getattr(tf, name))]
    assert ours == theirs
    for prop in ("contaminated", "resolution", "summary"):
        assert hasattr(getattr(ts, name), prop) <= hasattr(getattr(tf, name), prop)


def test_results_constructed_positionally_like_truescore():
    a = ts.ContaminationResult(0.01, -5.0, -6.0, 0.5, 2.0, 99, 0.95)
    b = tf.ContaminationResult(0.01, -5.0, -6.0, 0.5, 2.0, 99, 0.95)
    assert (a.contaminated, a.resolution) == (b.contaminated, b.resolution)
    assert isinstance(b.summary(), str)
    assert (repr(a), dataclasses.asdict(a), a.summary()) == (
        repr(b),
        dataclasses.asdict(b),
        b.summary(),
    )
    p = np.array([0.01, 0.2])
    c = ts.CombinedContamination(0.02, 11.0, 2, p, 0.95)
    d = tf.CombinedContamination(0.02, 11.0, 2, p, 0.95)
    assert c.contaminated == d.contaminated
    assert (repr(c), str(dataclasses.astuple(c)), c.summary()) == (
        repr(d),
        str(dataclasses.astuple(d)),
        d.summary(),
    )
    # == compares the fields, as truescore's does (an array field makes it ambiguous)
    e = tf.CombinedContamination(0.02, 11.0, 2, np.array([0.01]), 0.95)
    assert e == tf.CombinedContamination(0.02, 11.0, 2, e.shard_p_values, 0.95)

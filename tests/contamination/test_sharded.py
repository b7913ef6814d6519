"""SLCT and ``shard_orders`` of ``contamination/sharded.py``: the published and corrected
variants against the released formula and high-precision tails, its size under the null,
scale-free statistics up to the largest double, and shard orders (uniform, reproducible,
refused when too large for memory)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import truescore_fast as ts
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import stats
from truescore_fast import shard_orders, sharded_likelihood_test


def released_slct(canonical, shuffled):
    """The released code's formula, written out as Oren et al. publish it."""
    diffs = canonical - shuffled.mean(axis=1)
    z = np.mean(diffs) / np.std(diffs) * np.sqrt(len(diffs))
    pval = 1 - stats.t.cdf(z, df=len(diffs) - 1)
    return z, pval


def mp_log_t_sf(t, df):
    """log P(T_df >= t) in 60-digit arithmetic."""
    mpmath.mp.dps = 60
    x = mpmath.mpf(df) / (df + mpmath.mpf(t) ** 2)
    tail = mpmath.betainc(mpmath.mpf(df) / 2, mpmath.mpf(1) / 2, 0, x, regularized=True) / 2
    return float(mpmath.log(tail))


def test_published_variant_equals_released_formula():
    # 200 random problems (2-59 shards, 1-39 shuffles, three scales) in one test: each
    # takes microseconds, so 200 test items would cost more in collection than in checks.
    for seed in range(200):
        rng = np.random.default_rng(seed)
        r = int(rng.integers(2, 60))
        p = int(rng.integers(1, 40))
        shuffled = rng.normal(size=(r, p)) * rng.choice([1e-2, 1.0, 1e4]) - 5e3
        canonical = shuffled[:, 0] + rng.normal(0.2, 1.0, size=r)
        z, pval = released_slct(canonical, shuffled)
        res = sharded_likelihood_test(canonical, shuffled, variant="published")
        assert res.statistic == z, seed
        assert res.p_value == pval, seed


def test_corrected_variant_uses_ddof1_and_survival_function():
    rng = np.random.default_rng(7)
    shuffled = rng.normal(size=(25, 30))
    canonical = shuffled.mean(axis=1) + rng.normal(0.3, 1.0, size=25)
    d = canonical - shuffled.mean(axis=1)
    t = d.mean() / (d.std(ddof=1) / math.sqrt(25))
    res = sharded_likelihood_test(canonical, shuffled)
    assert res.statistic == pytest.approx(t, rel=1e-12)
    assert res.p_value == pytest.approx(stats.t.sf(t, 24), rel=1e-12)
    assert res.df == 24 and res.n_shards == 25
    published = sharded_likelihood_test(canonical, shuffled, variant="published")
    # The released statistic overstates t by sqrt(r / (r - 1)).
    assert published.statistic == pytest.approx(t * math.sqrt(25 / 24), rel=1e-12)


def test_corrected_log_p_is_finite_where_published_underflows():
    rng = np.random.default_rng(3)
    shuffled = rng.normal(size=(40, 20))
    canonical = shuffled.mean(axis=1) + 50.0 + rng.normal(size=40)
    published = sharded_likelihood_test(canonical, shuffled, variant="published")
    corrected = sharded_likelihood_test(canonical, shuffled)
    assert published.p_value == 0.0
    assert math.isfinite(corrected.log_p_value)
    assert corrected.log_p_value < math.log(1e-16)
    assert corrected.log_p_value == pytest.approx(
        mp_log_t_sf(corrected.statistic, corrected.df), rel=1e-12
    )
    assert corrected.contaminated


def test_p_below_double_range_is_reported_through_its_log():
    rng = np.random.default_rng(4)
    shuffled = rng.normal(size=(200, 10))
    canonical = shuffled.mean(axis=1) + 1e4 + rng.normal(size=200)
    res = sharded_likelihood_test(canonical, shuffled)
    assert res.p_value == 0.0
    assert res.log_p_value < -745.0  # below the smallest double's log
    assert round(res.log_p_value) == -1839  # the example quoted in the README
    assert res.log_p_value == pytest.approx(mp_log_t_sf(res.statistic, res.df), rel=1e-12)
    assert "log p" in res.summary() and res.contaminated


@pytest.mark.parametrize(
    "t, df", [(5.0, 3), (40.0, 10), (1e3, 99), (1e5, 80), (1e8, 1), (1e155, 2), (1e200, 3)]
)
def test_t_log_tail_matches_high_precision(t, df):
    from truescore_fast.contamination.sharded import _t_log_sf

    assert _t_log_sf(t, df) == pytest.approx(mp_log_t_sf(t, df), rel=1e-12)


def test_ragged_shards_equal_per_row_means():
    rng = np.random.default_rng(11)
    rows = [rng.normal(size=k) for k in (3, 9, 1, 17, 5)]
    canonical = np.array([row.mean() + 0.5 for row in rows]) + rng.normal(size=5)
    res = sharded_likelihood_test(canonical, rows)
    expected = canonical - np.array([row.mean() for row in rows])
    np.testing.assert_array_equal(res.differences, expected)


def test_null_rejection_rate_is_at_most_alpha():
    # Exchangeable shards: canonical is one more draw from the shuffled distribution.
    rng = np.random.default_rng(2024)
    reps, rejected = 4000, 0
    for _ in range(reps):
        shuffled = rng.normal(size=(10, 20))
        canonical = rng.normal(size=10)
        rejected += sharded_likelihood_test(canonical, shuffled).contaminated
    rate = rejected / reps
    se = math.sqrt(0.05 * 0.95 / reps)
    assert abs(rate - 0.05) < 4 * se, rate


def test_thread_count_does_not_change_result():
    rng = np.random.default_rng(5)
    shuffled = rng.normal(size=(3000, 50))
    canonical = rng.normal(size=3000)
    one = sharded_likelihood_test(canonical, shuffled, n_threads=1)
    two = sharded_likelihood_test(canonical, shuffled, n_threads=2)
    np.testing.assert_array_equal(one.differences, two.differences)
    assert one.statistic == two.statistic


@pytest.mark.parametrize(
    "canonical, shuffled, kwargs, match",
    [
        ([1.0], [[0.0, 1.0]], {}, "at least 2 shards"),
        ([1.0, 2.0], [[0.0], [1.0]], {}, "zero variance"),
        ([1.0, 2.0], [[0.0], [1.0]], {"variant": "published"}, "zero variance"),
        ([1.0, np.nan], [[0.0], [1.0]], {}, "canonical"),
        ([1.0, 2.0], [[0.0], [np.inf]], {}, "shuffled"),
        ([1.0, 2.0], [[0.0, 1.0]], {}, "shuffled"),
        ([1.0, 2.0], [0.0, 1.0], {}, "shuffled"),
        ([1.0, 2.0], np.zeros((2, 0)), {}, "shuffled"),
        ([1.0, 2.0], [[0.0], [1.0]], {"variant": "exact"}, "variant"),
        ([1.0, 2.0], [[0.0], [1.0]], {"alpha": 1.0}, "alpha"),
        ([1.0, 2.0], [[0.0], [1.0]], {"n_threads": 0}, "n_threads"),
    ],
)
def test_bad_input_raises_value_error(canonical, shuffled, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sharded_likelihood_test(canonical, shuffled, **kwargs)


finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(
    hnp.arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 5)), elements=finite),
    st.sampled_from(["corrected", "published"]),
)
def test_property_finite_result_or_value_error(shuffled, variant):
    canonical = shuffled[:, 0] + np.arange(shuffled.shape[0]) * 0.25
    try:
        res = sharded_likelihood_test(canonical, shuffled, variant=variant)
    except ValueError:
        return
    assert math.isfinite(res.statistic)
    assert 0.0 <= res.p_value <= 1.0
    if variant == "corrected":
        assert math.isfinite(res.log_p_value)


def test_shard_orders_sizes_and_permutations():
    orders = shard_orders(103, 7, 5, seed=42)
    sizes = np.diff(orders.offsets)
    assert sizes.tolist() == [103 // 7 + (i < 103 % 7) for i in range(7)]
    assert orders.offsets[0] == 0 and orders.offsets[-1] == 103
    for i, perms in enumerate(orders.permutations):
        assert perms.shape == (5, sizes[i])
        for row in perms:
            np.testing.assert_array_equal(np.sort(row), orders.canonical(i))


def test_shard_orders_reproducible_and_documented_derivation():
    a = shard_orders(50, 4, 3, seed=9)
    b = shard_orders(50, 4, 3, seed=9)
    c = shard_orders(50, 4, 3, seed=10)
    for x, y in zip(a.permutations, b.permutations, strict=True):
        np.testing.assert_array_equal(x, y)
    pairs = zip(a.permutations, c.permutations, strict=True)
    assert any(not np.array_equal(x, z) for x, z in pairs)
    # The docstring's recipe regenerates shard 2 with NumPy alone.
    child = np.random.SeedSequence(9).spawn(4)[2]
    gen = np.random.Generator(np.random.Philox(child))
    lo, hi = a.offsets[2], a.offsets[3]
    expected = gen.permuted(np.tile(np.arange(lo, hi), (3, 1)), axis=1)
    np.testing.assert_array_equal(a.permutations[2], expected)
    assert a.to_dict()["offsets"] == a.offsets.tolist()


def test_shard_orders_are_uniform_permutations():
    # Position of element 0 of a 4-element shard should be uniform over 4 slots.
    orders = shard_orders(4, 1, 8000, seed=1)
    positions = np.argmax(orders.permutations[0] == 0, axis=1)
    counts = np.bincount(positions, minlength=4)
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((0, 1, 1), {"seed": 0}, "n_examples"),
        ((5, 6, 1), {"seed": 0}, "n_shards"),
        ((5, 0, 1), {"seed": 0}, "n_shards"),
        ((5, 2, 0), {"seed": 0}, "permutations_per_shard"),
        ((5, 2, 1), {"seed": -1}, "seed"),
        ((5, 2, 1), {"seed": 1.5}, "seed"),
        ((5.0, 2, 1), {"seed": 1}, "n_examples"),
        ((5, 2, 1), {"seed": None}, "seed"),
    ],
)
def test_shard_orders_bad_input(args, kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):  # TypeError: a seed's type
        shard_orders(*args, **kwargs)


def test_shard_orders_record_a_replayable_int_seed():
    assert shard_orders(7, 2, 3).seed == 0  # the default seed
    drawn = shard_orders(7, 2, 3, seed=np.random.default_rng(5))
    assert isinstance(drawn.seed, int) and drawn.seed >= 0
    replay = shard_orders(7, 2, 3, seed=drawn.seed)
    assert all(
        np.array_equal(a, b) for a, b in zip(drawn.permutations, replay.permutations, strict=True)
    )


# --- item 6: the SLCT at log-likelihoods whose squares overflow ------------------------


@pytest.mark.parametrize("variant", ["corrected", "published"])
@pytest.mark.parametrize("exponent", [520, 600, 1000])
def test_sharded_likelihood_test_is_scale_free_up_to_the_largest_double(
    variant: str, exponent: int
) -> None:
    rng = np.random.default_rng(1)
    canonical = rng.normal(size=8) + 0.5
    shuffled = rng.normal(size=(8, 5)) / 4
    base = ts.sharded_likelihood_test(canonical, shuffled, variant=variant)
    big = ts.sharded_likelihood_test(
        np.ldexp(canonical, exponent), np.ldexp(shuffled, exponent), variant=variant
    )
    assert big.statistic == base.statistic
    assert big.p_value == base.p_value
    assert big.contaminated == base.contaminated
    assert big.estimate == math.ldexp(base.estimate, exponent)
    assert big.sd_difference == math.ldexp(base.sd_difference, exponent)
    np.testing.assert_array_equal(big.differences, np.ldexp(base.differences, exponent))


def test_sharded_likelihood_test_refuses_differences_beyond_the_largest_double() -> None:
    with pytest.raises(ValueError, match="canonical minus the shuffled means overflows"):
        ts.sharded_likelihood_test(np.array([1e308, -1e308]), np.array([[-1e308], [1e308]]))


@pytest.mark.parametrize(
    ("args", "name"),
    [((10**9, 10**9, 1), "n_shards"), ((10**9, 10, 10**3), "permutations_per_shard")],
)
def test_shard_orders_too_large_for_memory_name_the_argument(args, name) -> None:
    with pytest.raises(MemoryError, match=rf"^{name} needs [\d.,]+ [GTPE]B of memory.*fewer"):
        ts.shard_orders(*args)


def test_shard_orders_made_one_seed_at_a_time_equal_spawned_seeds() -> None:
    orders = ts.shard_orders(20, 4, 3, seed=9)
    for i, child in enumerate(np.random.SeedSequence(9).spawn(4)):
        gen = np.random.Generator(np.random.Philox(child))
        shard = np.arange(orders.offsets[i], orders.offsets[i + 1])
        assert np.array_equal(orders.permutations[i], gen.permuted(np.tile(shard, (3, 1)), axis=1))

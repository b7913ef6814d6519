"""Survey samplers of the calibration engine against NumPy references on the same stream.

Fixed-size and Bernoulli samplers share their Philox stream with the references in
tests/reference.py, which re-implement them from random_raw(): samples must be identical.
The multivariate hypergeometric sampler uses inversion (floating-point pmf), so it is
tested for its distribution instead: exact moments, and a chi-square test against SciPy.
"""

from __future__ import annotations

import numpy as np
import pytest
from kernel_paths import kernel_path
from reference import (
    RefStream,
    ref_bernoulli_sample,
    ref_partial_fisher_yates,
    ref_philox_words,
    ref_proportional_allocation,
    ref_stratified_sample,
    ref_uniform_indices,
    ref_with_replacement_sample,
)
from scipy import stats
from truescore_fast import _core
from truescore_fast._random import philox_key

NONE = np.zeros(0, dtype=np.int64)


KEY = philox_key(20261130)


def draw(design, big_n, n, offsets=NONE, allocation=NONE, p=0.0, task=0, draws=1, key=KEY):
    return _core.testing.sample_indices(
        design,
        big_n,
        n,
        np.asarray(offsets, np.int64),
        np.asarray(allocation, np.int64),
        p,
        key[0],
        key[1],
        task,
        draws,
    )


@pytest.mark.parametrize("big_n, n", [(1, 1), (7, 0), (7, 7), (50, 10), (1000, 37)])
@pytest.mark.parametrize("task", [0, 5, 2**40 + 3])
def test_srs_equals_reference_fisher_yates(big_n, n, task):
    got = draw(0, big_n, n, task=task, draws=4)
    stream = RefStream(KEY, task)
    perm = list(range(big_n))
    want = [ref_partial_fisher_yates(stream, 0, big_n, n, perm) for _ in range(4)]
    np.testing.assert_array_equal(got, np.asarray(want, dtype=np.int64).reshape(4, n))
    assert perm == list(range(big_n))  # the reference restores its permutation too
    for row in got:
        assert len(set(row.tolist())) == n


def test_stratified_equals_reference():
    offsets, allocation = [0, 5, 5, 30, 100], [2, 0, 9, 4]
    got = draw(1, 100, 15, offsets, allocation, task=9, draws=6)
    stream = RefStream(KEY, 9)
    perm = list(range(100))
    want = [ref_stratified_sample(stream, offsets, allocation, perm) for _ in range(6)]
    np.testing.assert_array_equal(got, np.asarray(want))
    for row in got:  # each stratum contributes exactly its allocation
        counts = np.histogram(row, bins=offsets)[0]
        np.testing.assert_array_equal(counts, allocation)


def test_with_replacement_and_bernoulli_equal_reference():
    got = draw(2, 13, 40, task=2, draws=3)
    stream = RefStream(KEY, 2)
    want = [ref_with_replacement_sample(stream, 13, 40) for _ in range(3)]
    np.testing.assert_array_equal(got, np.asarray(want))
    mask = draw(3, 200, 0, p=0.3, task=4, draws=3)
    stream = RefStream(KEY, 4)
    for row in mask:
        np.testing.assert_array_equal(np.flatnonzero(row), ref_bernoulli_sample(stream, 200, 0.3))


def test_a_sample_depends_only_on_key_and_task():
    # Drawing other tasks first (other sizes, other designs) never changes a task's sample.
    a = draw(0, 500, 40, task=11, draws=3)
    draw(0, 500, 499, task=3, draws=2)
    draw(2, 500, 40, task=11, draws=2)
    np.testing.assert_array_equal(a, draw(0, 500, 40, task=11, draws=3))
    assert not np.array_equal(a, draw(0, 500, 40, task=12, draws=3))
    assert not np.array_equal(a, draw(0, 500, 40, task=11, draws=3, key=philox_key(1)))


@pytest.mark.parametrize(
    "sizes, n",
    [
        ([10], 3),
        ([3, 3, 3], 4),
        ([1, 2, 3, 4], 7),
        ([5000, 3000, 2000], 401),
        ([7, 1, 0, 2], 10),
        ([333, 333, 334], 100),
        # n * size above 2**64: the 128-bit product and division of portable.hpp
        ([3 * 10**12, 5 * 10**12 + 7, 10**12 + 1], 4 * 10**12 + 3),
        ([2**40, 2**40 + 1, 3], 2**40),
    ],
)
def test_proportional_allocation_is_largest_remainder(sizes, n):
    got = _core.proportional_allocation(np.asarray(sizes, np.int64), n)
    assert got.tolist() == ref_proportional_allocation(sizes, n)
    assert got.sum() == n and (got <= np.asarray(sizes)).all()


def test_proportional_allocation_of_empty_strata_is_zero():
    # every stratum empty: n can only be 0 (this divided by zero, a crash, before)
    assert _core.proportional_allocation(np.zeros(3, np.int64), 0).tolist() == [0, 0, 0]


# ---- inclusion probabilities: every unit n/N (or n_h/N_h) within Monte Carlo error -----


def _check_inclusion(counts, prob, draws):
    se = np.sqrt(prob * (1 - prob) / draws)
    z = (counts / draws - prob) / se
    # 4.5 SE per unit: with ~100 units a false alarm has probability ~1e-3.
    assert np.abs(z).max() < 4.5, np.abs(z).max()
    # and the units together: sum of z^2 ~ chi2(units) (approximately)
    assert stats.chi2.sf(float((z**2).sum()), z.size) > 1e-3


def test_inclusion_probabilities_srs():
    big_n, n, draws = 60, 12, 20000
    sample = draw(0, big_n, n, task=1, draws=draws)
    _check_inclusion(np.bincount(sample.ravel(), minlength=big_n), n / big_n, draws)


def test_inclusion_probabilities_stratified():
    offsets, allocation, draws = [0, 20, 50, 60], [5, 3, 6], 20000
    sample = draw(1, 60, 14, offsets, allocation, task=2, draws=draws)
    counts = np.bincount(sample.ravel(), minlength=60)
    sizes = np.diff(offsets)
    prob = np.repeat(np.asarray(allocation) / sizes, sizes)
    _check_inclusion(counts, prob, draws)


def test_inclusion_probabilities_bernoulli_and_with_replacement():
    draws = 20000
    mask = draw(3, 40, 0, p=0.25, task=3, draws=draws)
    _check_inclusion(mask.sum(axis=0), 0.25, draws)
    sample = draw(2, 40, 8, task=4, draws=draws)
    # with replacement: each unit appears at least once with probability 1 - (1 - 1/N)^n
    hits = np.zeros(40)
    for row in sample:
        hits[np.unique(row)] += 1
    _check_inclusion(hits, 1 - (1 - 1 / 40) ** 8, draws)


# ---- multivariate hypergeometric counts ------------------------------------------------


@pytest.mark.parametrize(
    "counts, n", [([30, 100, 870], 200), ([5, 0, 5], 7), ([1, 999], 500), ([400, 400, 200], 999)]
)
def test_hypergeometric_counts_moments(counts, n):
    draws = 20000
    got = _core.testing.hypergeometric_counts(
        np.asarray(counts, np.int64), n, KEY[0], KEY[1], 0, draws
    )
    assert (got.sum(axis=1) == n).all()
    assert (got >= 0).all() and (got <= np.asarray(counts)).all()
    big_n = sum(counts)
    for v, c in enumerate(counts):
        mean = n * c / big_n
        var = n * (c / big_n) * (1 - c / big_n) * (big_n - n) / max(big_n - 1, 1)
        if var == 0:
            assert (got[:, v] == mean).all()
            continue
        assert abs(got[:, v].mean() - mean) < 4.5 * np.sqrt(var / draws)
        # the sample variance of `draws` values: SE about var * sqrt(2 / draws) (+ kurtosis)
        assert abs(got[:, v].var(ddof=1) / var - 1) < 6 * np.sqrt(2 / draws) + 0.01


def test_hypergeometric_counts_distribution_matches_scipy():
    counts, n, draws = np.array([60, 140, 300]), 80, 40000
    got = _core.testing.hypergeometric_counts(counts, n, KEY[0], KEY[1], 7, draws)
    # the first category alone is Hypergeometric(N=500, K=60, n=80)
    observed = np.bincount(got[:, 0], minlength=61)
    pmf = stats.hypergeom.pmf(np.arange(61), 500, 60, n)
    keep = pmf * draws >= 5
    expected = np.append(pmf[keep] * draws, draws - (pmf[keep] * draws).sum())
    obs = np.append(observed[keep], draws - observed[keep].sum())
    assert stats.chisquare(obs, expected).pvalue > 1e-3
    # the second given the first: Hypergeometric(440 - ..., K=140, n - x0)
    x0 = got[:, 0]
    for value in (8, 10, 12):
        rows = got[x0 == value, 1]
        want = 140 * (n - value) / 440
        assert abs(rows.mean() - want) < 5 * np.sqrt(
            stats.hypergeom.var(440, 140, n - value) / rows.size
        )


def test_sampler_errors():
    with pytest.raises(ValueError, match="allocation"):
        draw(1, 10, 5, [0, 4, 10], [5, 0])
    with pytest.raises(ValueError, match="sum to n"):
        draw(1, 10, 5, [0, 4, 10], [1, 1])
    with pytest.raises(ValueError, match="n must"):
        draw(0, 10, 11)
    with pytest.raises(ValueError, match="probability"):
        draw(3, 10, 0, p=1.5)
    with pytest.raises(ValueError, match="n must"):
        _core.testing.hypergeometric_counts(np.array([2, 3]), 6, 0, 0, 0, 1)


# ---------------------------------------------------------------------------------------
# Bulk draws (issue 13): Philox::next_words and PackedIndexSampler::fill, on the AVX-512
# kernels (where the CPU has them) and on the portable code
# ---------------------------------------------------------------------------------------


@pytest.fixture(params=[True, False], ids=["avx512-if-available", "portable"])
def avx512_path(request):
    with kernel_path(avx512=request.param):
        yield request.param


# Runs that start mid-block, span many 16-block batches, and end on every word of a block.
RUNS = [1, 3, 64, 65, 2, 127, 1000, 5, 0, 640, 33]


def test_bulk_philox_words_equal_numpy_for_any_runs(avx512_path):
    got = _core.testing.philox_words(KEY[0], KEY[1], 9, np.array(RUNS, np.int64))
    assert np.array_equal(got, ref_philox_words(KEY, 9, sum(RUNS)))


@pytest.mark.parametrize(
    "n",
    [1, 2, 3, 1000, 10_000, 43_691, 2**16, 2**16 + 1, 1_000_003, 2**25 + 1, 2**26],
)
def test_packed_draws_equal_the_reference_for_any_runs(avx512_path, n):
    # 43,691 and 2^25 + 1 reject about 2% and 1% of their chunks (2^k mod n is large).
    got = _core.testing.packed_draws(n, KEY[0], KEY[1], n % 1000, np.array(RUNS, np.int64))
    assert np.array_equal(got.astype(np.int64), ref_uniform_indices(KEY, n % 1000, n, sum(RUNS)))


def test_packed_draws_beyond_two_to_the_26_use_one_word_each(avx512_path):
    n = 2**26 + 1
    got = _core.testing.packed_draws(n, KEY[0], KEY[1], 4, np.array([5, 300], np.int64))
    stream = RefStream(KEY, 4)
    assert got.tolist() == [stream.below(n) for _ in range(305)]

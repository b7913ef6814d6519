"""Family-clustered bootstrap and Holm correction against plain NumPy references."""

from __future__ import annotations

import math

import numpy as np
import pytest

# --- any input: a finite result or a ValueError ---------------------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from reference import ref_family_bootstrap_differences, ref_holm
from truescore_fast import _core
from truescore_fast._random import philox_key
from truescore_fast.compare.families import family_bootstrap_difference, holm_correction


def clustered(n_families, effect, seed, sd_family=1.0, sd_item=0.3):
    """Paired outcomes with a strong family effect shared by both arms and by the effect."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, n_families)
    families = np.repeat(np.arange(n_families), sizes)
    base = rng.normal(0.0, sd_family, n_families)[families]
    fam_effect = effect + rng.normal(0.0, 0.5, n_families)[families]
    control = base + rng.normal(0.0, sd_item, families.size)
    treated = base + fam_effect + rng.normal(0.0, sd_item, families.size)
    return treated, control, families


# --- correctness -----------------------------------------------------------------------


def test_replicates_match_numpy_philox_reference():
    t, c, fam = clustered(9, 0.2, 1)
    key = philox_key(7)
    ref = ref_family_bootstrap_differences(t, c, fam, key, 150)
    t_sum = np.bincount(fam, weights=t)
    c_sum = np.bincount(fam, weights=c)
    n = np.bincount(fam).astype(float)
    reps = _core.cluster_bootstrap_difference(
        t_sum, n, c_sum, n, n_resamples=150, key0=key[0], key1=key[1], n_threads=2
    )
    np.testing.assert_allclose(reps, ref, rtol=1e-12, atol=1e-12)


def test_result_fields_from_replicates():
    t, c, fam = clustered(12, 0.3, 2)
    res = family_bootstrap_difference(t, c, families=fam, n_resamples=500, seed=7)
    ref = ref_family_bootstrap_differences(t, c, fam, philox_key(7), 500)
    assert res.estimate == pytest.approx(t.mean() - c.mean(), rel=1e-12)
    lo, hi = np.quantile(ref, [0.025, 0.975])
    assert (res.low, res.high) == pytest.approx((lo, hi), rel=1e-10)
    assert res.standard_error == pytest.approx(ref.std(ddof=1), rel=1e-10)
    far = min((ref <= 0).sum(), (ref >= 0).sum())
    assert res.p_value == pytest.approx(min(1.0, 2 * (1 + far) / 501))
    assert (res.n_families, res.n_treated, res.n_control) == (12, t.size, c.size)


def test_unpaired_arms_with_string_labels():
    rng = np.random.default_rng(3)
    t_fam = np.array(["a", "a", "b", "c", "c", "c"])
    c_fam = np.array(["c", "b", "a", "b"])
    t = rng.normal(size=6)
    c = rng.normal(size=4)
    res = family_bootstrap_difference(
        t, c, families=t_fam, control_families=c_fam, n_resamples=200, seed=1
    )
    assert res.estimate == pytest.approx(t.mean() - c.mean())
    # Every resample with all three families once reproduces the point estimate;
    # replicates are bounded by the extreme family means.
    assert res.low <= res.high


def test_thread_count_invariance_and_seed():
    t, c, fam = clustered(40, 0.1, 4)
    a = family_bootstrap_difference(t, c, families=fam, n_resamples=2000, seed=5, n_threads=1)
    b = family_bootstrap_difference(t, c, families=fam, n_resamples=2000, seed=5, n_threads=2)
    other = family_bootstrap_difference(t, c, families=fam, n_resamples=2000, seed=6)
    assert a == b
    assert (other.low, other.high) != (a.low, a.high)


def test_holm_matches_definition_and_textbook_example():
    p = [0.01, 0.04, 0.03, 0.005]
    res = holm_correction(p, alpha=0.05, names=["a", "b", "c", "d"])
    assert res.adjusted == pytest.approx(ref_holm(p))
    # 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.06, 0.04) = 0.06
    assert res.adjusted == pytest.approx((0.03, 0.06, 0.06, 0.02))
    assert res.rejected == (True, False, False, True)
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(0, 0.2, rng.integers(1, 12))
        assert holm_correction(q).adjusted == pytest.approx(ref_holm(q))
    assert "survives" in res.summary()


# --- coverage and calibration ----------------------------------------------------------

REPS = 300


def test_clustered_interval_covers_and_item_level_does_not():
    # Strong within-family correlation: the family bootstrap covers near 95%; treating
    # observations as independent (each its own family) under-covers badly.
    rng_seeds = range(REPS)
    covered = naive_covered = 0
    for s in rng_seeds:
        t, c, fam = clustered(40, 0.3, 1000 + s)
        res = family_bootstrap_difference(t, c, families=fam, n_resamples=400, seed=s)
        covered += res.low <= 0.3 <= res.high
        naive = family_bootstrap_difference(
            t, c, families=np.arange(t.size), n_resamples=400, seed=s
        )
        naive_covered += naive.low <= 0.3 <= naive.high
    se = math.sqrt(0.95 * 0.05 / REPS)  # 0.0126
    assert abs(covered / REPS - 0.95) <= 4 * se
    assert naive_covered / REPS < 0.95 - 4 * se


def test_holm_controls_familywise_error():
    # Four null tests with correlated uniform p-values: P(any rejection) <= alpha.
    rng = np.random.default_rng(8)
    n = 4000
    z = rng.standard_normal((n, 1)) * 0.7 + rng.standard_normal((n, 4)) * 0.7
    from scipy import stats

    p = stats.norm.sf(z / math.sqrt(0.98))
    any_rejection = np.mean([any(holm_correction(row).rejected) for row in p])
    assert any_rejection <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / n)


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(treated=[]), "treated"),
        (dict(control=[1.0, np.nan, 1.0, 1.0]), "control"),
        (dict(control=[1.0, 2.0]), "same length"),
        (dict(families=[0, 0, 1]), "families must hold one label"),
        (dict(families=[[0, 0, 1, 1]]), "families must be 1-D"),
        (dict(control=[1.0], control_families=[0, 1]), "control_families"),
        (dict(control=[1.0], control_families=[0]), "at least one treated and one control"),
        (dict(families=[0, 0, 0, 0]), "at least 2 distinct families"),
        (dict(alpha=0.0), "alpha"),
        (dict(n_resamples=0), "n_resamples"),
        (dict(seed=-2), "seed"),
        (dict(n_threads=0), "n_threads"),
    ],
)
def test_bootstrap_errors(kwargs, match):
    args = dict(treated=[1.0, 2.0, 3.0, 4.0], control=[0.0, 1.0, 1.0, 2.0], families=[0, 0, 1, 1])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        family_bootstrap_difference(args.pop("treated"), args.pop("control"), **args)


@pytest.mark.parametrize(
    ("p", "kwargs", "match"),
    [
        ([], {}, "p_values"),
        ([0.1, 1.5], {}, r"\[0, 1\]"),
        ([0.1, np.nan], {}, "p_values"),
        ([0.1], {"alpha": 2.0}, "alpha"),
        ([0.1, 0.2], {"names": ["a"]}, "names"),
    ],
)
def test_holm_errors(p, kwargs, match):
    with pytest.raises(ValueError, match=match):
        holm_correction(p, **kwargs)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(width=64), min_size=0, max_size=20),
    st.lists(st.floats(width=64), min_size=0, max_size=20),
    st.lists(st.integers(0, 3), min_size=0, max_size=20),
)
def test_any_input_gives_a_finite_result_or_value_error(t, c, fam):
    try:
        res = family_bootstrap_difference(t, c, families=fam, n_resamples=50)
    except ValueError:
        return
    assert all(math.isfinite(x) for x in (res.low, res.high, res.estimate, res.standard_error))
    assert 0.0 < res.p_value <= 1.0


def test_huge_values_are_scaled_not_overflowed():
    t, c, fam = clustered(10, 0.3, 6)
    small = family_bootstrap_difference(t, c, families=fam, n_resamples=300, seed=2)
    huge = family_bootstrap_difference(
        t * 2.0**1000, c * 2.0**1000, families=fam, n_resamples=300, seed=2
    )
    assert huge.low == pytest.approx(small.low * 2.0**1000, rel=1e-12)
    assert huge.standard_error == pytest.approx(small.standard_error * 2.0**1000, rel=1e-12)
    assert huge.p_value == small.p_value

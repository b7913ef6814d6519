"""Every public function that takes arrays gives the same result for any memory layout of
the same values: misaligned (a float64 view one byte into a buffer, which the compiled
core must never read as a double*), offset, negative-stride, non-contiguous and
read-only views (the array policy, src/cpp/bindings/arrays.hpp).

Under tools/sanitize.sh (UBSan, halt_on_error) a misaligned read anywhere in the core
aborts the run, so these tests also show that no kernel reads one."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import truescore_fast as tf


def misaligned(x: np.ndarray) -> np.ndarray:
    """The values of ``x`` in a buffer whose data starts one byte past an aligned address."""
    raw = bytearray(x.nbytes + 1)
    view = np.frombuffer(raw, dtype=x.dtype, offset=1, count=x.size).reshape(x.shape)
    view[...] = x
    assert not view.flags.aligned
    return view


def misaligned_strided(x: np.ndarray) -> np.ndarray:
    """Misaligned and every other element: neither aligned nor contiguous."""
    raw = bytearray(2 * x.nbytes + 1)
    flat = np.frombuffer(raw, dtype=x.dtype, offset=1, count=2 * x.size)[::2]
    view = flat.reshape(x.shape) if x.ndim <= 1 else flat[: x.size].reshape(x.shape)
    view[...] = x
    assert not view.flags.aligned and not view.flags.c_contiguous
    return view


def offset(x: np.ndarray) -> np.ndarray:
    """An aligned view that starts one element into its buffer."""
    buf = np.empty(x.size + 1, dtype=x.dtype)
    view = buf[1:].reshape(x.shape)
    view[...] = x
    return view


def negative_stride(x: np.ndarray) -> np.ndarray:
    """A view read backwards in every dimension."""
    flip = (slice(None, None, -1),) * x.ndim
    return np.ascontiguousarray(x[flip])[flip]


def non_contiguous(x: np.ndarray) -> np.ndarray:
    """Every other element of a buffer twice as long along the last axis."""
    buf = np.zeros((*x.shape[:-1], 2 * x.shape[-1]) if x.ndim else (2,), dtype=x.dtype)
    view = buf[..., ::2] if x.ndim else buf[0]
    view[...] = x
    return view


def read_only(x: np.ndarray) -> np.ndarray:
    view = x.copy()
    view.flags.writeable = False
    return view


LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "misaligned": misaligned,
    "misaligned_strided": misaligned_strided,
    "offset": offset,
    "negative_stride": negative_stride,
    "non_contiguous": non_contiguous,
    "read_only": read_only,
}

rng = np.random.default_rng(20261202)
GAPS = rng.choice([-1.0, 0.0, 0.0, 0.5, 1.0], size=64)
GAPS_2D = rng.choice([-1.0, 0.0, 0.0, 1.0], size=(5, 40))
PUBLIC = rng.integers(0, 2, size=60).astype(float)
FRESH = rng.integers(0, 2, size=(60, 2)).astype(float)
A = rng.normal(size=50)
B = A + rng.normal(0.1, 1.0, size=50)
P = np.sort(rng.uniform(0.0001, 1.0, size=12))
CANONICAL = rng.normal(size=6)
PERMUTED = rng.normal(size=(6, 99))
OFFSETS = np.array([0, 10, 30, 45, 60, 80, 99], dtype=np.int64)
FAMILIES = np.repeat(np.arange(10, dtype=np.int64), 5)
DID = rng.integers(0, 2, size=(30, 4)).astype(float)
RATINGS_A = rng.integers(0, 3, size=40).astype(float)
RATINGS_B = np.clip(RATINGS_A + rng.integers(-1, 2, size=40), 0, 2).astype(float)

# name -> (arrays, call(*arrays)): each array argument is laid out by the layout under test
N = 500
_SUITE_RNG = np.random.default_rng(25)
SUITE = (_SUITE_RNG.random((7, 40)) < np.linspace(0.2, 0.9, 7)[:, None]).astype(float)
SUITE_REF = (_SUITE_RNG.random((7, 30)) < np.linspace(0.2, 0.9, 7)[:, None]).astype(float)


def _context_scorer(windows: Any) -> list[np.ndarray]:
    # a TokenScorer whose log-probabilities depend on every token of the window
    return [-0.01 * (np.cumsum(w)[:-1] % 97) - 0.1 * np.asarray(w[1:]) for w in windows]


CALLS: dict[str, tuple[tuple[np.ndarray, ...], Callable[..., Any]]] = {
    "sliding_window_loglik": (
        (np.arange(3, 40, dtype=np.int64) % 11,),
        lambda t: tf.sliding_window_loglik(t, _context_scorer, context_len=8, stride=3),
    ),
    "bernstein_interval": ((GAPS,), lambda d: tf.bernstein_interval(d)),
    "hoeffding_interval": ((GAPS,), lambda d: tf.hoeffding_interval(d)),
    "hoeffding_serfling_interval": (
        (GAPS,),
        lambda d: tf.hoeffding_serfling_interval(d, population_size=N),
    ),
    "wald_interval": ((GAPS,), lambda d: tf.wald_interval(d, population_size=N)),
    "betting_interval": ((GAPS,), lambda d: tf.betting_interval(d, population_size=N)),
    "betting_confidence_sequence": (
        (GAPS,),
        lambda d: tf.betting_confidence_sequence(d, population_size=N),
    ),
    "bernstein_intervals": ((GAPS_2D,), lambda d: tf.bernstein_intervals(d)),
    "hoeffding_intervals": ((GAPS_2D,), lambda d: tf.hoeffding_intervals(d)),
    "hoeffding_serfling_intervals": (
        (GAPS_2D,),
        lambda d: tf.hoeffding_serfling_intervals(d, population_size=N),
    ),
    "wald_intervals": ((GAPS_2D,), lambda d: tf.wald_intervals(d, population_size=N)),
    "betting_intervals": ((GAPS_2D,), lambda d: tf.betting_intervals(d, population_size=N)),
    "matched_form_intervals": (
        (GAPS_2D,),
        lambda d: tf.matched_form_intervals(d, population_size=N),
    ),
    "matched_form_audit": (
        (PUBLIC, FRESH),
        lambda p, f: tf.matched_form_audit(p, f, population_size=N),
    ),
    "randomization_test": ((PUBLIC, FRESH), lambda p, f: tf.randomization_test(p, f)),
    "plan_audit_size": ((GAPS,), lambda d: tf.plan_audit_size(d)),
    "coverage_study": (
        (GAPS,),
        lambda d: tf.coverage_study(d, 20, replications=500, intervals="wald"),
    ),
    "budget_study": (
        (GAPS_2D,),
        lambda g: tf.budget_study(g, sizes=(20,), replications=300, progress=False),
    ),
    "detection_study": (
        (PUBLIC, FRESH),
        lambda p, f: tf.detection_study(
            p, f, sizes=(20,), deltas=(0.1,), replications=300, progress=False
        ),
    ),
    "sequential_study": (
        (PUBLIC, FRESH),
        lambda p, f: tf.sequential_study(
            p, f, deltas=(0.0,), max_parents=60, look_every=20, replications=100, progress=False
        ),
    ),
    "exchangeability_test": (
        (PERMUTED[0],),
        lambda x: tf.exchangeability_test(0.1, x),
    ),
    "exchangeability_tests": (
        (CANONICAL, PERMUTED),
        lambda c, x: tf.exchangeability_tests(c, x),
    ),
    "exchangeability_tests_ragged": (
        (CANONICAL, PERMUTED.ravel()[:99], OFFSETS),
        lambda c, x, o: tf.exchangeability_tests(c, x, offsets=o),
    ),
    "combine_shards": ((P,), lambda p: tf.combine_shards(p)),
    "sharded_likelihood_test": (
        (CANONICAL, PERMUTED),
        lambda c, x: tf.sharded_likelihood_test(c, x),
    ),
    "sequential_order_verdict": (
        (CANONICAL, PERMUTED),
        lambda c, x: tf.sequential_order_verdict(c, list(x)),
    ),
    "pattern_permutation_test": (
        (GAPS_2D,),
        lambda g: tf.pattern_permutation_test(g, min_models=1, draws=300),
    ),
    "paired_bootstrap": ((A, B), lambda a, b: tf.paired_bootstrap(a, b, n_bootstrap=300)),
    "paired_permutation": ((A, B), lambda a, b: tf.paired_permutation(a, b, n_resamples=300)),
    "paired_confidence_test": (
        (A, B),
        lambda a, b: tf.paired_confidence_test(a, b, method="sign_flip", n_resamples=300),
    ),
    "family_bootstrap_difference": (
        (A, B, FAMILIES),
        lambda a, b, f: tf.family_bootstrap_difference(a, b, families=f, n_resamples=300),
    ),
    "seed_contrast": ((A[:12],), lambda v: tf.seed_contrast(v)),
    "holm": ((P,), lambda p: tf.holm(p)),
    "holm_correction": ((P,), lambda p: tf.holm_correction(p)),
    "benjamini_hochberg": ((P,), lambda p: tf.benjamini_hochberg(p)),
    "adjust": ((P,), lambda p: tf.adjust(p, method="by")),
    "finite_population_bootstrap": (
        (A,),
        lambda v: tf.finite_population_bootstrap(v, population_size=N, replicates=200),
    ),
    "did_estimate": ((DID,), lambda x: tf.did_estimate(x, x[::-1], replicates=200)),
    "constat_test": (
        (SUITE[0], SUITE_REF[0], SUITE[1:], SUITE_REF[1:]),
        lambda s, r, ms, mr: tf.constat_test(s, r, ms, mr, n_bootstrap=30, smoothing=0.1),
    ),
    "constat_tests": (
        (SUITE, SUITE_REF),
        lambda s, r: tf.constat_tests(s, r, n_bootstrap=30, smoothing=0.1),
    ),
    "linear_weighted_kappa": (
        (RATINGS_A, RATINGS_B),
        lambda a, b: tf.linear_weighted_kappa(a, b, categories=[0, 1, 2], n_resamples=200),
    ),
}


def plain(value: Any) -> Any:
    """A result as nested lists, dicts and floats (NaN as a string), for comparing."""
    if hasattr(value, "to_dict"):
        return plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else float(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def test_the_layouts_hold_the_same_values_in_other_memory() -> None:
    for make in LAYOUTS.values():
        for x in (GAPS, GAPS_2D, OFFSETS):
            view = make(x)
            assert view.shape == x.shape and view.dtype == x.dtype
            assert np.array_equal(view, x)
    assert negative_stride(GAPS).strides[0] < 0
    assert not read_only(GAPS).flags.writeable
    assert offset(GAPS).ctypes.data % 8 == 0 and not offset(GAPS).flags.owndata


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(CALLS))
def test_any_layout_gives_the_contiguous_result(name: str, layout: str) -> None:
    arrays, call = CALLS[name]
    expected = plain(call(*(np.ascontiguousarray(x) for x in arrays)))
    got = plain(call(*(LAYOUTS[layout](x) for x in arrays)))
    assert got == expected


def test_every_public_function_taking_arrays_is_covered() -> None:
    # The functions whose first parameter is an array (npt.ArrayLike or Any); readers of
    # files, text features and studies that only simulate take none.
    import inspect

    takes_arrays = set()
    for name in tf.__all__:
        obj = getattr(tf, name)
        if not inspect.isfunction(obj):
            continue
        params = list(inspect.signature(obj).parameters.values())
        if params and "ArrayLike" in str(params[0].annotation):
            takes_arrays.add(name)
    assert len(takes_arrays) > 30
    assert takes_arrays <= {n.removesuffix("_ragged") for n in CALLS}, sorted(
        takes_arrays - set(CALLS)
    )


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_core_receives_aligned_data_whatever_the_layout(layout: str) -> None:
    # What the kernels get for each kind of array argument (ArrayD, ArrayStrided,
    # ArrayI64 in arrays.hpp): data aligned for its type, a copy when the view's is not.
    from truescore_fast import _core

    make = LAYOUTS[layout]
    assert _core.testing.input_alignment(make(GAPS), make(GAPS_2D), make(OFFSETS)) == (0, 0, 0)


def test_an_aligned_zero_stride_view_is_still_read_in_place() -> None:
    # The strided argument keeps a broadcast row uncopied (rank tests of 10**6 shards x
    # 20,000 in a few MB): the alignment requirement does not force a copy of it.
    big = np.broadcast_to(PERMUTED[0], (10**6, PERMUTED.shape[1]))
    result = tf.exchangeability_tests(np.zeros(10**6), big)
    alone = tf.exchangeability_test(0.0, PERMUTED[0])
    assert result.p_values[0] == result.p_values[-1] == alone.p_value

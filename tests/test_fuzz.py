"""Fuzz the public functions (issue 10, "keep it so"): any input gives a result with no
NaN in it, or one of the documented exceptions whose message names an argument.

Inputs mix bad dtypes (complex, datetime, strings, objects), shapes (0-d to 3-d, empty),
NaN and infinities, magnitudes from the smallest subnormal to the largest double, extreme
counts and every kind of seed. An interval end or a sum beyond the largest double may be
infinite (that is a bound, and the library documents it); a NaN never is an answer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import truescore_fast as ts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))

DOCUMENTED = (ValueError, TypeError, OverflowError, MemoryError)

SPECIAL = [
    0.0,
    -0.0,
    5e-324,
    1e-320,
    2.2250738585072014e-308,
    1e-300,
    1e-17,
    0.5,
    1.0,
    -1.0,
    3.0,
    1e154,
    2e162,
    1e300,
    1e308,
    -1e308,
    1.7976931348623157e308,
    math.nan,
    math.inf,
    -math.inf,
]

numbers = st.one_of(
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.floats(min_value=-1.0, max_value=1.0),
)


@st.composite
def arrays(draw: Any, min_side: int = 0, max_side: int = 8) -> Any:
    """A value an array argument might be given: mostly 1-D float arrays, sometimes
    other shapes, dtypes and Python containers."""
    kind = draw(st.sampled_from(["float", "float", "float", "shape", "dtype", "python"]))
    n = draw(st.integers(min_side, max_side))
    values = np.array(draw(st.lists(numbers, min_size=n, max_size=n)), dtype=np.float64)
    if kind == "float":
        return values
    if kind == "shape":
        shape = draw(st.sampled_from([(), (1, 1), (2, 2), (0,), (1, 2, 2)]))
        size = int(np.prod(shape))
        return np.resize(values if values.size else np.zeros(1), size).reshape(shape)
    if kind == "dtype":
        dtype = draw(
            st.sampled_from(
                [
                    np.float32,
                    np.int64,
                    np.uint8,
                    np.bool_,
                    np.complex128,
                    np.longdouble,
                    "M8[D]",
                    "m8[s]",
                    "<U4",
                    object,
                ]
            )
        )
        with np.errstate(all="ignore"):
            finite = np.nan_to_num(values, nan=0.0, posinf=1.0, neginf=-1.0)
            if dtype in ("M8[D]", "m8[s]", "<U4"):
                return np.clip(finite, -1000, 1000).astype(np.int64).astype(dtype)
            return finite.astype(dtype)
    return draw(
        st.sampled_from(
            [
                values.tolist(),
                None,
                "1,2",
                {1: 2},
                {1.0, 2.0},
                [1.0, [2.0]],
                [1 + 2j, 3.0],
                [10**400, 1],
            ]
        )
    )


seeds = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**200),
    st.sampled_from(
        [None, True, 1.5, "7", np.int64(3), np.uint64(2**64 - 1), np.random.SeedSequence(5)]
    ),
    st.builds(np.random.default_rng, st.integers(0, 2**32)),
)

alphas = st.one_of(
    st.sampled_from([0.05, 1e-300, 1e-17, 0.999999, 0.0, 1.0, -0.1, math.nan, True]),
    st.floats(min_value=0.0, max_value=1.0),
)


def _no_nan(value: Any, path: str = "result") -> None:
    if isinstance(value, float):
        assert not math.isnan(value), f"{path} is NaN"
    elif isinstance(value, dict):
        for key, item in value.items():
            _no_nan(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _no_nan(item, f"{path}[{index}]")


def check(call: Callable[[], Any], names: tuple[str, ...]) -> None:
    """``call()`` returns a result without NaN, or raises a documented exception whose
    message names one of ``names``."""
    try:
        with np.errstate(over="raise"):  # a silent overflow inside is a finding too
            result = call()
    except FloatingPointError as error:
        pytest.fail(f"unguarded floating-point error: {error}")
    except DOCUMENTED as error:
        message = str(error)
        assert any(name in message for name in names), (type(error).__name__, message)
        return
    _no_nan(result.to_dict() if hasattr(result, "to_dict") else dataclasses.asdict(result))


@FUZZ
@given(values=arrays(), alpha=alphas, seed=seeds)
def test_seed_contrast(values: Any, alpha: Any, seed: Any) -> None:
    check(
        lambda: ts.seed_contrast(values, alpha=alpha, method="monte_carlo", draws=50, seed=seed),
        ("values", "alpha", "seed", "draws"),
    )


@FUZZ
@given(
    a=arrays(),
    b=arrays(),
    method=st.sampled_from(["t", "wilcoxon", "sign_flip"]),
    alpha=alphas,
)
def test_paired_confidence_test(a: Any, b: Any, method: str, alpha: Any) -> None:
    check(
        lambda: ts.paired_confidence_test(a, b, method=method, alpha=alpha, n_resamples=64),
        ("confidence_original", "confidence_rephrased", "alpha", "n_resamples"),
    )


@FUZZ
@given(
    values=arrays(),
    population_size=st.one_of(
        st.integers(-5, 2**70), st.sampled_from([None, 1e300, 2**63, math.nan, 12.5])
    ),
    replicates=st.sampled_from([0, 1, 2, 20, True, 2.0]),
    seed=seeds,
)
def test_finite_population_bootstrap(
    values: Any, population_size: Any, replicates: Any, seed: Any
) -> None:
    check(
        lambda: ts.finite_population_bootstrap(
            values, population_size=population_size, replicates=replicates, seed=seed
        ),
        ("values", "population_size", "replicates", "seed", "Rao-Wu", "stratum"),
    )


@FUZZ
@given(canonical=arrays(), shuffled=arrays(), variant=st.sampled_from(["corrected", "published"]))
def test_sharded_likelihood_test(canonical: Any, shuffled: Any, variant: str) -> None:
    if isinstance(shuffled, np.ndarray) and shuffled.ndim == 1 and shuffled.dtype.kind == "f":
        shuffled = np.resize(
            shuffled, (max(canonical.size if isinstance(canonical, np.ndarray) else 2, 1), 3)
        )
    check(
        lambda: ts.sharded_likelihood_test(canonical, shuffled, variant=variant),
        ("canonical", "shuffled", "shard differences", "t statistic"),
    )


@FUZZ
@given(canonical=arrays(), permuted=arrays(), alpha=alphas)
def test_exchangeability_tests(canonical: Any, permuted: Any, alpha: Any) -> None:
    if isinstance(permuted, np.ndarray) and permuted.ndim == 1 and permuted.dtype.kind == "f":
        permuted = np.resize(
            permuted, (max(canonical.size if isinstance(canonical, np.ndarray) else 2, 1), 4)
        )
    check(
        lambda: ts.exchangeability_tests(canonical, permuted, alpha=alpha).combine("stouffer"),
        ("canonical", "permuted", "alpha"),
    )


@FUZZ
@given(
    d=arrays(),
    method=st.sampled_from(ts.INTERVAL_METHODS),
    population_size=st.one_of(st.none(), st.integers(-3, 50), st.sampled_from([2**63, 1e300])),
    alpha=alphas,
)
def test_interval(d: Any, method: str, population_size: Any, alpha: Any) -> None:
    fn = getattr(ts, f"{method}_interval")
    if method in ("hoeffding", "bernstein"):
        check(lambda: fn(d, alpha=alpha), ("d", "alpha"))
    else:
        check(
            lambda: fn(d, population_size=population_size, alpha=alpha),
            ("d", "alpha", "population_size"),
        )


@FUZZ
@given(
    public=arrays(min_side=2),
    radius=st.sampled_from([0.0, 0.04, 1e308, math.inf, -1.0, math.nan, 10**400]),
    population_size=st.one_of(st.none(), st.integers(0, 40)),
    alpha=alphas,
    seed=seeds,
)
def test_matched_form_audit(
    public: Any, radius: Any, population_size: Any, alpha: Any, seed: Any
) -> None:
    if isinstance(public, np.ndarray) and public.dtype.kind == "f":
        fresh = np.stack([np.abs(np.nan_to_num(public, nan=0.5)) % 1.0] * 2, axis=-1)
    else:
        fresh = np.zeros((3, 2))
    check(
        lambda: ts.matched_form_audit(
            public,
            fresh,
            transport_radius=radius,
            population_size=population_size,
            alpha=alpha,
            seed=seed,
        ),
        ("public", "fresh", "transport_radius", "population_size", "alpha", "seed"),
    )

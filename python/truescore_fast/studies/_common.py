"""Helpers every study shares: checking replications, sizes, interval methods, float
grids and banks of binary scores; a rate or a mean with its Monte Carlo standard error; a
table's columns; the run metadata a study's table records; a task's Philox stream.
Shared by the study modules under public names; not a public API (the module is private).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._random import SeedLike
from truescore_fast._validation import (
    check_positive_int,
    float_array,
    real_scalar,
)
from truescore_fast.audit._methods import INTERVAL_METHODS, TRAITS
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._engine import (
    REPLICATIONS_PER_TASK,
)

__all__ = [
    "check_binary",
    "check_floats",
    "check_methods",
    "check_replications",
    "check_sizes",
    "mean_with_se",
    "model_banks",
    "rate_with_se",
    "run_meta",
    "table_columns",
]


def check_replications(replications: Any) -> int:
    return check_positive_int("replications", replications, minimum=2)


def check_sizes(name: str, values: int | Iterable[int], minimum: int = 2) -> tuple[int, ...]:
    if (
        isinstance(values, (str, bytes))
        or not isinstance(values, Iterable)
        or (isinstance(values, np.ndarray) and values.ndim == 0)
    ):
        items: list[Any] = [values]  # one size (check_positive_int names what is wrong)
    else:
        items = list(values)
    if not items:
        raise ArgumentError(name, f"{name} must hold at least one sample size")
    return tuple(check_positive_int(name, v, minimum=minimum) for v in items)


def check_methods(intervals: Any) -> tuple[str, ...]:
    if isinstance(intervals, str) or not isinstance(intervals, Iterable):
        items: tuple[Any, ...] = (intervals,)
    else:
        items = tuple(intervals)
    if not items:
        raise ArgumentError("intervals", "intervals must name at least one interval method")
    for m in items:
        if not isinstance(m, str) or m not in TRAITS:
            raise ArgumentError(
                "intervals", f"intervals: unknown method {m!r}; choose from {INTERVAL_METHODS}"
            )
    if len(set(items)) != len(items):
        raise ArgumentError("intervals", f"intervals must not repeat a method; got {items}")
    return items


def rate_with_se(count: float, reps: int) -> tuple[float, float]:
    p = count / reps
    return p, math.sqrt(max(p * (1.0 - p), 0.0) / reps)


def mean_with_se(total: float, squares: float, reps: int) -> tuple[float, float]:
    mean = total / reps
    var = max(squares / reps - mean * mean, 0.0) * reps / (reps - 1)
    return mean, math.sqrt(var / reps)


def table_columns(
    names: Sequence[str], rows: Iterable[Sequence[Any]]
) -> dict[str, npt.NDArray[Any]]:
    """StudyTable columns from rows: column k holds the k-th value of every row."""
    rows = list(rows)
    for row in rows:
        if len(row) != len(names):
            raise AssertionError(f"a row of {len(row)} values for {len(names)} columns")
    return {name: np.asarray([row[k] for row in rows]) for k, name in enumerate(names)}


def run_meta(study: str, seed: SeedLike, key: tuple[int, int], reps: int) -> dict[str, Any]:
    """The meta entries every simulation study records (how to reproduce it)."""
    return {
        "study": study,
        # An int seed replays the study; for any other seed the key below does.
        "seed": int(seed) if isinstance(seed, (int, np.integer)) else repr(seed),
        "key": list(key),
        "replications": reps,
        "replications_per_task": REPLICATIONS_PER_TASK,
    }


def check_floats(
    name: str,
    values: float | Sequence[float],
    *,
    low: float = 0.0,
    high: float = 1.0,
    high_open: bool = True,
) -> tuple[float, ...]:
    """``values`` (one number, a sequence or a 1-D array) as a tuple of floats, each
    checked by ``real_scalar`` in [low, high) (``high_open=False``: [low, high])."""
    if isinstance(values, np.ndarray) and values.ndim > 1:
        raise ArgumentError(
            name, f"{name} must be a number or a 1-D sequence; got shape {values.shape}"
        )
    if isinstance(values, np.ndarray) or (
        isinstance(values, Sequence) and not isinstance(values, str)
    ):
        items = list(np.reshape(values, -1)) if isinstance(values, np.ndarray) else list(values)
    else:
        items = [values]
    if not items:
        raise ArgumentError(name, f"{name} must hold at least one value")
    return tuple(real_scalar(name, v, low=low, high=high, high_open=high_open) for v in items)


def check_binary(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``values`` as a C-contiguous float array of binary correctness labels (0 or 1)."""
    arr = np.ascontiguousarray(float_array(name, values))
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ArgumentError(name, f"{name} must hold binary correctness labels (0 or 1)")
    return arr


def model_banks(
    public: npt.ArrayLike, fresh: npt.ArrayLike
) -> list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    """One model's bank or several: (public (N,), fresh (N, K)) per model, checked."""
    pub = check_binary("public", public)
    fr = check_binary("fresh", fresh)
    if pub.ndim == 1:
        pub = pub[None, :]
        fr = fr[None, :, :] if fr.ndim == 2 else fr[None, :, None]
    elif fr.ndim == 2:
        fr = fr[:, :, None]
    if pub.ndim != 2 or fr.ndim != 3 or fr.shape[:2] != pub.shape or fr.shape[2] < 1:
        raise ArgumentError(
            "public",
            "public must be (N,) or (models, N) and fresh (N, K) or (models, N, K) to match; "
            f"got {np.shape(public)} and {np.shape(fresh)}",
        )
    if pub.shape[1] < 2:
        raise ValueError("the bank needs at least 2 parents")
    return [
        (np.ascontiguousarray(pub[m]), np.ascontiguousarray(fr[m])) for m in range(pub.shape[0])
    ]

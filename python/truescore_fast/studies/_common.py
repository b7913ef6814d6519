"""Helpers every study shares: checking replications, sizes, interval methods and float
grids; a rate or a mean with its Monte Carlo standard error; a table's columns; the run
metadata a study's table records. Not a public API.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._errors import ArgumentError
from truescore_fast._random import SeedLike
from truescore_fast._validation import (
    check_positive_int,
    real_scalar,
)
from truescore_fast.audit._methods import INTERVAL_METHODS, TRAITS
from truescore_fast.studies._engine import (
    REPLICATIONS_PER_TASK,
)

__all__: list[str] = []


def _replications(replications: Any) -> int:
    return check_positive_int("replications", replications, minimum=2)


def _sizes(name: str, values: int | Iterable[int], minimum: int = 2) -> tuple[int, ...]:
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


def _methods(intervals: Any) -> tuple[str, ...]:
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


def _rate(count: float, reps: int) -> tuple[float, float]:
    p = count / reps
    return p, math.sqrt(max(p * (1.0 - p), 0.0) / reps)


def _mean_se(total: float, squares: float, reps: int) -> tuple[float, float]:
    mean = total / reps
    var = max(squares / reps - mean * mean, 0.0) * reps / (reps - 1)
    return mean, math.sqrt(var / reps)


def _columns(names: Sequence[str], rows: Iterable[Sequence[Any]]) -> dict[str, npt.NDArray[Any]]:
    """StudyTable columns from rows: column k holds the k-th value of every row."""
    rows = list(rows)
    for row in rows:
        if len(row) != len(names):
            raise AssertionError(f"a row of {len(row)} values for {len(names)} columns")
    return {name: np.asarray([row[k] for row in rows]) for k, name in enumerate(names)}


def _run_meta(study: str, seed: SeedLike, key: tuple[int, int], reps: int) -> dict[str, Any]:
    """The meta entries every simulation study records (how to reproduce it)."""
    return {
        "study": study,
        # An int seed replays the study; for any other seed the key below does.
        "seed": int(seed) if isinstance(seed, (int, np.integer)) else repr(seed),
        "key": list(key),
        "replications": reps,
        "replications_per_task": REPLICATIONS_PER_TASK,
    }


# ---------------------------------------------------------------------------- coverage


# ---------------------------------------------------------------------------- stress grid


# ---------------------------------------------------------------------------- detection


def _floats(
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


# ---------------------------------------------------------------------------- budget

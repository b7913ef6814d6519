"""Do several models show a pattern on the same parents? The pattern permutation test.

:func:`pattern_permutation_test` counts the parents on which at least k of M models show
a pattern (the CleanScore paper's Table 8) and compares the count with a null that
permutes the parents independently for every model.

Randomness: ``seed`` (default 0; any seed ``numpy.random.default_rng`` takes but
None) is turned into one Philox4x64-10 key by
:func:`truescore_fast._random.philox_key`. Permutation b draws from its own
stream, counter ``[0, 0, b, 0]``, so a result is bit-identical for any ``n_threads`` and
can be reproduced draw for draw with ``numpy.random.Philox`` (the order of draws is
documented in ``src/cpp/truescore/resampling.hpp``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._result import Result
from truescore_fast._validation import check_gaps, check_n_threads, check_positive_int, one_line
from truescore_fast.errors import ArgumentError

__all__ = ["PatternTest", "pattern_permutation_test"]

Pattern = str | Callable[[npt.NDArray[np.float64]], Any] | npt.ArrayLike


@dataclass(frozen=True, repr=False)
class PatternTest(Result):
    """Parents on which at least ``min_models`` of the models show a pattern, against a
    permutation null.

    Attributes:
        observed: Number of parents where at least ``min_models`` models show the pattern.
        null_mean, null_sd: Mean and standard deviation of the statistic over the draws.
        p_value: (1 + #{draws with statistic >= observed}) / (draws + 1): one-sided, large
            observed values are evidence of a shared pattern.
        null_histogram: ``null_histogram[t]`` draws had statistic t (t = 0..n_parents).
        parents: Indices of the parents counted in ``observed``.
        per_model: How many parents show the pattern, per model (the permutation keeps
            these fixed).

    What it does not mean: a small p says the models' patterns pile up on the same parents
    more than chance placement would; that is what shared exposure would do, but so would
    parents whose fresh forms are simply worse written than their public one. A large p
    says nothing about any single model.
    """

    observed: int
    null_mean: float
    null_sd: float
    p_value: float
    pattern: str
    min_models: int
    n_models: int
    n_parents: int
    draws: int
    null_histogram: npt.NDArray[np.int64]
    parents: npt.NDArray[np.int64]
    per_model: npt.NDArray[np.int64]

    _repr_fields = ("observed", "null_mean", "p_value", "pattern", "draws")

    def summary(self) -> str:
        return "\n".join(
            [
                f"Pattern permutation test ({self.pattern}): parents where >= {self.min_models} "
                f"of {self.n_models} models show it, {self.n_parents} parents",
                f"  observed {self.observed}, null mean {self.null_mean:.2f} "
                f"(sd {self.null_sd:.2f}), p = {self.p_value:.4g} ({self.draws:,} draws, "
                "parents permuted independently per model)",
                "  A small p means the pattern clusters on shared parents; it does not say why "
                "(exposure or badly matched forms).",
            ]
        )


def _pattern_indicator(gaps: npt.NDArray[np.float64], pattern: Pattern) -> tuple[np.ndarray, str]:
    if isinstance(pattern, str):
        if pattern == "harder":
            return gaps > 0, pattern
        if pattern == "easier":
            return gaps < 0, pattern
        if pattern == "nonzero":
            return gaps != 0, pattern
        raise ArgumentError(
            "pattern",
            f"pattern must be 'harder', 'easier', 'nonzero', a callable or a boolean (M, N) "
            f"array; got {one_line(pattern)}",
        )
    if callable(pattern):
        name = getattr(pattern, "__name__", "custom")
        mask = np.asarray(pattern(gaps.copy()))
    else:
        name = "given mask"
        mask = np.asarray(pattern)
    if mask.dtype != np.bool_:
        raise ArgumentError(
            "pattern", f"pattern must give a boolean array; got dtype {mask.dtype}"
        )
    if mask.shape != gaps.shape:
        raise ArgumentError(
            "pattern", f"pattern must give an array of shape {gaps.shape}; got {mask.shape}"
        )
    return mask, name


def pattern_permutation_test(
    gaps: npt.ArrayLike,
    *,
    pattern: Pattern = "harder",
    min_models: int = 2,
    draws: int = 20_000,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> PatternTest:
    """Do M models show a pattern on the same parents more often than by chance?

    Args:
        gaps: (M models, N parents) array of gaps, public minus mean fresh correctness,
            each in [-1, 1].
        pattern: Which (model, parent) cells show the pattern:
            ``"harder"`` -- gap > 0: the public form is answered correctly more often than
            the fresh forms (the paper's "rewrites harder"); ``"easier"`` -- gap < 0;
            ``"nonzero"`` -- gap != 0; a callable taking the (M, N) float array and
            returning a boolean (M, N) array (e.g. ``lambda g: g >= 0.5``); or a boolean
            (M, N) array itself.
        min_models: k: a parent counts when at least k models show the pattern on it.
        draws: Permutations of the null (the paper: 20,000).
        seed: Any seed ``philox_key`` accepts (default 0); draw b uses Philox task stream b.
        n_threads: Threads (None: every usable CPU); the result never depends on it.

    Statistic: T = #{parents j : sum_m indicator[m, j] >= k}. Null: each model's row is
    permuted over parents independently of the others (every model keeps its own number
    of pattern parents; only their alignment across models is randomised). p =
    (1 + #{T* >= T}) / (draws + 1).

    Raises:
        ValueError: gaps not 2-D, outside [-1, 1] or non-finite, fewer than 2 parents, an
            unknown pattern or a mask of the wrong shape/dtype, min_models outside
            1..M, draws < 1, a bad seed or n_threads.
    """
    g = check_gaps("gaps", gaps, ndim=2)
    if g.shape[0] < 1:
        raise ArgumentError("gaps", "gaps needs at least one model (row)")
    mask, name = _pattern_indicator(g, pattern)
    k = check_positive_int("min_models", min_models)
    if k > g.shape[0]:
        raise ArgumentError(
            "min_models", f"min_models must not exceed the number of models {g.shape[0]}; got {k}"
        )
    d = check_positive_int("draws", draws)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    indicator = np.ascontiguousarray(mask, dtype=np.uint8)
    observed, hist = _core.pattern_test(indicator, k, d, key[0], key[1], n_threads=threads)
    values = np.arange(hist.size, dtype=np.float64)
    null_mean = float(np.dot(hist, values) / d)
    null_var = float(np.dot(hist, (values - null_mean) ** 2) / max(d - 1, 1))
    exceed = int(hist[observed:].sum())
    return PatternTest(
        observed=int(observed),
        null_mean=null_mean,
        null_sd=math.sqrt(null_var),
        p_value=(1.0 + exceed) / (d + 1.0),
        pattern=name,
        min_models=k,
        n_models=int(g.shape[0]),
        n_parents=int(g.shape[1]),
        draws=d,
        null_histogram=hist,
        parents=np.flatnonzero(mask.sum(axis=0) >= k).astype(np.int64),
        per_model=mask.sum(axis=1).astype(np.int64),
    )

"""Bootstraps of a mean estimated from a sample drawn without replacement.

:func:`finite_population_bootstrap` gives the Rao-Wu rescaling bootstrap (default) and
the Booth-Butler-Hall pseudo-population bootstrap of a (stratified) mean, or, with
Rao-Wu, of any statistic of the replicate's unit weights.

Randomness: ``seed`` (default 0; any seed ``numpy.random.default_rng`` takes but
None) is turned into one Philox4x64-10 key by
:func:`truescore_fast._random.philox_key`. Replicate b draws from its own
stream, counter ``[0, 0, b, 0]``, so a result is bit-identical for any ``n_threads`` and
can be reproduced draw for draw with ``numpy.random.Philox`` (the order of draws is
documented in ``src/cpp/truescore/resampling.hpp``). The compiled kernels release the GIL
and keep O(n) memory per thread: B replicates cost B numbers, never a B x n matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._bootstrap_intervals import percentile_interval
from truescore_fast._numeric import scale_exponent, unscale
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._result import Result
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_labels,
    check_n_threads,
    check_population_sizes,
    check_population_total,
    check_positive_int,
    finite_1d,
    group_offsets,
    one_line,
)
from truescore_fast.errors import ArgumentError

__all__ = ["BootstrapResult", "finite_population_bootstrap"]


@dataclass(frozen=True, repr=False)
class BootstrapResult(Result):
    """A finite-population bootstrap of a (stratified) mean or of a statistic of weights.

    Attributes:
        method: ``"rao_wu"`` or ``"bbh"``.
        estimate: The statistic on the sample (the stratified mean sum_h W_h ybar_h).
        standard_error: Standard deviation of the replicates (ddof = 1).
        low, high: Percentile interval at level 1 - alpha (linear interpolation of the
            replicates' alpha/2 and 1 - alpha/2 quantiles).
        replicates: The B replicate values.
        variance_estimate: For the mean, the design-unbiased variance estimate
            sum_h W_h^2 (1 - f_h) s_h^2 / n_h the bootstrap variance should reproduce
            (exactly in expectation for Rao-Wu); None for a user statistic.
        resample_size: Rao-Wu's m_h per stratum (None for BBH).

    What it does not mean: the interval describes sampling error from drawing these
    parents out of the benchmark, nothing else. It does not cover form mismatch, model
    nondeterminism, or anything that would be the same in every sample.
    """

    method: str
    estimate: float
    standard_error: float
    low: float
    high: float
    alpha: float
    n: int
    n_strata: int
    population_size: int | None
    replicates: npt.NDArray[np.float64]
    variance_estimate: float | None
    resample_size: tuple[int, ...] | None

    _repr_fields = ("method", "estimate", "standard_error", "low", "high", "n")

    def summary(self) -> str:
        pop = (
            "infinite population"
            if self.population_size is None
            else f"N = {self.population_size:,}"
        )
        lines = [
            f"Finite-population bootstrap ({self.method}, {len(self.replicates):,} replicates): "
            f"n = {self.n}, {self.n_strata} strata, {pop}",
            f"  estimate {self.estimate:+.4f}, bootstrap SE {self.standard_error:.4f}, "
            f"{100 * (1 - self.alpha):g}% percentile interval [{self.low:+.4f}, {self.high:+.4f}]",
        ]
        if self.variance_estimate is not None:
            lines.append(
                f"  design-unbiased SE {math.sqrt(self.variance_estimate):.4f} "
                "(what the bootstrap "
                "SE estimates)"
            )
        return "\n".join(lines)


def _strata_layout(
    n: int, strata: npt.ArrayLike | None, population_size: Any, method: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(order, offsets, N_h or None) with values[order] grouped by sorted stratum label."""
    if strata is None:
        order = np.arange(n)
        offsets = np.array([0, n], dtype=np.int64)
        if population_size is None:
            if method == "bbh":
                raise ArgumentError(
                    "population_size", "population_size is required for the bbh bootstrap"
                )
            return order, offsets, None
        sizes = [population_size]
        labels: list[Any] = [None]
    else:
        lab = check_labels("strata", strata, n, unit="value")
        order, offsets, uniq = group_offsets("strata", lab)
        labels = list(uniq)
        if population_size is None:
            raise ArgumentError(
                "population_size",
                "population_size is required with strata: a mapping {label: N_h} or one size "
                "per stratum in sorted label order",
            )
        if isinstance(population_size, Mapping):
            missing = [u for u in labels if u not in population_size]
            if missing:
                raise ArgumentError(
                    "population_size", f"population_size has no size for strata {missing[:5]}"
                )
            sizes = [population_size[u] for u in labels]
        else:
            sizes = list(np.atleast_1d(np.asarray(population_size)))
            if len(sizes) != len(labels):
                raise ArgumentError(
                    "population_size",
                    f"population_size must give one size per stratum ({len(labels)} strata, in "
                    f"sorted label order); got {len(sizes)}",
                )
    names = None if labels == [None] else [f"stratum {u!r}" for u in labels]
    big = check_population_sizes("population_size", sizes, np.diff(offsets), names)
    return order, offsets, big


def finite_population_bootstrap(
    values: npt.ArrayLike,
    *,
    population_size: int | Mapping[Any, int] | Sequence[int] | None,
    strata: npt.ArrayLike | None = None,
    method: Literal["rao_wu", "bbh"] = "rao_wu",
    replicates: int = 2000,
    resample_size: int | None = None,
    alpha: float = 0.05,
    statistic: Callable[[npt.NDArray[np.float64]], float] | None = None,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> BootstrapResult:
    """Bootstrap a mean estimated from a sample drawn without replacement.

    Args:
        values: One value per sampled unit (e.g. per-parent gaps).
        population_size: N for an unstratified sample (None: an infinite population,
            f = 0, Rao-Wu only); with ``strata`` a mapping ``{label: N_h}`` or one N_h per
            stratum in sorted label order.
        strata: Optional stratum label per value; the estimate is then the stratified
            mean sum_h (N_h / N) ybar_h.
        method: ``"rao_wu"`` (default) or ``"bbh"``.
        replicates: B.
        resample_size: Rao-Wu's m_h, the same in every stratum (default n_h - 1 each).
        alpha: The percentile interval has level 1 - alpha.
        statistic: Rao-Wu only: a function of one replicate's unit weights (a length-n
            array in the order of ``values``; the sample's own weights are W_h / n_h and
            ``weights @ values`` is the replicate mean), returning a float. Called once per
            replicate from Python (weights are generated 256 replicates at a time).
        seed: Any seed ``philox_key`` accepts (default 0); replicate b uses Philox task
            stream b.
        n_threads: Threads (None: every usable CPU); the result never depends on it.

    Rao-Wu rescaling (Rao & Wu 1988): per stratum draw m_h units with replacement and
    rescale, ybar*_h = ybar_h + lambda_h (ybar'_h - ybar_h), lambda_h = sqrt(m_h (1 - f_h)
    / (n_h - 1)), f_h = n_h / N_h. Then E*[ybar*] = ybar and Var*[ybar*] equals the
    without-replacement unbiased estimate (1 - f_h) s_h^2 / n_h exactly (m_h = n_h - 1
    gives lambda_h = sqrt(1 - f_h) and non-negative weights). Needs n_h >= 2.

    Booth-Butler-Hall (1994): per stratum write N_h = k n_h + r; the pseudo-population is
    k copies of every sampled unit plus r of them drawn at random afresh for each
    replicate; draw n_h units from it without replacement. Each replicate is recentred on
    its own pseudo-population mean, ybar*_h = ybar_h + (mean of draw - pseudo mean), so
    E*[ybar*] = ybar exactly. Its variance is (1 - f_h) S_pp^2 / n_h for the pseudo-
    population's S_pp^2 = k (n_h - 1) s_h^2 / (N_h - 1) when r = 0: slightly below the
    unbiased estimate (the factor N_h (n_h - 1) / (n_h (N_h - 1))).

    Raises:
        ValueError: non-finite or empty values, bad strata or population sizes, a
            stratum with fewer than 2 units (Rao-Wu), an unknown method, resample_size or
            statistic with BBH, replicates < 2, alpha outside (0, 1), a statistic that
            returns a non-finite value, a bad seed or n_threads.
    """
    y = finite_1d("values", values)
    check_choice("method", method, ("rao_wu", "bbh"))
    b = check_positive_int("replicates", replicates, minimum=2)
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    order, offsets, big = _strata_layout(y.size, strata, population_size, method)
    counts = np.diff(offsets)
    ys = np.ascontiguousarray(y[order])
    # The replicates, estimate, SE and interval are scale-equivariant: values whose sums
    # or squares would overflow are bootstrapped in units of a power of two (exact, the
    # same draws) and the results scaled back. (A user statistic sees only weights.)
    exponent = 0 if statistic is not None else scale_exponent(float(np.max(np.abs(ys))), 2.0**400)
    if exponent:
        ys = np.ldexp(ys, exponent)
    if big is None:
        weight = np.ones(1)
        frac = np.zeros(1)
        total_pop: int | None = None
    else:
        total_pop = check_population_total("population_size", big)
        weight = big / total_pop
        frac = counts / big
    key = philox_key(seed)
    # With a user statistic the values are never summed (it sees weights), so they are
    # not rescaled: the mean and variance below are unused then and may overflow.
    with np.errstate(over="ignore" if statistic is not None else None):
        s2 = np.array(
            [
                np.var(ys[offsets[h] : offsets[h + 1]], ddof=1) if counts[h] > 1 else 0.0
                for h in range(counts.size)
            ]
        )
        variance = float(np.sum(weight**2 * (1 - frac) * s2 / counts))
        means = np.array([np.mean(ys[offsets[h] : offsets[h + 1]]) for h in range(counts.size)])
        estimate = float(np.sum(weight * means))
    sizes: tuple[int, ...] | None = None
    if method == "rao_wu":
        if counts.min() < 2:
            raise ValueError(
                "the Rao-Wu bootstrap needs at least 2 sampled units in every stratum"
            )
        if resample_size is None:
            m = counts - 1
        else:
            m = np.full(
                counts.size, check_positive_int("resample_size", resample_size), dtype=np.int64
            )
        m = m.astype(np.int64)
        lam = np.sqrt(m * (1 - frac) / (counts - 1))
        sizes = tuple(int(v) for v in m)
        if statistic is None:
            reps = _core.rao_wu_replicates(
                ys, offsets, m, lam, weight, b, key[0], key[1], n_threads=threads
            )
        else:
            if not callable(statistic):
                raise ArgumentError(
                    "statistic", f"statistic must be callable; got {one_line(statistic)}"
                )
            reps, estimate = _weights_statistic(statistic, offsets, m, lam, weight, order, b, key)
    else:
        if resample_size is not None:
            raise ArgumentError("resample_size", "resample_size applies to the rao_wu method only")
        if statistic is not None:
            raise ArgumentError("statistic", "statistic applies to the rao_wu method only")
        assert big is not None
        reps = _core.bbh_replicates(ys, offsets, big, weight, b, key[0], key[1], n_threads=threads)
    low, high = percentile_interval(reps, alpha)
    standard_error = float(np.std(reps, ddof=1))
    if exponent:
        with np.errstate(over="ignore"):  # checked below
            reps = np.ldexp(reps, -exponent)
        estimate, standard_error, low, high = (
            unscale(v, exponent) for v in (estimate, standard_error, low, high)
        )
        variance = unscale(variance, 2 * exponent)
        if not (np.isfinite(reps).all() and math.isfinite(standard_error + variance)):
            raise ArgumentError(
                "values",
                "values are too large: the bootstrap replicates or their variance overflow "
                "float64; rescale them",
            )
    return BootstrapResult(
        method=method,
        estimate=estimate,
        standard_error=standard_error,
        low=float(low),
        high=float(high),
        alpha=alpha,
        n=int(y.size),
        n_strata=int(counts.size),
        population_size=total_pop,
        replicates=reps,
        variance_estimate=None if statistic is not None else variance,
        resample_size=sizes,
    )


def _weights_statistic(statistic, offsets, m, lam, weight, order, b, key):
    n = int(offsets[-1])
    base = np.empty(n)
    counts = np.diff(offsets)
    for h in range(counts.size):
        base[order[offsets[h] : offsets[h + 1]]] = weight[h] / counts[h]

    def call(w: np.ndarray) -> float:
        value = float(statistic(w))
        if not math.isfinite(value):
            raise ArgumentError("statistic", f"statistic returned a non-finite value ({value})")
        return value

    estimate = call(base.copy())
    reps = np.empty(b)
    unsort = np.empty(n)
    for first in range(0, b, 256):
        count = min(256, b - first)
        chunk = _core.rao_wu_weights(offsets, m, lam, weight, first, count, key[0], key[1])
        for r in range(count):
            unsort[order] = chunk[r]
            reps[first + r] = call(unsort.copy())
    return reps, estimate

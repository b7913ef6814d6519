"""Confidence intervals for a mean gap: the interval methods of the matched-form audit.

A gap d_i = public_i - mean_k fresh_ik lies in [-1, 1]; Delta-hat = mean d estimates the
public-form advantage Delta over the N parents the n were drawn from. Each method has a
single-audit function (``*_interval``, one gap vector) and a batch one (``*_intervals``,
a (A, n) array of gaps in one core call); :func:`matched_form_intervals` runs several
methods at once. The audit itself (:mod:`truescore_fast.audit.matched_form`) chooses among them.

Intervals (level 1 - alpha, range R = 2):

* ``hoeffding``: Delta-hat +- R sqrt(ln(2/alpha) / (2n)). Valid for any distribution, wide.
* ``bernstein``: Maurer-Pontil empirical Bernstein, sqrt(2 s^2 ln(4/alpha)/n)
  + 7 R ln(4/alpha) / (3(n-1)). Valid; narrower than Hoeffding only when gaps are rare.
* ``wald``: Delta-hat +- z sqrt((1 - n/N) s^2 / n). Sharp but *not* valid for small or
  sparse audits: with 3% nonzero gaps it covers far below 95% (measured in the tests,
  N = 1000, 2,000 samples each: 0.25 at n = 10, 0.52 at n = 25, 0.79 at n = 50, 0.94 at
  n = 200), because most small samples hold no nonzero gap at all and the interval
  collapses to the point 0.
* ``hoeffding_serfling``: R sqrt((1 - (n-1)/N) ln(2/alpha) / (2n)). Valid; needs N.
* ``betting``: Waudby-Smith & Ramdas's betting confidence interval (hedged capital,
  predictable plug-in bets for a fixed n, truncation 3/4, without-replacement
  conditional means when N is given), endpoints those of a bisection to 1e-9 on the
  [0, 1] scale x = (d + 1)/2 (found by a search on the bisection's grid, two grid
  points per end in each capital pass).
  Valid at every n and usually far narrower than Hoeffding. **The result depends on the
  order of the gaps** (the bets are predictable); the audit fixes the order with a
  recorded seed so it is never an accident of the file.

With ``population_size`` N every interval is intersected with the values the data allow:
the deterministic range [(sum d - (N - n)) / N, (sum d + (N - n)) / N] of the mean gap of
N parents given the n gaps scored and N - n unscored ones in [-1, 1] (rounded outward by
64 machine epsilons; the point Delta-hat at a census). ``half_width`` stays each method's
own half-width, except the betting interval's, which is (high - low) / 2 of the result.

References:
    Waudby-Smith & Ramdas (2020, 2023), "Confidence sequences for sampling without
    replacement"; "Estimating means of bounded random variables by betting".
    Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance penalization".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._result import Result, TabularResult
from truescore_fast._validation import (
    check_alpha,
    check_gaps,
    check_n_threads,
    check_population_size,
    check_population_sizes,
    check_sequence,
    float_array,
    real_scalar,
)
from truescore_fast.audit._methods import INTERVAL_METHODS, TRAITS, code_of, methods_for
from truescore_fast.errors import ArgumentError

__all__ = [
    "INTERVAL_METHODS",
    "Interval",
    "Intervals",
    "bernstein_interval",
    "bernstein_intervals",
    "betting_interval",
    "betting_intervals",
    "hoeffding_interval",
    "hoeffding_intervals",
    "hoeffding_serfling_interval",
    "hoeffding_serfling_intervals",
    "matched_form_intervals",
    "wald_interval",
    "wald_intervals",
]


@dataclass(frozen=True, repr=False)
class Interval(Result):
    """A confidence interval for a mean gap (or for the exposure effect tau).

    Attributes:
        low, high: The interval's ends (clipped to [-1, 1] for a mean gap).
        estimate: The point estimate (the sample mean gap).
        method: How it was built (``"hoeffding"``, ``"betting"``, ...).
        alpha: Error rate: the interval's nominal coverage is 1 - alpha.
        half_width: The method's half-width before clipping.
        empty: True when no value is consistent with the data: the betting interval can
            reject every mean at once (it bets in the order given, and an order that is
            far from random can do this). ``low > high`` are then where the two one-sided
            rejections crossed, ``half_width`` is 0, nothing is contained, and an empty
            set supports no claim about the mean (it says the sample or its order does
            not look random). Set automatically when ``low > high``.
    """

    low: float
    high: float
    estimate: float
    method: str
    alpha: float
    half_width: float = math.nan
    empty: bool = False

    _repr_fields = ("estimate", "low", "high", "method", "alpha")

    def __post_init__(self) -> None:
        if self.low > self.high:
            object.__setattr__(self, "empty", True)

    @property
    def excludes_zero_above(self) -> bool:
        """True when the interval is not empty and lies entirely above zero."""
        return not self.empty and self.low > 0.0

    def contains(self, value: float) -> bool:
        """True when the interval is not empty and ``low <= value <= high``."""
        number = real_scalar("value", value)
        return not self.empty and self.low <= number <= self.high

    def summary(self) -> str:
        if self.empty:
            return (
                f"empty ({self.method}, {1.0 - self.alpha:.0%}: no value is consistent with "
                "the data in this order)"
            )
        return f"[{self.low:+.4f}, {self.high:+.4f}] ({self.method}, {1.0 - self.alpha:.0%})"


def interval(
    low: float,
    high: float,
    estimate: float,
    method: str,
    alpha: float,
    half_width: float = math.nan,
    empty: bool = False,
) -> Interval:
    """``Interval(low, high, estimate, method, alpha, half_width, empty)``, the same object,
    made without the dataclass's ``__init__`` (as :func:`~truescore_fast._result.built`
    makes one, its fields set one by one in their order): for the small calls, where
    building the intervals cost more than computing them."""
    obj = _new(Interval)
    fields = obj.__dict__
    fields["low"] = low
    fields["high"] = high
    fields["estimate"] = estimate
    fields["method"] = method
    fields["alpha"] = alpha
    fields["half_width"] = half_width
    fields["empty"] = True if low > high else empty  # Interval.__post_init__
    return obj


_new = object.__new__


@dataclass(frozen=True, repr=False)
class Intervals(TabularResult):
    """One interval method applied to many audits at once (arrays of length A)."""

    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    estimate: npt.NDArray[np.float64]
    half_width: npt.NDArray[np.float64]
    method: str
    alpha: float
    empty: npt.NDArray[np.bool_] = field(init=False)  # low > high (see Interval)

    def __post_init__(self) -> None:
        object.__setattr__(self, "empty", np.asarray(self.low > self.high))

    def __len__(self) -> int:
        return int(self.low.shape[0])

    def __getitem__(self, index: int) -> Interval:
        return Interval(
            low=float(self.low[index]),
            high=float(self.high[index]),
            estimate=float(self.estimate[index]),
            method=self.method,
            alpha=self.alpha,
            half_width=float(self.half_width[index]),
        )

    def __repr__(self) -> str:
        return f"Intervals(method={self.method!r}, alpha={self.alpha:.4g}, audits={len(self)})"

    def covers(self, value: float | npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Which intervals contain ``value`` (a scalar or one value per audit)."""
        v = float_array("value", value)
        if v.ndim > 1 or (v.ndim == 1 and v.shape != self.low.shape):
            raise ArgumentError(
                "value",
                f"value must be one number or one per audit ({self.low.shape[0]}); "
                f"got shape {v.shape}",
            )
        if not np.isfinite(v).all():  # as Interval.contains: NaN is no answer of "no"
            bad = v if v.ndim == 0 else v[~np.isfinite(v)][0]
            raise ArgumentError("value", f"value must be a finite number; got {float(bad)!r}")
        return (self.low <= v) & (v <= self.high)  # never true of an empty interval

    def _columns(self) -> dict[str, npt.NDArray[Any]]:
        return {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "half_width": self.half_width,
            "empty": self.empty,
        }

    def summary(self) -> str:
        lines = [f"{len(self)} {self.method} intervals at level {1.0 - self.alpha:.0%}"]
        if len(self):
            width = np.where(self.empty, 0.0, self.high - self.low)
            lines.append(
                f"  width {float(width.min()):.4f} to {float(width.max()):.4f}, "
                f"{int(np.count_nonzero((self.low > 0.0) & ~self.empty))} entirely above zero"
            )
            if self.empty.any():
                lines.append(
                    f"  {int(np.count_nonzero(self.empty))} empty (no value consistent with "
                    "the data in its order)"
                )
        return "\n".join(lines)


_CODE = {m: code_of(m) for m in INTERVAL_METHODS}


def _one(method: str, d: npt.ArrayLike, population_size: Any, alpha: float) -> Interval:
    # The fast path (issue 24): a float64 array, a float alpha and an int or no population
    # go straight to the core, which checks the gaps, alpha and N in the loop that reads
    # them and answers None when anything is off; only then does the validating path below
    # run (and raise its error). The same core formula either way, so the same interval.
    if type(d) is np.ndarray and type(alpha) is float:
        if population_size is None or (
            type(population_size) is int and 0 < population_size < 2**63
        ):
            fast_pop = 0.0 if population_size is None else float(population_size)
            got = _core.gap_interval_unchecked(d, _CODE[method], fast_pop, alpha)
            if got is not None:
                low, high, estimate, half_width = got
                return Interval(low, high, estimate, method, alpha, half_width)
    check_alpha(alpha)
    gaps = check_gaps("d", d)
    pop = check_population_size(population_size, int(gaps.shape[0]))
    return _single((method,), gaps, pop, alpha)[method]


def hoeffding_interval(d: npt.ArrayLike, *, alpha: float = 0.05) -> Interval:
    """Hoeffding's interval for the mean gap: Delta-hat +- 2 sqrt(ln(2/alpha) / (2n)).

    Valid for any gap distribution in [-1, 1] (and, conservatively, without
    replacement); its width depends only on n.

    Raises:
        ValueError: d not 1-D, non-finite, outside [-1, 1] or with fewer than 2 parents;
            alpha outside (0, 1).
    """
    return _one("hoeffding", d, None, alpha)


def bernstein_interval(d: npt.ArrayLike, *, alpha: float = 0.05) -> Interval:
    """Maurer-Pontil empirical Bernstein interval with ln(4/alpha) and range 2.

    Half-width sqrt(2 s^2 ln(4/alpha) / n) + 14 ln(4/alpha) / (3 (n - 1)), s^2 the unbiased
    variance. Valid; at n = 200 it is 0.535 to 1.628 times Hoeffding's width.
    """
    return _one("bernstein", d, None, alpha)


def wald_interval(
    d: npt.ArrayLike, *, population_size: int | None = None, alpha: float = 0.05
) -> Interval:
    """Normal-approximation interval, with the finite-population correction 1 - n/N when
    ``population_size`` is given (and then within the values the data allow, see the
    module docstring).

    Not valid for small or sparse audits: when few gaps are nonzero it undercovers badly
    (measured in the tests: a population of N = 1000 with 3% nonzero gaps gives coverage
    0.25 at n = 10, 0.52 at n = 25, 0.79 at n = 50 and 0.94 at n = 200 against a nominal
    0.95; a sample with no nonzero gap yields the zero-width interval [0, 0]). Use it
    only above the nonzero-gap guardrail, as :func:`matched_form_audit` does.
    """
    return _one("wald", d, population_size, alpha)


def hoeffding_serfling_interval(
    d: npt.ArrayLike, *, population_size: int, alpha: float = 0.05
) -> Interval:
    """Hoeffding-Serfling interval for sampling without replacement from N parents:
    Delta-hat +- 2 sqrt((1 - (n - 1)/N) ln(2/alpha) / (2n)), within the values the data
    allow (see the module docstring). Valid; needs N."""
    return _one("hoeffding_serfling", d, population_size, alpha)


def betting_interval(
    d: npt.ArrayLike, *, population_size: int | None = None, alpha: float = 0.05
) -> Interval:
    """Waudby-Smith & Ramdas's betting confidence interval for the mean gap.

    Gaps are mapped to x = (d + 1)/2 in [0, 1]; a candidate mean m is rejected when the
    hedged capital (half betting up, half down) reaches 1/alpha at some t <= n, with
    predictable plug-in bets sqrt(2 ln(2/alpha) / (n sigma-hat^2_{t-1})) truncated at
    3/4 / m_t (up) and 3/4 / (1 - m_t) (down). With ``population_size`` N the candidate
    conditional mean is the without-replacement one, m_t = (N m - sum_{i<t} x_i)/(N - t + 1),
    and m is rejected outright when m_t leaves [0, 1]. Endpoints: the outer (last rejected)
    points of a bisection to 1e-9, found by a safeguarded interpolating search on the
    bisection's grid of j / 2^30 that tries two grid points per end in each pass over the
    sample: the same points, in a handful of passes where the bisection took 64 (6-10x
    faster at n = 200 to 5,000 in ``benchmarks/test_bench_audit.py``).

    With ``population_size`` the interval is intersected with the values the data allow
    (see the module docstring): the last gap, which the bets cannot use, still narrows it.

    The result depends on the order of ``d`` (the bets at step t use only earlier
    gaps): shuffle with a recorded seed, as :func:`matched_form_audit` does, rather than
    use the order a file happens to have.
    """
    return _one("betting", d, population_size, alpha)


def _many(
    methods: tuple[str, ...],
    d: npt.ArrayLike,
    population_size: Any,
    alpha: float,
    n_threads: int | None,
) -> dict[str, Intervals]:
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    gaps = check_gaps("d", d, ndim=2)
    n_audits, n = gaps.shape
    pops: npt.NDArray[np.float64] | None
    if population_size is None:
        pops = None
    elif np.ndim(population_size) == 0:
        size = check_population_size(population_size, n)
        assert size is not None  # population_size is not None here
        pops = np.full(n_audits, float(size))
    else:
        arr = check_population_sizes("population_size", population_size, n)
        if arr.shape != (n_audits,):
            raise ArgumentError(
                "population_size",
                f"population_size must be a scalar or hold one value per audit ({n_audits}); "
                f"got shape {arr.shape}",
            )
        pops = np.ascontiguousarray(arr, dtype=np.float64)
    return _batch(methods, gaps, pops, alpha, threads)


def _batch(
    methods: tuple[str, ...],
    gaps: npt.NDArray[np.float64],
    pops: npt.NDArray[np.float64] | None,
    alpha: float,
    n_threads: int | None = None,
) -> dict[str, Intervals]:
    """Every method for every row of validated (A, n) gaps in one core call."""
    for m in methods:
        if TRAITS[m].needs_population and pops is None:
            raise ArgumentError(
                "population_size", f"population_size is required for the {m} interval"
            )
    codes = np.array([code_of(m) for m in methods], dtype=np.int64)
    out = _core.gap_intervals(gaps, codes, population_size=pops, alpha=alpha, n_threads=n_threads)
    return {
        m: Intervals(
            low=out["low"][k],
            high=out["high"][k],
            estimate=out["estimate"][k],
            half_width=out["half_width"][k],
            method=m,
            alpha=alpha,
        )
        for k, m in enumerate(methods)
    }


def hoeffding_intervals(
    d: npt.ArrayLike, *, alpha: float = 0.05, n_threads: int | None = None
) -> Intervals:
    """:func:`hoeffding_interval` for every row of a (A, n) array of gaps."""
    return _many(("hoeffding",), d, None, alpha, n_threads)["hoeffding"]


def bernstein_intervals(
    d: npt.ArrayLike, *, alpha: float = 0.05, n_threads: int | None = None
) -> Intervals:
    """:func:`bernstein_interval` for every row of a (A, n) array of gaps."""
    return _many(("bernstein",), d, None, alpha, n_threads)["bernstein"]


def wald_intervals(
    d: npt.ArrayLike,
    *,
    population_size: int | npt.ArrayLike | None = None,
    alpha: float = 0.05,
    n_threads: int | None = None,
) -> Intervals:
    """:func:`wald_interval` for every row of a (A, n) array of gaps."""
    return _many(("wald",), d, population_size, alpha, n_threads)["wald"]


def hoeffding_serfling_intervals(
    d: npt.ArrayLike,
    *,
    population_size: int | npt.ArrayLike,
    alpha: float = 0.05,
    n_threads: int | None = None,
) -> Intervals:
    """:func:`hoeffding_serfling_interval` for every row of a (A, n) array of gaps."""
    return _many(("hoeffding_serfling",), d, population_size, alpha, n_threads)[
        "hoeffding_serfling"
    ]


def betting_intervals(
    d: npt.ArrayLike,
    *,
    population_size: int | npt.ArrayLike | None = None,
    alpha: float = 0.05,
    n_threads: int | None = None,
) -> Intervals:
    """:func:`betting_interval` for every row of a (A, n) array of gaps (each row in its
    given order). Identical results for any ``n_threads``."""
    return _many(("betting",), d, population_size, alpha, n_threads)["betting"]


def matched_form_intervals(
    d: npt.ArrayLike,
    *,
    population_size: int | npt.ArrayLike | None = None,
    alpha: float = 0.05,
    methods: tuple[str, ...] | None = None,
    n_threads: int | None = None,
) -> dict[str, Intervals]:
    """Several interval methods for every row of a (A, n) array of gaps, in one call.

    ``methods`` defaults to every method when ``population_size`` is given and to those
    that need no population size (all but Hoeffding-Serfling) otherwise. Returns
    ``{method: Intervals}``.
    """
    methods = (
        methods_for(population_size)
        if methods is None
        else check_sequence("methods", methods, "interval methods")
    )
    for m in methods:
        if not isinstance(m, str) or m not in TRAITS:
            raise ArgumentError(
                "methods",
                f"methods: unknown interval method {m!r}; choose from {INTERVAL_METHODS}",
            )
    return _many(tuple(methods), d, population_size, alpha, n_threads)


def _single_and_half(
    methods: tuple[str, ...],
    primary: str,
    d: npt.NDArray[np.float64],
    population_size: int | None,
    alpha: float,
) -> tuple[dict[str, Interval], Interval]:
    """:func:`_single`'s intervals at ``alpha`` and method ``primary``'s at ``alpha / 2``
    (the audit's tau), from one core call where the fast path takes them (the same bits as
    two calls: each interval is its own gap_interval)."""
    half = alpha / 2.0
    got = _fast((*methods, primary), d, population_size, (alpha,) * len(methods) + (half,))
    if got is None:
        return (
            _single(methods, d, population_size, alpha),
            _single((primary,), d, population_size, half)[primary],
        )
    return dict(zip(methods, got)), got[-1]  # noqa: B905 (the half is the last)


def _fast(
    methods: tuple[str, ...],
    d: npt.NDArray[np.float64],
    population_size: int | None,
    alphas: tuple[float, ...],
) -> list[Interval] | None:
    """The single-interval fast path: ``methods[i]``'s interval at ``alphas[i]`` (one alpha
    for all, or one each), from one core call that checks the gaps once; None where the
    core declines (then the validating path raises the right error)."""
    if type(d) is not np.ndarray or type(alphas[0]) is not float:  # (the rest: from it)
        return None
    pop = 0.0 if population_size is None else float(population_size)
    got = _core.gap_intervals_unchecked(d, _codes(methods), pop, alphas)
    if got is None:
        return None
    if len(alphas) == 1:
        alphas *= len(methods)
    # (zip without strict=: the core returns one tuple per method, and this is the hot path)
    return [interval(g[0], g[1], g[2], m, a, g[3]) for m, a, g in zip(methods, alphas, got)]  # noqa: B905


@functools.lru_cache(maxsize=64)
def _codes(methods: tuple[str, ...]) -> tuple[int, ...]:
    """The core's codes of a tuple of method names (kept: the audit asks for the same few)."""
    return tuple(_CODE[m] for m in methods)


def _single(
    methods: tuple[str, ...], d: npt.NDArray[np.float64], population_size: int | None, alpha: float
) -> dict[str, Interval]:
    """Several methods on one validated gap vector: each through the single-interval fast
    path (the same core formula, so the same interval), or all in one validating core call
    when the fast path declines (a method that needs the population without one, a gap
    vector that is not a C-contiguous float64 array), which raises the right error."""
    got = _fast(methods, d, population_size, (alpha,))
    if got is not None:
        return dict(zip(methods, got))  # noqa: B905 (one interval per method)
    pops = None if population_size is None else np.array([float(population_size)])
    return {m: ivs[0] for m, ivs in _batch(methods, d[None, :], pops, alpha).items()}

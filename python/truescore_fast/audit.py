"""How much of a benchmark score could be exposure? The matched-form audit (CleanScore).

For each sampled parent item i = 1..n (drawn without replacement from a benchmark of N
parents) a model is scored on the public form and on K fresh forms of the same item.
The gap d_i = public_i - mean_k fresh_ik lies in [-1, 1], and Delta-hat = mean d is the
public-form advantage. This module gives intervals for Delta that hold, a control bank
for the ordinary form-mismatch term b, the sensitivity interval for the exposure
effect tau = Delta - b, and an exact randomization test of "no form effect".

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
  conditional means when N is given), endpoints by bisection to 1e-9 on the [0, 1]
  scale x = (d + 1)/2. Valid at every n and usually far narrower than Hoeffding. **The
  result depends on the order of the gaps** (the bets are predictable); the audit fixes
  the order with a recorded seed so it is never an accident of the file.

What a result does not mean: a paraphrase audit sees only the part of a leak's effect
that does *not* carry over to the fresh forms. In the paper's positive control most of
the effect (an estimated 77%, interval 52% to 110%) carried over to the paraphrases and
was invisible to the audit. An interval that covers zero is therefore not evidence that
the score is clean.

References:
    The CleanScore matched-form audit paper (seed document 003).
    Waudby-Smith & Ramdas (2020, 2023), "Confidence sequences for sampling without
    replacement"; "Estimating means of bounded random variables by betting".
    Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance penalization".
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._io import read_rows
from truescore_fast._random import philox_key
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_gaps,
    check_n_threads,
    check_population_size,
    check_positive_int,
    check_unit_interval,
    float_array,
)

__all__ = [
    "INTERVAL_METHODS",
    "AuditData",
    "ControlBank",
    "Interval",
    "Intervals",
    "MatchedFormAudit",
    "RandomizationTest",
    "bernstein_interval",
    "bernstein_intervals",
    "betting_interval",
    "betting_intervals",
    "hoeffding_interval",
    "hoeffding_intervals",
    "hoeffding_serfling_interval",
    "hoeffding_serfling_intervals",
    "matched_form_audit",
    "matched_form_audits",
    "matched_form_intervals",
    "randomization_test",
    "read_audit_table",
    "wald_interval",
    "wald_intervals",
]

IntervalMethod = Literal["hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting"]
INTERVAL_METHODS: tuple[str, ...] = (
    "hoeffding",
    "bernstein",
    "wald",
    "hoeffding_serfling",
    "betting",
)
_CODE = {name: code for code, name in enumerate(INTERVAL_METHODS)}
_NEEDS_POPULATION = {"hoeffding_serfling"}

_NULL_DOES_NOT_MEAN = (
    "An interval that covers zero does not mean the score is clean. A paraphrase audit sees "
    "only the part of a leak's effect that does not carry over to the fresh forms; in the "
    "CleanScore positive control an estimated 77% of the effect (interval 52% to 110%) "
    "carried over to the paraphrases and was invisible to any paraphrase audit."
)


# ---------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """A confidence interval for a mean gap (or for the exposure effect tau).

    Attributes:
        low, high: The interval's ends (clipped to [-1, 1] for a mean gap).
        estimate: The point estimate (the sample mean gap).
        method: How it was built (``"hoeffding"``, ``"betting"``, ...).
        level: Nominal coverage, 1 - alpha.
        half_width: The method's half-width before clipping.
    """

    low: float
    high: float
    estimate: float
    method: str
    level: float
    half_width: float = math.nan

    @property
    def excludes_zero_above(self) -> bool:
        """True when the whole interval lies above zero."""
        return self.low > 0.0

    def contains(self, value: float) -> bool:
        """True when ``low <= value <= high``."""
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "estimate": self.estimate,
            "method": self.method,
            "level": self.level,
            "half_width": self.half_width,
        }

    def __str__(self) -> str:
        return f"[{self.low:+.4f}, {self.high:+.4f}] ({self.method}, {self.level:.0%})"


@dataclass(frozen=True)
class Intervals:
    """One interval method applied to many audits at once (arrays of length A)."""

    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    estimate: npt.NDArray[np.float64]
    half_width: npt.NDArray[np.float64]
    method: str
    level: float

    def __len__(self) -> int:
        return int(self.low.shape[0])

    def __getitem__(self, index: int) -> Interval:
        return Interval(
            low=float(self.low[index]),
            high=float(self.high[index]),
            estimate=float(self.estimate[index]),
            method=self.method,
            level=self.level,
            half_width=float(self.half_width[index]),
        )

    def covers(self, value: float | npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Which intervals contain ``value`` (a scalar or one value per audit)."""
        v = np.asarray(value, dtype=np.float64)
        return (self.low <= v) & (v <= self.high)


def _methods_for(population_size: Any) -> tuple[str, ...]:
    """Every interval method, less those that need a population size when there is none."""
    return tuple(
        m for m in INTERVAL_METHODS if population_size is not None or m not in _NEEDS_POPULATION
    )


def _one(method: str, d: npt.ArrayLike, population_size: Any, alpha: float) -> Interval:
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
    ``population_size`` is given.

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
    Delta-hat +- 2 sqrt((1 - (n - 1)/N) ln(2/alpha) / (2n)). Valid; needs N."""
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
    and m is rejected outright when m_t leaves [0, 1]. Endpoints by bisection to 1e-9.

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
        arr = float_array("population_size", population_size)
        if arr.shape != (n_audits,):
            raise ValueError(
                f"population_size must be a scalar or hold one value per audit ({n_audits}); "
                f"got shape {arr.shape}"
            )
        if not np.isfinite(arr).all() or (arr != np.round(arr)).any():
            raise ValueError("population_size must hold integers")
        if arr.size and arr.min() < n:
            raise ValueError(
                f"population_size must be at least the number of sampled parents n = {n}; "
                f"got {arr.min():.0f}"
            )
        pops = np.ascontiguousarray(arr)
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
        if m in _NEEDS_POPULATION and pops is None:
            raise ValueError(f"population_size is required for the {m} interval")
    codes = np.array([_CODE[m] for m in methods], dtype=np.int64)
    out = _core.gap_intervals(gaps, codes, population_size=pops, alpha=alpha, n_threads=n_threads)
    return {
        m: Intervals(
            low=out["low"][k],
            high=out["high"][k],
            estimate=out["estimate"][k],
            half_width=out["half_width"][k],
            method=m,
            level=1.0 - alpha,
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

    ``methods`` defaults to all five when ``population_size`` is given and to all but
    Hoeffding-Serfling otherwise. Returns ``{method: Intervals}``.
    """
    if methods is None:
        methods = _methods_for(population_size)
    for m in methods:
        if m not in _CODE:
            raise ValueError(
                f"methods: unknown interval method {m!r}; choose from {INTERVAL_METHODS}"
            )
    return _many(tuple(methods), d, population_size, alpha, n_threads)


# ---------------------------------------------------------------------------- the audit


def _forms(
    public: npt.ArrayLike, fresh: npt.ArrayLike, prefix: str = ""
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    pub = check_unit_interval(f"{prefix}public", public)
    fr = check_unit_interval(f"{prefix}fresh", fresh)
    if pub.ndim != 1:
        raise ValueError(
            f"{prefix}public must be 1-D (one score per parent); got shape {pub.shape}"
        )
    if fr.ndim == 1:
        fr = fr[:, None]
    if fr.ndim != 2:
        raise ValueError(f"{prefix}fresh must be 1-D or (n, K); got shape {fr.shape}")
    if fr.shape[0] != pub.shape[0]:
        raise ValueError(
            f"{prefix}fresh must have one row per parent: {prefix}public has {pub.shape[0]}, "
            f"{prefix}fresh has {fr.shape[0]}"
        )
    if fr.shape[1] < 1:
        raise ValueError(f"{prefix}fresh must hold at least one fresh form per parent")
    if pub.shape[0] < 2:
        raise ValueError(f"{prefix}public needs at least 2 parents; got {pub.shape[0]}")
    return pub, fr


def _seed_int(seed: int | np.random.Generator | None) -> int:
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))  # type: ignore[operator]
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(
            f"seed must be a non-negative integer, a numpy Generator or None; got {seed!r}"
        )
    return int(seed)


@dataclass(frozen=True)
class ControlBank:
    """The control bank's form gap b_C (never-public items, scored the same way).

    ``readings`` holds b_C's interval at level 1 - alpha/2 under three readings:
    ``"wald"`` (the paper's registered construction), ``"hoeffding"`` (the small-sample
    guardrail applied to the bank too) and ``"fixed"`` (the bank as a fully measured
    object: zero width, the transport radius carries everything).
    """

    b: float
    n: int
    nonzero_gaps: int
    public_score: float
    fresh_score: float
    readings: dict[str, Interval]

    def to_dict(self) -> dict[str, Any]:
        return {
            "b": self.b,
            "n": self.n,
            "nonzero_gaps": self.nonzero_gaps,
            "public_score": self.public_score,
            "fresh_score": self.fresh_score,
            "readings": {k: v.to_dict() for k, v in self.readings.items()},
        }


@dataclass(frozen=True)
class MatchedFormAudit:
    """The result of :func:`matched_form_audit`.

    Attributes:
        public_score, fresh_score: Mean correctness on the public and on the fresh forms.
        delta: Delta-hat, the mean gap (public minus mean fresh).
        n, n_forms: Sampled parents and fresh forms per parent (K).
        nonzero_gaps: Parents whose gap is not zero.
        population_size: N, the benchmark's number of parents, or None.
        alpha: Error rate; every interval in ``intervals`` has level 1 - alpha.
        intervals: Every interval for Delta, by method (Hoeffding-Serfling only with N).
        primary: The interval the claim uses, and ``primary_reason`` why it was chosen.
        control: The control bank, or None when there is none.
        control_reading: Which reading of the bank the claim uses.
        transport_radius: r, the assumed bound |b - b_C| <= r.
        tau: Sensitivity interval for tau = Delta - b: [L - (U_C + r), U - (L_C - r)],
            built from Delta's primary method and b_C's interval each at 1 - alpha/2.
        tau_intervals: tau under every reading of the bank.
        claim: True only when both ``primary`` and ``tau`` lie entirely above zero.
        seed, order: The recorded shuffle of the parents used by the betting interval
            (``order[t]`` is the parent placed at step t).

    What a result does not mean: ``claim`` False is not evidence of a clean score (see
    :meth:`summary`), and ``claim`` True says exposure is the best reading only under
    the transport radius given.
    """

    public_score: float
    fresh_score: float
    delta: float
    n: int
    n_forms: int
    nonzero_gaps: int
    population_size: int | None
    alpha: float
    intervals: dict[str, Interval]
    primary: Interval
    primary_reason: str
    control: ControlBank | None
    control_reading: str
    transport_radius: float
    tau: Interval
    tau_intervals: dict[str, Interval]
    claim: bool
    guardrail: int
    fallback: str
    seed: int
    order: npt.NDArray[np.int64] = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dictionary (the order is omitted; it follows from the seed)."""
        return {
            "public_score": self.public_score,
            "fresh_score": self.fresh_score,
            "delta": self.delta,
            "n": self.n,
            "n_forms": self.n_forms,
            "nonzero_gaps": self.nonzero_gaps,
            "population_size": self.population_size,
            "alpha": self.alpha,
            "intervals": {k: v.to_dict() for k, v in self.intervals.items()},
            "primary": self.primary.to_dict(),
            "primary_reason": self.primary_reason,
            "control": None if self.control is None else self.control.to_dict(),
            "control_reading": self.control_reading,
            "transport_radius": self.transport_radius,
            "tau": self.tau.to_dict(),
            "tau_intervals": {k: v.to_dict() for k, v in self.tau_intervals.items()},
            "claim": self.claim,
            "guardrail": self.guardrail,
            "fallback": self.fallback,
            "seed": self.seed,
        }

    def summary(self) -> str:
        """A readable report, including what a null result does not mean."""
        lines = [
            f"Matched-form audit: n = {self.n} parents, K = {self.n_forms} fresh form(s)"
            + (f", N = {self.population_size}" if self.population_size else ""),
            f"  public score {self.public_score:.4f}, fresh score {self.fresh_score:.4f}, "
            f"Delta-hat {self.delta:+.4f}, nonzero gaps {self.nonzero_gaps}",
            f"  primary interval {self.primary}: {self.primary_reason}",
        ]
        for name, iv in self.intervals.items():
            lines.append(f"    {name:<20} {iv}  half-width {iv.half_width:.4f}")
        if self.control is None:
            lines.append(
                "  no control bank: tau assumes the form-mismatch term b satisfies "
                f"|b| <= r = {self.transport_radius:g}"
            )
        else:
            c = self.control
            lines.append(
                f"  control bank: n = {c.n}, b_C = {c.b:+.4f}, nonzero gaps {c.nonzero_gaps}"
            )
            for name, iv in c.readings.items():
                lines.append(f"    b_C ({name:<9}) {iv}")
        lines.append(f"  transport radius r = {self.transport_radius:g}")
        for name, iv in self.tau_intervals.items():
            mark = "  <- used for the claim" if name == self.control_reading else ""
            lines.append(f"    tau ({name:<9}) [{iv.low:+.4f}, {iv.high:+.4f}]{mark}")
        if self.claim:
            lines.append(
                "  CLAIM: the primary interval and the tau interval both exclude zero on the "
                "positive side; exposure is supported under the stated transport radius."
            )
        else:
            lines.append(
                "  No claim: the primary interval or the tau interval reaches zero or below."
            )
            lines.append("  " + _NULL_DOES_NOT_MEAN)
        lines.append(f"  (betting order: parents shuffled with seed {self.seed})")
        return "\n".join(lines)


_FALLBACKS = ("betting", "hoeffding", "bernstein", "hoeffding_serfling")
_READINGS = ("wald", "hoeffding", "fixed")


def _single(
    methods: tuple[str, ...], d: npt.NDArray[np.float64], population_size: int | None, alpha: float
) -> dict[str, Interval]:
    """Several methods on one validated gap vector, in one core call."""
    pops = None if population_size is None else np.array([float(population_size)])
    return {m: ivs[0] for m, ivs in _batch(methods, d[None, :], pops, alpha).items()}


def matched_form_audit(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    *,
    population_size: int | None = None,
    control: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    transport_radius: float = 0.0,
    alpha: float = 0.05,
    guardrail: int = 30,
    fallback: str = "betting",
    seed: int | np.random.Generator | None = None,
    control_reading: str = "wald",
) -> MatchedFormAudit:
    """The matched-form audit of one model on one benchmark.

    Args:
        public: Correctness on the public form, shape (n,), values in [0, 1].
        fresh: Correctness on the fresh forms, shape (n, K) (or (n,) for K = 1).
        population_size: N, the number of parents the n were drawn from without
            replacement; enables the finite-population corrections.
        control: ``(public, fresh)`` for a control bank of never-public items scored the
            same way, or None.
        transport_radius: r >= 0, the assumed bound on |b - b_C|.
        alpha: Error rate of every interval and of the claim.
        guardrail: When fewer than this many parents have a nonzero gap, the Wald
            interval is not trusted and ``fallback`` is primary.
        fallback: ``"betting"`` (default), ``"hoeffding"`` (the paper's registration),
            ``"bernstein"`` or ``"hoeffding_serfling"`` (needs N).
        seed: Shuffles the parents into a recorded order before the betting interval
            (None draws a seed and records it in the result).
        control_reading: Which reading of the control bank the claim uses: ``"wald"``
            (registered), ``"hoeffding"`` or ``"fixed"``.

    Returns:
        A :class:`MatchedFormAudit`. ``claim`` is True only when both the primary Delta
        interval and the tau interval lie entirely above zero.

    Raises:
        ValueError: scores outside [0, 1] or non-finite, mismatched shapes, n < 2,
            N < n, bad alpha / radius / guardrail / fallback / seed.

    A null result does not mean the score is clean: most of a leak's effect can carry
    over to paraphrases, where no paraphrase audit can see it.
    """
    check_alpha(alpha)
    pub, fr = _forms(public, fresh)
    n, k = fr.shape
    pop = check_population_size(population_size, n)
    if not (
        isinstance(transport_radius, (int, float, np.integer, np.floating))
        and math.isfinite(transport_radius)
        and transport_radius >= 0
    ):
        raise ValueError(
            f"transport_radius must be a finite number >= 0; got {transport_radius!r}"
        )
    guard = check_positive_int("guardrail", guardrail, minimum=0)
    check_choice("fallback", fallback, _FALLBACKS)
    if fallback == "hoeffding_serfling" and pop is None:
        raise ValueError("fallback 'hoeffding_serfling' needs population_size")
    check_choice("control_reading", control_reading, _READINGS)
    seed_used = _seed_int(seed)
    order = np.random.default_rng(seed_used).permutation(n).astype(np.int64)

    d = np.ascontiguousarray(pub - fr.mean(axis=1))
    d_ordered = np.ascontiguousarray(d[order])
    nonzero = int(np.count_nonzero(d))
    intervals = _single(_methods_for(pop), d_ordered, pop, alpha)
    if nonzero < guard:
        primary_method = fallback
        reason = (
            f"{nonzero} nonzero gaps < guardrail {guard}: the Wald interval is not trusted, "
            f"the distribution-free {fallback} interval is primary"
        )
    else:
        primary_method = "wald"
        reason = f"{nonzero} nonzero gaps >= guardrail {guard}: finite-population Wald interval"
    primary = intervals[primary_method]

    # tau: Delta and b_C each at 1 - alpha/2, so the pair holds jointly at 1 - alpha.
    half_alpha = alpha / 2.0
    primary_half = _single((primary_method,), d_ordered, pop, half_alpha)[primary_method]
    lo_d, hi_d = primary_half.low, primary_half.high
    bank: ControlBank | None = None
    if control is None:
        readings_c = {"none": (0.0, 0.0)}
        reading_used = "none"
    else:
        if not isinstance(control, (tuple, list)) or len(control) != 2:
            raise ValueError("control must be a (public, fresh) pair of arrays")
        cpub, cfr = _forms(control[0], control[1], prefix="control ")
        dc = np.ascontiguousarray(cpub - cfr.mean(axis=1))
        b = float(np.mean(dc))
        readings = _single(("wald", "hoeffding"), dc, None, half_alpha)
        readings["fixed"] = Interval(b, b, b, "fixed", 1.0, 0.0)
        bank = ControlBank(
            b=b,
            n=int(dc.shape[0]),
            nonzero_gaps=int(np.count_nonzero(dc)),
            public_score=float(np.mean(cpub)),
            fresh_score=float(np.mean(cfr)),
            readings=readings,
        )
        readings_c = {name: (iv.low, iv.high) for name, iv in readings.items()}
        reading_used = control_reading
    r = float(transport_radius)
    tau_intervals = {
        name: Interval(
            low=lo_d - (uc + r),
            high=hi_d - (lc - r),
            estimate=float(np.mean(d)) - (0.0 if bank is None else bank.b),
            method=f"sensitivity ({primary_method} Delta, {name} control, r = {r:g})",
            level=1.0 - alpha,
            half_width=0.5 * ((hi_d - (lc - r)) - (lo_d - (uc + r))),
        )
        for name, (lc, uc) in readings_c.items()
    }
    tau = tau_intervals[reading_used]
    return MatchedFormAudit(
        public_score=float(np.mean(pub)),
        fresh_score=float(np.mean(fr)),
        delta=float(np.mean(d)),
        n=n,
        n_forms=k,
        nonzero_gaps=nonzero,
        population_size=pop,
        alpha=alpha,
        intervals=intervals,
        primary=primary,
        primary_reason=reason,
        control=bank,
        control_reading=reading_used,
        transport_radius=r,
        tau=tau,
        tau_intervals=tau_intervals,
        claim=bool(primary.low > 0.0 and tau.low > 0.0),
        guardrail=guard,
        fallback=fallback,
        seed=seed_used,
        order=order,
    )


# ---------------------------------------------------------------------------- long format


@dataclass(frozen=True)
class AuditData:
    """One model's scores from a long-format table: ``public`` (n,), ``fresh`` (n, K)."""

    model: str
    parents: tuple[str, ...]
    fresh_forms: tuple[tuple[str, ...], ...]
    public: npt.NDArray[np.float64]
    fresh: npt.NDArray[np.float64]


ALL_MODELS = "all"


def _columns(source: Any) -> dict[str, list[Any]]:
    if isinstance(source, (str, os.PathLike)):
        return _columns_from_rows(read_rows(source), str(source))
    if isinstance(source, io.IOBase) or hasattr(source, "read"):
        return _columns_from_rows(list(csv.DictReader(source)), "table")
    if isinstance(source, Mapping) or hasattr(source, "columns"):
        names = list(source.keys()) if isinstance(source, Mapping) else list(source.columns)
        return {str(c).strip(): list(np.asarray(source[c]).tolist()) for c in names}
    raise ValueError("table must be a path, an open text file or a mapping of columns")


def _columns_from_rows(rows: list[dict[str, Any]], where: str) -> dict[str, list[Any]]:
    if not rows:
        raise ValueError(f"{where} is empty: expected a header with parent, form, correct")
    names = list(rows[0])
    cols: dict[str, list[Any]] = {str(n).strip(): [] for n in names}
    for row in rows:
        for raw in names:
            cols[str(raw).strip()].append(row.get(raw))
    return cols


def read_audit_table(table: Any) -> dict[str, AuditData]:
    """Read a long-format audit table: one row per (model, parent, form).

    Columns ``parent``, ``form``, ``correct`` and optionally ``model``. A form named
    ``public`` is the public form; any other name is a fresh form. Every parent needs
    exactly one public row and the same number K >= 1 of fresh forms. ``table`` is a
    path to a CSV or JSON Lines file, an open CSV text file, or a mapping of columns
    (a pandas DataFrame works).

    Returns:
        ``{model: AuditData}`` in order of first appearance; without a ``model`` column
        the single key is ``"all"``.

    Raises:
        ValueError: a missing column, a non-numeric or out-of-range ``correct``, a
            duplicated (model, parent, form), a parent without its public form or
            without fresh forms, or parents with different numbers of fresh forms.
    """
    cols = _columns(table)
    for required in ("parent", "form", "correct"):
        if required not in cols:
            raise ValueError(
                f"table is missing the column {required!r} (need parent, form, correct; "
                f"optional model); got {sorted(cols)}"
            )
    rows = len(cols["parent"])
    if rows == 0:
        raise ValueError("table has no rows")
    models = cols.get("model", [ALL_MODELS] * rows)
    grouped: dict[str, dict[str, dict[str, float]]] = {}
    for i in range(rows):
        model = str(models[i]).strip() if models[i] is not None else ""
        parent = str(cols["parent"][i]).strip() if cols["parent"][i] is not None else ""
        form = str(cols["form"][i]).strip() if cols["form"][i] is not None else ""
        if not parent or not form or (not model and "model" in cols):
            raise ValueError(f"table row {i + 1}: empty model, parent or form")
        try:
            value = float(cols["correct"][i])
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"table row {i + 1}: correct must be a number; got {cols['correct'][i]!r}"
            ) from error
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"table row {i + 1}: correct must lie in [0, 1]; got {value}")
        forms = grouped.setdefault(model, {}).setdefault(parent, {})
        if form in forms:
            raise ValueError(
                f"table row {i + 1}: duplicate form {form!r} for parent {parent!r}"
                + (f" (model {model!r})" if "model" in cols else "")
            )
        forms[form] = value
    out: dict[str, AuditData] = {}
    for model, parents in grouped.items():
        where = f" (model {model!r})" if "model" in cols else ""
        k: int | None = None
        pub: list[float] = []
        fresh: list[list[float]] = []
        names: list[tuple[str, ...]] = []
        for parent, forms in parents.items():
            if "public" not in forms:
                raise ValueError(f"parent {parent!r}{where} is missing its public form")
            fresh_names = tuple(sorted(f for f in forms if f != "public"))
            if not fresh_names:
                raise ValueError(f"parent {parent!r}{where} has no fresh form")
            if k is None:
                k = len(fresh_names)
            elif len(fresh_names) != k:
                raise ValueError(
                    f"parent {parent!r}{where} has {len(fresh_names)} fresh forms; earlier "
                    f"parents have {k}: every parent needs the same number"
                )
            pub.append(forms["public"])
            fresh.append([forms[f] for f in fresh_names])
            names.append(fresh_names)
        out[model] = AuditData(
            model=model,
            parents=tuple(parents),
            fresh_forms=tuple(names),
            public=np.array(pub, dtype=np.float64),
            fresh=np.array(fresh, dtype=np.float64),
        )
    return out


def matched_form_audits(
    table: Any, *, control: Any = None, **options: Any
) -> dict[str, MatchedFormAudit]:
    """:func:`matched_form_audit` for every model of a long-format table.

    ``control`` is a long-format table of the control bank. With a ``model`` column its
    rows are matched to the audited model (a model missing from it is an error);
    without one the same bank serves every model. Other keyword arguments go to
    :func:`matched_form_audit`.
    """
    data = read_audit_table(table)
    banks = read_audit_table(control) if control is not None else None
    results: dict[str, MatchedFormAudit] = {}
    for model, item in data.items():
        bank = None
        if banks is not None:
            if model in banks:
                bank = banks[model]
            elif list(banks) == [ALL_MODELS]:
                bank = banks[ALL_MODELS]
            else:
                raise ValueError(f"control has no rows for model {model!r}")
        results[model] = matched_form_audit(
            item.public,
            item.fresh,
            control=None if bank is None else (bank.public, bank.fresh),
            **options,
        )
    return results


# ---------------------------------------------------------------------- randomization test

Alternative = Literal["greater", "less", "two-sided"]

_MAX_DENOMINATOR = 1000


@dataclass(frozen=True)
class RandomizationTest:
    """Exact (or Monte Carlo) randomization test of "no form effect".

    Attributes:
        statistic: T = sum of the gaps (public minus mean fresh).
        delta: T / n.
        p_value: The p-value for ``alternative``.
        p_greater, p_less, p_two_sided: P(T* >= T), P(T* <= T), P(|T*| >= |T|) under the
            null (T* has mean 0). The two-sided p is computed, never a doubled one-sided p.
        method: ``"exact-binary"``, ``"exact-lattice"`` or ``"monte-carlo"``.
        lattice_denominator: L when the scores lie on the lattice {0, 1/L, ..., 1}.
        n_resamples, seed: For Monte Carlo only (p = (1 + count) / (n_resamples + 1)).

    What it does not mean: a small p says the public form differs from the fresh ones,
    not that the model saw the benchmark. Ordinary form mismatch (fresh forms slightly
    harder) is rejected just as readily: the CleanScore paper's Table 13.
    """

    statistic: float
    delta: float
    p_value: float
    p_greater: float
    p_less: float
    p_two_sided: float
    alternative: str
    method: str
    n: int
    n_forms: int
    n_informative: int
    lattice_denominator: int | None
    n_resamples: int | None
    seed: int | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary(self) -> str:
        lines = [
            f"Randomization test of no form effect ({self.method}, {self.alternative}): "
            f"n = {self.n}, K = {self.n_forms}, informative parents {self.n_informative}",
            f"  sum of gaps {self.statistic:+.4f} (Delta-hat {self.delta:+.4f}), "
            f"p = {self.p_value:.4g}",
            "  A small p means the public form scores differently from the fresh forms; it does "
            "not identify contamination (ordinary form mismatch is rejected too), and a large p "
            "does not mean the score is clean.",
        ]
        return "\n".join(lines)


def randomization_test(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    *,
    alternative: Alternative = "greater",
    method: Literal["auto", "exact", "monte_carlo"] = "auto",
    n_resamples: int = 9999,
    seed: int | np.random.Generator | None = None,
    n_threads: int | None = None,
) -> RandomizationTest:
    """Exact randomization test that the public form is exchangeable with the fresh ones.

    Null: within each parent the public label is exchangeable with the K fresh labels,
    so which of the K + 1 values sits in the public slot is uniform, independently over
    parents. T = sum of gaps is then a sum of independent discrete variables with mean 0,
    and its exact null distribution is their convolution:

    * binary labels: U = number of public-correct parents is a sum of binomials
      Bin(n_s, s/(K+1)) over the parents whose K + 1 labels sum to s (two binomials for
      K = 2; for K = 1 this is McNemar's exact test);
    * averaged labels on a lattice {0, 1/L, ..., 1} (L <= 1000): exact convolution of the
      per-parent distributions on the integer lattice;
      The direct convolution costs about (n L)^2 (K + 1) / 2 operations: a quarter of a
      second at n = 5,000 with L = 4, growing quadratically;
    * otherwise (``method="auto"``) Monte Carlo with ``n_resamples`` draws and the +1
      correction, reproducible from ``seed`` and identical for any ``n_threads``.

    The null distribution is skewed: the two-sided p is P(|T*| >= |T|), never a doubled
    one-sided p. Exact p-values keep their relative precision down to the smallest
    double; below about 1e-300 they are reported as 0.

    What it does not mean: the test detects *any* form effect. Fresh forms that are
    merely a little harder than the public one are rejected as readily as exposure is
    (the CleanScore paper's Table 13: every rejection there had no contamination at all).
    Use :func:`matched_form_audit` with a control bank to separate the two.

    Raises:
        ValueError: scores outside [0, 1] or non-finite, mismatched shapes, n < 2, an
            unknown alternative or method, or ``method="exact"`` for scores on no lattice.
    """
    check_choice("alternative", alternative, ("greater", "less", "two-sided"))
    check_choice("method", method, ("auto", "exact", "monte_carlo"))
    threads = check_n_threads(n_threads)
    pub, fr = _forms(public, fresh)
    pub, fr = np.ascontiguousarray(pub), np.ascontiguousarray(fr)
    n, k = fr.shape
    resamples: int | None = None
    seed_used: int | None = None
    if method != "exact":
        resamples = check_positive_int("n_resamples", n_resamples)
    code = {"auto": 0, "exact": 1, "monte_carlo": 2}[method]
    if method != "exact":
        seed_used = _seed_int(seed)  # recorded only if Monte Carlo runs
    key = philox_key(seed_used or 0)
    pg, pl, pt, kind, den, statistic, informative = _core.randomization_test(
        pub, fr, code, _MAX_DENOMINATOR, resamples or 1, key[0], key[1], n_threads=threads
    )
    name = ("exact-binary", "exact-lattice", "monte-carlo")[kind]
    if kind != 2:
        resamples = None
        seed_used = None
    p = {"greater": pg, "less": pl, "two-sided": pt}[alternative]
    return RandomizationTest(
        statistic=float(statistic),
        delta=float(statistic) / n,
        p_value=float(p),
        p_greater=float(pg),
        p_less=float(pl),
        p_two_sided=float(pt),
        alternative=alternative,
        method=name,
        n=n,
        n_forms=k,
        n_informative=int(informative),
        lattice_denominator=int(den) if den else None,
        n_resamples=resamples,
        seed=seed_used,
    )

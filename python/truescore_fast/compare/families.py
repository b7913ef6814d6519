"""Family-clustered inference: effects measured on many task families (LeakScale-style).

When each observation belongs to a family -- tasks generated from one template, items
sharing a document, prompts built on one seed problem -- observations in a family are
correlated, and an interval that resamples single observations is too narrow. The
family-clustered bootstrap resamples whole families with replacement and recomputes

    difference = mean(treated observations) - mean(control observations)

over the drawn families, so the interval reflects between-family variation. The
resampling runs in the compiled core; resample b draws from the Philox stream of its
block of resamples, so results are identical for any thread count.

Several primary tests (for example one per model and domain) are then corrected
together with Holm's step-down procedure, which controls the family-wise error rate
under any dependence between the tests.

What a result does not mean: an interval that excludes zero says the difference is not
explained by which families happened to be sampled; it does not say *why* the arms
differ (that is the design's job -- LeakScale randomises which families each adapter
is exposed to), and it assumes families are independent of one another. Families that
share items or templates must be merged into one family first.

Reference:
    LeakScale, a causal measurement framework for benchmark exposure: family-clustered 95%
    intervals and Holm correction across its four primary tests. Implemented from the
    paper's abstract; its authors, title and venue are not recorded here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._bootstrap_intervals import percentile_interval
from truescore_fast._numeric import scale_exponent, unscale
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._result import Result, TabularResult
from truescore_fast._validation import (
    check_alpha,
    check_labels,
    check_n_threads,
    check_positive_int,
    check_sequence,
    finite_1d,
    p_values_1d,
)
from truescore_fast.compare.paired import holm
from truescore_fast.errors import ArgumentError

__all__ = [
    "FamilyBootstrapResult",
    "HolmResult",
    "family_bootstrap_difference",
    "holm_correction",
]


@dataclass(frozen=True, repr=False)
class FamilyBootstrapResult(Result):
    """A difference in means with a family-clustered percentile bootstrap interval.

    Attributes:
        estimate: mean of the treated observations minus mean of the control ones.
        low, high: percentile interval at level 1 - alpha from resampling whole families.
        standard_error: standard deviation (ddof=1) of the bootstrap replicates.
        p_value: two-sided bootstrap p-value for a zero difference,
            ``min(1, 2 (1 + #{replicates on the far side of 0}) / (n_resamples + 1))``,
            consistent with the percentile interval (an approximation, not an exact test).
        alpha: the interval has level 1 - alpha.
        n_families: number of families.
        n_treated: treated observations; n_control: control observations.
        n_resamples: bootstrap resamples.

    The interval accounts for correlation within families, not between them, and says
    nothing about why the arms differ.
    """

    estimate: float
    low: float
    high: float
    standard_error: float
    p_value: float
    alpha: float
    n_families: int
    n_treated: int
    n_control: int
    n_resamples: int

    _repr_fields = ("estimate", "low", "high", "p_value", "alpha", "n_families")

    @property
    def excludes_zero(self) -> bool:
        """True when the interval lies entirely on one side of zero."""
        return self.low > 0.0 or self.high < 0.0

    def summary(self) -> str:
        """The difference, the family-clustered interval and its reading."""
        lo, hi = self.low, self.high
        reading = (
            "the interval excludes zero: the difference is not explained by which families "
            "were sampled (it does not say why the arms differ)"
            if self.excludes_zero
            else "the interval includes zero: no difference beyond family-to-family variation"
        )
        return "\n".join(
            [
                f"Family-clustered bootstrap, {self.n_families} families "
                f"({self.n_treated} treated, {self.n_control} control observations), "
                f"{self.n_resamples} resamples",
                f"  difference (treated - control)  {self.estimate:+.6g}",
                f"  {1.0 - self.alpha:.0%} interval  [{lo:+.6g}, {hi:+.6g}],  "
                f"SE {self.standard_error:.4g},  p {self.p_value:.4g}",
                f"  {reading}",
            ]
        )


def family_bootstrap_difference(
    treated: npt.ArrayLike,
    control: npt.ArrayLike,
    *,
    families: npt.ArrayLike,
    control_families: npt.ArrayLike | None = None,
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> FamilyBootstrapResult:
    """Difference in means between two arms with a family-clustered bootstrap interval.

    Args:
        treated: outcomes in the treated arm (for example exact-task correctness, 0/1,
            when the family was exposed).
        control: outcomes in the control arm (the same families unexposed).
        families: family label of each treated observation; also of each control
            observation when ``control_families`` is None (paired data: equal lengths).
        control_families: family label of each control observation, when the arms hold
            different observations.
        alpha: the percentile interval has level 1 - alpha.
        n_resamples: bootstrap resamples of whole families.
        seed: seed of the resampling (recorded for reproducibility).
        n_threads: threads for the kernel (None: every usable CPU); results do not depend on it.

    Raises:
        ValueError: naming the argument, for empty or non-finite outcomes, labels of the
            wrong length, a family present in only one arm, fewer than 2 families, a bad
            ``alpha``, ``n_resamples``, ``seed`` or ``n_threads``.
    """
    t = finite_1d("treated", treated)
    c = finite_1d("control", control)
    check_alpha(alpha)
    check_positive_int("n_resamples", n_resamples)
    threads = check_n_threads(n_threads)
    t_labels = np.asarray(families)
    if control_families is None:
        if c.size != t.size:
            raise ArgumentError(
                "control",
                "control must have the same length as treated when control_families is not "
                f"given (paired data); got {c.size} and {t.size}",
            )
        c_labels = t_labels
        c_name = "families"
    else:
        c_labels = np.asarray(control_families)
        c_name = "control_families"
    check_labels("families", t_labels, t.size)
    check_labels(c_name, c_labels, c.size)
    try:
        uniques, codes = np.unique(np.concatenate([t_labels, c_labels]), return_inverse=True)
    except TypeError as error:
        raise ArgumentError(
            "families", f"families and {c_name} must hold labels of one type"
        ) from error
    codes = codes.reshape(-1)
    t_codes, c_codes = codes[: t.size], codes[t.size :]
    n_fam = uniques.size
    t_count = np.bincount(t_codes, minlength=n_fam).astype(np.float64)
    c_count = np.bincount(c_codes, minlength=n_fam).astype(np.float64)
    missing = np.flatnonzero((t_count == 0) | (c_count == 0))
    if missing.size:
        shown = ", ".join(repr(uniques[i].item()) for i in missing[:5])
        raise ValueError(
            f"every family needs at least one treated and one control observation; "
            f"{missing.size} do not ({shown}{', ...' if missing.size > 5 else ''}): check "
            f"families / {c_name}"
        )
    if n_fam < 2:
        raise ArgumentError(
            "families", "families must contain at least 2 distinct families to resample"
        )
    t_sum = np.bincount(t_codes, weights=t, minlength=n_fam)
    c_sum = np.bincount(c_codes, weights=c, minlength=n_fam)
    # A resample sums n_fam family sums: with sums this large (or this small), work in
    # units of a power of two (exact) so no replicate, quantile or variance overflows (or
    # underflows to a false zero); scale back at the end.
    with np.errstate(over="ignore"):
        bound = n_fam * max(float(np.max(np.abs(t_sum))), float(np.max(np.abs(c_sum))))
    if not math.isfinite(bound):
        raise ArgumentError(
            "treated", "treated and control values are too large to sum in float64"
        )
    exponent = scale_exponent(bound, 2.0**400)
    t_sum, c_sum = np.ldexp(t_sum, exponent), np.ldexp(c_sum, exponent)
    key0, key1 = philox_key(seed)
    reps = _core.cluster_bootstrap_difference(
        t_sum, t_count, c_sum, c_count,
        n_resamples=int(n_resamples), key0=key0, key1=key1, n_threads=threads,
    )  # fmt: skip
    lo, hi = percentile_interval(reps, alpha)
    below = int(np.count_nonzero(reps <= 0.0))
    above = int(np.count_nonzero(reps >= 0.0))
    p = min(1.0, 2.0 * (1 + min(below, above)) / (n_resamples + 1))
    se = float(reps.std(ddof=1)) if n_resamples > 1 else 0.0
    point = float(t_sum.sum() / t.size - c_sum.sum() / c.size)
    values = [unscale(v, exponent) for v in (point, float(lo), float(hi), se)]
    if not all(math.isfinite(v) for v in values):
        raise ValueError("the difference between treated and control overflows float64")
    return FamilyBootstrapResult(
        estimate=values[0],
        low=values[1],
        high=values[2],
        standard_error=values[3],
        p_value=p,
        alpha=alpha,
        n_families=int(n_fam),
        n_treated=int(t.size),
        n_control=int(c.size),
        n_resamples=int(n_resamples),
    )


@dataclass(frozen=True, repr=False)
class HolmResult(TabularResult):
    """Holm's step-down correction across several primary tests.

    Attributes:
        names: a name for each test, in the order given.
        p_values: the unadjusted p-values.
        adjusted: Holm-adjusted p-values (compare each with ``alpha``).
        rejected: whether each test survives the correction at ``alpha``.
        alpha: family-wise error rate controlled.

    Controls the chance of *any* false rejection among the tests at ``alpha``, under any
    dependence between them. It says nothing about tests that were run but not listed:
    every primary test must be included, or the guarantee is void.
    """

    names: tuple[str, ...]
    p_values: tuple[float, ...]
    adjusted: tuple[float, ...]
    rejected: tuple[bool, ...]
    alpha: float

    def __repr__(self) -> str:
        return (
            f"HolmResult(tests={len(self.names)}, rejected={sum(self.rejected)}, "
            f"alpha={self.alpha:.4g})"
        )

    def _columns(self) -> dict[str, Sequence[Any]]:
        return {
            "name": self.names,
            "p_value": self.p_values,
            "adjusted": self.adjusted,
            "rejected": self.rejected,
        }

    def summary(self) -> str:
        """One line per test: raw and adjusted p-value and whether it survives."""
        width = max(len(n) for n in self.names)
        lines = [f"Holm correction across {len(self.names)} tests, alpha = {self.alpha:.3g}"]
        for name, p, adj, rej in zip(
            self.names, self.p_values, self.adjusted, self.rejected, strict=True
        ):
            verdict = "survives" if rej else "does not survive"
            lines.append(f"  {name:<{width}}  p {p:.4g}  adjusted {adj:.4g}  {verdict}")
        return "\n".join(lines)


def holm_correction(
    p_values: npt.ArrayLike | Sequence[float],
    *,
    alpha: float = 0.05,
    names: Sequence[str] | None = None,
) -> HolmResult:
    """Holm-adjust the p-values of several primary tests.

    Args:
        p_values: one p-value per primary test, each in [0, 1].
        alpha: family-wise error rate.
        names: optional name per test (default ``test 1``, ``test 2``, ...).

    Raises:
        ValueError: naming the argument, for an empty, non-finite or out-of-range
            ``p_values``, a bad ``alpha``, or ``names`` of the wrong length.
    """
    p = p_values_1d("p_values", p_values)
    check_alpha(alpha)
    if names is None:
        labels = tuple(f"test {k + 1}" for k in range(p.size))
    else:
        given = check_sequence("names", names, "names")
        if len(given) != p.size:  # before converting: a long list is refused at once
            raise ArgumentError(
                "names",
                f"names must have one entry per p-value of p_values ({p.size}); got {len(given)}",
            )
        labels = tuple(str(n) for n in given)
    adjusted = holm(p)
    return HolmResult(
        names=labels,
        p_values=tuple(float(x) for x in p),
        adjusted=tuple(float(x) for x in adjusted),
        rejected=tuple(bool(a <= alpha) for a in adjusted),
        alpha=alpha,
    )

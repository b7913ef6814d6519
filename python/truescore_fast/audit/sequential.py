"""Sequential audits: stop scoring parents when the answer is known, with the guarantee
intact.

Every test in this library needs its inputs scored by a model, and the model calls are the
cost. The tools here say, after every batch of scored parents, whether the answer is
already known, so an evaluation team scores only as many items as the answer needs:

:class:`SequentialAudit`
    The matched-form audit, parent by parent. Its intervals are *confidence sequences*
    (Waudby-Smith & Ramdas's hedged betting confidence sequence, with or without
    replacement): they hold at every sample size at once, so looking after every batch
    and stopping whenever one likes keeps the 1 - alpha guarantee. Given a budget
    (``max_parents``), the bets are tuned to it, and the interval read at the budget is
    the fixed-time betting interval at that n: stopping early costs no power there.
:func:`betting_confidence_sequence`
    That confidence sequence for a vector of matched-form gaps.
:func:`audit_order`
    A seeded random order in which to score the parents: the guarantee needs it.

The order-based counterpart is :mod:`truescore_fast.contamination.sequential`; what
stopping early costs and saves is measured by :mod:`truescore_fast.studies.sequential`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._random import SeedLike, seed_int
from truescore_fast._result import Result, built
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_positive_int,
    check_size,
    check_unit_interval,
    float_array,
    real_scalar,
)
from truescore_fast.audit._betting import (
    check_horizon,
    check_population,
    feasible_gap_range,
    gap_range,
    sequence_bounds,
)
from truescore_fast.audit._shared import CONTROL_READINGS, scoring_order, tau_half_width
from truescore_fast.audit.intervals import Interval, interval
from truescore_fast.audit.matched_form import control_bank
from truescore_fast.errors import ArgumentError

__all__ = [
    "AuditState",
    "SequentialAudit",
    "audit_order",
    "betting_confidence_sequence",
]


Decision = Literal["finding", "bounded", "exhausted", "continue"]


def audit_order(population_size: int, *, seed: SeedLike = 0) -> npt.NDArray[np.int64]:
    """A random order in which to score the parents of a sequential audit.

    ``numpy.random.default_rng(seed_int(seed)).permutation(population_size)``: anyone with
    NumPy and the seed can recreate it. Score parent ``order[0]`` first, then
    ``order[1]``, and feed :meth:`SequentialAudit.update` in that order.

    The confidence sequence of :class:`SequentialAudit` is valid because, in a random
    order, every prefix is a simple random sample of the parents. In any other order
    (the benchmark's file order, easiest items first, one topic at a time) the early
    parents are not representative, and the intervals can exclude the true gap with
    probability far above alpha: the guarantee does not survive a non-random order.

    Raises:
        ValueError: population_size not an integer >= 1; a bad seed.
    """
    n = check_positive_int("population_size", population_size)
    check_size("population_size", n, 16.0)  # the permutation and its int64 copy
    return scoring_order(n, seed_int(seed))


def betting_confidence_sequence(
    d: npt.ArrayLike,
    *,
    population_size: int | None = None,
    alpha: float = 0.05,
    horizon: int | None = None,
) -> Interval:
    """The betting confidence sequence for the mean gap, read after all of ``d``.

    Gaps d in [-1, 1] (in the order they were scored) are mapped to x = (d + 1)/2. A
    candidate mean is rejected once the hedged capital (half betting up, half down, with
    predictable plug-in bets lambda_t truncated at c / m_t and c / (1 - m_t)) reaches
    1/alpha at *any* step; with ``population_size`` N the conditional mean is the
    without-replacement one, m_t = (N m - sum_{i<t} x_i)/(N - t + 1). By Ville's
    inequality the true mean is rejected at some step with probability at most alpha:
    the interval after each prefix of ``d`` is a confidence sequence, valid at every
    sample size at once, so it may be read after every batch and the scoring stopped
    whenever one likes.

    The bets (Waudby-Smith & Ramdas):

    - ``horizon=None`` (horizon-free): each half's capital is the weighted average of
      seven capital processes, each betting sqrt(2 ln(2/(w alpha)) / (sigma-hat^2_{t-1}
      max(t, h))) for its own weight w and horizon h: 0.65/3 each at h = 10, 25, 50
      (c = 0.9 while sigma-hat^2_{t-1} < 0.045, else 0.7) and 0.35/4 each at
      h = 100, 200, 500, 1,000 (c = 1/2). A mixture of valid capital processes is
      valid (each is a nonnegative supermartingale at the true mean; so is their
      average), and each half stays monotone in the candidate (the guide,
      docs/guide/sequential.md, gives the argument). On the three populations its
      constants were chosen on, its width at n = 50, 200 and 1,000 is at most that of
      Waudby-Smith & Ramdas's horizon-free sequence at truncation 1/2 or 3/4,
      whichever is narrower (20 orders per cell); on fresh populations it is mostly
      narrower too, but not always (3% wider at n = 50 on rare -1 gaps, the guide's
      fresh-stream table): a measurement, not a guarantee for other data.
    - ``horizon=n`` (the number of parents one plans to score at most):
      lambda_t = sqrt(2 ln(2/alpha) / (sigma-hat^2_{t-1} max(t, n))), c = 3/4. Read at
      t = n the sequence is then the fixed-time :func:`~truescore_fast.betting_interval` at n (the
      same bets, the same capital), so stopping early costs no width at the horizon; at
      t well below n it is wider than the horizon-free sequence (the bets are small
      while the capital has little time to grow), and past n it shrinks only slowly.

    What the horizon changes is the width at each n, never the guarantee: lambda_t
    depends only on the gaps before t, so the coverage at every n at once, and at any
    stopping time, is 1 - alpha for every horizon, including one far from where the
    scoring actually stops. The horizon must be fixed before looking at the data (not
    re-chosen after seeing some of it).

    With ``population_size`` N the sequence never reaches outside the values the data
    allow: it is intersected with the deterministic range [(sum d - (N - n)) / N,
    (sum d + (N - n)) / N] of the mean gap given the n gaps scored and N - n unscored ones
    in [-1, 1] (rounded outward by 64 machine epsilons), and each end is searched within
    that range, so a few parents short of a census the sequence narrows onto the range
    instead of falling between candidate points, and at the census it is the exact mean.
    Each end is the crossing of one half of the capital (monotone in the candidate, for
    either choice of bets),
    bracketed within the range and refined to 1e-14 on the [0, 1] scale, then rounded
    outward by 1e-12.

    Returns:
        An :class:`~truescore_fast.Interval` with method ``"betting sequence"``; ``empty``
        when every feasible mean has been rejected (the order is not random, or an event
        of probability at most alpha happened).

    Raises:
        ValueError: gaps outside [-1, 1], non-finite, not 1-D or empty; bad alpha,
            population_size or horizon (not an integer >= 1 or None, or above
            population_size).

    The sequence is valid only if the parents were scored in a random order (see
    :func:`audit_order`); it says nothing about items outside the population.
    """
    check_alpha(alpha)
    gaps = np.ascontiguousarray(float_array("d", d))
    if gaps.ndim != 1 or gaps.shape[0] == 0:
        raise ArgumentError("d", f"d must be 1-D and non-empty; got shape {gaps.shape}")
    if not np.isfinite(gaps).all() or np.abs(gaps).max() > 1.0:
        raise ArgumentError("d", "d must hold finite gaps in [-1, 1]")
    pop = check_population(population_size, gaps.shape[0])
    tuned = check_horizon(horizon, most=pop)
    low, high, empty = sequence_bounds((gaps + 1.0) / 2.0, pop, alpha, tuned)
    feasible = feasible_gap_range(gaps, pop)
    return _sequence_interval(low, high, empty, float(np.mean(gaps)), feasible, alpha)


def _sequence_interval(
    low: float,
    high: float,
    empty: bool,
    estimate: float,
    feasible: tuple[float, float],
    alpha: float,
) -> Interval:
    """The sequence's ends on the [0, 1] scale as an interval for the mean gap, within
    the values the data allow (``feasible``, from
    :func:`~truescore_fast.audit._betting.feasible_gap_range`)."""
    if not empty:
        first, last = feasible
        if first == last:  # a census: the mean gap itself (not its round trip through x)
            return interval(first, last, estimate, "betting sequence", alpha, 0.0)
        lo_d, hi_d = max(2.0 * low - 1.0, first), min(2.0 * high - 1.0, last)
        if lo_d <= hi_d:
            return interval(lo_d, hi_d, estimate, "betting sequence", alpha, (hi_d - lo_d) / 2.0)
    return interval(estimate, estimate, estimate, "betting sequence", alpha, 0.0, empty=True)


def _width_shape(t: float, horizon: int | None) -> float:
    """How the sequence's half-width scales with t (up to a constant): sum of log-capital
    terms over the sum of bets at the plug-in bets of :func:`log_bets`, with the
    variance held fixed. Horizon-free: sqrt(log(1 + t) / t). Horizon n: sqrt(n)/t +
    1/sqrt(n) up to n, then (2 + log(t/n)) / (2 sqrt(t) - sqrt(n))."""
    if horizon is None:
        return math.sqrt(math.log1p(t) / t)
    if t <= horizon:
        return math.sqrt(horizon) / t + 1.0 / math.sqrt(horizon)
    return (2.0 + math.log(t / horizon)) / (2.0 * math.sqrt(t) - math.sqrt(horizon))


def _projected_half_width(width_now: float, t_now: int, t: int, horizon: int | None) -> float:
    """The half-width at t if it keeps shrinking as :func:`_width_shape` says."""
    return width_now * _width_shape(t, horizon) / _width_shape(t_now, horizon)


@dataclass(frozen=True, repr=False)
class AuditState(Result):
    """Where a :class:`SequentialAudit` stands after an update.

    Attributes:
        n_parents: Parents scored so far (t).
        public_score, fresh_score: Mean correctness on the public and fresh forms so far.
        estimate: The mean gap Delta-hat so far.
        delta: The confidence sequence for Delta at level 1 - alpha, read now.
        tau: The exposure-effect interval: Delta's sequence at 1 - alpha/2 minus the
            control bank's interval at 1 - alpha/2 and the transport radius.
        claim: The registered claim rule of :func:`matched_form_audit`: both ``delta``
            and ``tau`` lie entirely above zero.
        decision: ``"finding"`` (the claim holds: stop), ``"bounded"`` (stop, no
            finding: Delta's interval is narrower than the target half-width or lies
            below the effect size), ``"exhausted"`` (every parent allowed has been
            scored without either), ``"continue"``.
        more_parents: When ``"continue"``, a rough projection of how many more parents
            reach a decision if the estimate stays where it is and the half-width
            shrinks as the bets make it (sqrt(log(1 + t) / t) horizon-free; see
            :class:`SequentialAudit` for a horizon); None when the trend reaches none
            within the parents left. A planning aid, not part of the guarantee.
        alpha: Error rate of the intervals and the claim.
        horizon: The number of parents the bets are tuned to (None: horizon-free).
    """

    n_parents: int
    public_score: float
    fresh_score: float
    estimate: float
    delta: Interval
    tau: Interval
    claim: bool
    decision: Decision
    more_parents: int | None
    alpha: float
    horizon: int | None = None

    _repr_fields = ("n_parents", "estimate", "decision", "more_parents")

    def summary(self) -> str:
        bets = (
            "horizon-free bets"
            if self.horizon is None
            else f"bets tuned to {self.horizon} parents"
        )
        lines = [
            f"Sequential matched-form audit after {self.n_parents} parents: {self.decision}",
            f"  public {self.public_score:.4f}, fresh {self.fresh_score:.4f}, "
            f"Delta-hat {self.estimate:+.4f}",
            f"  Delta (confidence sequence, {bets}) {self.delta}",
            f"  tau   {self.tau}",
        ]
        if self.decision == "continue":
            more = (
                "no decision projected within the parents left"
                if self.more_parents is None
                else f"about {self.more_parents} more parents at the current trend (rough)"
            )
            lines.append(f"  {more}")
        lines.append(
            "  The intervals hold at every sample size at once (stopping when you like keeps "
            f"{1 - self.alpha:.0%}), only if the parents were scored in a random order. A "
            "result without a finding does not mean the score is clean."
        )
        return "\n".join(lines)


class SequentialAudit:
    """The matched-form audit, fed parent by parent, stoppable at any time.

    Score the parents in the order :func:`audit_order` gives, and after every batch call
    :meth:`update` with the batch's public and fresh scores (in scoring order). The state
    it returns holds Delta's confidence sequence (see :func:`betting_confidence_sequence`),
    the exposure-effect interval tau and a decision.

    Why stopping is safe: Delta's sequence at 1 - alpha/2 covers the true Delta at every
    t at once with probability at least 1 - alpha/2 (Ville's inequality); the control
    bank is scored once, before or beside the stream, and its interval at 1 - alpha/2 is
    computed once; by the union bound tau's interval covers the exposure effect at every
    t, jointly, with probability at least 1 - alpha. So the claim rule (Delta and tau
    above zero) makes a false claim with probability at most alpha however often it is
    read and whenever the audit stops. The control bank's ``"wald"`` reading (the
    registered one) is asymptotic, as in the fixed audit; ``"hoeffding"`` makes the
    whole guarantee distribution-free.

    Only the betting sequence is used: the Wald interval is not valid under continuous
    monitoring (peeking at it after every batch inflates its error rate).

    An update costs what its parents cost, whatever came before (amortised): the two
    sequences are carried forward by the new parents alone, their ends tracked by the
    capital of a few candidates near each (see
    the NumPy definition in tests/sequence_reference.py; the update runs in
    the compiled core, a few microseconds for one parent). After a small batch
    (fewer than 1/16 of the parents so far) each end is then at most 1/200 of the
    interval's width outside the exact end of :func:`betting_confidence_sequence` on
    the same parents, never inside it (so the guarantee is untouched and a decision can
    come at most that little later); after a larger batch, and at the last parent
    allowed, the ends are exact. The decisions thus depend, within that resolution, on
    how the parents were batched.

    Args:
        population_size: N, the number of parents (sampling without replacement gives a
            narrower sequence, never outside the values of Delta the parents scored so
            far allow, that closes on the exact Delta when all N are scored).
        alpha: Error rate of the intervals and of the claim.
        control: ``(public, fresh)`` of a control bank, or None.
        transport_radius: r >= 0, the assumed bound on ``|b - b_C|``.
        target_half_width: Stop as ``"bounded"`` once Delta's half-width is at most this.
        effect_size: Stop as ``"bounded"`` once Delta's interval lies below this effect
            size (no exposure advantage of that size).
        max_parents: Stop as ``"exhausted"`` after this many parents.
        control_reading: ``"wald"`` (registered), ``"hoeffding"`` or ``"fixed"``.
        horizon: The number of parents the bets are tuned to (see
            :func:`betting_confidence_sequence`). ``"auto"`` (the default): the most
            parents the audit can score, min(max_parents, population_size), when
            ``max_parents`` is given, else horizon-free. An integer: that horizon (at
            most population_size; anything else is a ValueError naming horizon). None:
            horizon-free.

    The horizon changes how wide the intervals are at each n, not their guarantee.
    Tuned to max_parents, Delta's interval read at max_parents is the fixed-time betting
    interval at that n (:func:`~truescore_fast.betting_interval`), so a budget of
    max_parents loses no power to the option of stopping early; early on the interval is
    wider than the horizon-free one, so a very large effect is found later. On the bank
    of the sequential guide (N = 2,000, max_parents = 1,200, looks every 50) tuning to the
    budget raised the power at a planted delta = 0.05 from 73% to 86% and lowered the
    mean parents scored at delta = 0 and 0.05 (see :func:`sequential_study`), but a
    planted delta = 0.10 was decided after 379 parents on average instead of 342, and
    delta = 0.3 after 107 instead of 54. Without a budget, the horizon-free bets are
    about equally tight at every n. ``more_parents`` assumes the half-width shrinks like
    sqrt(n)/t + 1/sqrt(n) up to a horizon n, and like sqrt(log(1 + t) / t) horizon-free
    (a rough trend for the horizon-free mixture of bets, not its exact shape).
    """

    def __init__(
        self,
        population_size: int | None = None,
        *,
        alpha: float = 0.05,
        control: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
        transport_radius: float = 0.0,
        target_half_width: float | None = None,
        effect_size: float | None = None,
        max_parents: int | None = None,
        control_reading: str = "wald",
        horizon: int | Literal["auto"] | None = "auto",
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.population_size = (
            None
            if population_size is None
            else check_positive_int("population_size", population_size, minimum=2)
        )
        radius = real_scalar("transport_radius", transport_radius, low=0.0)
        self.transport_radius = radius
        self.target_half_width = (
            None
            if target_half_width is None
            else real_scalar("target_half_width", target_half_width, low=0.0)
        )
        self.effect_size = None if effect_size is None else real_scalar("effect_size", effect_size)
        self.max_parents = (
            None if max_parents is None else check_positive_int("max_parents", max_parents)
        )
        check_choice("control_reading", control_reading, CONTROL_READINGS)
        auto = None if self.max_parents is None else self._cap()
        self.horizon = check_horizon(horizon, auto, most=self.population_size)
        if control is None:
            self.control = None
            self._control_bounds = (0.0, 0.0)
        else:
            self.control = control_bank(control, self.alpha / 2.0)
            reading = self.control.readings[control_reading]
            self._control_bounds = (reading.low, reading.high)
        self.control_reading = control_reading if control is not None else "none"
        # Running sums and the two sequences (alpha and alpha/2), each carried forward by
        # the new parents alone (an update costs what its parents cost, not what all do),
        # read after every update and intersected with the earlier readings: compiled
        # (_core.AuditStream; src/cpp/truescore/sequence.hpp).
        self._stream = _core.AuditStream(
            self.population_size, self.alpha, self.horizon, self._cap()
        )
        self.history: list[AuditState] = []

    @property
    def n_parents(self) -> int:
        """Parents scored so far."""
        return int(self._stream.t)

    @property
    def state(self) -> AuditState | None:
        """The state after the last update (None before the first)."""
        return self.history[-1] if self.history else None

    def update(self, public: npt.ArrayLike, fresh: npt.ArrayLike) -> AuditState:
        """Add the next parents (in scoring order) and return the new state.

        ``public`` has one score in [0, 1] per parent; ``fresh`` one row of K fresh-form
        scores per parent (or one score each, K = 1), the same K in every update. One
        parent may be given as scalars: a scalar ``public`` is one parent, and ``fresh``
        is then its row (a scalar for K = 1, or its K scores), so ``update(1.0, 0.0)``
        is ``update([1.0], [0.0])`` and ``update(1.0, [0.0, 1.0])`` is
        ``update([1.0], [[0.0, 1.0]])``.
        """
        # Float64 scores as they are go straight to the core (which checks them and takes
        # the fresh means in NumPy's order); anything else is validated here first.
        reading = self._stream.update_unchecked(public, fresh)
        if reading is None:
            pub, fr = self._parents(public, fresh)
            reading = self._stream.update(pub, fr.mean(axis=1), fr.shape[1])
        state = self._read(reading)
        self.history.append(state)
        return state

    def _parents(
        self, public: npt.ArrayLike, fresh: npt.ArrayLike
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The parents of an update, validated: public (n,) and fresh (n, K)."""
        pub = check_unit_interval("public", public)
        fr = check_unit_interval("fresh", fresh)
        if pub.ndim == 0:
            pub = pub.reshape(1)
            if fr.ndim > 1:
                raise ArgumentError(
                    "fresh",
                    "fresh must be one parent's row of fresh-form scores when public is a "
                    f"scalar (one parent); got shape {fr.shape}",
                )
            fr = fr.reshape(1, -1)
        if pub.ndim != 1:
            raise ArgumentError(
                "public", f"public must be 1-D (one score per parent); got shape {pub.shape}"
            )
        if fr.ndim == 1 and fr.shape[0] == pub.shape[0]:
            fr = fr[:, None]  # one fresh form per parent
        if fr.ndim != 2 or fr.shape[0] != pub.shape[0] or fr.shape[1] < 1:
            raise ArgumentError(
                "fresh",
                f"fresh must hold one row of fresh-form scores per parent ({pub.shape[0]}); "
                f"got shape {np.shape(fresh)}",
            )
        if pub.shape[0] == 0:
            raise ArgumentError("public", "public must hold at least one parent")
        forms = self._stream.forms
        if forms and fr.shape[1] != forms:
            raise ArgumentError(
                "fresh",
                f"fresh must have {forms} fresh forms per parent, as in earlier updates; "
                f"got {fr.shape[1]}",
            )
        t = self.n_parents + pub.shape[0]
        if self.population_size is not None and t > self.population_size:
            raise ArgumentError(  # the population size: the constructor's argument
                "public",
                template=f"{{public}}: {t} parents scored exceeds {{population_size}} "
                f"({self.population_size})",
            )
        return pub, fr

    def _read(self, reading: tuple[Any, ...]) -> AuditState:
        t, public_sum, fresh_sum, gap_sum, low, high, empty, low2, high2, empty2 = reading
        estimate = gap_sum / t
        feasible = (
            (-1.0, 1.0)
            if self.population_size is None
            else gap_range(gap_sum, t, self.population_size, estimate)
        )
        delta = _sequence_interval(low, high, empty, estimate, feasible, self.alpha)
        half = _sequence_interval(low2, high2, empty2, estimate, feasible, self.alpha / 2.0)
        lc, uc = self._control_bounds
        r = self.transport_radius
        b = 0.0 if self.control is None else self.control.estimate
        tau = interval(
            low=half.low - (uc + r),
            high=half.high - (lc - r),
            estimate=estimate - b,
            method=(
                f"sensitivity (betting sequence Delta, {self.control_reading} control, r = {r:g})"
            ),
            alpha=self.alpha,
            half_width=tau_half_width(half.low, half.high, lc, uc, r),
            empty=half.empty,
        )
        claim = delta.excludes_zero_above and tau.excludes_zero_above
        decision: Decision
        cap = self._cap()
        if claim:
            decision = "finding"
        elif not delta.empty and self._bounded(delta.low, delta.high):
            decision = "bounded"
        elif cap is not None and t >= cap:
            decision = "exhausted"
        else:
            decision = "continue"
        more = None
        if decision == "continue" and not delta.empty:
            more = self._projection(
                t, estimate, delta.half_width, half.half_width, b, lc, uc, r, cap
            )
        return built(  # AuditState(...) without its __init__ (a setattr per field)
            AuditState,
            n_parents=t,
            public_score=public_sum / t,
            fresh_score=fresh_sum / t,
            estimate=estimate,
            delta=delta,
            tau=tau,
            claim=claim,
            decision=decision,
            more_parents=more,
            alpha=self.alpha,
            horizon=self.horizon,
        )

    def _cap(self) -> int | None:
        caps = [c for c in (self.population_size, self.max_parents) if c is not None]
        return min(caps) if caps else None

    def _bounded(self, low: float, high: float) -> bool:
        narrow = (
            self.target_half_width is not None and (high - low) / 2.0 <= self.target_half_width
        )
        below = self.effect_size is not None and high < self.effect_size
        return narrow or below

    def _projection(
        self,
        t: int,
        estimate: float,
        width: float,
        half_width: float,
        b: float,
        lc: float,
        uc: float,
        r: float,
        cap: int | None,
    ) -> int | None:
        # The bisection over s in C++ (the same operations as _width_shape and _bounded,
        # tests/audit/test_sequential.py holds it to them): in Python it cost ~20
        # evaluations of a few calls each per update.
        return cast(
            "int | None",
            _core.sequence_projection(
                t,
                estimate,
                width,
                half_width,
                uc + r,
                self.target_half_width,
                self.effect_size,
                self.horizon,
                cap if cap is not None else 1000 * t,
            ),
        )

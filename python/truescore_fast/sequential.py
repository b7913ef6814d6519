"""Sequential audits: stop scoring when the answer is known, with the guarantee intact.

Every test in this library needs its inputs scored by a model, and the model calls are the
cost. The tools here say, after every batch of scored items, whether the answer is already
known, so an evaluation team scores only as many items as the answer needs:

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
:class:`SequentialExchangeabilityTest`
    The order-based test of Oren et al. with Besag & Clifford's (1991) sequential
    Monte Carlo p-value: a shard stops drawing shuffled orders after ``h`` of them score
    at least as high as the published order, and the pooled (Fisher) verdict stops as
    soon as no further score can change it.
:func:`besag_clifford_p_value`
    That p-value from its counts.
:func:`sequential_study`, :func:`sequential_order_study`
    What stopping early costs and saves, by simulation, on the calibration engine
    (threads, executors, progress and checkpoints as for the other studies).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt
from scipy import special

from truescore_fast._engine import _Cell, _execute
from truescore_fast._random import SeedLike, philox_key, seed_int
from truescore_fast._result import Result, TabularResult
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    check_positive_int,
    check_unit_interval,
    float_array,
    real_scalar,
)
from truescore_fast.audit import _READINGS, _scoring_order, _tau_half_width, control_bank
from truescore_fast.intervals import Interval, betting_intervals
from truescore_fast.sharded import shard_orders

__all__ = [
    "AuditState",
    "SequentialAudit",
    "SequentialExchangeabilityTest",
    "ShardState",
    "SequentialVerdict",
    "audit_order",
    "besag_clifford_p_value",
    "betting_confidence_sequence",
    "sequential_order_study",
    "sequential_order_verdict",
    "sequential_study",
]

# Bets are truncated at _TRUNCATION / m (up) and _TRUNCATION / (1 - m) (down), as in the
# fixed-time betting interval, so every factor of the capital is at least 1/4.
_TRUNCATION = 0.75
# Candidate means are first scanned on this many grid points, then each end is refined.
_GRID = 65
_SECTIONS = 16  # each refining pass cuts a bracket 16-fold ...
_TOLERANCE = 1e-14  # ... until it is this narrow
_MARGIN = 1e-12  # and the end is then moved this much further out
# A remaining mean outside [0, 1] by more than this rules a candidate out (rounding in
# (N m - sum) / (N - t + 1) must not rule out the true mean of an all-0 or all-1 rest).
_SLACK = 1e-12

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
    return _scoring_order(n, seed_int(seed))


def _capital_logs(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    log_bet: npt.NDArray[np.float64],
) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]
]:
    """The hedged capital's two halves at candidate means ``m``, step by step.

    ``x`` are observations in [0, 1] in their order along the last axis (one sequence, or
    one per row); ``m`` broadcasts against it ((G, 1) candidates for one sequence, (R, 1)
    one per row); ``log_bet`` is :func:`_log_bets` of ``x``. Returns the running logs of
    the up-betting and down-betting capitals, and where the conditional mean m_t falls
    below 0 or above 1 (the candidate is impossible given the data from that step on).
    """
    n = x.shape[-1]
    shape = np.broadcast_shapes(m.shape, x.shape)
    if population_size is None:
        mt = np.broadcast_to(m, shape)
        too_low = too_high = np.broadcast_to(np.False_, shape)  # no candidate impossible
    else:
        zero = np.zeros(x.shape[:-1] + (1,))
        before = np.concatenate((zero, np.cumsum(x, axis=-1)[..., :-1]), axis=-1)  # i < t
        remaining = population_size - np.arange(n, dtype=np.float64)  # N - t + 1
        with np.errstate(divide="ignore", invalid="ignore"):
            mt = (population_size * m - before) / remaining
        too_low, too_high = mt < -_SLACK, mt > 1.0 + _SLACK
        mt = np.clip(mt, 0.0, 1.0)
    bet = np.exp(log_bet)
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.minimum(bet, _TRUNCATION / mt)
        down = np.minimum(bet, _TRUNCATION / (1.0 - mt))
    step = x - mt
    log_up = np.cumsum(np.log1p(up * step), axis=-1)
    log_down = np.cumsum(np.log1p(-down * step), axis=-1)
    return log_up, log_down, too_low, too_high


def _log_capital_max(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    log_bet: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """max over t of log(hedged capital_t(m)) for each candidate mean in ``m`` (shape (G,)),
    for one sequence ``x``; +inf for a candidate the data make impossible."""
    log_up, log_down, too_low, too_high = _capital_logs(x, m[:, None], population_size, log_bet)
    # Hedged as in the fixed-time interval: half the wealth bets up, half down, and a
    # candidate falls when either half alone reaches 1/alpha (max, not sum).
    best = (np.maximum(log_up, log_down) - math.log(2.0)).max(axis=1)
    best[(too_low | too_high).any(axis=1)] = math.inf
    return best


def _log_bets(
    x: npt.NDArray[np.float64], alpha: float, horizon: int | None = None
) -> npt.NDArray[np.float64]:
    """log of the predictable plug-in bets along the last axis of ``x``.

    Horizon-free (``horizon`` None): Waudby-Smith & Ramdas's choice for a confidence
    sequence, sqrt(2 log(2/alpha) / (sigma-hat^2_{t-1} t log(1 + t))). Tuned to a horizon
    n: their fixed-time choice sqrt(2 log(2/alpha) / (sigma-hat^2_{t-1} max(t, n))), the
    bets of :func:`~truescore_fast.betting_interval` at n up to n, and beyond n those of
    the fixed-time interval at t. Either way lambda_t uses only x_1..x_{t-1}."""
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1.0)  # mu-hat_t, t = 1..n
    var = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1.0)  # sigma-hat^2_t
    first = np.full(x.shape[:-1] + (1,), 0.25)
    var_prev = np.concatenate((first, var[..., :-1]), axis=-1)
    log_2_over_alpha = math.log(2.0) - math.log(alpha)
    if horizon is None:
        log_scale = np.log(t) + np.log(np.log1p(t))
    else:
        log_scale = np.log(np.maximum(t, float(horizon)))
    return 0.5 * (math.log(2.0) + math.log(log_2_over_alpha) - np.log(var_prev) - log_scale)


def _sequence_bounds(
    x: npt.NDArray[np.float64], population_size: int | None, alpha: float, horizon: int | None
) -> tuple[float, float, bool]:
    """The confidence sequence for the mean of ``x`` (in [0, 1]) after all of ``x``: the
    candidates whose hedged capital never reached 1/alpha. Ends rounded outward."""
    if population_size is not None and population_size == x.shape[0]:
        mean = float(np.mean(x))  # a census: the mean is known exactly
        return mean, mean, False
    log_bet = _log_bets(x, alpha, horizon)
    threshold = -math.log(alpha)

    def kept(m: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        return np.asarray(_log_capital_max(x, m, population_size, log_bet) < threshold)

    grid = np.linspace(0.0, 1.0, _GRID)
    inside = kept(grid)
    if not inside.any():
        # Nothing on the grid survives: look between grid points around the smallest
        # capital before calling the set empty.
        values = _log_capital_max(x, grid, population_size, log_bet)
        best = int(np.argmin(values))
        grid = np.linspace(grid[max(best - 1, 0)], grid[min(best + 1, _GRID - 1)], _GRID)
        inside = kept(grid)
        if not inside.any():
            return math.nan, math.nan, True
    where = np.flatnonzero(inside)
    first, last = int(where[0]), int(where[-1])
    # Brackets (rejected, accepted) around each end; None where the end is 0 or 1.
    brackets: list[list[float] | None] = [
        None if first == 0 and grid[0] == 0.0 else [grid[first - 1], grid[first]],
        None if last == grid.shape[0] - 1 and grid[-1] == 1.0 else [grid[last + 1], grid[last]],
    ]
    # Shrink both brackets together, _SECTIONS - 1 candidates in each per pass.
    fractions = np.arange(1, _SECTIONS) / _SECTIONS
    while any(b is not None and abs(b[1] - b[0]) > _TOLERANCE for b in brackets):
        live = [b for b in brackets if b is not None and abs(b[1] - b[0]) > _TOLERANCE]
        points = np.concatenate([b[0] + fractions * (b[1] - b[0]) for b in live])
        ok = kept(points).reshape(len(live), -1)
        for b, row, pts in zip(live, ok, points.reshape(len(live), -1), strict=True):
            # Candidates run from the rejected end to the accepted one: the last rejected
            # and the first accepted candidate bound the end.
            accepted = np.flatnonzero(row)
            j = int(accepted[0]) if accepted.size else row.shape[0]
            new_rejected = float(pts[j - 1]) if j > 0 else b[0]
            new_accepted = float(pts[j]) if j < row.shape[0] else b[1]
            if new_rejected == b[0] and new_accepted == b[1]:
                b[1] = b[0]  # no float between them: done
            else:
                b[0], b[1] = new_rejected, new_accepted

    def end(bracket: list[float] | None, edge: float) -> float:
        if bracket is None:
            return edge
        # The rejected side of the bracket, then a further _MARGIN out: the end never
        # moves inward, even by the rounding of mapping it to a gap and back.
        step = -_MARGIN if edge == 0.0 else _MARGIN
        return min(max(bracket[0] + step, 0.0), 1.0)

    return end(brackets[0], 0.0), end(brackets[1], 1.0), False


_NO_AUTO = object()  # _check_horizon's auto for a function that takes no "auto"


def _check_horizon(horizon: Any, auto: Any = _NO_AUTO, most: int | None = None) -> int | None:
    """None (horizon-free bets) or the number of parents the bets are tuned to, at most
    ``most`` (the population: a larger horizon is never reached). ``"auto"`` stands for
    ``auto`` where the caller allows it."""
    forms = "an integer >= 1 or None" if auto is _NO_AUTO else "an integer >= 1, 'auto' or None"
    if isinstance(horizon, str):
        if horizon == "auto" and auto is not _NO_AUTO:
            return cast("int | None", auto)
        raise ValueError(f"horizon must be {forms}; got {horizon!r:.60}")
    if horizon is None:
        return None
    tuned = check_positive_int("horizon", horizon)
    if most is not None and tuned > most:
        raise ValueError(
            f"horizon must be at most population_size ({most}): no more parents can be "
            f"scored; got {tuned}"
        )
    return tuned


def _check_population(population_size: Any, n: int) -> int | None:
    if population_size is None:
        return None
    size = check_positive_int("population_size", population_size)
    if size < n:
        raise ValueError(
            f"population_size must be at least the number of parents ({n}); got {size}"
        )
    return size


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
    predictable plug-in bets lambda_t truncated at 3/4 / m_t and 3/4 / (1 - m_t)) reaches
    1/alpha at *any* step; with ``population_size`` N the conditional mean is the
    without-replacement one, m_t = (N m - sum_{i<t} x_i)/(N - t + 1). By Ville's
    inequality the true mean is rejected at some step with probability at most alpha:
    the interval after each prefix of ``d`` is a confidence sequence, valid at every
    sample size at once, so it may be read after every batch and the scoring stopped
    whenever one likes.

    The bets (Waudby-Smith & Ramdas):

    - ``horizon=None`` (horizon-free): lambda_t = sqrt(2 ln(2/alpha) /
      (sigma-hat^2_{t-1} t ln(1 + t))), about equally tight at every n.
    - ``horizon=n`` (the number of parents one plans to score at most):
      lambda_t = sqrt(2 ln(2/alpha) / (sigma-hat^2_{t-1} max(t, n))). Read at t = n the
      sequence is then the fixed-time :func:`~truescore_fast.betting_interval` at n (the
      same bets, the same capital), so stopping early costs no width at the horizon; at
      t well below n it is wider than the horizon-free sequence (the bets are small
      while the capital has little time to grow), and past n it shrinks only slowly.

    What the horizon changes is the width at each n, never the guarantee: lambda_t
    depends only on the gaps before t, so the coverage at every n at once, and at any
    stopping time, is 1 - alpha for every horizon, including one far from where the
    scoring actually stops. The horizon must be fixed before looking at the data (not
    re-chosen after seeing some of it). Ends are found on a grid and refined to 1e-14,
    then rounded outward.

    Returns:
        An :class:`~truescore_fast.Interval` with method ``"betting sequence"``; ``empty``
        when every mean has been rejected (the order is not random, or an event of
        probability at most alpha happened).

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
        raise ValueError(f"d must be 1-D and non-empty; got shape {gaps.shape}")
    if not np.isfinite(gaps).all() or np.abs(gaps).max() > 1.0:
        raise ValueError("d must hold finite gaps in [-1, 1]")
    pop = _check_population(population_size, gaps.shape[0])
    tuned = _check_horizon(horizon, most=pop)
    x = (gaps + 1.0) / 2.0
    low, high, empty = _sequence_bounds(x, pop, alpha, tuned)
    estimate = float(np.mean(gaps))
    if empty:
        return Interval(estimate, estimate, estimate, "betting sequence", alpha, 0.0, empty=True)
    lo_d, hi_d = max(2.0 * low - 1.0, -1.0), min(2.0 * high - 1.0, 1.0)
    return Interval(lo_d, hi_d, estimate, "betting sequence", alpha, (hi_d - lo_d) / 2.0)


def _width_shape(t: float, horizon: int | None) -> float:
    """How the sequence's half-width scales with t (up to a constant): sum of log-capital
    terms over the sum of bets at the plug-in bets of :func:`_log_bets`, with the
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

    Args:
        population_size: N, the number of parents (sampling without replacement gives a
            narrower sequence that closes on the exact Delta when all N are scored).
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
    wider than the horizon-free one, so a very large effect is found later. On the
    README's bank (N = 2,000, max_parents = 1,200, looks every 50) tuning to the
    budget raised the power at a planted delta = 0.05 from 39% to 86% and lowered the
    mean parents scored at delta = 0, 0.05 and 0.10 (see :func:`sequential_study`), but
    a planted delta = 0.3 was found after 107 parents on average instead of 55. Without
    a budget, the horizon-free bets are about equally tight at every n. ``more_parents`` assumes
    the half-width shrinks like sqrt(n)/t + 1/sqrt(n) up to a horizon n, and like
    sqrt(log(1 + t) / t) horizon-free.
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
        check_choice("control_reading", control_reading, _READINGS)
        auto = None if self.max_parents is None else self._cap()
        self.horizon = _check_horizon(horizon, auto, most=self.population_size)
        if control is None:
            self.control = None
            self._control_bounds = (0.0, 0.0)
        else:
            self.control = control_bank(control, self.alpha / 2.0)
            reading = self.control.readings[control_reading]
            self._control_bounds = (reading.low, reading.high)
        self.control_reading = control_reading if control is not None else "none"
        self._public: list[npt.NDArray[np.float64]] = []
        self._fresh: list[npt.NDArray[np.float64]] = []
        self._forms: int | None = None
        self._low = {self.alpha: 0.0, self.alpha / 2.0: 0.0}
        self._high = {self.alpha: 1.0, self.alpha / 2.0: 1.0}
        self.history: list[AuditState] = []

    @property
    def n_parents(self) -> int:
        """Parents scored so far."""
        return int(sum(p.shape[0] for p in self._public))

    @property
    def state(self) -> AuditState | None:
        """The state after the last update (None before the first)."""
        return self.history[-1] if self.history else None

    def update(self, public: npt.ArrayLike, fresh: npt.ArrayLike) -> AuditState:
        """Add the next parents (in scoring order) and return the new state.

        ``public`` has one score in [0, 1] per parent; ``fresh`` one row of K fresh-form
        scores per parent (or one score each, K = 1), the same K in every update.
        """
        pub = check_unit_interval("public", public)
        fr = check_unit_interval("fresh", fresh)
        if pub.ndim == 0:
            pub = pub.reshape(1)
        if pub.ndim != 1:
            raise ValueError(f"public must be 1-D (one score per parent); got shape {pub.shape}")
        if fr.ndim == 1 and fr.shape[0] == pub.shape[0]:
            fr = fr[:, None]  # one fresh form per parent
        if fr.ndim != 2 or fr.shape[0] != pub.shape[0] or fr.shape[1] < 1:
            raise ValueError(
                f"fresh must hold one row of fresh-form scores per parent ({pub.shape[0]}); "
                f"got shape {np.shape(fresh)}"
            )
        if pub.shape[0] == 0:
            raise ValueError("public must hold at least one parent")
        if self._forms is not None and fr.shape[1] != self._forms:
            raise ValueError(
                f"fresh must have {self._forms} fresh forms per parent, as in earlier updates; "
                f"got {fr.shape[1]}"
            )
        t = self.n_parents + pub.shape[0]
        if self.population_size is not None and t > self.population_size:
            raise ValueError(
                f"public: {t} parents scored exceeds population_size ({self.population_size})"
            )
        self._forms = fr.shape[1]
        self._public.append(pub.copy())
        self._fresh.append(fr.copy())
        state = self._read()
        self.history.append(state)
        return state

    def _sequence(self, x: npt.NDArray[np.float64], alpha: float) -> tuple[float, float, bool]:
        low, high, empty = _sequence_bounds(x, self.population_size, alpha, self.horizon)
        if empty:
            return math.nan, math.nan, True
        # Every reading holds at once, so the running intersection holds too (and keeps
        # the outward-rounded ends from ever widening).
        low = max(low, self._low[alpha])
        high = min(high, self._high[alpha])
        self._low[alpha], self._high[alpha] = low, high
        return low, high, low > high

    def _read(self) -> AuditState:
        pub = np.concatenate(self._public)
        fr = np.concatenate(self._fresh)
        d = pub - fr.mean(axis=1)
        x = (d + 1.0) / 2.0
        t = int(d.shape[0])
        estimate = float(np.mean(d))
        intervals = {}
        for a in (self.alpha, self.alpha / 2.0):
            low, high, empty = self._sequence(x, a)
            if empty:
                intervals[a] = Interval(
                    estimate, estimate, estimate, "betting sequence", a, 0.0, True
                )
            else:
                lo_d, hi_d = max(2.0 * low - 1.0, -1.0), min(2.0 * high - 1.0, 1.0)
                intervals[a] = Interval(
                    lo_d, hi_d, estimate, "betting sequence", a, (hi_d - lo_d) / 2.0
                )
        delta, half = intervals[self.alpha], intervals[self.alpha / 2.0]
        lc, uc = self._control_bounds
        r = self.transport_radius
        b = 0.0 if self.control is None else self.control.estimate
        tau = Interval(
            low=half.low - (uc + r),
            high=half.high - (lc - r),
            estimate=estimate - b,
            method=(
                f"sensitivity (betting sequence Delta, {self.control_reading} control, r = {r:g})"
            ),
            alpha=self.alpha,
            half_width=_tau_half_width(half.low, half.high, lc, uc, r),
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
        return AuditState(
            n_parents=t,
            public_score=float(np.mean(pub)),
            fresh_score=float(np.mean(fr)),
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
        limit = cap if cap is not None else 1000 * t

        def decided(s: int) -> bool:
            w = _projected_half_width(width, t, s, self.horizon)
            wh = _projected_half_width(half_width, t, s, self.horizon)
            finding = estimate - w > 0.0 and estimate - wh - (uc + r) > 0.0
            return finding or self._bounded(estimate - w, estimate + w)

        if limit <= t or not decided(limit):
            return None
        lo, hi = t, limit  # decided(hi) holds; find the first s that decides
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if decided(mid):
                hi = mid
            else:
                lo = mid
        return hi - t


def besag_clifford_p_value(exceedances: int, draws: int, *, h: int, max_draws: int) -> float:
    """Besag & Clifford's (1991) sequential Monte Carlo p-value.

    Shuffled orders are drawn one at a time; an *exceedance* is a shuffled order that
    scores at least as high as the published one. Sampling stops at the h-th exceedance
    (after ``draws`` orders: p = h / draws) or after ``max_draws`` orders with fewer than
    h (p = (exceedances + 1) / (max_draws + 1), the fixed-m test's p-value). Under
    exchangeability P(p <= u) <= u at every u, like the fixed test; with h > max_draws it
    *is* the fixed test.

    Raises:
        ValueError: counts that are not a stopped state of that rule.
    """
    hh = check_positive_int("h", h)
    m = check_positive_int("max_draws", max_draws)
    g = check_positive_int("exceedances", exceedances, minimum=0)
    n = check_positive_int("draws", draws, minimum=0)
    if n > m or g > n:
        raise ValueError(
            f"draws must be at most max_draws ({m}) and at least exceedances ({g}); got {n}"
        )
    if g >= hh:
        if g != hh:
            raise ValueError(f"exceedances cannot pass h ({hh}): sampling stops at the h-th")
        return hh / n
    if n < m:
        raise ValueError(
            f"not stopped: {g} exceedances < h ({hh}) after draws = {n} < max_draws ({m})"
        )
    return (g + 1.0) / (m + 1.0)


def _fisher(p: npt.NDArray[np.float64]) -> float:
    return float(special.chdtrc(2 * p.shape[0], -2.0 * float(np.sum(np.log(p)))))


@dataclass(frozen=True, repr=False)
class ShardState(Result):
    """One shard of a :class:`SequentialExchangeabilityTest`.

    ``p_low`` and ``p_high`` bound the p-value the shard will end with, whatever the
    orders not yet scored give; they are equal (to ``p_value``) once it has stopped.
    ``p_value`` is None while the shard is open.
    """

    shard: int
    draws: int
    exceedances: int
    stopped: bool
    p_value: float | None
    p_low: float
    p_high: float

    _repr_fields = ("shard", "draws", "exceedances", "stopped", "p_value")

    def summary(self) -> str:
        status = (
            f"stopped, p = {self.p_value:.4g}"
            if self.stopped
            else (f"open, final p in [{self.p_low:.4g}, {self.p_high:.4g}]")
        )
        return (
            f"shard {self.shard}: {self.exceedances} of {self.draws} shuffled orders "
            f">= published; {status}"
        )


@dataclass(frozen=True, repr=False)
class SequentialVerdict(TabularResult):
    """The pooled verdict of a :class:`SequentialExchangeabilityTest`.

    Attributes:
        decision: ``"finding"`` (Fisher's pooled p is below alpha whatever the unscored
            orders give), ``"no finding"`` (it is at least alpha whatever they give) or
            ``"continue"``.
        p_low, p_high: Bounds on the pooled p-value the test will end with. The decision
            is the one scoring every order the rule asks for would give: stopping early
            changes how many orders are scored, not the answer.
        p_value: The pooled p-value once every shard has stopped (None before).
        orders_scored: Shuffled orders scored so far, over all shards.
        orders_fixed: What the fixed design scores (shards x max_permutations).
        shards: Each shard's state.
    """

    decision: Literal["finding", "no finding", "continue"]
    p_low: float
    p_high: float
    p_value: float | None
    orders_scored: int
    orders_fixed: int
    alpha: float
    shards: tuple[ShardState, ...]

    _repr_fields = ("decision", "p_low", "p_high", "orders_scored", "orders_fixed")

    def _columns(self) -> dict[str, Any]:
        return {
            "shard": [s.shard for s in self.shards],
            "draws": [s.draws for s in self.shards],
            "exceedances": [s.exceedances for s in self.shards],
            "stopped": [s.stopped for s in self.shards],
            "p_low": [s.p_low for s in self.shards],
            "p_high": [s.p_high for s in self.shards],
        }

    def summary(self) -> str:
        p = (
            f"pooled p = {self.p_value:.4g}"
            if self.p_value is not None
            else f"pooled p in [{self.p_low:.4g}, {self.p_high:.4g}]"
        )
        return (
            f"Sequential order test: {self.decision} ({p}, alpha = {self.alpha:g}); "
            f"{self.orders_scored} of {self.orders_fixed} shuffled orders scored.\n"
            "The test detects memorisation of the published order only: no finding is "
            "absence of evidence, not evidence of a clean model."
        )


def _shard_state(shard: int, draws: int, exceedances: int, h: int, m: int) -> ShardState:
    """A shard's state after ``draws`` shuffled orders with ``exceedances`` >= published."""
    if exceedances >= h or draws >= m:
        p = besag_clifford_p_value(exceedances, draws, h=h, max_draws=m)
        return ShardState(shard, draws, exceedances, True, p, p, p)
    low = (exceedances + 1.0) / (m + 1.0)  # no further exceedance up to m
    earliest = draws + (h - exceedances)  # every further order an exceedance
    high = h / earliest if earliest <= m else (exceedances + (m - draws) + 1.0) / (m + 1.0)
    return ShardState(shard, draws, exceedances, False, None, low, high)


def _pooled_verdict(states: tuple[ShardState, ...], m: int, alpha: float) -> SequentialVerdict:
    low = _fisher(np.array([s.p_low for s in states]))
    high = _fisher(np.array([s.p_high for s in states]))
    if high < alpha:
        decision: Literal["finding", "no finding", "continue"] = "finding"
    elif low >= alpha:
        decision = "no finding"
    else:
        decision = "continue"
    done = all(s.stopped for s in states)
    return SequentialVerdict(
        decision=decision,
        p_low=low,
        p_high=high,
        p_value=low if done else None,
        orders_scored=int(sum(s.draws for s in states)),
        orders_fixed=len(states) * m,
        alpha=alpha,
        shards=states,
    )


def sequential_order_verdict(
    canonical_logliks: npt.ArrayLike,
    permuted_logliks: Sequence[npt.ArrayLike],
    *,
    max_permutations: int = 99,
    h: int = 10,
    alpha: float = 0.05,
) -> SequentialVerdict:
    """The verdict of :class:`SequentialExchangeabilityTest` from the scores so far.

    ``canonical_logliks[i]`` is shard i's published-order log-likelihood and
    ``permuted_logliks[i]`` its shuffled orders' log-likelihoods *in the order they were
    scored* (the order :func:`~truescore_fast.shard_orders` lists them; possibly none
    yet). Values after a shard's stopping point are not used. For a run whose scores
    are in a table (the command line's ``contamination --sequential``).

    Raises:
        ValueError: lengths that differ, non-finite values, more than ``max_permutations``
            scores for a shard, bad ``h``, ``max_permutations`` or ``alpha``.
    """
    check_alpha(alpha)
    hh = check_positive_int("h", h)
    m = check_positive_int("max_permutations", max_permutations)
    canonical = np.atleast_1d(float_array("canonical_logliks", canonical_logliks))
    if canonical.ndim != 1 or canonical.shape[0] == 0 or not np.isfinite(canonical).all():
        raise ValueError("canonical_logliks must be a non-empty 1-D array of finite values")
    if len(permuted_logliks) != canonical.shape[0]:
        raise ValueError(
            f"permuted_logliks must hold one array per shard ({canonical.shape[0]}); "
            f"got {len(permuted_logliks)}"
        )
    states = []
    for i, (c, values) in enumerate(zip(canonical, permuted_logliks, strict=True)):
        arr = np.atleast_1d(float_array("permuted_logliks", values))
        if arr.ndim != 1 or not np.isfinite(arr).all():
            raise ValueError(f"permuted_logliks of shard {i} must be 1-D and finite")
        if arr.shape[0] > m:
            raise ValueError(
                f"permuted_logliks of shard {i} holds {arr.shape[0]} scores, more than "
                f"max_permutations ({m})"
            )
        exceed = np.cumsum(arr >= c)
        hit = np.flatnonzero(exceed >= hh)
        used = int(hit[0]) + 1 if hit.size else arr.shape[0]  # stop at the h-th
        states.append(_shard_state(i, used, int(exceed[used - 1]) if used else 0, hh, m))
    return _pooled_verdict(tuple(states), m, alpha)


class SequentialExchangeabilityTest:
    """The sharded order-based test, scoring shuffled orders only while they matter.

    The orders are those of :func:`~truescore_fast.shard_orders` with
    ``permutations_per_shard = max_permutations`` and the same seed, handed out in row
    order, so a run that scores them all is the fixed test. Each shard stops by Besag &
    Clifford's rule (:func:`besag_clifford_p_value`); the pooled Fisher verdict stops as
    soon as it is decided whatever the unscored orders give.

    Use: score each shard's published order once and pass it as ``canonical_loglik`` to
    the first :meth:`update` of that shard; then repeatedly take :meth:`next_orders`,
    score them, and :meth:`update` each shard with their log-likelihoods in the order
    handed out, until :meth:`verdict` is not ``"continue"``.

    Args:
        n_examples, n_shards: As for :func:`~truescore_fast.shard_orders`.
        max_permutations: m, the most shuffled orders a shard scores (the fixed design).
        h: A shard stops after h shuffled orders score at least its published order.
            Larger h is closer to the fixed test and stops later; h > m never stops early.
        alpha: Level of the pooled verdict.
        seed: As for :func:`~truescore_fast.shard_orders`.
    """

    def __init__(
        self,
        n_examples: int,
        n_shards: int,
        *,
        max_permutations: int = 99,
        h: int = 10,
        alpha: float = 0.05,
        seed: SeedLike = 0,
    ) -> None:
        self.alpha = check_alpha(alpha)
        self.h = check_positive_int("h", h)
        self.max_permutations = check_positive_int("max_permutations", max_permutations)
        self.orders = shard_orders(n_examples, n_shards, self.max_permutations, seed=seed)
        r = self.orders.n_shards
        self._canonical: list[float | None] = [None] * r
        self._draws = [0] * r
        self._exceed = [0] * r

    def _stopped(self, i: int) -> bool:  # the rule of _shard_state
        return self._exceed[i] >= self.h or self._draws[i] >= self.max_permutations

    def shard_state(self, shard: int) -> ShardState:
        """Shard ``shard``'s counts and the bounds on its final p-value."""
        i = self._shard_index(shard)
        return _shard_state(i, self._draws[i], self._exceed[i], self.h, self.max_permutations)

    def _shard_index(self, shard: Any) -> int:
        r = self.orders.n_shards
        i = check_positive_int("shard", shard, minimum=0)
        if i >= r:
            raise ValueError(f"shard must be below n_shards ({r}); got {i}")
        return i

    def verdict(self) -> SequentialVerdict:
        """The pooled verdict now."""
        states = tuple(self.shard_state(i) for i in range(self.orders.n_shards))
        return _pooled_verdict(states, self.max_permutations, self.alpha)

    def next_orders(self, count: int = 1) -> list[tuple[int, int, npt.NDArray[np.int64]]]:
        """The next orders to score: up to ``count`` per open shard, as
        ``(shard, permutation index, example indices)``. Empty once the verdict is
        decided (no order could change it)."""
        k = check_positive_int("count", count)
        if self.verdict().decision != "continue":
            return []
        out = []
        for i in range(self.orders.n_shards):
            if self._stopped(i):
                continue
            start = self._draws[i]
            for j in range(start, min(start + k, self.max_permutations)):
                out.append((i, j, self.orders.permutations[i][j]))
        return out

    def update(
        self, shard: int, permuted_logliks: npt.ArrayLike, *, canonical_loglik: float | None = None
    ) -> ShardState:
        """Add the log-likelihoods of shard ``shard``'s next shuffled orders, in the order
        :meth:`next_orders` handed them out. Values after the shard's stopping point are
        not used (Besag & Clifford's p-value needs sampling to stop there)."""
        i = self._shard_index(shard)
        if canonical_loglik is not None:
            c = real_scalar("canonical_loglik", canonical_loglik)
            if self._canonical[i] is not None and self._canonical[i] != c:
                raise ValueError(
                    f"canonical_loglik of shard {i} was already given as {self._canonical[i]!r}"
                )
            self._canonical[i] = c
        canonical = self._canonical[i]
        if canonical is None:
            raise ValueError(f"canonical_loglik of shard {i} is needed with its first update")
        values = np.atleast_1d(float_array("permuted_logliks", permuted_logliks))
        if values.ndim != 1 or not np.isfinite(values).all():
            raise ValueError("permuted_logliks must be a 1-D array of finite log-likelihoods")
        for v in values:
            if self._stopped(i):
                break
            self._draws[i] += 1
            self._exceed[i] += int(v >= canonical)
        return self.shard_state(i)


# ---------------------------------------------------------------------- the studies

# Replications are simulated in tasks of this many, task i from Philox stream i of the
# seed's key: the result does not depend on how the work is split.
_STUDY_TASK = 250


def _stream(key: tuple[int, int], task: int) -> np.random.Generator:
    return np.random.Generator(
        np.random.Philox(
            key=np.array(key, dtype=np.uint64),
            counter=np.array([0, 0, task, 0], dtype=np.uint64),
        )
    )


def _first_hits(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int,
    alpha: float,
    log_bet: npt.NDArray[np.float64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each row of ``x`` (R, n) and its candidate ``m[r]``: the first step (1-based)
    at which the up-betting half of the hedged capital reaches 1/alpha (m is then below
    the sequence), and the same for the down-betting half (m above it); n + 1 for never.
    A candidate made impossible by the data counts as reached by the matching half.
    ``log_bet`` is :func:`_log_bets` of ``x`` at ``alpha`` (computed once by the caller
    for every candidate at that alpha)."""
    n = x.shape[1]
    log_up, log_down, too_low, too_high = _capital_logs(x, m[:, None], population_size, log_bet)
    threshold = math.log(2.0) - math.log(alpha)  # half the wealth reaching 1/alpha
    hit_up = (log_up >= threshold) | too_low  # too low: m lies below the data
    hit_down = (log_down >= threshold) | too_high

    def first(hit: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, n + 1).astype(np.int64)

    return first(hit_up), first(hit_down)


def sequential_study(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    *,
    deltas: float | Sequence[float] = (0.0, 0.05, 0.10),
    max_parents: int = 1200,
    look_every: int = 50,
    effect_size: float | None = 0.05,
    relabel: bool = True,
    horizon: int | Literal["auto"] | None = "auto",
    replications: int = 1000,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """How the sequential audit behaves under continuous monitoring, by simulation.

    ``public`` (N,) and ``fresh`` (N, K) are binary correctness labels of a bank of N
    parents. Each replication first (``relabel=True``) swaps every parent's public label
    with one of its K + 1 labels chosen uniformly, so that no form effect holds by
    construction (the null of :func:`~truescore_fast.detection_study`), then plants a
    public-form advantage delta as that study does (each incorrect public label becomes
    correct with probability delta / (1 - p)); the result fixes that replication's true
    finite-population Delta_N. It scores the parents in a random order and reads a
    :class:`SequentialAudit` (population_size N, no control bank, bets tuned to
    ``horizon``) every ``look_every`` parents up to ``max_parents``, stopping at
    ``finding`` or ``bounded`` (Delta below ``effect_size``). The audit's rule is read
    through the capital at the boundary candidates (Delta = 0 at alpha and alpha/2,
    Delta = effect_size, the true Delta_N), which is what its interval ends are.

    ``horizon``: as for :class:`SequentialAudit`; ``"auto"`` tunes the bets to
    ``max_parents``, None makes them horizon-free. The horizon-free audit is also run on
    the same parents, for comparison.

    ``n_threads`` (None: every core), ``progress`` (None: a bar after a second),
    ``executor`` (any ``concurrent.futures.Executor``, e.g. a Dask client's) and
    ``checkpoint`` (a file to save progress in and resume from) work as for the other
    studies (:mod:`truescore_fast.calibration`), on the same engine: each row is a cell
    whose replications run in tasks of 250, task t of row i drawing from Philox stream
    i x tasks + t of the seed's key and adding its counts to the row's sums in task
    order, so the table is the same for any thread count, executor or resumed checkpoint.

    Returns:
        A :class:`~truescore_fast.StudyTable`, one row per delta: ``true_delta`` (mean
        Delta_N), ``claim_rate`` and ``claim_se`` (findings by max_parents),
        ``false_claim_rate`` (findings in replications whose Delta_N <= 0: the
        finite-population type-I error under monitoring, at most alpha / 2 with no control
        bank), ``bounded_rate``, ``coverage_at_stop``
        (Delta_N inside the sequence when the audit stops), ``mean_parents``,
        ``median_parents`` and ``p90_parents`` (parents scored when it stops),
        ``fixed_claim_rate`` (the fixed-n audit with the betting interval at
        n = max_parents, its power for comparison), ``fixed_same_power_parents`` and
        ``fixed_same_power_se`` (the fixed-n design with the sequential audit's power:
        the fixed audit is run on the same parents at every look's n, and the smallest n
        whose claim rate reaches ``claim_rate`` is read off that curve, interpolated
        linearly between looks (from 0 claims at n = 0); inf when even max_parents falls
        short. Its standard error is the delta method's, sqrt(2) x the claim SE over the
        curve's slope there: conservative, as the two rates on the same parents are
        positively correlated, and meaningless when the rates are near 0 or 1; inf when
        every replication claimed),
        ``horizon_free_claim_rate`` and ``horizon_free_mean_parents`` (the audit with
        horizon-free bets on the same parents; equal to the main columns when
        ``horizon`` is None), ``wald_peek_claim_rate`` and
        ``wald_peek_false_claim_rate`` (claiming whenever the finite-population Wald
        interval at alpha/2 is above zero at a look: what naive peeking does).

    With ``relabel=True`` and delta = 0, ``claim_rate`` is the error rate for "no form
    effect", a super-population null: the sequence covers the realised Delta_N, which
    is slightly positive in about half the replications, so at large sampling fractions
    that rate can pass alpha / 2 a little, as it does for every finite-population
    interval (see :func:`~truescore_fast.detection_study`). In that row the claim rates
    are error rates, so the fixed design "with the same power" is only the n at which
    the fixed audit errs as often: not a comparison of power.

    What it does not mean: the rates are for this bank and this way of planting an
    effect; a real leak that carries over to the fresh forms is invisible to every rule.
    """
    from truescore_fast.calibration import (
        _columns,
        _floats,
        _models,
        _rate,
        _replications,
        _run_meta,
    )

    banks = _models(public, fresh)
    if len(banks) != 1:
        raise ValueError("public must be one bank, shape (N,), with fresh (N, K)")
    pub, fr = banks[0]
    check_alpha(alpha)
    ds = _floats("deltas", deltas)
    reps = _replications(replications)
    big_n = pub.shape[0]
    n_max = check_positive_int("max_parents", max_parents, minimum=2)
    if n_max > big_n:
        raise ValueError(f"max_parents must not exceed the bank's {big_n} parents; got {n_max}")
    every = check_positive_int("look_every", look_every)
    effect = None if effect_size is None else real_scalar("effect_size", effect_size)
    threads = check_n_threads(n_threads)
    tuned = _check_horizon(horizon, n_max, most=big_n)
    key = philox_key(seed)
    if not isinstance(relabel, (bool, np.bool_)):
        raise ValueError(f"relabel must be True or False; got {relabel!r}")
    # mean public correctness (after relabelling, in expectation: the mean of all labels)
    p_public = (
        float((pub.sum() + fr.sum()) / (pub.size + fr.size)) if relabel else float(pub.mean())
    )
    looks = np.unique(np.append(np.arange(every, n_max + 1, every), n_max))
    z_half = float(special.ndtri(1.0 - alpha / 4.0))  # Wald at alpha/2, two-sided
    for delta in ds:
        if not 0.0 <= delta < 1.0 - p_public:
            raise ValueError(
                f"deltas must be in [0, 1 - mean public correctness = {1.0 - p_public:.4g}); "
                f"got {delta}"
            )
    rows = []
    per_row = [
        (pub, fr, delta / (1.0 - p_public) if p_public < 1.0 else 0.0, bool(relabel), n_max,
         looks, effect, alpha, z_half, tuned)
        for delta in ds
    ]  # fmt: skip
    engine = {"n_threads": threads, "progress": progress, "executor": executor}
    totals = _run_rows(_audit_task, per_row, reps, key, "sequential audit", checkpoint, engine)
    n_sums, n_looks = len(_AUDIT_SUMS), looks.shape[0]
    for delta, total in zip(ds, totals, strict=True):
        sums = dict(zip(_AUDIT_SUMS, total[:n_sums], strict=True))
        claim, claim_se = _rate(float(sums["claim"]), reps)
        fixed_curve = total[n_sums : n_sums + n_looks] / reps
        stop = _from_counts(total[n_sums + n_looks :])
        same_n, same_se = _same_power_parents(claim, claim_se, looks, fixed_curve)
        rows.append(
            (
                delta,
                float(sums["truth"] / reps),
                claim,
                claim_se,
                float(sums["false_claim"] / reps),
                float(sums["bounded"] / reps),
                float(sums["covered"] / reps),
                float(stop.mean()),
                float(np.median(stop)),
                float(np.quantile(stop, 0.9)),
                float(fixed_curve[-1]),
                same_n,
                same_se,
                float(sums["free_claim"] / reps),
                float(sums["free_stop"] / reps),
                float(sums["wald_claim"] / reps),
                float(sums["wald_false_claim"] / reps),
            )
        )
    names = (
        "delta", "true_delta", "claim_rate", "claim_se", "false_claim_rate", "bounded_rate",
        "coverage_at_stop", "mean_parents", "median_parents", "p90_parents",
        "fixed_claim_rate", "fixed_same_power_parents", "fixed_same_power_se",
        "horizon_free_claim_rate", "horizon_free_mean_parents",
        "wald_peek_claim_rate", "wald_peek_false_claim_rate",
    )  # fmt: skip
    columns = _columns(names, rows)
    bets = "horizon-free bets" if tuned is None else f"bets tuned to {tuned} parents"
    return StudyTable(
        title=(
            f"Sequential audit under monitoring: N = {big_n}, looks every {every} parents "
            f"up to {n_max}, {bets}, alpha = {alpha:g}, effect size {effect}"
        ),
        columns=columns,
        notes=(
            f"{reps} replications per row, seed {seed!r}. false_claim_rate must stay at or "
            "below alpha however often the audit is read; wald_peek_false_claim_rate shows "
            "what reading the Wald interval at every look does instead.",
            "fixed_same_power_parents: the smallest n at which the fixed-n audit, run on "
            "the same parents at every look, claims as often as the sequential audit "
            "(interpolated between looks; SE by the delta method).",
            "Rates for this bank and this planting; a leak that carries over to the fresh "
            "forms is invisible to every rule.",
        ),
        meta=_run_meta("sequential", seed, key, reps)
        | {"replications_per_task": _STUDY_TASK, "horizon": tuned},
    )


# A task's row of sums, as the engine adds them: these counts (truth: the sum of the
# replications' Delta_N; free_stop: of the horizon-free audit's stopping sizes), then how
# many replications the fixed audit claimed in at each look, then how many stopped after
# 0, 1, ..., n_max parents (for the order study: the two counts, then how many scored 0,
# 1, ..., S x m orders). Counts of replications are exact in float64, so a row's sums, and
# the mean, median and quantiles read from the counts, do not depend on how the tasks were
# split.
_AUDIT_SUMS = (
    "truth", "claim", "false_claim", "bounded", "covered", "free_claim", "free_stop",
    "wald_claim", "wald_false_claim",
)  # fmt: skip
_ORDER_SUMS = ("rejections", "fixed_rejections")


def _counts(values: npt.NDArray[np.int64], top: int) -> npt.NDArray[np.float64]:
    """How many of ``values`` (integers in [0, top]) equal 0, 1, ..., top."""
    if values.size and not 0 <= int(values.min()) <= int(values.max()) <= top:
        raise AssertionError(f"a count outside [0, {top}]")  # a bug, not bad input
    return np.bincount(values, minlength=top + 1).astype(np.float64)


def _from_counts(counts: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """The sorted values whose :func:`_counts` these are (as int64, as they were)."""
    return np.repeat(np.arange(counts.shape[0], dtype=np.int64), counts.astype(np.int64))


def _run_rows(
    task: Callable[..., npt.NDArray[np.float64]],
    per_row: list[tuple[Any, ...]],
    reps: int,
    key: tuple[int, int],
    desc: str,
    checkpoint: str | os.PathLike[str] | None,
    engine: dict[str, Any],
) -> list[npt.NDArray[np.float64]]:
    """Every row's sums, on the calibration engine (``engine``: its n_threads, progress
    and executor): one cell per row, ``task(key, stream, size, *per_row[i])`` for the
    row's tasks of at most _STUDY_TASK replications, task t of row i on Philox stream
    i x tasks + t of ``key``."""
    tasks = -(-reps // _STUDY_TASK)
    cells = [
        _Cell(task, args, key, row * tasks, reps, block=_STUDY_TASK)
        for row, args in enumerate(per_row)
    ]
    return _execute(cells, desc=desc, checkpoint=checkpoint, **engine)


def _same_power_parents(
    target: float, target_se: float, looks: npt.NDArray[np.int64], curve: npt.NDArray[Any]
) -> tuple[float, float]:
    """The smallest n at which the claim-rate ``curve`` (at each of ``looks``, 0 at n = 0)
    reaches ``target``, linear between looks, and its delta-method standard error
    sqrt(2) x target_se / slope (inf for a target of 1, where the binomial SE is 0 but n is
    still uncertain); (inf, inf) when the curve never reaches it."""
    ns = np.concatenate(([0.0], looks.astype(np.float64)))
    ps = np.concatenate(([0.0], np.asarray(curve, dtype=np.float64)))
    reached = np.flatnonzero(ps >= target)
    if reached.size == 0:
        return math.inf, math.inf
    j = int(reached[0])
    if j == 0:  # a target of 0: no parents are needed to claim that rarely
        return 0.0, 0.0
    slope = (ps[j] - ps[j - 1]) / (ns[j] - ns[j - 1])
    n = ns[j - 1] + (target - ps[j - 1]) / slope
    if target_se == 0.0:  # every replication claimed: a binomial SE of 0 says nothing
        return float(n), math.inf
    return float(n), float(math.sqrt(2.0) * target_se / slope)


def _audit_task(
    key: tuple[int, int],
    stream: int,
    size: int,
    pub: npt.NDArray[np.float64],
    fr: npt.NDArray[np.float64],
    q: float,
    relabel: bool,
    n_max: int,
    *rest: Any,
) -> npt.NDArray[np.float64]:
    """One task of sequential_study: the sums (_AUDIT_SUMS, then the stop counts) of
    ``size`` replications from Philox stream ``stream``."""
    sim = _audit_replications(pub, fr, q, relabel, size, n_max, *rest, rng=_stream(key, stream))
    null = sim["truth"] <= 0.0
    sums = {
        "truth": math.fsum(sim["truth"]),
        "claim": np.sum(sim["claim"]),
        "false_claim": np.sum(sim["claim"] & null),
        "bounded": np.sum(sim["bounded"]),
        "covered": np.sum(sim["covered"]),
        "free_claim": np.sum(sim["free_claim"]),
        "free_stop": np.sum(sim["free_stop"]),
        "wald_claim": np.sum(sim["wald_claim"]),
        "wald_false_claim": np.sum(sim["wald_claim"] & null),
    }
    fixed = np.sum(sim["fixed_claims"], axis=0, dtype=np.float64)  # per look
    counts = _counts(sim["stop"], n_max)
    return np.concatenate(([float(sums[name]) for name in _AUDIT_SUMS], fixed, counts))


def _order_task(
    key: tuple[int, int], stream: int, size: int, r: int, m: int, shift: float, h: int,
    alpha: float,
) -> npt.NDArray[np.float64]:  # fmt: skip
    """One task of sequential_order_study: the sums (_ORDER_SUMS, then the counts of
    orders scored) of its replications from Philox stream ``stream``."""
    rng = _stream(key, stream)
    canonical = rng.standard_normal((size, r, 1)) + shift
    exceed = rng.standard_normal((size, r, m)) >= canonical
    verdict, fixed, scored = _order_replications(exceed, h, alpha)
    return np.concatenate(([float(verdict.sum()), float(fixed.sum())], _counts(scored, r * m)))


def _audit_replications(
    pub: npt.NDArray[np.float64],
    fr: npt.NDArray[np.float64],
    q: float,
    relabel: bool,
    size: int,
    n_max: int,
    looks: npt.NDArray[np.int64],
    effect: float | None,
    alpha: float,
    z_half: float,
    horizon: int | None,
    *,
    rng: np.random.Generator,
) -> dict[str, npt.NDArray[Any]]:
    big_n, k = fr.shape
    labels = np.broadcast_to(np.concatenate((pub[:, None], fr), axis=1), (size, big_n, k + 1))
    if relabel:  # swap the public label with a uniformly chosen one of the K + 1
        pick = rng.integers(0, k + 1, size=(size, big_n))
        rows = np.arange(size)[:, None]
        cols = np.arange(big_n)[None, :]
        labels = labels.copy()
        chosen = labels[rows, cols, pick]
        labels[rows, cols, pick] = labels[:, :, 0]
        labels[:, :, 0] = chosen
    public_now = labels[:, :, 0]
    planted = np.where(rng.random((size, big_n)) < q, 1.0, public_now)
    gaps = planted - labels[:, :, 1:].mean(axis=2)
    truth = gaps.mean(axis=1)
    order = np.argsort(rng.random((size, big_n)), axis=1)[:, :n_max]
    d = np.take_along_axis(gaps, order, axis=1)
    x = (d + 1.0) / 2.0
    tuned = _monitored_audit(x, truth, big_n, n_max, looks, effect, alpha, horizon)
    free = (
        tuned
        if horizon is None
        else _monitored_audit(x, truth, big_n, n_max, looks, effect, alpha, None)
    )
    # The fixed-n audit (no control bank: the claim is Delta's interval at alpha/2 above
    # zero) with the fixed-time betting interval, at every look's n on the same parents.
    fixed = np.stack(
        [
            np.asarray(
                betting_intervals(
                    np.ascontiguousarray(d[:, :n]), population_size=big_n, alpha=alpha / 2.0
                ).low
            )
            > 0.0
            for n in looks
        ],
        axis=1,
    )
    # Naive peeking: the finite-population Wald interval at alpha/2 read at every look.
    t = looks.astype(np.float64)
    s1 = np.cumsum(d, axis=1)[:, looks - 1]
    s2 = np.cumsum(d * d, axis=1)[:, looks - 1]
    mean = s1 / t
    var = np.maximum(s2 - t * mean * mean, 0.0) / np.maximum(t - 1.0, 1.0)
    half = z_half * np.sqrt(var / t * (1.0 - t / big_n))
    wald_claim = ((mean - half) > 0.0).any(axis=1)
    return {
        "truth": truth,
        "claim": tuned["claim"],
        "bounded": tuned["bounded"],
        "covered": tuned["covered"],
        "stop": tuned["stop"],
        "free_claim": free["claim"],
        "free_stop": free["stop"],
        "fixed_claims": fixed,  # (size, looks)
        "wald_claim": wald_claim,
    }


def _monitored_audit(
    x: npt.NDArray[np.float64],
    truth: npt.NDArray[np.float64],
    big_n: int,
    n_max: int,
    looks: npt.NDArray[np.int64],
    effect: float | None,
    alpha: float,
    horizon: int | None,
) -> dict[str, npt.NDArray[Any]]:
    """The sequential audit read at ``looks`` on each row of ``x`` (the parents' (d + 1)/2
    in scoring order): claim, bounded, Delta_N covered at the stop, parents at the stop."""
    size = x.shape[0]
    zero = np.full(size, 0.5)
    bets, bets_half = _log_bets(x, alpha, horizon), _log_bets(x, alpha / 2.0, horizon)
    above_zero, _ = _first_hits(x, zero, big_n, alpha, bets)
    above_zero_half, _ = _first_hits(x, zero, big_n, alpha / 2.0, bets_half)
    t_find = np.maximum(above_zero, above_zero_half)
    if effect is None:
        t_bound = np.full(size, n_max + 1)
    else:
        _, t_bound = _first_hits(x, np.full(size, (effect + 1.0) / 2.0), big_n, alpha, bets)
    miss_up, miss_down = _first_hits(x, (truth + 1.0) / 2.0, big_n, alpha, bets)

    # Decisions are read at the looks only: the first look at or after each event.
    def at_look(t: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        i = np.searchsorted(looks, t)
        return np.where(i < looks.shape[0], looks[np.minimum(i, looks.shape[0] - 1)], n_max + 1)

    find_look, bound_look = at_look(t_find), at_look(t_bound)
    claim = find_look <= bound_look
    claim &= find_look <= n_max
    stop = np.minimum(np.minimum(find_look, bound_look), n_max)
    return {
        "claim": claim,
        "bounded": ~claim & (bound_look <= n_max),
        "covered": np.minimum(miss_up, miss_down) > stop,
        "stop": stop,
    }


def sequential_order_study(
    *,
    n_shards: int = 10,
    max_permutations: int = 99,
    h: int = 10,
    shifts: float | Sequence[float] = (0.0, 1.0, 2.0, 3.0),
    replications: int = 2000,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """Size, power and orders scored of :class:`SequentialExchangeabilityTest`, by simulation.

    In each replication every shard's published-order log-likelihood is N(shift, 1) and
    its shuffled orders' are N(0, 1) (shift = 0: a clean model, the orders exchangeable;
    shift > 0: the published order is likelier, as memorisation makes it). Shards draw
    their orders in lockstep, one per round, each stopping by Besag & Clifford's rule
    with ``h``; the pooled Fisher verdict stops when decided.

    ``n_threads``, ``progress``, ``executor`` and ``checkpoint`` work as in
    :func:`sequential_study` (a cell per shift, tasks of 250 replications): the table is
    the same for any thread count, executor or resumed checkpoint.

    Returns:
        A :class:`~truescore_fast.StudyTable`, one row per shift: ``rejection_rate`` and
        ``rejection_se`` (the sequential test; at shift 0 its size, at most alpha),
        ``fixed_rate`` (the fixed test scoring all ``max_permutations`` orders, on the
        same draws), ``mean_orders`` and ``median_orders`` (shuffled orders scored, over
        all shards), ``orders_fixed`` (n_shards x max_permutations) and ``saving`` (the
        fraction of the fixed design's orders not scored).

    What it does not mean: real log-likelihoods are not normal and shards differ; the
    saving for a clean model depends only on ranks, so it carries over, but the power
    at a given shift does not.
    """
    from truescore_fast.calibration import _columns, _floats, _rate, _replications, _run_meta

    r = check_positive_int("n_shards", n_shards)
    m = check_positive_int("max_permutations", max_permutations)
    hh = check_positive_int("h", h)
    shift_values = _floats("shifts", shifts, low=-math.inf, high=math.inf, high_open=False)
    reps = _replications(replications)
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    rows = []
    per_row = [(r, m, shift, hh, alpha) for shift in shift_values]
    engine = {"n_threads": threads, "progress": progress, "executor": executor}
    totals = _run_rows(
        _order_task, per_row, reps, key, "sequential order test", checkpoint, engine
    )
    for shift, total in zip(shift_values, totals, strict=True):
        sums = dict(zip(_ORDER_SUMS, total, strict=False))
        orders = _from_counts(total[len(_ORDER_SUMS) :])
        rate, se = _rate(float(sums["rejections"]), reps)
        rows.append(
            (
                shift,
                rate,
                se,
                float(sums["fixed_rejections"] / reps),
                float(orders.mean()),
                float(np.median(orders)),
                r * m,
                1.0 - float(orders.mean()) / (r * m),
            )
        )
    names = (
        "shift", "rejection_rate", "rejection_se", "fixed_rate", "mean_orders",
        "median_orders", "orders_fixed", "saving",
    )  # fmt: skip
    columns = _columns(names, rows)
    return StudyTable(
        title=(
            f"Sequential order test: {r} shards x up to {m} shuffled orders, h = {hh}, "
            f"alpha = {alpha:g}"
        ),
        columns=columns,
        notes=(
            f"{reps} replications per row, seed {seed!r}. At shift 0 rejection_rate is the "
            "size (at most alpha); saving is the share of the fixed design's orders not "
            "scored.",
            "Normal log-likelihoods are a model: the saving for a clean model depends only "
            "on ranks and carries over; the power at a given shift does not.",
        ),
        meta=_run_meta("sequential_order", seed, key, reps)
        | {"replications_per_task": _STUDY_TASK},
    )


def _order_replications(
    exceed: npt.NDArray[np.bool_], h: int, alpha: float
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """Sequential and fixed verdicts and orders scored for exceedance draws (R, S, m)."""
    reps, shards, m = exceed.shape
    counts = np.cumsum(exceed, axis=2)  # exceedances after each draw
    reached = counts >= h
    stop = np.where(reached.any(axis=2), reached.argmax(axis=2) + 1, m)  # BC stopping draw
    fixed_p = (counts[:, :, -1] + 1.0) / (m + 1.0)
    fixed = special.chdtrc(2 * shards, -2.0 * np.log(fixed_p).sum(axis=1)) < alpha
    decided = np.zeros(reps, dtype=bool)
    verdict = np.zeros(reps, dtype=bool)
    scored = np.zeros(reps, dtype=np.int64)
    for k in range(m + 1):  # k orders drawn by every open shard
        draws = np.minimum(stop, k)
        g = np.take_along_axis(
            np.concatenate((np.zeros((reps, shards, 1), dtype=counts.dtype), counts), axis=2),
            draws[:, :, None],
            axis=2,
        )[:, :, 0].astype(np.float64)
        done = draws >= stop
        p_stop = np.where(g >= h, h / np.maximum(draws, 1), (g + 1.0) / (m + 1.0))
        earliest = draws + (h - g)
        p_high_open = np.where(earliest <= m, h / earliest, (g + (m - draws) + 1.0) / (m + 1.0))
        low = np.where(done, p_stop, (g + 1.0) / (m + 1.0))
        high = np.where(done, p_stop, p_high_open)
        f_low = special.chdtrc(2 * shards, -2.0 * np.log(low).sum(axis=1))
        f_high = special.chdtrc(2 * shards, -2.0 * np.log(high).sum(axis=1))
        now = ~decided & ((f_high < alpha) | (f_low >= alpha))
        verdict[now] = f_high[now] < alpha
        scored[now] = draws[now].sum(axis=1)
        decided |= now
        if decided.all():
            break
    return verdict, fixed, scored

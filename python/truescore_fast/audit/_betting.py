"""The betting machinery behind the confidence sequences: the truncated plug-in bets, the
capital of a candidate mean, and the search for the sequence's ends.

Shared by :mod:`truescore_fast.audit.sequential` (the sequential audit) and
:mod:`truescore_fast.studies.sequential` (the study that simulates it), which reads the
bets once per alpha for all its first-hit searches. Not a public API.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from truescore_fast._validation import (
    check_positive_int,
)

__all__ = [
    "FEASIBLE_SLACK",
    "capital_logs",
    "check_horizon",
    "check_population",
    "feasible_gap_range",
    "log_bets",
    "log_capital_max",
    "sequence_bounds",
]

# Bets are truncated at _TRUNCATION / m (up) and _TRUNCATION / (1 - m) (down), as in the
# fixed-time betting interval, so every factor of the capital is at least 1/4.
_TRUNCATION = 0.75
_SECTIONS = 16  # each refining pass cuts an end's bracket 16-fold ...
_TOLERANCE = 1e-14  # ... until it is this narrow
_MARGIN = 1e-12  # and the end is then moved this much further out
# A candidate is ruled out by the data when it lies outside the feasible range by more
# than this on the [0, 1] scale (rounding in (N m - sum) / (N - t + 1) must not rule out
# the true mean of an all-0 or all-1 rest).
_SLACK = 1e-12
# The feasible range of a mean gap is rounded outward by this (as kFeasibleSlack in
# src/cpp/truescore/intervals.hpp: far above the rounding of its sum and divisions).
FEASIBLE_SLACK = 64.0 * 2.220446049250313e-16


def feasible_gap_range(
    d: npt.NDArray[np.float64], population_size: int | None
) -> tuple[float, float]:
    """The values the mean gap of ``population_size`` parents can take when the gaps ``d``
    (in [-1, 1]) were scored and the other N - n lie anywhere in [-1, 1]:
    [(sum d - (N - n)) / N, (sum d + (N - n)) / N], rounded outward by
    :data:`FEASIBLE_SLACK`; at a census exactly the point mean; [-1, 1] without a
    population. A confidence set for a finite population's mean never needs to reach
    outside it."""
    if population_size is None:
        return -1.0, 1.0
    n = d.shape[0]
    if n == population_size:
        mean = float(np.mean(d))
        return mean, mean
    total, rest = math.fsum(d.tolist()), float(population_size - n)
    return (
        max(-1.0, (total - rest) / population_size - FEASIBLE_SLACK),
        min(1.0, (total + rest) / population_size + FEASIBLE_SLACK),
    )


def capital_logs(
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
    one per row); ``log_bet`` is :func:`log_bets` of ``x``. Returns the running logs of
    the up-betting and down-betting capitals, and where the candidate lies below or above
    the values the population mean can take given x_1..x_t (N m < S_t or
    N m > S_t + N - t: impossible from that step on; never without a population).
    """
    n = x.shape[-1]
    shape = np.broadcast_shapes(m.shape, x.shape)
    if population_size is None:
        mt = np.broadcast_to(m, shape)
        too_low = too_high = np.broadcast_to(np.False_, shape)  # no candidate impossible
    else:
        zero = np.zeros(x.shape[:-1] + (1,))
        through = np.cumsum(x, axis=-1)  # S_t, i <= t
        before = np.concatenate((zero, through[..., :-1]), axis=-1)  # S_{t-1}, i < t
        remaining = population_size - np.arange(n, dtype=np.float64)  # N - t + 1
        with np.errstate(divide="ignore", invalid="ignore"):
            mt = (population_size * m - before) / remaining
        total = population_size * m
        too_low = total < through - population_size * _SLACK
        too_high = total > through + (remaining - 1.0) + population_size * _SLACK
        mt = np.clip(mt, 0.0, 1.0)
    bet = np.exp(log_bet)
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.minimum(bet, _TRUNCATION / mt)
        down = np.minimum(bet, _TRUNCATION / (1.0 - mt))
    step = x - mt
    log_up = np.cumsum(np.log1p(up * step), axis=-1)
    log_down = np.cumsum(np.log1p(-down * step), axis=-1)
    return log_up, log_down, too_low, too_high


def log_capital_max(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    log_bet: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """max over t of log(hedged capital_t(m)) for each candidate mean in ``m`` (shape (G,)),
    for one sequence ``x``; +inf for a candidate the data make impossible."""
    log_up, log_down, too_low, too_high = capital_logs(x, m[:, None], population_size, log_bet)
    # Hedged as in the fixed-time interval: half the wealth bets up, half down, and a
    # candidate falls when either half alone reaches 1/alpha (max, not sum).
    best = (np.maximum(log_up, log_down) - math.log(2.0)).max(axis=1)
    best[(too_low | too_high).any(axis=1)] = math.inf
    return best


def log_bets(
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


def _half_peaks(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    bet: npt.NDArray[np.float64],
    up: bool,
) -> npt.NDArray[np.float64]:
    """max over t of the log of one half's capital (``up``: the half betting the mean is
    above m) at each candidate of ``m`` (G,), all feasible given the whole of ``x``."""
    n = x.shape[0]
    if population_size is None:
        mt = np.broadcast_to(m[:, None], (m.shape[0], n))
    else:
        before = np.concatenate(([0.0], np.cumsum(x)[:-1]))
        remaining = population_size - np.arange(n, dtype=np.float64)
        mt = np.clip((population_size * m[:, None] - before) / remaining, 0.0, 1.0)
    with np.errstate(divide="ignore"):
        if up:
            factor = np.minimum(bet, _TRUNCATION / mt) * (x - mt)
        else:
            factor = -np.minimum(bet, _TRUNCATION / (1.0 - mt)) * (x - mt)
    return np.asarray(np.cumsum(np.log1p(factor), axis=1).max(axis=1))


def sequence_bounds(
    x: npt.NDArray[np.float64], population_size: int | None, alpha: float, horizon: int | None
) -> tuple[float, float, bool]:
    """The confidence sequence for the mean of ``x`` (in [0, 1]) after all of ``x``: the
    candidates whose hedged capital never reached 1/alpha, searched within the values the
    mean can take given ``x`` (the whole of [0, 1] without a population). Ends rounded
    outward; ``(nan, nan, True)`` when every feasible candidate is rejected.

    Each half of the capital is monotone in the candidate (the up-betting half falls as m
    rises, the down-betting half grows), so the candidates the up-betting half rejects
    are those below one point and the down-betting half's those above another: each end
    is that half's own crossing of 2/alpha, bracketed between the ends of the feasible
    range and cut 16-fold per pass. No grid of [0, 1] is involved, so a feasible range
    however narrow (a few parents short of a census) is searched as finely as a wide one.
    """
    t = x.shape[0]
    if population_size is not None and population_size == t:
        mean = float(np.mean(x))  # a census: the mean is known exactly
        return mean, mean, False
    bet = np.exp(log_bets(x, alpha, horizon))
    threshold = math.log(2.0) - math.log(alpha)  # half the wealth reaching 1/alpha
    if population_size is None:
        first, last = 0.0, 1.0
    else:
        total = math.fsum(x.tolist())
        first = max(0.0, total / population_size - _SLACK)
        last = min(1.0, (total + population_size - t) / population_size + _SLACK)

    def rejected(m: npt.NDArray[np.float64], up: bool) -> npt.NDArray[np.bool_]:
        return np.asarray(_half_peaks(x, m, population_size, bet, up) >= threshold)

    # Each end's bracket: [rejected, kept] candidates of its half, or None when the edge
    # of the feasible range itself is kept (the end is that edge).
    edges = np.array([first, last])
    below_rejected = rejected(edges, up=True)  # the up-betting half at both edges
    above_rejected = rejected(edges, up=False)
    if below_rejected[1] or above_rejected[0]:
        return math.nan, math.nan, True  # one half rejects every feasible candidate
    brackets: list[list[float] | None] = [
        [first, last] if below_rejected[0] else None,
        [last, first] if above_rejected[1] else None,
    ]
    fractions = np.arange(1, _SECTIONS) / _SECTIONS
    while True:
        live = [
            (k, b)
            for k, b in enumerate(brackets)
            if b is not None and abs(b[1] - b[0]) > _TOLERANCE
        ]
        if not live:
            break
        for k, b in live:
            points = b[0] + fractions * (b[1] - b[0])  # from the rejected end to the kept one
            row = ~rejected(points, up=k == 0)
            kept = np.flatnonzero(row)
            j = int(kept[0]) if kept.size else row.shape[0]
            new_rejected = float(points[j - 1]) if j > 0 else b[0]
            new_kept = float(points[j]) if j < row.shape[0] else b[1]
            if new_rejected == b[0] and new_kept == b[1]:
                b[1] = b[0]  # no float between them: done
            else:
                b[0], b[1] = new_rejected, new_kept

    # The rejected side of each bracket, then a further _MARGIN out: an end never moves
    # inward, even by the rounding of mapping it to a gap and back.
    low = first if brackets[0] is None else max(brackets[0][0] - _MARGIN, 0.0)
    high = last if brackets[1] is None else min(brackets[1][0] + _MARGIN, 1.0)
    if low > high:
        return math.nan, math.nan, True  # the halves' rejections cross: no candidate left
    return low, high, False


_NO_AUTO = object()  # check_horizon's auto for a function that takes no "auto"


def check_horizon(horizon: Any, auto: Any = _NO_AUTO, most: int | None = None) -> int | None:
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


def check_population(population_size: Any, n: int) -> int | None:
    if population_size is None:
        return None
    size = check_positive_int("population_size", population_size)
    if size < n:
        raise ValueError(
            f"population_size must be at least the number of parents ({n}); got {size}"
        )
    return size


# ---------------------------------------------------------------------- the studies

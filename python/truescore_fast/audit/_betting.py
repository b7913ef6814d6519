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
    one_line,
)

__all__ = [
    "capital_logs",
    "check_horizon",
    "check_population",
    "log_bets",
    "log_capital_max",
    "sequence_bounds",
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


def sequence_bounds(
    x: npt.NDArray[np.float64], population_size: int | None, alpha: float, horizon: int | None
) -> tuple[float, float, bool]:
    """The confidence sequence for the mean of ``x`` (in [0, 1]) after all of ``x``: the
    candidates whose hedged capital never reached 1/alpha. Ends rounded outward."""
    if population_size is not None and population_size == x.shape[0]:
        mean = float(np.mean(x))  # a census: the mean is known exactly
        return mean, mean, False
    log_bet = log_bets(x, alpha, horizon)
    threshold = -math.log(alpha)

    def kept(m: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
        return np.asarray(log_capital_max(x, m, population_size, log_bet) < threshold)

    grid = np.linspace(0.0, 1.0, _GRID)
    inside = kept(grid)
    if not inside.any():
        # Nothing on the grid survives: look between grid points around the smallest
        # capital before calling the set empty.
        values = log_capital_max(x, grid, population_size, log_bet)
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


_NO_AUTO = object()  # check_horizon's auto for a function that takes no "auto"


def check_horizon(horizon: Any, auto: Any = _NO_AUTO, most: int | None = None) -> int | None:
    """None (horizon-free bets) or the number of parents the bets are tuned to, at most
    ``most`` (the population: a larger horizon is never reached). ``"auto"`` stands for
    ``auto`` where the caller allows it."""
    forms = "an integer >= 1 or None" if auto is _NO_AUTO else "an integer >= 1, 'auto' or None"
    if isinstance(horizon, str):
        if horizon == "auto" and auto is not _NO_AUTO:
            return cast("int | None", auto)
        raise ValueError(f"horizon must be {forms}; got {one_line(horizon)}")
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

"""The betting machinery behind the confidence sequences: the truncated plug-in bets, the
capital of a candidate mean, and the search for the sequence's ends.

Shared by :mod:`truescore_fast.audit.sequential` (the sequential audit) and
:mod:`truescore_fast.studies.sequential` (the study that simulates it), which reads the
bets once per alpha for all its first-hit searches. Not a public API.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._validation import (
    check_positive_int,
    one_line,
)
from truescore_fast.errors import ArgumentError

__all__ = [
    "Bets",
    "FEASIBLE_SLACK",
    "IncrementalSequence",
    "RunningSum",
    "capital_logs",
    "check_horizon",
    "check_population",
    "feasible_gap_range",
    "gap_range",
    "log_bets",
    "log_capital_max",
    "sequence_bounds",
]

# Bets tuned to a horizon are truncated at _TRUNCATION / m (up) and _TRUNCATION / (1 - m)
# (down), as in the fixed-time betting interval, so every factor of the capital is at
# least 1/4.
_TRUNCATION = 0.75
# The horizon-free capital (issue 22, part 3): the weighted average of capital processes,
# each betting Waudby-Smith & Ramdas's fixed-time plug-in bets tuned to its own horizon h
# and its own share w of the wealth, sqrt(2 log(2 / (w alpha)) / (sigma-hat^2_{t-1}
# max(t, h))) (w alpha is the level it must reach alone), truncated at one level while
# the running variance estimate sigma-hat^2_{t-1} is below _LOW_VARIANCE and at another
# after: (w, h, truncation at low variance, otherwise). Each process is a nonnegative
# supermartingale at the true mean (its bets and truncations depend only on the earlier
# observations), so their average is one too and Ville's inequality bounds it; each is
# monotone in the candidate mean, so the average is (see sequence_bounds). The short
# horizons' bets are large: on gaps of low variance (most x_t at 1/2) they may go to 0.9
# of what the candidate allows, on spread gaps, where large bets lose capital, to 0.7.
# The long horizons' bets are small and truncated at 1/2 (confseq's hedged_cs). The
# weights sum to 1; past the last horizon the bets shrink as 1/sqrt(t).
_LOW_VARIANCE = 0.045
_MIXTURE: tuple[tuple[float, float | None, float, float], ...] = (
    (0.65 / 3, 10.0, 0.9, 0.7),
    (0.65 / 3, 25.0, 0.9, 0.7),
    (0.65 / 3, 50.0, 0.9, 0.7),
    (0.35 / 4, 100.0, 0.5, 0.5),
    (0.35 / 4, 200.0, 0.5, 0.5),
    (0.35 / 4, 500.0, 0.5, 0.5),
    (0.35 / 4, 1000.0, 0.5, 0.5),
)
# A candidate is ruled out by the data when it lies outside the feasible range by more
# than this on the [0, 1] scale (rounding in (N m - sum) / (N - t + 1) must not rule out
# the true mean of an all-0 or all-1 rest).
_SLACK = 1e-12
# The feasible range of a mean gap is rounded outward by this: the core's kFeasibleSlack
# (src/cpp/truescore/intervals.hpp: far above the rounding of its sum and divisions).
FEASIBLE_SLACK: float = _core.FEASIBLE_SLACK


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
    return gap_range(math.fsum(d.tolist()), n, population_size, float(np.mean(d)))


def gap_range(total: float, n: int, population_size: int, mean: float) -> tuple[float, float]:
    """:func:`feasible_gap_range` from the sum ``total`` of the n gaps (the point ``mean``
    at a census)."""
    if n == population_size:
        return mean, mean
    rest = float(population_size - n)
    return (
        max(-1.0, (total - rest) / population_size - FEASIBLE_SLACK),
        min(1.0, (total + rest) / population_size + FEASIBLE_SLACK),
    )


class RunningSum:
    """A sum that grows by arrays, compensated (Neumaier): within a rounding or two of
    math.fsum of everything added, at the cost of what is added."""

    def __init__(self) -> None:
        self.total = 0.0
        self.carry = 0.0
        self.count = 0

    def add(self, values: npt.NDArray[np.float64]) -> None:
        total, carry = self.total, self.carry
        for v in values.tolist():
            new = total + v
            if abs(total) >= abs(v):
                carry += (total - new) + v
            else:
                carry += (v - new) + total
            total = new
        self.total, self.carry = total, carry
        self.count += values.shape[0]

    @property
    def value(self) -> float:
        return self.total + self.carry


class Bets(NamedTuple):
    """The predictable bets of a capital that averages K capital processes: each one's
    log weight (K,), and its truncation levels and log plug-in bets (each (K, ..., n))
    along the observations (from :func:`log_bets`), and the bets themselves."""

    log_weight: npt.NDArray[np.float64]
    truncation: npt.NDArray[np.float64]
    log_bet: npt.NDArray[np.float64]
    bet: npt.NDArray[np.float64]  # exp(log_bet)


def _log_factors_of(
    x: npt.NDArray[np.float64],
    mt: npt.NDArray[np.float64],
    bet: npt.NDArray[np.float64],
    truncation: npt.NDArray[np.float64],
    up: bool,
) -> npt.NDArray[np.float64]:
    """log of one capital's factors 1 + lambda (x - m_t) (``up``) or 1 - lambda (x - m_t),
    lambda the bet truncated at truncation / m_t (up) or truncation / (1 - m_t) (down)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if up:
            factor = np.minimum(bet, truncation / mt) * (x - mt)
        else:
            factor = -np.minimum(bet, truncation / (1.0 - mt)) * (x - mt)
    return np.asarray(np.log1p(factor))


def _mixed(
    log_weight: npt.NDArray[np.float64], logs: list[npt.NDArray[np.float64]]
) -> npt.NDArray[np.float64]:
    """log of sum_k exp(log_weight[k] + logs[k]), added in k order (np.logaddexp)."""
    out = log_weight[0] + logs[0]
    for k in range(1, len(logs)):
        out = np.logaddexp(out, log_weight[k] + logs[k])
    return np.asarray(out)


def capital_logs(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    bets: Bets,
    halves: tuple[bool, bool] = (True, True),
) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]
]:
    """The hedged capital's two halves at candidate means ``m``, step by step.

    ``x`` are observations in [0, 1] in their order along the last axis (one sequence, or
    one per row); ``m`` broadcasts against it ((G, 1) candidates for one sequence, (R, 1)
    one per row); ``bets`` is :func:`log_bets` of ``x``. Returns the running logs of
    the up-betting and down-betting capitals (each the weighted average of the bets'
    capital processes), and where the candidate lies below or above
    the values the population mean can take given x_1..x_t (N m < S_t or
    N m > S_t + N - t: impossible from that step on; never without a population).
    ``halves`` (up, down) says which halves to compute; one not computed is -inf
    throughout (it never reaches anything).
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
    out = []
    for up, wanted in zip((True, False), halves, strict=True):
        if not wanted:
            out.append(np.full(shape, -math.inf))
            continue
        logs = [
            np.cumsum(_log_factors_of(x, mt, b, c, up), axis=-1)
            for b, c in zip(bets.bet, bets.truncation, strict=True)
        ]
        out.append(_mixed(bets.log_weight, logs))
    return out[0], out[1], too_low, too_high


def log_capital_max(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    bets: Bets,
) -> npt.NDArray[np.float64]:
    """max over t of log(hedged capital_t(m)) for each candidate mean in ``m`` (shape (G,)),
    for one sequence ``x``; +inf for a candidate the data make impossible."""
    log_up, log_down, too_low, too_high = capital_logs(x, m[:, None], population_size, bets)
    # Hedged as in the fixed-time interval: half the wealth bets up, half down, and a
    # candidate falls when either half alone reaches 1/alpha (max, not sum).
    best = (np.maximum(log_up, log_down) - math.log(2.0)).max(axis=1)
    best[(too_low | too_high).any(axis=1)] = math.inf
    return best


def _plug_in_log_bets(
    var_prev: npt.NDArray[np.float64],
    t: npt.NDArray[np.float64],
    alpha: float,
    horizon: float | None,
) -> npt.NDArray[np.float64]:
    """log of the plug-in bets sqrt(2 log(2/alpha) / (sigma-hat^2_{t-1} s_t)) at steps t,
    s_t = t log(1 + t) (``horizon`` None) or max(t, horizon)."""
    log_2_over_alpha = math.log(2.0) - math.log(alpha)
    if horizon is None:
        log_scale = np.log(t) + np.log(np.log1p(t))
    else:
        log_scale = np.log(np.maximum(t, float(horizon)))
    return np.asarray(
        0.5 * (math.log(2.0) + math.log(log_2_over_alpha) - np.log(var_prev) - log_scale)
    )


def _components(horizon: int | None) -> tuple[tuple[float, float | None, float, float], ...]:
    """(weight, horizon, truncation at low variance, otherwise) of each capital process
    the bets average."""
    if horizon is None:
        return _MIXTURE
    return ((1.0, float(horizon), _TRUNCATION, _TRUNCATION),)


def _bets_from(
    var_prev: npt.NDArray[np.float64],
    t: npt.NDArray[np.float64],
    alpha: float,
    horizon: int | None,
) -> Bets:
    parts = _components(horizon)
    low = var_prev < _LOW_VARIANCE
    log_bet = np.stack([_plug_in_log_bets(var_prev, t, alpha * w, h) for w, h, _, _ in parts])
    return Bets(
        np.log(np.array([part[0] for part in parts])),
        np.stack([np.where(low, c_low, c_high) for _, _, c_low, c_high in parts]),
        log_bet,
        np.exp(log_bet),
    )


def log_bets(x: npt.NDArray[np.float64], alpha: float, horizon: int | None = None) -> Bets:
    """The predictable bets along the last axis of ``x``: :class:`Bets`.

    Tuned to a horizon n: one capital process with Waudby-Smith & Ramdas's fixed-time
    plug-in bets sqrt(2 log(2/alpha) / (sigma-hat^2_{t-1} max(t, n))) truncated at 3/4,
    the bets of :func:`~truescore_fast.betting_interval` at n up to n, and beyond n those
    of the fixed-time interval at t. Horizon-free (``horizon`` None): the weighted average
    of the capital processes of ``_MIXTURE``, each with those bets tuned to its own
    horizon and to w alpha (w its weight) and truncated at its own levels (one while
    sigma-hat^2_{t-1} < ``_LOW_VARIANCE``, the other after). Either way lambda_t and its
    truncation use only x_1..x_{t-1}."""
    n = x.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1.0)  # mu-hat_t, t = 1..n
    var = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1.0)  # sigma-hat^2_t
    first = np.full(x.shape[:-1] + (1,), 0.25)
    var_prev = np.concatenate((first, var[..., :-1]), axis=-1)
    return _bets_from(var_prev, t, alpha, horizon)


def sequence_bounds(
    x: npt.NDArray[np.float64], population_size: int | None, alpha: float, horizon: int | None
) -> tuple[float, float, bool]:
    """The sequence's ends after reading ``x``, compiled (``_core.sequence_bounds``; its
    NumPy definition is tests/sequence_reference.py's): the same search over the same
    candidates, the capital kept as products of its factors rather than
    sums of their log1p (see src/cpp/truescore/sequence.hpp), so the same ends but where
    a candidate lies within the capital's rounding of a crossing."""
    return cast(
        "tuple[float, float, bool]",
        _core.sequence_bounds(
            np.ascontiguousarray(x, dtype=np.float64), population_size, alpha, horizon
        ),
    )


# The incremental sequence that SequentialAudit uses (its NumPy definition,
# NumpyIncrementalSequence, in tests/sequence_reference.py)
# (src/cpp/truescore/sequence.hpp): ConfidenceSequence(population_size, alpha, horizon),
# extend(x), bounds(), exact_bounds(), t, work and x, as there.
IncrementalSequence = _core.ConfidenceSequence


_NO_AUTO = object()  # check_horizon's auto for a function that takes no "auto"


def check_horizon(horizon: Any, auto: Any = _NO_AUTO, most: int | None = None) -> int | None:
    """None (horizon-free bets) or the number of parents the bets are tuned to, at most
    ``most`` (the population: a larger horizon is never reached). ``"auto"`` stands for
    ``auto`` where the caller allows it."""
    forms = "an integer >= 1 or None" if auto is _NO_AUTO else "an integer >= 1, 'auto' or None"
    if isinstance(horizon, str):
        if horizon == "auto" and auto is not _NO_AUTO:
            return cast("int | None", auto)
        raise ArgumentError("horizon", f"horizon must be {forms}; got {one_line(horizon)}")
    if horizon is None:
        return None
    tuned = check_positive_int("horizon", horizon)
    if most is not None and tuned > most:
        raise ArgumentError(
            "horizon",
            template=f"{{horizon}} must be at most {{population_size}} ({most}): no more "
            f"parents can be scored; got {tuned}",
        )
    return tuned


def check_population(population_size: Any, n: int) -> int | None:
    if population_size is None:
        return None
    size = check_positive_int("population_size", population_size)
    if size < n:
        raise ArgumentError(
            "population_size",
            f"population_size must be at least the number of parents ({n}); got {size}",
        )
    return size

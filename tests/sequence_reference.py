"""The NumPy definitions of the betting confidence sequence, the references the compiled
sequence (src/cpp/truescore/sequence.hpp) is tested against bit for bit: one reading's
ends (numpy_sequence_bounds), the incremental sequence (NumpyIncrementalSequence) and
the sequential study's first hits (numpy_first_hits). They lived in the package until the
sequence was compiled (issue 37); only tests and benchmarks run them.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from truescore_fast.audit._betting import (
    _SLACK,
    Bets,
    RunningSum,
    _bets_from,
    _components,
    _log_factors_of,
    _mixed,
    capital_logs,
    log_bets,
)

# The search's constants, as src/cpp/truescore/sequence.hpp has them
_SECTIONS = 16  # each refining pass cuts an end's bracket 16-fold ...
_TOLERANCE = 1e-14  # ... until it is this narrow
_MARGIN = 1e-12  # and the end is then moved this much further out


def _half_peaks(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int | None,
    bets: Bets,
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
    logs = [
        np.cumsum(_log_factors_of(x, mt, b, c, up), axis=1)
        for b, c in zip(bets.bet, bets.truncation, strict=True)
    ]
    return np.asarray(_mixed(bets.log_weight, logs).max(axis=1))


def numpy_sequence_bounds(
    x: npt.NDArray[np.float64], population_size: int | None, alpha: float, horizon: int | None
) -> tuple[float, float, bool]:
    """The confidence sequence for the mean of ``x`` (in [0, 1]) after all of ``x``: the
    candidates whose hedged capital never reached 1/alpha, searched within the values the
    mean can take given ``x`` (the whole of [0, 1] without a population). Ends rounded
    outward; ``(nan, nan, True)`` when every feasible candidate is rejected.

    Each half of the capital is monotone in the candidate (the up-betting half falls as m
    rises, the down-betting half grows: each process's factor 1 + min(lambda_t, c / m_t)
    (x_t - m_t) falls as m_t rises, lambda_t and c not depending on m, and the weighted
    average of falling functions falls), so the candidates the up-betting half rejects
    are those below one point and the down-betting half's those above another: each end
    is that half's own crossing of 2/alpha, bracketed between the ends of the feasible
    range and cut 16-fold per pass. No grid of [0, 1] is involved, so a feasible range
    however narrow (a few parents short of a census) is searched as finely as a wide one.
    """
    t = x.shape[0]
    if population_size is not None and population_size == t:
        mean = float(np.mean(x))  # a census: the mean is known exactly
        return mean, mean, False
    bets = log_bets(x, alpha, horizon)
    threshold = math.log(2.0) - math.log(alpha)  # half the wealth reaching 1/alpha
    if population_size is None:
        first, last = 0.0, 1.0
    else:
        total = math.fsum(x.tolist())
        first = max(0.0, total / population_size - _SLACK)
        last = min(1.0, (total + population_size - t) / population_size + _SLACK)

    def rejected(m: npt.NDArray[np.float64], up: bool) -> npt.NDArray[np.bool_]:
        return np.asarray(_half_peaks(x, m, population_size, bets, up) >= threshold)

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


# The incremental sequence (IncrementalSequence) reports each end to within this share of
# the sequence's width, outward, and keeps at most _KEEP candidates per end.
_RESOLUTION = 1.0 / 512.0
_LADDER = 32
_KEEP = 64


class _End:
    """One end of an :class:`IncrementalSequence`: the candidates not yet rejected by its
    half of the capital, in ``key`` = m (the lower end, the up-betting half) or -m (the
    upper end) ascending, their capital's log now and its running peak, and the key of
    the innermost candidate rejected so far."""

    def __init__(self, up: bool) -> None:
        self.up = up
        self.sign = 1.0 if up else -1.0
        self.keys = np.empty(0)
        self.cap = np.empty((0, 0))  # (candidates, processes): each process's log capital
        self.peak = np.empty(0)
        self.rejected = -math.inf


class NumpyIncrementalSequence:
    """The betting confidence sequence of a growing sample, updated at the cost of the new
    observations (amortised): the definition :class:`IncrementalSequence` (the compiled
    ``_core.ConfidenceSequence``, which :class:`~truescore_fast.SequentialAudit` uses)
    carries out, kept as the reference the tests hold it to.

    It keeps, for each end, the capital of a few candidates near it (the up-betting
    half's for the lower end, the down-betting half's for the upper end), and carries
    them forward by the new observations alone: the same operations, in the same order,
    as :func:`sequence_bounds` on the whole sample, so a candidate's capital is the same
    number. A candidate the half rejects moves its end inward (the half is monotone in
    the candidate, so everything beyond it is rejected too); new candidates, which need
    the whole sample replayed, are placed only when the end has moved past those kept:
    a ladder of 32 candidates 1/512 of the sequence's width apart ahead of each end, and
    up to 15 candidates per pass in a bracket wider than 2/512 of the width. Each end
    read from it is thus the innermost rejected candidate rounded outward by 1e-12 (as
    in :func:`sequence_bounds`), at most 1/200 of the width outside the end
    :func:`sequence_bounds` finds (2/512 of a width that may have shrunk by a fifth
    since it was last settled), never inside it; within the feasible range of the
    population mean. :meth:`exact_bounds` gives :func:`sequence_bounds` itself. As an
    end drifts about width / (2 t) per observation, a ladder (32 replays of t steps)
    lasts about t / 8 observations: a constant cost per observation whatever t.
    """

    def __init__(self, population_size: int | None, alpha: float, horizon: int | None) -> None:
        self.population_size = population_size
        self.alpha = alpha
        self.horizon = horizon
        self.threshold = math.log(2.0) - math.log(alpha)
        parts = _components(horizon)
        self._log_weight = np.log(np.array([part[0] for part in parts]))
        self.t = 0
        self._x = np.empty(64)
        self._before = np.empty(64)  # S_{i-1}
        self._bet = np.empty((len(parts), 64))  # one row per process
        self._level = np.empty((len(parts), 64))  # each process's truncation level
        self._sum = 0.0  # S_t, by the sequential additions np.cumsum makes
        self._squares = 0.0  # sum of (x_i - mu_i)^2, likewise
        self._total = RunningSum()  # S_t again, compensated, for the feasible range
        self._ends = (_End(up=True), _End(up=False))
        for end in self._ends:
            end.cap = np.empty((0, len(parts)))
        self._width = 1.0
        self.empty = False
        self.work = 0  # candidate-steps of capital computed so far (a cost counter)

    @property
    def x(self) -> npt.NDArray[np.float64]:
        return self._x[: self.t]

    def _grow(self, size: int) -> None:
        if size <= self._x.shape[0]:
            return
        capacity = max(size, 2 * self._x.shape[0])
        for name in ("_x", "_before", "_bet", "_level"):
            old = getattr(self, name)
            new = np.empty(old.shape[:-1] + (capacity,))
            new[..., : self.t] = old[..., : self.t]
            setattr(self, name, new)

    def extend(self, x: npt.NDArray[np.float64]) -> None:
        """Add observations (in [0, 1], in order) and carry every candidate forward."""
        k = x.shape[0]
        start, stop = self.t, self.t + k
        self._grow(stop)
        sums = np.cumsum(np.concatenate(([self._sum], x)))
        t = np.arange(start + 1, stop + 1, dtype=np.float64)
        mu = (0.5 + sums[1:]) / (t + 1.0)
        squares = np.cumsum(np.concatenate(([self._squares], (x - mu) ** 2)))
        var_prev = ((0.25 + squares) / np.concatenate(([float(start) + 1.0], t + 1.0)))[:-1]
        bets = _bets_from(var_prev, t, self.alpha, self.horizon)
        self._x[start:stop] = x
        self._before[start:stop] = sums[:-1]
        self._bet[:, start:stop] = bets.bet
        self._level[:, start:stop] = bets.truncation
        self._sum, self._squares = float(sums[-1]), float(squares[-1])
        self._total.add(x)
        old = self.t
        self.t = stop
        for end in self._ends:
            if end.keys.size:
                steps = self._log_factors(end.sign * end.keys, old, stop, end.up)
                running = [
                    np.cumsum(np.concatenate((end.cap[:, k, None], step), axis=1), axis=1)
                    for k, step in enumerate(steps)
                ]
                end.cap = np.stack([r[:, -1] for r in running], axis=1)
                mixed = _mixed(self._log_weight, [r[:, 1:] for r in running])
                end.peak = np.maximum(end.peak, mixed.max(axis=1))

    def _log_factors(
        self, m: npt.NDArray[np.float64], start: int, stop: int, up: bool
    ) -> list[npt.NDArray[np.float64]]:
        """log1p of one half's factors at candidates ``m`` for steps start..stop - 1, one
        array per capital process, as :func:`_half_peaks` computes them."""
        x, bet, level = self._x[start:stop], self._bet[:, start:stop], self._level[:, start:stop]
        self.work += m.shape[0] * (stop - start) * bet.shape[0]
        if self.population_size is None:
            mt = np.broadcast_to(m[:, None], (m.shape[0], stop - start))
        else:
            remaining = self.population_size - np.arange(start, stop, dtype=np.float64)
            mt = np.clip(
                (self.population_size * m[:, None] - self._before[start:stop]) / remaining,
                0.0,
                1.0,
            )
        return [_log_factors_of(x, mt, b, c, up) for b, c in zip(bet, level, strict=True)]

    def _feasible(self) -> tuple[float, float]:
        if self.population_size is None:
            return 0.0, 1.0
        total, size = self._total.value, self.population_size
        return (
            max(0.0, total / size - _SLACK),
            min(1.0, (total + size - self.t) / size + _SLACK),
        )

    def _add(self, end: _End, keys: npt.NDArray[np.float64]) -> None:
        """New candidates (keys) for ``end``, their capital replayed over every step."""
        steps = self._log_factors(end.sign * keys, 0, self.t, end.up)
        running = [np.cumsum(step, axis=1) for step in steps]
        k = self._bet.shape[0]
        if self.t:
            cap = np.stack([r[:, -1] for r in running], axis=1)
            peak = _mixed(self._log_weight, running).max(axis=1)
        else:
            cap, peak = np.zeros((keys.size, k)), np.full(keys.size, -math.inf)
        merged = np.concatenate((end.keys, keys))
        order = np.argsort(merged, kind="stable")
        end.keys = merged[order]
        end.cap = np.concatenate((end.cap, cap))[order]
        end.peak = np.concatenate((end.peak, peak))[order]

    def _settle(self, end: _End, first: float, last: float) -> None:
        """Move ``end`` inward past the candidates its half has rejected, place new ones
        until its bracket is at most 2 x _RESOLUTION of the width, and keep a ladder of
        candidates _RESOLUTION of the width apart ahead of it for the observations to
        come (the slack of 2 lets the width halve before an old ladder needs filling)."""
        edge, far = (first, last) if end.up else (-last, -first)  # in keys
        resolution = max(_RESOLUTION * self._width, _TOLERANCE)
        while True:
            dead = (end.peak >= self.threshold) | (end.keys < edge)
            if dead.any():
                end.rejected = max(end.rejected, float(end.keys[dead].max()))
            alive = ~dead & (end.keys > end.rejected)
            end.keys, end.cap, end.peak = end.keys[alive], end.cap[alive], end.peak[alive]
            inner = max(end.rejected, edge)
            if inner >= far:
                return  # every feasible candidate rejected
            kept = float(end.keys[0]) if end.keys.size else far
            if end.keys.size and kept - inner <= 2.0 * resolution:
                break
            # up to 15 points, about `resolution` apart where the bracket allows
            count = min(_SECTIONS, max(2, math.ceil((kept - inner) / resolution)))
            points = inner + np.arange(1, count) / count * (kept - inner)
            if not end.keys.size:
                points = np.append(points, far)  # whether anything is kept at all
            points = np.unique(points[points > inner])
            if not points.size:
                break
            self._add(end, points)
        if end.keys.size < _LADDER // 2:
            # The end moves inward about width / (2 t) per observation: a ladder of
            # candidates `resolution` apart lasts about _LADDER t / 256 observations,
            # for _LADDER replays of t steps.
            ladder = float(end.keys[-1]) + resolution * np.arange(1.0, _LADDER + 1.0)
            ladder = ladder[ladder < far]
            if ladder.size:
                self._add(end, ladder)
        end.keys, end.cap, end.peak = end.keys[:_KEEP], end.cap[:_KEEP], end.peak[:_KEEP]

    def bounds(self) -> tuple[float, float, bool]:
        """The sequence now, as :func:`sequence_bounds` returns it (ends outward of its
        by at most _RESOLUTION of the width); at a census the exact mean."""
        if self.population_size is not None and self.t == self.population_size:
            mean = float(np.mean(self.x))
            return mean, mean, False
        if self.empty:
            return math.nan, math.nan, True
        first, last = self._feasible()
        lower, upper = self._ends
        while True:
            for end in self._ends:
                self._settle(end, first, last)
            low = max(lower.rejected - _MARGIN, first)
            high = min(-upper.rejected + _MARGIN, last)
            if (
                max(lower.rejected, first) >= last
                or max(upper.rejected, -last) >= -first
                or low > high
            ):
                self.empty = True
                return math.nan, math.nan, True
            # the resolution follows the width: settle again if it shrank by a fifth
            shrunk = 1.25 * (high - low) < self._width
            self._width = high - low
            if not shrunk:
                return low, high, False

    def exact_bounds(self) -> tuple[float, float, bool]:
        """:func:`sequence_bounds` of the whole sample (a pass over it per candidate
        tried), the incremental ends moved to its ends."""
        if self.population_size is not None and self.t == self.population_size:
            return self.bounds()
        low, high, empty = numpy_sequence_bounds(
            self.x, self.population_size, self.alpha, self.horizon
        )
        if empty:
            self.empty = True
            return low, high, empty
        first, last = self._feasible()
        lower, upper = self._ends
        # Each end is a rejected candidate moved _MARGIN outward: half of that inward is
        # still rejected (monotone halves), and reads back as the same end to 5e-13.
        if low > first:
            lower.rejected = max(lower.rejected, low + 0.5 * _MARGIN)
        if high < last:
            upper.rejected = max(upper.rejected, -(high - 0.5 * _MARGIN))
        self._width = high - low
        return low, high, False


def numpy_first_hits(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int,
    alpha: float,
    bets: Bets,
    halves: tuple[bool, bool] = (True, True),
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`_first_hits` in NumPy, from ``bets`` (:func:`log_bets` of ``x`` at
    ``alpha``): the reference the compiled one is tested against."""
    n = x.shape[1]
    log_up, log_down, too_low, too_high = capital_logs(
        x, m[:, None], population_size, bets, halves
    )
    threshold = math.log(2.0) - math.log(alpha)  # half the wealth reaching 1/alpha
    hit_up = (log_up >= threshold) | (too_low & halves[0])  # too low: m lies below the data
    hit_down = (log_down >= threshold) | (too_high & halves[1])

    def first(hit: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        return np.where(hit.any(axis=1), hit.argmax(axis=1) + 1, n + 1).astype(np.int64)

    return first(hit_up), first(hit_down)

"""The sequential order test: stop drawing shuffled orders when the verdict is known.

:class:`SequentialExchangeabilityTest`
    The order-based test of Oren et al. with Besag & Clifford's (1991) sequential
    Monte Carlo p-value: a shard stops drawing shuffled orders after ``h`` of them score
    at least as high as the published order, and the pooled (Fisher) verdict stops as
    soon as no further score can change it.
:func:`sequential_order_verdict`
    The same verdict from a table of the scores read so far.
:func:`besag_clifford_p_value`
    That p-value from its counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from truescore_fast._random import SeedLike
from truescore_fast._result import Result, TabularResult
from truescore_fast._validation import (
    check_alpha,
    check_index,
    check_positive_int,
    check_sequence,
    float_array,
    real_scalar,
)
from truescore_fast.contamination.sharded import shard_orders
from truescore_fast.errors import ArgumentError

__all__ = [
    "SequentialExchangeabilityTest",
    "SequentialVerdict",
    "ShardState",
    "besag_clifford_p_value",
    "sequential_order_verdict",
]


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
        raise ArgumentError(
            "draws",
            f"draws must be at most max_draws ({m}) and at least exceedances ({g}); got {n}",
        )
    if g >= hh:
        if g != hh:
            raise ArgumentError(
                "exceedances", f"exceedances cannot pass h ({hh}): sampling stops at the h-th"
            )
        return hh / n
    if n < m:
        raise ValueError(
            f"not stopped: {g} exceedances < h ({hh}) after draws = {n} < max_draws ({m})"
        )
    return (g + 1.0) / (m + 1.0)


def _fisher(p: npt.NDArray[np.float64]) -> float:
    from scipy import special  # here: importing scipy.special costs ~0.2 s

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
        raise ArgumentError(
            "canonical_logliks", "canonical_logliks must be a non-empty 1-D array of finite values"
        )
    if not (isinstance(permuted_logliks, np.ndarray) and permuted_logliks.ndim > 1):
        permuted_logliks = check_sequence("permuted_logliks", permuted_logliks, "arrays")
    if len(permuted_logliks) != canonical.shape[0]:
        raise ArgumentError(
            "permuted_logliks",
            f"permuted_logliks must hold one array per shard of canonical_logliks "
            f"({canonical.shape[0]}); "
            f"got {len(permuted_logliks)}",
        )
    states = []
    for i, (c, values) in enumerate(zip(canonical, permuted_logliks, strict=True)):
        arr = np.atleast_1d(float_array("permuted_logliks", values))
        if arr.ndim != 1 or not np.isfinite(arr).all():
            raise ArgumentError(
                "permuted_logliks", f"permuted_logliks of shard {i} must be 1-D and finite"
            )
        if arr.shape[0] > m:
            raise ArgumentError(
                "permuted_logliks",
                template=f"{{permuted_logliks}} of shard {i} holds {arr.shape[0]} scores, "
                f"more than {{max_permutations}} ({m})",
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
        return check_index("shard", shard, self.orders.n_shards, "n_shards")

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
                raise ArgumentError(
                    "canonical_loglik",
                    f"canonical_loglik of shard {i} was already given as {self._canonical[i]!r}",
                )
            self._canonical[i] = c
        canonical = self._canonical[i]
        if canonical is None:
            raise ArgumentError(
                "canonical_loglik",
                f"canonical_loglik of shard {i} is needed with its first update",
            )
        values = np.atleast_1d(float_array("permuted_logliks", permuted_logliks))
        if values.ndim != 1 or not np.isfinite(values).all():
            raise ArgumentError(
                "permuted_logliks",
                "permuted_logliks must be a 1-D array of finite log-likelihoods",
            )
        for v in values:
            if self._stopped(i):
                break
            self._draws[i] += 1
            self._exceed[i] += int(v >= canonical)
        return self.shard_state(i)

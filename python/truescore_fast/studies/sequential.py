"""What stopping early costs and saves, by simulation: :func:`sequential_study` (the
sequential audit under continuous monitoring) and :func:`sequential_order_study` (the
sequential order test), on the study engine (threads, executors, progress and
checkpoints as for the other studies).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import special

from truescore_fast import _core
from truescore_fast._random import SeedLike, philox_key, philox_stream
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_n_threads,
    check_positive_int,
    check_size,
    one_line,
    real_scalar,
    threads_used,
)
from truescore_fast.audit._betting import check_horizon
from truescore_fast.audit.intervals import betting_intervals
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._common import (
    check_floats,
    check_replications,
    model_banks,
    rate_with_se,
    run_meta,
    table_columns,
)
from truescore_fast.studies._engine import Cell, RowLayout, execute

__all__ = [
    "sequential_order_study",
    "sequential_study",
]


# ---------------------------------------------------------------------- the studies

# Replications are simulated in tasks of this many, task i from Philox stream i of the
# seed's key: the result does not depend on how the work is split.
_STUDY_TASK = 250


def _first_hits(
    x: npt.NDArray[np.float64],
    m: npt.NDArray[np.float64],
    population_size: int,
    alpha: float,
    horizon: int | None,
    halves: tuple[bool, bool] = (True, True),
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """For each row of ``x`` (R, n) and its candidate ``m[r]``: the first step (1-based)
    at which the up-betting half of the hedged capital reaches 1/alpha (m is then below
    the sequence), and the same for the down-betting half (m above it); n + 1 for never.
    A candidate made impossible by the data through that step (outside the values the
    population mean can take, which the audit's intervals never leave) counts as
    reached by the matching half. The bets are those of :func:`log_bets` at ``alpha``
    and ``horizon``; ``halves`` (up, down): the halves wanted; a half not wanted reads
    n + 1 (never). Compiled (``_core.sequence_first_hits``, each row's capital carried
    only until it first reaches); its NumPy definition is numpy_first_hits in
    tests/sequence_reference.py."""
    hit_up, hit_down = _core.sequence_first_hits(
        np.ascontiguousarray(x), np.ascontiguousarray(m), population_size, alpha, horizon, *halves
    )
    return hit_up, hit_down


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

    ``n_threads`` (None: every usable CPU), ``progress`` (None: a bar after a second),
    ``executor`` (any ``concurrent.futures.Executor``, e.g. a Dask client's) and
    ``checkpoint`` (a file to save progress in and resume from) work as for the other
    studies (:mod:`truescore_fast.studies`), on the same engine: each row is a cell
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
    banks = model_banks(public, fresh)
    if len(banks) != 1:
        raise ArgumentError("public", "public must be one bank, shape (N,), with fresh (N, K)")
    pub, fr = banks[0]
    check_alpha(alpha)
    ds = check_floats("deltas", deltas)
    reps = check_replications(replications)
    big_n = pub.shape[0]
    n_max = check_positive_int("max_parents", max_parents, minimum=2)
    if n_max > big_n:
        raise ArgumentError(
            "max_parents", f"max_parents must not exceed the bank's {big_n} parents; got {n_max}"
        )
    every = check_positive_int("look_every", look_every)
    effect = None if effect_size is None else real_scalar("effect_size", effect_size)
    threads = check_n_threads(n_threads)
    tuned = check_horizon(horizon, n_max, most=big_n)
    key = philox_key(seed)
    if not isinstance(relabel, (bool, np.bool_)):
        raise ArgumentError("relabel", f"relabel must be True or False; got {one_line(relabel)}")
    # mean public correctness (after relabelling, in expectation: the mean of all labels)
    p_public = (
        float((pub.sum() + fr.sum()) / (pub.size + fr.size)) if relabel else float(pub.mean())
    )
    looks = np.unique(np.append(np.arange(every, n_max + 1, every), n_max))
    z_half = float(special.ndtri(1.0 - alpha / 4.0))  # Wald at alpha/2, two-sided
    for delta in ds:
        if not 0.0 <= delta < 1.0 - p_public:
            raise ArgumentError(
                "deltas",
                f"deltas must be in [0, 1 - mean public correctness = {1.0 - p_public:.4g}); "
                f"got {delta}",
            )
    rows = []
    per_row = [
        (pub, fr, delta / (1.0 - p_public) if p_public < 1.0 else 0.0, bool(relabel), n_max,
         looks, effect, alpha, z_half, tuned)
        for delta in ds
    ]  # fmt: skip
    engine = {"n_threads": threads, "progress": progress, "executor": executor}
    # a task's row: the sums, the claims per look, the stops at 0..n_max (a histogram)
    start = len(_AUDIT_SUMS) + looks.shape[0]
    layout = RowLayout(start + n_max + 1, histogram=start)
    totals = _run_rows(
        _audit_task, per_row, layout, reps, key, "sequential audit", checkpoint, engine
    )
    n_sums, n_looks = len(_AUDIT_SUMS), looks.shape[0]
    for delta, total in zip(ds, totals, strict=True):
        sums = dict(zip(_AUDIT_SUMS, total[:n_sums], strict=True))
        claim, claim_se = rate_with_se(float(sums["claim"]), reps)
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
    columns = table_columns(names, rows)
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
        meta=run_meta("sequential", seed, key, reps)
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
    layout: RowLayout,
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
        Cell(task, args, key, row * tasks, reps, layout, block=_STUDY_TASK)
        for row, args in enumerate(per_row)
    ]
    return execute(cells, desc=desc, checkpoint=checkpoint, **engine)


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
    sim = _audit_replications(
        pub, fr, q, relabel, size, n_max, *rest, rng=philox_stream(key, stream)
    )
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
    rng = philox_stream(key, stream)
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
    above_zero, _ = _first_hits(x, zero, big_n, alpha, horizon, (True, False))
    above_zero_half, _ = _first_hits(x, zero, big_n, alpha / 2.0, horizon, (True, False))
    t_find = np.maximum(above_zero, above_zero_half)
    if effect is None:
        t_bound = np.full(size, n_max + 1)
    else:
        _, t_bound = _first_hits(
            x, np.full(size, (effect + 1.0) / 2.0), big_n, alpha, horizon, (False, True)
        )
    miss_up, miss_down = _first_hits(x, (truth + 1.0) / 2.0, big_n, alpha, horizon)

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
    r = check_positive_int("n_shards", n_shards)
    m = check_positive_int("max_permutations", max_permutations)
    hh = check_positive_int("h", h)
    shift_values = check_floats("shifts", shifts, low=-math.inf, high=math.inf, high_open=False)
    reps = check_replications(replications)
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    # A task holds (replications x n_shards x max_permutations) normals, their booleans
    # and the running counts; every thread runs one at a time.
    per_task = min(reps, _STUDY_TASK) * r * m
    check_size(
        "n_shards x max_permutations",
        threads_used(threads) * per_task,
        24.0,
        "use fewer {n_shards} or {max_permutations}",
    )
    key = philox_key(seed)
    rows = []
    per_row = [(r, m, shift, hh, alpha) for shift in shift_values]
    engine = {"n_threads": threads, "progress": progress, "executor": executor}
    # a task's row: the sums, then a histogram of the orders scored, 0..r x m
    layout = RowLayout(len(_ORDER_SUMS) + r * m + 1, histogram=len(_ORDER_SUMS))
    totals = _run_rows(
        _order_task, per_row, layout, reps, key, "sequential order test", checkpoint, engine
    )
    for shift, total in zip(shift_values, totals, strict=True):
        sums = dict(zip(_ORDER_SUMS, total, strict=False))
        orders = _from_counts(total[len(_ORDER_SUMS) :])
        rate, se = rate_with_se(float(sums["rejections"]), reps)
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
    columns = table_columns(names, rows)
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
        meta=run_meta("sequential_order", seed, key, reps)
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

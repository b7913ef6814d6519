"""The coverage study: coverage and mean half-width of every interval under simple random
or stratified sampling from a finite population (CleanScore, Table 2).

What these numbers do not mean: a coverage rate is a property of the population and
design simulated; run the study on your own audit data before relying on an interval's
coverage on it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._errors import ArgumentError
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_gaps,
    check_labels,
    check_n_threads,
    group_offsets,
    one_line,
)
from truescore_fast.audit._methods import INTERVAL_METHODS, TRAITS, code_of
from truescore_fast.studies._common import (
    _columns,
    _mean_se,
    _methods,
    _rate,
    _replications,
    _run_meta,
    _sizes,
)
from truescore_fast.studies._engine import (
    _CELL_STRIDE,
    REPLICATIONS_PER_TASK,
    CoverageSums,
    _Cell,
    _execute,
)

__all__ = [
    "REPLICATIONS_PER_TASK",
    "coverage_study",
]

_LATTICE_MAX = 64  # at most this many distinct gap values: counts per value may be drawn


# ---------------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class _Design:
    values: npt.NDArray[np.float64]  # grouped by stratum
    offsets: npt.NDArray[np.int64]
    allocation: npt.NDArray[np.int64]
    truth: float


def _design(
    population: npt.NDArray[np.float64],
    n: int,
    design: str,
    strata: Any,
    allocation: Any,
) -> _Design:
    big_n = population.shape[0]
    if n > big_n:
        raise ArgumentError("n", f"n must not exceed the population size {big_n}; got {n}")
    truth = float(np.mean(population))
    check_choice("design", design, ("srs", "stratified"))
    if design == "srs":
        if strata is not None or allocation is not None:
            raise ArgumentError(
                "strata", "strata and allocation apply only to design='stratified'"
            )
        return _Design(
            population,
            np.array([0, big_n], dtype=np.int64),
            np.array([n], dtype=np.int64),
            truth,
        )
    if strata is None:
        raise ArgumentError(
            "design", "design='stratified' needs strata (one label per population unit)"
        )
    labels = check_labels("strata", strata, big_n, unit="population unit")
    order, offsets, _ = group_offsets("strata", labels)
    sizes = np.diff(offsets)
    values = np.ascontiguousarray(population[order])
    if allocation is None or (isinstance(allocation, str) and allocation == "proportional"):
        alloc = np.asarray(_core.proportional_allocation(sizes.astype(np.int64), n))
    elif isinstance(allocation, str):
        raise ArgumentError(
            "allocation",
            f"allocation must be 'proportional' or per-stratum sizes; got {one_line(allocation)}",
        )
    else:
        alloc = np.asarray(allocation)
        if alloc.shape != sizes.shape or not np.issubdtype(alloc.dtype, np.integer):
            raise ArgumentError(
                "allocation",
                f"allocation must hold one integer per stratum ({sizes.size}, in sorted label "
                f"order); got {one_line(allocation)}",
            )
        if alloc.sum() != n or (alloc < 0).any() or (alloc > sizes).any():
            raise ArgumentError(
                "allocation",
                f"allocation must sum to n = {n} with 0 <= n_h <= N_h; got {alloc.tolist()} "
                f"for stratum sizes {sizes.tolist()}",
            )
        # The pooled sample mean estimates the allocation-weighted mean of the strata.
        means = np.array([values[offsets[h] : offsets[h + 1]].mean() for h in range(sizes.size)])
        truth = float(np.dot(alloc / n, means))
    return _Design(values, offsets, alloc.astype(np.int64), truth)


def _lattice(design: _Design) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] | None:
    values = np.unique(design.values)
    if values.size > _LATTICE_MAX:
        return None
    # counts[h, v]: units of stratum h holding values[v] (strata may differ in size)
    n_strata = len(design.offsets) - 1
    stratum = np.repeat(np.arange(n_strata), np.diff(design.offsets))
    cell = stratum * values.size + np.searchsorted(values, design.values)
    counts = np.bincount(cell, minlength=n_strata * values.size).astype(np.int64)
    return values, counts.reshape(n_strata, values.size)


def _coverage_cell(
    design: _Design,
    methods: tuple[str, ...],
    alpha: float,
    sampler: str,
    key: tuple[int, int],
    cell: int,
    replications: int,
) -> tuple[_Cell, str]:
    lattice = None
    check_choice("sampler", sampler, ("auto", "sequence", "counts"))
    if sampler != "sequence" and not any(TRAITS[m].order_dependent for m in methods):
        lattice = _lattice(design)
    if sampler == "counts" and lattice is None:
        raise ArgumentError(
            "sampler",
            "sampler='counts' needs order-free intervals (no betting) and a population with "
            f"at most {_LATTICE_MAX} distinct gap values",
        )
    if lattice is None:
        lat_values, lat_counts, used = np.zeros(0), np.zeros((0, 0), np.int64), "sequence"
    else:
        lat_values, lat_counts, used = lattice[0], lattice[1], "counts"
    args = (
        design.values,
        design.offsets,
        design.allocation,
        lat_values,
        lat_counts,
        np.array([code_of(m) for m in methods], dtype=np.int64),
        alpha,
        design.truth,
    )
    return _Cell("coverage_tasks", args, key, cell * _CELL_STRIDE, replications), used


def _coverage_rows(
    total: npt.NDArray[np.float64], methods: tuple[str, ...], reps: int
) -> list[tuple[str, float, float, float, float]]:
    sums = total.reshape(len(methods), len(CoverageSums))
    rows = []
    for k, m in enumerate(methods):
        cov, cov_se = _rate(sums[k, CoverageSums.COVERED], reps)
        half, half_se = _mean_se(
            sums[k, CoverageSums.HALF_WIDTH], sums[k, CoverageSums.HALF_WIDTH_SQUARES], reps
        )
        rows.append((m, cov, cov_se, half, half_se))
    return rows


def coverage_study(
    population: npt.ArrayLike,
    n: int | Sequence[int],
    *,
    design: str = "srs",
    strata: npt.ArrayLike | None = None,
    allocation: str | Sequence[int] | None = None,
    intervals: Sequence[str] | str = INTERVAL_METHODS,
    replications: int = 5000,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    sampler: str = "auto",
) -> StudyTable:
    """Coverage and mean half-width of audit intervals under repeated sampling.

    Each replication draws n parents without replacement from ``population`` (the N gaps
    of a whole benchmark, each in [-1, 1]) and computes every interval in ``intervals``
    at level 1 - alpha with N as the population size, each within the values the sample
    allows the population's mean gap (as the audit reports it; the half-width is each
    method's own, the betting interval's that of the result); an interval covers when
    it contains the population's mean gap.

    Args:
        population: The N gaps of the finite population (real or synthetic), in [-1, 1].
        n: Sample size, or several (one table row per size and interval).
        design: ``"srs"`` (simple random sample) or ``"stratified"`` (needs ``strata``).
        strata: One label per population unit (any sortable values).
        allocation: ``"proportional"`` (default; largest-remainder rounding) or the
            sample size of each stratum, in sorted label order. With a given allocation
            the pooled sample mean estimates the allocation-weighted mean of the strata
            means, and coverage is measured against that (the audit's intervals do not
            reweight); with proportional allocation the target is the population mean.
        intervals: Interval methods (default all five of
            :data:`~truescore_fast.audit.intervals.INTERVAL_METHODS`).
        replications: Samples per size (the paper: 5,000).
        alpha: 1 - nominal coverage.
        seed: int, ``SeedSequence`` or ``Generator``; with the cell index it fixes every
            draw (see the module docstring).
        n_threads: Threads (default every usable CPU); the result does not depend on it.
        progress: Show a progress bar (True/False; None: only for runs over 1 s).
        executor: Run the sample sizes as cells on this ``concurrent.futures.Executor``.
        checkpoint: A file to save progress in and resume from (see the module
            docstring); the result is bit-identical to a run without it.
        sampler: ``"auto"`` draws counts per gap value (exact multivariate
            hypergeometric, O(number of values) per sample) when the population has at
            most 64 distinct gap values and no interval depends on the sample's order
            (betting does), else the full sample by Fisher-Yates (``"sequence"``).
            Both are exact samplers; they use the random stream differently, so their
            numbers agree within Monte Carlo error, not bit for bit.

    Returns:
        A :class:`StudyTable` with columns design, n, interval, coverage, coverage_se,
        half_width (mean), half_width_se: one row per (n, interval).

    Raises:
        ValueError: gaps outside [-1, 1] or non-finite, n outside [2, N], unknown design,
            interval or sampler, bad strata or allocation, alpha, replications or seed.

    A coverage estimate describes this population and design only; a valid interval can
    still be too wide to be useful, and a sharp one (Wald) can undercover on a sparser
    population than the one simulated.
    """
    pop = check_gaps("population", population)
    check_alpha(alpha)
    methods = _methods(intervals)
    sizes = _sizes("n", n)
    reps = _replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    cells, used = [], set()
    for c, size in enumerate(sizes):
        d = _design(pop, size, design, strata, allocation)
        cell, how = _coverage_cell(d, methods, alpha, sampler, key, c, reps)
        cells.append(cell)
        used.add(how)
    totals = _execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="coverage",
        checkpoint=checkpoint,
    )
    columns = _columns(
        ("design", "n", "interval", "coverage", "coverage_se", "half_width", "half_width_se"),
        (
            (design, size, *row)
            for size, total in zip(sizes, totals, strict=True)
            for row in _coverage_rows(total, methods, reps)
        ),
    )
    return StudyTable(
        title=f"Coverage of {1 - alpha:.0%} intervals, {design} samples from N = {pop.shape[0]:,} "
        f"({reps:,} replications per size)",
        columns=columns,
        notes=(
            "coverage: share of samples whose interval contains the population mean gap; "
            "half_width: mean half-width; *_se: Monte Carlo standard errors.",
            f"seed {seed!r}, sampler {'/'.join(sorted(used))}; a coverage rate describes this "
            "population and design, not every audit.",
        ),
        meta={
            **_run_meta("coverage", seed, key, reps),
            "alpha": alpha,
            "population_size": int(pop.shape[0]),
            "design": design,
            "sampler": sorted(used),
        },
    )


# ---------------------------------------------------------------------------- stress grid


# ---------------------------------------------------------------------------- detection


# ---------------------------------------------------------------------------- budget

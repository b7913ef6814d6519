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

import numpy.typing as npt

from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_gaps,
    check_n_threads,
)
from truescore_fast.audit._methods import INTERVAL_METHODS
from truescore_fast.studies._common import (
    check_methods,
    check_replications,
    check_sizes,
    run_meta,
    table_columns,
)
from truescore_fast.studies._coverage_cells import coverage_cell, coverage_rows, sampling_design
from truescore_fast.studies._engine import (
    REPLICATIONS_PER_TASK,
    execute,
)

__all__ = [
    "REPLICATIONS_PER_TASK",
    "coverage_study",
]


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
        intervals: Interval methods (default every one of
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
    methods = check_methods(intervals)
    sizes = check_sizes("n", n)
    reps = check_replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    cells, used = [], set()
    for c, size in enumerate(sizes):
        d = sampling_design(pop, size, design, strata, allocation)
        cell, how = coverage_cell(d, methods, alpha, sampler, key, c, reps)
        cells.append(cell)
        used.add(how)
    totals = execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="coverage",
        checkpoint=checkpoint,
    )
    columns = table_columns(
        ("design", "n", "interval", "coverage", "coverage_se", "half_width", "half_width_se"),
        (
            (design, size, *row)
            for size, total in zip(sizes, totals, strict=True)
            for row in coverage_rows(total, methods, reps)
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
            **run_meta("coverage", seed, key, reps),
            "alpha": alpha,
            "population_size": int(pop.shape[0]),
            "design": design,
            "sampler": sorted(used),
        },
    )

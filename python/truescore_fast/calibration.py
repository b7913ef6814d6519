"""Monte Carlo calibration studies for the matched-form audit.

The studies the CleanScore paper's tables rest on, as library calls that take a
population (real audit data or a synthetic one) and a grid of settings, and return a
:class:`~truescore_fast._table.StudyTable` with Monte Carlo standard errors:

* :func:`coverage_study` -- coverage and mean half-width of every interval under simple
  random or stratified sampling from a finite population (CleanScore, Table 2);
* :func:`stress_grid` -- the same over a grid of (N, n, gap shape, sparsity) settings,
  with the Bernstein/Hoeffding width ratio (CleanScore, Table 6); :func:`stress_settings` is the
  default 36-setting grid;
* :func:`detection_study` -- detection rate of a planted public-form advantage, interval
  rule against the exact randomization test (Tables 11-12), type-I error with the labels
  relabelled so the null holds (Fig. 10), rejections under pure form mismatch (Table 13);
* :func:`budget_study` -- subsample n parents of a multi-model audit: mean half-width,
  recovery of the full-sample ordering of the models, share of pairs ordered as in the
  full sample (Table 10); :func:`plan_audit_size` -- parents needed for a given power.

How the work is split. A study is a list of cells (one per grid setting); a cell's R
replications are split into tasks of ``REPLICATIONS_PER_TASK`` consecutive replications,
and task t of cell c draws from its own Philox stream, ``numpy.random.Philox(key=
philox_key(seed), counter=[0, 0, c * 2**32 + t, 0])``. Each task returns partial sums;
they are added in task order. The result therefore never depends on the thread count,
on how tasks are grouped into calls (the progress bar's chunks), or on which process
or machine ran a cell (``executor=``); memory does not grow with R.

Execution. ``n_threads`` (default: every core) threads run inside the compiled core with
the GIL released. Tasks are run in chunks of about a tenth of a second, so a progress
bar (tqdm when installed; ``progress=None`` shows one for runs longer than a second) can
update and Ctrl-C stops a sweep within a second, with no thread left running.
``executor=`` maps the cells over any ``concurrent.futures.Executor`` (a process
pool, Dask's ``Client.get_executor()``) in work items of about half a second; results
are identical to the local run. With an executor, Ctrl-C cancels the work not yet
started and the items already running end within about a second, so the interpreter
can exit.

Checkpoints. ``checkpoint=FILE`` (every study) saves each cell's partial sums to FILE
as the sweep runs (every few seconds, when a cell finishes, and on Ctrl-C or any other
exception); run the same call again with the same FILE and finished cells are not
rerun, unfinished ones go on from their last saved task. Because a task's streams depend
only on (seed, cell, task), the resumed result is bit-identical to an uninterrupted one.
FILE is append-only JSON Lines whose header records a fingerprint of the study's cells
(data, settings, seed, replications, library version); a FILE written for a different
call is refused with a ``ValueError``, never silently mixed in. A checkpoint is not a
cache of finished studies across library versions: a new version refuses it.

This module holds the studies: each builds its grid of cells and turns the summed rows
into a table. The engine that runs the cells (tasks, chunks, progress, interrupts,
executors) is ``truescore_fast._engine``.

What these numbers do not mean: a coverage or detection rate is a property of the
population and design simulated. Synthetic populations (the stress grid) say how an
interval behaves on gap distributions of that shape, not on yours; run the study on
your own audit data before relying on an interval's coverage.

Reference:
    J. Opoku and D. Banahene, "CleanScore: Black-Box Benchmark Audits with Negative
    Controls and Sensitivity Bounds"; the tables
    cited above are that paper's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._engine import (
    _CELL_STRIDE,
    REPLICATIONS_PER_TASK,
    BudgetSums,
    CoverageSums,
    DetectionSums,
    _Cell,
    _execute,
)
from truescore_fast._numeric import upper_quantile
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_gaps,
    check_labels,
    check_n_threads,
    check_open_unit,
    check_positive_int,
    float_array,
    group_offsets,
    real_scalar,
)
from truescore_fast.intervals import _CODE, _FALLBACK_METHODS, _TRAITS, INTERVAL_METHODS

__all__ = [
    "REPLICATIONS_PER_TASK",
    "STRESS_SHAPES",
    "StressSetting",
    "budget_study",
    "coverage_study",
    "detection_study",
    "plan_audit_size",
    "stress_grid",
    "stress_population",
    "stress_settings",
]

_LATTICE_MAX = 64  # at most this many distinct gap values: counts per value may be drawn


def _replications(replications: Any) -> int:
    return check_positive_int("replications", replications, minimum=2)


def _sizes(name: str, values: int | Iterable[int], minimum: int = 2) -> tuple[int, ...]:
    if (
        isinstance(values, (str, bytes))
        or not isinstance(values, Iterable)
        or (isinstance(values, np.ndarray) and values.ndim == 0)
    ):
        items: list[Any] = [values]  # one size (check_positive_int names what is wrong)
    else:
        items = list(values)
    if not items:
        raise ValueError(f"{name} must hold at least one sample size")
    return tuple(check_positive_int(name, v, minimum=minimum) for v in items)


def _methods(intervals: Any) -> tuple[str, ...]:
    if isinstance(intervals, str) or not isinstance(intervals, Iterable):
        items: tuple[Any, ...] = (intervals,)
    else:
        items = tuple(intervals)
    if not items:
        raise ValueError("intervals must name at least one interval method")
    for m in items:
        if m not in _CODE:
            raise ValueError(f"intervals: unknown method {m!r}; choose from {INTERVAL_METHODS}")
    if len(set(items)) != len(items):
        raise ValueError(f"intervals must not repeat a method; got {items}")
    return items


def _rate(count: float, reps: int) -> tuple[float, float]:
    p = count / reps
    return p, math.sqrt(max(p * (1.0 - p), 0.0) / reps)


def _mean_se(total: float, squares: float, reps: int) -> tuple[float, float]:
    mean = total / reps
    var = max(squares / reps - mean * mean, 0.0) * reps / (reps - 1)
    return mean, math.sqrt(var / reps)


def _columns(names: Sequence[str], rows: Iterable[Sequence[Any]]) -> dict[str, npt.NDArray[Any]]:
    """StudyTable columns from rows: column k holds the k-th value of every row."""
    rows = list(rows)
    for row in rows:
        if len(row) != len(names):
            raise AssertionError(f"a row of {len(row)} values for {len(names)} columns")
    return {name: np.asarray([row[k] for row in rows]) for k, name in enumerate(names)}


def _run_meta(study: str, seed: SeedLike, key: tuple[int, int], reps: int) -> dict[str, Any]:
    """The meta entries every simulation study records (how to reproduce it)."""
    return {
        "study": study,
        # An int seed replays the study; for any other seed the key below does.
        "seed": int(seed) if isinstance(seed, (int, np.integer)) else repr(seed),
        "key": list(key),
        "replications": reps,
        "replications_per_task": REPLICATIONS_PER_TASK,
    }


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
        raise ValueError(f"n must not exceed the population size {big_n}; got {n}")
    truth = float(np.mean(population))
    if design == "srs":
        if strata is not None or allocation is not None:
            raise ValueError("strata and allocation apply only to design='stratified'")
        return _Design(
            population,
            np.array([0, big_n], dtype=np.int64),
            np.array([n], dtype=np.int64),
            truth,
        )
    check_choice("design", design, ("srs", "stratified"))
    if strata is None:
        raise ValueError("design='stratified' needs strata (one label per population unit)")
    labels = check_labels("strata", strata, big_n, unit="population unit")
    order, offsets, _ = group_offsets("strata", labels)
    sizes = np.diff(offsets)
    values = np.ascontiguousarray(population[order])
    if allocation is None or (isinstance(allocation, str) and allocation == "proportional"):
        alloc = np.asarray(_core.proportional_allocation(sizes.astype(np.int64), n))
    elif isinstance(allocation, str):
        raise ValueError(
            f"allocation must be 'proportional' or per-stratum sizes; got {allocation!r}"
        )
    else:
        alloc = np.asarray(allocation)
        if alloc.shape != sizes.shape or not np.issubdtype(alloc.dtype, np.integer):
            raise ValueError(
                f"allocation must hold one integer per stratum ({sizes.size}, in sorted label "
                f"order); got {allocation!r}"
            )
        if alloc.sum() != n or (alloc < 0).any() or (alloc > sizes).any():
            raise ValueError(
                f"allocation must sum to n = {n} with 0 <= n_h <= N_h; got {alloc.tolist()} "
                f"for stratum sizes {sizes.tolist()}"
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
    if sampler != "sequence" and not any(_TRAITS[m].order_dependent for m in methods):
        lattice = _lattice(design)
    if sampler == "counts" and lattice is None:
        raise ValueError(
            "sampler='counts' needs order-free intervals (no betting) and a population with "
            f"at most {_LATTICE_MAX} distinct gap values"
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
        np.array([_CODE[m] for m in methods], dtype=np.int64),
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
    at level 1 - alpha with N as the population size; an interval covers when it
    contains the population's mean gap.

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
            :data:`~truescore_fast.intervals.INTERVAL_METHODS`).
        replications: Samples per size (the paper: 5,000).
        alpha: 1 - nominal coverage.
        seed: int, ``SeedSequence`` or ``Generator``; with the cell index it fixes every
            draw (see the module docstring).
        n_threads: Threads (default every core); the result does not depend on it.
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

#: Distribution of a nonzero gap over (-1, -1/2, +1/2, +1) for each stress shape.
STRESS_SHAPES: Mapping[str, tuple[float, float, float, float]] = {
    "symmetric": (0.10, 0.40, 0.40, 0.10),
    "one-sided": (0.05, 0.15, 0.50, 0.30),
    "bimodal": (0.45, 0.05, 0.05, 0.45),
}
_STRESS_VALUES = np.array([-1.0, -0.5, 0.5, 1.0])


@dataclass(frozen=True)
class StressSetting:
    """One stress setting: population size, sample size, gap shape, nonzero share."""

    population_size: int
    n: int
    shape: str
    nonzero_share: float


def stress_settings() -> list[StressSetting]:
    """The default 36-setting stress grid: N in {1000, 5000} x n in {50, 200} x three gap
    shapes x nonzero shares {0.05, 0.20, 0.50}.

    How it was chosen: the CleanScore paper reports 36 settings at N = 1,000 and 5,000 with
    the width ratio at n = 200, without listing them. We cross the two population sizes
    with a small audit (n = 50) and the paper's n = 200; three shapes of the nonzero
    gaps on the binary K = 2 lattice {-1, -1/2, +1/2, +1} (symmetric, one-sided towards
    the public form, bimodal at +-1); and sparsities from the paper's failure case (5%
    nonzero, where a 50-parent audit sees about two nonzero gaps) to a dense 50%.
    """
    return [
        StressSetting(big_n, n, shape, share)
        for big_n in (1000, 5000)
        for n in (50, 200)
        for shape in STRESS_SHAPES
        for share in (0.05, 0.20, 0.50)
    ]


def stress_population(setting: StressSetting) -> npt.NDArray[np.float64]:
    """The deterministic population of a stress setting: round(share N) nonzero gaps
    split over (-1, -1/2, +1/2, +1) by the shape's weights (largest remainder), the rest
    zero, sorted."""
    if not isinstance(setting, StressSetting):
        raise TypeError(f"setting must be a StressSetting; got {type(setting).__name__}")
    big_n = check_positive_int("population_size", setting.population_size, minimum=2)
    check_choice("shape", setting.shape, tuple(STRESS_SHAPES))
    real_scalar("nonzero_share", setting.nonzero_share, low=0.0, high=1.0)
    nonzero = int(round(setting.nonzero_share * big_n))
    weights = np.asarray(STRESS_SHAPES[setting.shape]) * nonzero
    counts = np.floor(weights).astype(np.int64)
    order = np.argsort(-(weights - counts), kind="stable")
    counts[order[: nonzero - int(counts.sum())]] += 1
    try:
        values = np.concatenate((np.repeat(_STRESS_VALUES, counts), np.zeros(big_n - nonzero)))
    except MemoryError:
        raise MemoryError(
            f"population_size {big_n}: a population of that many gaps does not fit in memory"
        ) from None
    return np.sort(values)


def stress_grid(
    settings: Sequence[StressSetting] | None = None,
    *,
    replications: int = 4000,
    intervals: Sequence[str] | str = INTERVAL_METHODS,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """Coverage of every interval across a grid of stress settings (CleanScore, Table 6).

    Each setting is a simple-random-sample coverage study on :func:`stress_population`;
    cell c of the grid uses streams c * 2**32 + t, so a setting's numbers do not depend
    on the other settings or on where the cell ran. The Bernstein/Hoeffding width ratio
    (when both are computed) is the ratio of their mean half-widths at the setting's n.

    ``n_threads``, ``progress``, ``executor`` and ``checkpoint`` work as in
    :func:`coverage_study`; none of them changes a result.

    Returns:
        A :class:`StudyTable`, one row per setting: N, n, shape, nonzero_share, then for
        each interval ``<m>`` and ``<m>_se`` (coverage), and ``bernstein/hoeffding``.
        The notes summarise it as Table 6 does (coverage range and settings below the
        nominal level per interval).
    """
    grid = list(stress_settings() if settings is None else settings)
    if not grid:
        raise ValueError("settings must hold at least one StressSetting")
    check_alpha(alpha)
    methods = _methods(intervals)
    reps = _replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    cells = []
    for c, s in enumerate(grid):
        if not isinstance(s, StressSetting):
            raise ValueError(f"settings[{c}] must be a StressSetting; got {s!r}")
        pop = stress_population(s)
        check_positive_int("n", s.n, minimum=2)
        d = _design(pop, s.n, "srs", None, None)
        cells.append(_coverage_cell(d, methods, alpha, "auto", key, c, reps)[0])
    totals = _execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="stress",
        checkpoint=checkpoint,
    )
    names = ["N", "n", "shape", "nonzero_share"]
    for m in methods:
        names += [m, f"{m}_se"]
    ratio = "bernstein" in methods and "hoeffding" in methods
    if ratio:
        names.append("bernstein/hoeffding")
    rows = []
    for s, total in zip(grid, totals, strict=True):
        row: list[Any] = [s.population_size, s.n, s.shape, s.nonzero_share]
        halves = {}
        for m, cov, cov_se, half, _ in _coverage_rows(total, methods, reps):
            row += [cov, cov_se]
            halves[m] = half
        if ratio:
            row.append(halves["bernstein"] / halves["hoeffding"])
        rows.append(row)
    arrays = _columns(names, rows)
    level = 1.0 - alpha
    notes = [f"{len(grid)} settings x {reps:,} audits, seed {seed!r}."]
    for m in methods:
        rates = arrays[m]
        notes.append(
            f"  {m}: coverage {rates.min():.4f} to {rates.max():.4f}, "
            f"{int((rates < level).sum())} settings below {level:.2f}"
        )
    if ratio:
        r = arrays["bernstein/hoeffding"]
        notes.append(f"  Bernstein width / Hoeffding width: {r.min():.2f} to {r.max():.2f}")
    notes.append(
        "Synthetic gap distributions: they show how an interval behaves on gaps of that "
        "shape and sparsity, not on a particular audit."
    )
    return StudyTable(
        title=f"Coverage of {level:.0%} intervals across {len(grid)} stress settings",
        columns=arrays,
        notes=tuple(notes),
        meta={
            **_run_meta("stress", seed, key, reps),
            "alpha": alpha,
        },
    )


# ---------------------------------------------------------------------------- detection


def _binary(name: str, values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    arr = np.ascontiguousarray(float_array(name, values))
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValueError(f"{name} must hold binary correctness labels (0 or 1)")
    return arr


def _models(
    public: npt.ArrayLike, fresh: npt.ArrayLike
) -> list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]:
    pub = _binary("public", public)
    fr = _binary("fresh", fresh)
    if pub.ndim == 1:
        pub = pub[None, :]
        fr = fr[None, :, :] if fr.ndim == 2 else fr[None, :, None]
    elif fr.ndim == 2:
        fr = fr[:, :, None]
    if pub.ndim != 2 or fr.ndim != 3 or fr.shape[:2] != pub.shape or fr.shape[2] < 1:
        raise ValueError(
            "public must be (N,) or (models, N) and fresh (N, K) or (models, N, K) to match; "
            f"got {np.shape(public)} and {np.shape(fresh)}"
        )
    if pub.shape[1] < 2:
        raise ValueError("the bank needs at least 2 parents")
    return [
        (np.ascontiguousarray(pub[m]), np.ascontiguousarray(fr[m])) for m in range(pub.shape[0])
    ]


def detection_study(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    *,
    sizes: int | Sequence[int] = (50, 100, 200, 400, 800),
    deltas: float | Sequence[float] = (0.02, 0.05, 0.10, 0.20),
    form_gaps: float | Sequence[float] = (0.0,),
    relabel: bool = False,
    replications: int = 2000,
    alpha: float = 0.05,
    guardrail: int = 30,
    fallback: str = "betting",
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """Detection rate of a planted public-form advantage: interval rule vs exact test.

    ``public`` (N,) and ``fresh`` (N, K) are the binary correctness labels of a bank of N
    parents (or (models, N) and (models, N, K): one bank per model, rates pooled over
    models with equal weight, as the paper pools five models). Each replication draws n
    parents without replacement and, per drawn parent:

    1. ``relabel=True``: swaps the public label with one of the K + 1 labels chosen
       uniformly, so "no form effect" holds by construction (Fig. 10's null);
    2. plants delta: each incorrect public label becomes correct with probability
       q = delta / (1 - p), p the bank's mean public correctness (after relabelling, in
       expectation), so the public mean rises by delta in expectation;
    3. plants a form gap g: each correct fresh label becomes incorrect with probability
       g / f (f the mean fresh correctness), so fresh forms are harder by g in
       expectation -- pure form mismatch, no contamination (Table 13).

    Then the *interval rule* claims when the primary interval (finite-population Wald
    with N when at least ``guardrail`` gaps are nonzero, else ``fallback``; the sample in
    draw order) lies above zero, and the *exact test* rejects when the randomization
    test's P(T >= t) <= alpha.

    With ``relabel=True`` the null is a super-population one (fresh randomness in every
    replication), while the Wald interval's finite-population correction treats the bank's
    gaps as fixed: at large sampling fractions the interval rule's rate under that null
    exceeds alpha (about 0.19 at n = 800 of N = 1,000 in the tests' synthetic bank); the
    exact test's does not.

    ``n_threads``, ``progress``, ``executor`` and ``checkpoint`` work as in
    :func:`coverage_study`; none of them changes a result.

    Returns:
        A :class:`StudyTable`, one row per (n, delta, form_gap): interval_rate,
        interval_se, test_rate, test_se, mean_delta_hat. With ``relabel=True`` and
        delta = form_gap = 0 the rates are type-I errors.

    What it does not mean: the exact test rejects any form effect, including fresh forms
    that are merely harder (rows with a form gap and delta = 0); a rejection is not
    evidence of contamination. A planted advantage here is a public-only effect; a real
    leak that carries over to the paraphrases is invisible to both rules.
    """
    banks = _models(public, fresh)
    check_alpha(alpha)
    ns = _sizes("sizes", sizes)
    ds = _floats("deltas", deltas)
    gs = _floats("form_gaps", form_gaps)
    reps = _replications(replications)
    guard = check_positive_int("guardrail", guardrail, minimum=0)
    check_choice("fallback", fallback, _FALLBACK_METHODS)
    threads = check_n_threads(n_threads)
    if not isinstance(relabel, (bool, np.bool_)):
        raise ValueError(f"relabel must be True or False; got {relabel!r}")
    key = philox_key(seed)
    big_n = banks[0][0].shape[0]
    if max(ns) > big_n:
        raise ValueError(f"sizes must not exceed the bank's {big_n} parents; got {max(ns)}")
    # mean public and fresh correctness of each bank (after relabelling, in expectation)
    means = []
    for pub, fr in banks:
        labels_mean = float((pub.sum() + fr.sum()) / (pub.size + fr.size))
        means.append(
            (labels_mean, labels_mean) if relabel else (float(pub.mean()), float(fr.mean()))
        )
    cells, grid = [], []
    c = 0
    for size in ns:
        for delta in ds:
            for gap in gs:
                grid.append((size, delta, gap))
                for (pub, fr), (p_pub, p_fresh) in zip(banks, means, strict=True):
                    q = 0.0 if delta == 0 else delta / (1.0 - p_pub) if p_pub < 1 else math.inf
                    h = 0.0 if gap == 0 else gap / p_fresh if p_fresh > 0 else math.inf
                    if q > 1.0:
                        raise ValueError(
                            f"delta = {delta} cannot be planted: only {1 - p_pub:.3f} of the "
                            "public answers are incorrect"
                        )
                    if h > 1.0:
                        raise ValueError(
                            f"form gap {gap} cannot be planted: the fresh forms score only "
                            f"{p_fresh:.3f}"
                        )
                    args = (pub, fr, size, bool(relabel), q, h, guard, _CODE[fallback], alpha)
                    cells.append(_Cell("detection_tasks", args, key, c * _CELL_STRIDE, reps))
                    c += 1
    totals = _execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="detection",
        checkpoint=checkpoint,
    )
    m = len(banks)
    rows = []
    for g_index, (size, delta, gap) in enumerate(grid):
        parts = totals[g_index * m : (g_index + 1) * m]
        rates = [
            [_rate(t[j], reps) for t in parts]
            for j in (DetectionSums.CLAIMS, DetectionSums.REJECTIONS)
        ]
        row = [size, delta, gap]
        for j in (0, 1):
            row.append(float(np.mean([r[0] for r in rates[j]])))
            row.append(math.sqrt(sum(r[1] ** 2 for r in rates[j])) / m)
        row.append(float(np.mean([t[DetectionSums.DELTA_HAT] / reps for t in parts])))
        rows.append(row)
    columns = _columns(
        (
            "n",
            "delta",
            "form_gap",
            "interval_rate",
            "interval_se",
            "test_rate",
            "test_se",
            "mean_delta_hat",
        ),
        rows,
    )
    return StudyTable(
        title=f"Detection of a planted public-form advantage ({m} bank(s), {reps:,} audits per "
        f"cell{', labels relabelled under the null' if relabel else ''})",
        columns=columns,
        notes=(
            f"interval rule: primary interval (Wald with N, or {fallback} below {guard} "
            "nonzero gaps) above zero; exact test: randomization P(T >= t) <= "
            f"{alpha:g}. Seed {seed!r}.",
            "The exact test rejects any form effect, including merely harder fresh forms: a "
            "rejection is not evidence of contamination.",
        ),
        meta={
            **_run_meta("detection", seed, key, reps),
            "alpha": alpha,
            "guardrail": guard,
            "fallback": fallback,
            "relabel": bool(relabel),
            "models": m,
        },
    )


def _floats(
    name: str,
    values: float | Sequence[float],
    *,
    low: float = 0.0,
    high: float = 1.0,
    high_open: bool = True,
) -> tuple[float, ...]:
    """``values`` (one number, a sequence or a 1-D array) as a tuple of floats, each
    checked by ``real_scalar`` in [low, high) (``high_open=False``: [low, high])."""
    if isinstance(values, np.ndarray) and values.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-D sequence; got shape {values.shape}")
    if isinstance(values, np.ndarray) or (
        isinstance(values, Sequence) and not isinstance(values, str)
    ):
        items = list(np.reshape(values, -1)) if isinstance(values, np.ndarray) else list(values)
    else:
        items = [values]
    if not items:
        raise ValueError(f"{name} must hold at least one value")
    return tuple(real_scalar(name, v, low=low, high=high, high_open=high_open) for v in items)


# ---------------------------------------------------------------------------- budget


def _gap_matrix(gaps: Any) -> tuple[npt.NDArray[np.float64], tuple[str, ...]]:
    if isinstance(gaps, Mapping):
        names = tuple(str(k) for k in gaps)
        rows = [check_gaps(f"gaps[{k!r}]", v) for k, v in gaps.items()]
        if len({r.shape for r in rows}) > 1:
            raise ValueError("every model's gaps must cover the same parents (equal lengths)")
        matrix = np.ascontiguousarray(np.stack(rows)) if rows else np.zeros((0, 0))
    else:
        matrix = check_gaps("gaps", gaps, ndim=2)
        names = tuple(f"model {i}" for i in range(matrix.shape[0]))
    if matrix.shape[0] < 2:
        raise ValueError("gaps must hold at least 2 models (rows)")
    return matrix, names


def budget_study(
    gaps: npt.ArrayLike | Mapping[str, npt.ArrayLike],
    *,
    sizes: int | Sequence[int] = (25, 50, 100, 150),
    interval: str = "wald",
    replications: int = 2000,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """Budgeted audits: what a subsample of n parents recovers of a multi-model audit.

    ``gaps`` holds M models' gaps on the same N audited parents ((M, N), or a mapping
    model name -> gaps). Each replication draws n of the N parents without replacement
    (the same parents for every model) and records the mean ``interval`` half-width over
    models (with N as the population size), whether the subsample orders all models'
    mean gaps exactly as the full sample does, and the share of model pairs it orders as
    the full sample does. Pairs the full sample ties are left out; a pair tied in the
    subsample counts as not ordered.

    ``n_threads``, ``progress``, ``executor`` and ``checkpoint`` work as in
    :func:`coverage_study`; none of them changes a result.

    Returns:
        A :class:`StudyTable`, one row per n: half_width, half_width_se, exact_order,
        exact_order_se, pairs_correct, pairs_correct_se (CleanScore, Table 10).

    What it does not mean: recovering the full-sample ordering says nothing about the
    true ordering; the full sample is itself a sample.
    """
    matrix, names = _gap_matrix(gaps)
    check_alpha(alpha)
    check_choice("interval", interval, INTERVAL_METHODS)
    ns = _sizes("sizes", sizes)
    reps = _replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    big_n = matrix.shape[1]
    full = matrix.mean(axis=1)
    # the pairs (i, j) the full sample orders strictly, mean i > mean j, row by row
    pair_high, pair_low = (
        np.ascontiguousarray(a, dtype=np.int64) for a in np.nonzero(full[:, None] > full[None, :])
    )
    if not pair_high.size:
        raise ValueError(
            "gaps: the full sample ties every model (equal mean gaps): there is no ordering "
            "to recover"
        )
    if max(ns) > big_n:
        raise ValueError(f"sizes must not exceed the {big_n} audited parents; got {max(ns)}")
    cells = [
        _Cell(
            "budget_tasks",
            (matrix, size, pair_high, pair_low, _CODE[interval], alpha),
            key,
            c * _CELL_STRIDE,
            reps,
        )
        for c, size in enumerate(ns)
    ]
    totals = _execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="budget",
        checkpoint=checkpoint,
    )
    columns = _columns(
        (
            "n",
            "half_width",
            "half_width_se",
            "exact_order",
            "exact_order_se",
            "pairs_correct",
            "pairs_correct_se",
        ),
        (
            (
                size,
                *_mean_se(t[BudgetSums.HALF_WIDTH], t[BudgetSums.HALF_WIDTH_SQUARES], reps),
                *_rate(t[BudgetSums.EXACT_ORDER], reps),
                *_mean_se(t[BudgetSums.PAIRS_CORRECT], t[BudgetSums.PAIRS_CORRECT_SQUARES], reps),
            )
            for size, t in zip(ns, totals, strict=True)
        ),
    )
    return StudyTable(
        title=f"Budgeted audits: {len(names)} models, subsamples of N = {big_n:,} parents "
        f"({reps:,} per size, {interval} half-width)",
        columns=columns,
        notes=(
            f"exact_order: the subsample orders all {len(names)} models as the full sample "
            f"does; pairs_correct: share of the {pair_high.size} strictly ordered pairs kept. "
            f"Seed {seed!r}.",
            "Recovering the full-sample ordering is not recovering the true ordering.",
        ),
        meta={
            **_run_meta("budget", seed, key, reps),
            "alpha": alpha,
            "interval": interval,
            "models": list(names),
            "full_means": full.tolist(),
        },
    )


def plan_audit_size(
    gaps: npt.ArrayLike,
    deltas: float | Sequence[float] = (0.02, 0.05, 0.10),
    *,
    power: float = 0.8,
    alpha: float = 0.05,
    population_size: int | None = None,
    guardrail: int = 30,
) -> StudyTable:
    """Parents needed for the interval rule to detect an advantage delta with ``power``.

    From pilot gaps (1-D, or (models, N): variances and nonzero shares averaged over
    models): under the normal approximation the finite-population Wald rule claims with
    probability Phi(delta / se(n) - z_{1-alpha/2}), se(n)^2 = (1 - n/N) s^2 / n, so
    n0 = (z_{1-alpha/2} + z_power)^2 s^2 / delta^2 and, with N, n = n0 N / (n0 + N).
    The rule uses Wald only with at least ``guardrail`` nonzero gaps, so the plan is at
    least guardrail / (nonzero share). ``n_planned`` is the larger, rounded up.

    What it does not mean: the normal approximation assumes the pilot's gap variance
    holds under the advantage; check the plan with :func:`detection_study` on the bank.
    """
    from scipy.stats import norm

    arr = float_array("gaps", gaps)
    if arr.ndim not in (1, 2):
        raise ValueError(f"gaps must be 1-D or 2-D (models, N); got shape {arr.shape}")
    matrix = check_gaps("gaps", arr if arr.ndim == 2 else arr[None, :], ndim=2)
    check_alpha(alpha)
    check_open_unit("power", power)
    ds = _floats("deltas", deltas)
    if 0.0 in ds:
        raise ValueError("deltas must be positive")
    guard = check_positive_int("guardrail", guardrail, minimum=0)
    if population_size is not None:
        population_size = check_positive_int("population_size", population_size, minimum=2)
    variance = float(np.mean(matrix.var(axis=1, ddof=1)))
    share = float(np.mean(matrix != 0))
    z = upper_quantile(norm.ppf, alpha / 2) + float(norm.ppf(power))
    rows = []
    for delta in ds:
        squared = delta * delta  # 0.0 for deltas below ~1e-162: no finite plan
        n0 = z * z * variance / squared if squared > 0.0 else math.inf
        if population_size is None:
            n_norm = n0
        else:  # finite-population correction; n0 = inf needs the whole population
            n_norm = (
                n0 * population_size / (n0 + population_size) if n0 < math.inf else population_size
            )
        # A plan beyond 2**53 parents has no exact integer: report it as inf, as n_guardrail.
        n_normal: float = max(2, math.ceil(n_norm)) if n_norm < 2.0**53 else math.inf
        n_guard = math.inf if share == 0 else math.ceil(guard / share)
        planned = max(n_normal, n_guard)
        rows.append((delta, math.sqrt(variance), n_normal, float(n_guard), float(planned)))
    columns = _columns(("delta", "gap_sd", "n_normal", "n_guardrail", "n_planned"), rows)
    return StudyTable(
        title=f"Parents needed to detect an advantage delta with power {power:g} "
        f"(alpha = {alpha:g})",
        columns=columns,
        notes=(
            f"Normal approximation for the finite-population Wald rule; nonzero-gap share "
            f"{share:.3f}, guardrail {guard}. n_planned = max(n_normal, n_guardrail); inf "
            "means the pilot has no nonzero gap.",
            "Check a plan by simulation with detection_study on the bank itself.",
        ),
        meta={"study": "plan", "power": power, "alpha": alpha, "population_size": population_size},
    )

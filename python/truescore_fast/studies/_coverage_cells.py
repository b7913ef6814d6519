"""The coverage study's cells, shared by the coverage study and the stress grid: a
finite population's sampling design, the cell that simulates it on the compiled
``coverage_tasks`` kernel, and the rows of coverage and half-width read from the cell's
sums. Not a public API (the module is private).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._validation import check_choice, check_labels, group_offsets, one_line
from truescore_fast.audit._methods import TRAITS, code_of
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._common import mean_with_se, rate_with_se
from truescore_fast.studies._engine import CELL_STRIDE, Cell, CoverageSums, coverage_layout

__all__ = ["LATTICE_MAX", "Design", "coverage_cell", "coverage_rows", "sampling_design"]

LATTICE_MAX = 64  # at most this many distinct gap values: counts per value may be drawn


@dataclass(frozen=True)
class Design:
    values: npt.NDArray[np.float64]  # grouped by stratum
    offsets: npt.NDArray[np.int64]
    allocation: npt.NDArray[np.int64]
    truth: float


def sampling_design(
    population: npt.NDArray[np.float64],
    n: int,
    design: str,
    strata: Any,
    allocation: Any,
) -> Design:
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
        return Design(
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
    return Design(values, offsets, alloc.astype(np.int64), truth)


def _lattice(design: Design) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] | None:
    values = np.unique(design.values)
    if values.size > LATTICE_MAX:
        return None
    # counts[h, v]: units of stratum h holding values[v] (strata may differ in size)
    n_strata = len(design.offsets) - 1
    stratum = np.repeat(np.arange(n_strata), np.diff(design.offsets))
    cell = stratum * values.size + np.searchsorted(values, design.values)
    counts = np.bincount(cell, minlength=n_strata * values.size).astype(np.int64)
    return values, counts.reshape(n_strata, values.size)


def coverage_cell(
    design: Design,
    methods: tuple[str, ...],
    alpha: float,
    sampler: str,
    key: tuple[int, int],
    cell: int,
    replications: int,
) -> tuple[Cell, str]:
    lattice = None
    check_choice("sampler", sampler, ("auto", "sequence", "counts"))
    if sampler != "sequence" and not any(TRAITS[m].order_dependent for m in methods):
        lattice = _lattice(design)
    if sampler == "counts" and lattice is None:
        raise ArgumentError(
            "sampler",
            "sampler='counts' needs order-free intervals (no betting) and a population with "
            f"at most {LATTICE_MAX} distinct gap values",
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
    layout = coverage_layout(len(methods))
    return Cell("coverage_tasks", args, key, cell * CELL_STRIDE, replications, layout), used


def coverage_rows(
    total: npt.NDArray[np.float64], methods: tuple[str, ...], reps: int
) -> list[tuple[str, float, float, float, float]]:
    sums = total.reshape(len(methods), len(CoverageSums))
    rows = []
    for k, m in enumerate(methods):
        cov, cov_se = rate_with_se(sums[k, CoverageSums.COVERED], reps)
        half, half_se = mean_with_se(
            sums[k, CoverageSums.HALF_WIDTH], sums[k, CoverageSums.HALF_WIDTH_SQUARES], reps
        )
        rows.append((m, cov, cov_se, half, half_se))
    return rows

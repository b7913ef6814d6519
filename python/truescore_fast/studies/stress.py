"""The stress grid: coverage and width of every interval over a grid of (N, n, gap shape,
sparsity) settings, with the Bernstein/Hoeffding width ratio (CleanScore, Table 6).

:func:`stress_settings` is the default 36-setting grid and :func:`stress_population` the
synthetic population of one setting. Synthetic populations say how an interval behaves on
gap distributions of that shape, not on yours.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    check_positive_int,
    check_sequence,
    one_line,
    real_scalar,
)
from truescore_fast.audit._methods import INTERVAL_METHODS
from truescore_fast.errors import ArgumentError, ArgumentTypeError
from truescore_fast.studies._common import (
    check_methods,
    check_replications,
    run_meta,
    table_columns,
)
from truescore_fast.studies._coverage_cells import coverage_cell, coverage_rows, sampling_design
from truescore_fast.studies._engine import (
    execute,
)

__all__ = [
    "STRESS_SHAPES",
    "StressSetting",
    "stress_grid",
    "stress_population",
    "stress_settings",
]


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
        raise ArgumentTypeError(
            "setting", f"setting must be a StressSetting; got {type(setting).__name__}"
        )
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
    grid = list(stress_settings() if settings is None else check_sequence("settings", settings))
    if not grid:
        raise ArgumentError("settings", "settings must hold at least one StressSetting")
    check_alpha(alpha)
    methods = check_methods(intervals)
    reps = check_replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    cells = []
    for c, s in enumerate(grid):
        if not isinstance(s, StressSetting):
            raise ArgumentError(
                "settings", f"settings[{c}] must be a StressSetting; got {one_line(s)}"
            )
        pop = stress_population(s)
        check_positive_int("n", s.n, minimum=2)
        d = sampling_design(pop, s.n, "srs", None, None)
        cells.append(coverage_cell(d, methods, alpha, "auto", key, c, reps)[0])
    totals = execute(
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
        for m, cov, cov_se, half, _ in coverage_rows(total, methods, reps):
            row += [cov, cov_se]
            halves[m] = half
        if ratio:
            row.append(halves["bernstein"] / halves["hoeffding"])
        rows.append(row)
    arrays = table_columns(names, rows)
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
            **run_meta("stress", seed, key, reps),
            "alpha": alpha,
        },
    )

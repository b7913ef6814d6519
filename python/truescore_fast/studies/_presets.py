"""The studies as the command line runs them: seeded synthetic populations shaped like
the CleanScore paper's, and the paper-shaped tables built from the study functions'
results (``truescore-fast calibrate STUDY``). Each function here is one study's ``run``
in :mod:`~truescore_fast.studies.registry`; the library functions they call are the
studies themselves.

What these tables do not mean: the synthetic populations say how the intervals and tests
behave on populations of that shape, not on your audit's; ``calibrate coverage
--population FILE`` runs the coverage study on your own per-item gaps.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._files import read_rows
from truescore_fast._table import StudyTable
from truescore_fast.audit._methods import INTERVAL_METHODS
from truescore_fast.errors import ArgumentError, literal
from truescore_fast.studies._common import table_columns
from truescore_fast.studies.budget import budget_study, plan_audit_size
from truescore_fast.studies.coverage import coverage_study
from truescore_fast.studies.detection import detection_study
from truescore_fast.studies.options import StudyOptions, StudyRun, StudySettings
from truescore_fast.studies.sequential import sequential_order_study, sequential_study
from truescore_fast.studies.stress import stress_grid

__all__ = [
    "budget_tables",
    "coverage_tables",
    "detection_tables",
    "read_population",
    "sequential_order_tables",
    "sequential_tables",
    "stress_tables",
]

DEFAULT_SIZES = (120, 400, 800, 1200)  # the paper's Table 2


def _synthetic_gaps(size: int, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    """Binary K = 2 audit gaps: 70% zero, the rest spread over the lattice, slightly
    tilted towards the public form."""
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.04, 0.11, 0.70, 0.10, 0.05], size=size)


def _synthetic_bank(
    n_models: int, big_n: int, rng: np.random.Generator
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Binary correctness of n_models models on big_n parents (public + 2 fresh forms):
    per-parent difficulty Beta(2, 2), per-model ability shifts, no form effect."""
    difficulty = rng.beta(2.0, 2.0, size=big_n)
    ability = np.linspace(-0.15, 0.15, n_models)
    p = np.clip(difficulty[None, :] + ability[:, None], 0.02, 0.98)
    public = (rng.random((n_models, big_n)) < p).astype(np.float64)
    fresh = (rng.random((n_models, big_n, 2)) < p[:, :, None]).astype(np.float64)
    return public, fresh


def read_population(
    path: str, value_column: str, strata_column: str | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.str_] | None]:
    """The per-item gaps (and strata labels) of ``path``, every row checked."""
    rows = read_rows(path)
    for column in (value_column, strata_column):
        if column is not None and column not in rows[0]:
            names = "value_column" if column == value_column else "strata_column"
            raise ArgumentError(
                "population",
                template=f"{{population}} {literal(str(path))} has no column "
                f"{literal(repr(column))} ({{{names}}} names another); its columns: "
                f"{literal(', '.join(map(str, rows[0])))}",
            )
    gaps = np.empty(len(rows))
    for i, row in enumerate(rows):
        raw = row.get(value_column)
        try:
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ArgumentError(
                "population",
                f"population {path} row {i + 1}: {value_column}={raw!r} is not a number",
            ) from None
        if not (math.isfinite(value) and -1.0 <= value <= 1.0):
            raise ArgumentError(
                "population",
                f"population {path} row {i + 1}: {value_column}={raw!r} is not a gap in "
                "[-1, 1] (public minus mean fresh correctness)",
            )
        gaps[i] = value
    strata = None
    if strata_column is not None:
        labels = [row.get(strata_column) for row in rows]
        missing = [i + 1 for i, v in enumerate(labels) if v is None or str(v).strip() == ""]
        if missing:
            raise ArgumentError(
                "population",
                f"population {path} row {missing[0]}: no {strata_column!r} label "
                f"({len(missing)} row(s) without one)",
            )
        strata = np.array([str(v).strip() for v in labels])
    if gaps.size < 3:
        raise ArgumentError(
            "population",
            f"population {path} holds {gaps.size} item(s); a coverage study needs at least 3",
        )
    return gaps, strata


def coverage_tables(options: StudyOptions, settings: StudySettings) -> StudyRun:
    """The coverage study (Table 2) on the synthetic population, or on ``settings.population``'s
    gaps: simple random sampling and, with strata, a stratified design, as one wide table."""
    intervals = tuple(settings.intervals or INTERVAL_METHODS)
    extra: dict[str, Any] = {}
    if settings.population is None:
        rng = np.random.default_rng(options.seed)  # the synthetic population
        population = _synthetic_gaps(5000, rng)
        strata: npt.NDArray[Any] | None = rng.integers(0, 4, size=5000)  # subject areas
        sizes = tuple(settings.n or DEFAULT_SIZES)
        strata_sizes: tuple[int, ...] = (400,) if settings.n is None else sizes
        where = (
            "Synthetic population: 70% zero gaps, the rest on {-1, -1/2, +1/2, +1}; four "
            "strata, proportional allocation."
        )
    else:
        population, strata = read_population(
            settings.population, settings.value_column, settings.strata_column
        )
        big_n = population.size
        sizes = tuple(settings.n) if settings.n else tuple(n for n in DEFAULT_SIZES if n < big_n)
        sizes = sizes or (max(2, big_n // 2),)
        strata_sizes = sizes
        where = (
            f"Population: the {big_n:,} gaps of {settings.population} ({settings.value_column}), "
            "sampled without replacement as if they were the whole benchmark"
            + (
                f"; strata by {settings.strata_column}, proportional allocation."
                if strata is not None
                else "."
            )
        )
        extra = {
            "population": {
                "file": str(settings.population),
                "size": big_n,
                "value_column": settings.value_column,
                "strata_column": settings.strata_column,
                "mean_gap": float(population.mean()),
                "nonzero_share": float(np.mean(population != 0)),
            }
        }
    for n in sizes + strata_sizes:
        if not 2 <= n <= population.size:
            raise ArgumentError(
                "n",
                f"n {n}: an audit size must lie between 2 and the population's "
                f"{population.size:,} items",
            )
    srs = coverage_study(population, sizes, intervals=intervals, **options.keywords("srs"))
    tables = [srs]
    if strata is not None:
        tables.append(
            coverage_study(
                population,
                strata_sizes,
                design="stratified",
                strata=strata,
                intervals=intervals,
                **options.keywords("stratified"),
            )
        )
    return StudyRun([_wide_coverage(tables, intervals, where)], extra)


def _wide_coverage(tables: list[StudyTable], intervals: tuple[str, ...], where: str) -> StudyTable:
    names = ["design", "n"]
    for m in intervals:
        names += [f"{m} coverage", f"{m} half-width"]
    rows = []
    for t in tables:
        for n in dict.fromkeys(t["n"].tolist()):
            row = [t["design"][0], n]
            for m in intervals:
                r = int(np.flatnonzero((t["n"] == n) & (t["interval"] == m))[0])
                row += [float(t["coverage"][r]), float(t["half_width"][r])]
            rows.append(row)
    first = tables[0]
    reps = first.meta["replications"]
    se = max(float(np.max(t["coverage_se"])) for t in tables)
    return StudyTable(
        title=f"Coverage and half-width of {1 - first.meta['alpha']:.0%} intervals in the "
        "finite-population calibration (N = "
        f"{first.meta['population_size']:,}, {reps:,} replications per design and size)",
        columns=table_columns(names, rows),
        notes=(f"Monte Carlo SE of a coverage at most {se:.4f}. {where}", *first.notes[1:]),
        meta={"tables": [t.to_dict() for t in tables]},
        keys=("design", "n"),
    )


def stress_tables(options: StudyOptions, settings: StudySettings) -> StudyRun:
    """The stress grid (Table 6) and a summary of each interval's coverage range over it."""
    intervals = tuple(settings.intervals or INTERVAL_METHODS)
    grid = stress_grid(intervals=intervals, **options.keywords("stress"))
    methods = [m for m in INTERVAL_METHODS if m in grid.columns]
    level = 1 - grid.meta["alpha"]
    rows = []
    for m in methods:
        cov = grid[m]
        if m == "hoeffding":
            width = "1.00 by definition"
        elif m == "bernstein" and "bernstein/hoeffding" in grid.columns:
            r = grid["bernstein/hoeffding"]
            width = f"{r.min():.2f} to {r.max():.2f}"
        else:
            width = "-"
        rows.append((m, f"{cov.min():.4f} to {cov.max():.4f}", int((cov < level).sum()), width))
    summary = StudyTable(
        title=f"Coverage across the {len(grid)} stress settings ({grid.meta['replications']:,} "
        "audits each)",
        columns=table_columns(
            ("interval", "coverage range", "settings below", "width vs Hoeffding"), rows
        ),
        notes=(f"settings below: coverage under the nominal {level:.2f}.",),
    )
    return StudyRun([summary, grid])


def detection_tables(options: StudyOptions, settings: StudySettings) -> StudyRun:
    """Detection rates (Tables 11-12), type-I error under relabelling (Fig. 10) and the exact
    test under pure form mismatch (Table 13), on a synthetic bank."""
    rng = np.random.default_rng(options.seed)  # the synthetic population
    public, fresh = _synthetic_bank(5, 1000, rng)
    sizes = (50, 100, 200, 400, 800)
    deltas = (0.02, 0.05, 0.10, 0.20)
    planted = detection_study(
        public,
        fresh,
        sizes=sizes,
        deltas=deltas,
        **options.keywords("planted"),
    )
    null = detection_study(
        public,
        fresh,
        sizes=sizes,
        deltas=0.0,
        relabel=True,
        **options.keywords("null"),
    )
    mismatch = detection_study(
        public,
        fresh,
        sizes=400,
        deltas=0.0,
        relabel=True,
        form_gaps=(0.0, 0.02, 0.05, 0.088),
        **options.keywords("mismatch"),
    )
    wide: dict[str, list[Any]] = {"n": list(sizes)}
    for delta in deltas:
        rows = planted["delta"] == delta
        wide[f"interval d={delta:.2f}"] = planted["interval_rate"][rows].tolist()
        wide[f"test d={delta:.2f}"] = planted["test_rate"][rows].tolist()
    table11 = StudyTable(
        title="Detection rate for a planted public-form advantage d, interval rule vs exact "
        "test (synthetic bank of 1,000 parents, 5 models pooled)",
        columns={k: np.asarray(v) for k, v in wide.items()},
        notes=planted.notes,
    )
    fig10 = StudyTable(
        title="Type-I error with the labels relabelled so the null holds",
        columns={
            "n": null["n"],
            "exact test": null["test_rate"],
            "test SE": null["test_se"],
            "interval rule": null["interval_rate"],
            "interval SE": null["interval_se"],
        },
        notes=(
            "The interval rule's rate here is not a type-I error of the audit: relabelling "
            "is a super-population null, while the Wald interval's finite-population "
            "correction assumes the bank's gaps are fixed.",
        ),
    )
    table13 = StudyTable(
        title="What ordinary form mismatch does to the exact test (n = 400, no contamination)",
        columns={
            "form gap": mismatch["form_gap"],
            "rejection rate": mismatch["test_rate"],
            "SE": mismatch["test_se"],
        },
        notes=("Every rejection here is caused by fresh forms being harder, not by exposure.",),
    )
    return StudyRun([table11, fig10, table13, planted])


def budget_tables(options: StudyOptions, settings: StudySettings) -> StudyRun:
    """The budget curves (Table 10) of five synthetic models and an audit-size plan."""
    rng = np.random.default_rng(options.seed)  # the synthetic population
    big_n = 200
    public, fresh = _synthetic_bank(5, big_n, rng)
    # five models whose public-form advantages differ by a few points
    gaps = public - fresh.mean(axis=2)
    # and a public-form advantage of 0 to 12 points, planted by flipping incorrect public
    # answers of zero-gap parents
    for m, advantage in enumerate((0.0, 0.03, 0.06, 0.09, 0.12)):
        candidates = (gaps[m] == 0) & (public[m] == 0)
        flips = candidates & (rng.random(big_n) < advantage * big_n / max(1, candidates.sum()))
        gaps[m, flips] = 1.0
    names = {f"model {chr(65 + m)}": gaps[m] for m in range(5)}
    curves = budget_study(names, sizes=(25, 50, 100, 150), **options.keywords("budget"))
    population_size = big_n if settings.population_size is None else settings.population_size
    plan = plan_audit_size(
        gaps, (0.02, 0.05, 0.10), alpha=options.alpha, population_size=population_size
    )
    return StudyRun([curves, _integer_plan(plan, population_size)])


def _integer_plan(plan: StudyTable, population_size: int) -> StudyTable:
    """The plan with its counts as integers (inf where no plan exists), and what a plan
    above N means."""
    columns = dict(plan.columns)
    for name in ("n_normal", "n_guardrail", "n_planned"):
        columns[name] = np.array(
            [int(v) if math.isfinite(v) else math.inf for v in plan[name]], dtype=object
        )
    notes = list(plan.notes)
    if any(math.isfinite(v) and v > population_size for v in plan["n_planned"]):
        notes.append(
            f"A plan above N = {population_size:,} cannot be met: the guardrail needs more "
            "nonzero gaps than the population is expected to hold; audit every parent and "
            "read the distribution-free interval."
        )
    return StudyTable(
        title=f"Parents to audit for power {plan.meta['power']:g} to detect an advantage delta "
        f"(alpha = {plan.meta['alpha']:g}, N = {population_size:,} parents)",
        columns=columns,
        notes=tuple(notes),
        meta=plan.meta,
    )


def sequential_tables(options: StudyOptions, settings: StudySettings) -> StudyRun:
    """The sequential audit under continuous monitoring, on a synthetic bank."""
    rng = np.random.default_rng(options.seed)  # the synthetic bank
    public, fresh = _synthetic_bank(1, 2000, rng)
    table = sequential_study(
        public[0],
        fresh[0],
        deltas=(0.0, 0.05, 0.10),
        max_parents=1200,
        look_every=50,
        effect_size=0.05,
        **options.keywords("sequential"),
    )
    where = (
        "Synthetic bank: 2,000 parents, public and two fresh forms scored with per-parent "
        "difficulty Beta(2, 2) and no form effect; delta is planted as in calibrate detection."
    )
    notes = (*table.notes, where)
    return StudyRun([dataclasses.replace(table, notes=notes)])


def sequential_order_tables(options: StudyOptions, settings: StudySettings) -> StudyRun:
    """The sequential order test's size, power and orders scored."""
    table = sequential_order_study(
        n_shards=10,
        max_permutations=99,
        h=10,
        shifts=(0.0, 1.0, 2.0, 3.0),
        **options.keywords("sequential-orders"),
    )
    return StudyRun([table])

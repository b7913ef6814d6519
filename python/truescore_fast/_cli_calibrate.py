"""The ``truescore-fast calibrate`` subcommand: run a named calibration study.

    truescore-fast calibrate {coverage,stress,detection,budget}
        [--replications R] [--seed S] [--threads T] [--json] [--plot FILE.png]

Without data the studies run on synthetic populations built from ``--seed`` (described
in each table's notes), shaped like the CleanScore paper's tables: coverage (Table 2),
stress (Table 6), detection (Tables 11-13, Fig. 10), budget (Table 10, plus the audit-
size planner). Exit 0 on success, 1 on bad input (the main CLI turns ValueError into 1).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._table import StudyTable
from truescore_fast._validation import optional_module
from truescore_fast.calibration import (
    _columns,
    budget_study,
    coverage_study,
    detection_study,
    plan_audit_size,
    stress_grid,
)
from truescore_fast.intervals import INTERVAL_METHODS

__all__ = ["STUDIES", "add_calibrate_parser", "run_calibrate"]

EXIT_OK = 0
STUDIES = ("coverage", "stress", "detection", "budget")
_DEFAULT_REPLICATIONS = {"coverage": 5000, "stress": 4000, "detection": 2000, "budget": 2000}


def shown(text: str, keep: int = 24) -> str:
    """A flag's text for an error line: as typed, or its first characters and its length
    when longer (a 400-digit number is not worth a screenful)."""
    if len(text) <= 2 * keep:
        return repr(text)
    return f"{text[:keep]!r}... ({len(text):,} characters)"


def integer_flag(text: str) -> int:
    """An integer flag's value (argparse ``type=``): beyond int64 is refused here, with the
    flag's name, rather than deep in the compiled core."""
    try:
        value = int(text)
    except ValueError:  # not an integer, or more digits than int() converts (4,300)
        raise argparse.ArgumentTypeError(f"expected an integer; got {shown(text)}") from None
    if not -(2**63) <= value < 2**63:
        raise argparse.ArgumentTypeError(f"{shown(text)} is out of range (|value| < 2**63)")
    return value


def seed_flag(text: str) -> int:
    """A ``--seed`` value: an integer >= 0 (any size NumPy accepts)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer; got {shown(text)}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer; got {shown(text)}")
    return value


def add_calibrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``calibrate STUDY [--replications R] [--seed S] [--threads T] [--json]
    [--plot FILE.png]``."""
    parser = subparsers.add_parser(
        "calibrate",
        help="run a Monte Carlo calibration study and print its table",
        description=(
            "Run a named calibration study on a seeded synthetic population and print tables "
            "shaped like the CleanScore paper's: coverage (Table 2), stress (Table 6), "
            "detection (Tables 11-13, Fig. 10), budget (Table 10 and an audit-size plan). "
            "Results are identical for any --threads. Exit 0 on success, 1 on bad input."
        ),
    )
    parser.add_argument("study", choices=STUDIES, help="which study to run")
    parser.add_argument(
        "--replications",
        metavar="R",
        type=integer_flag,
        default=None,
        help="replications per cell (defaults: coverage 5000, stress 4000, detection and "
        "budget 2000)",
    )
    parser.add_argument("--seed", metavar="S", type=seed_flag, default=0, help="seed (default 0)")
    parser.add_argument(
        "--threads",
        metavar="T",
        type=integer_flag,
        default=None,
        help="threads (default: every core)",
    )
    parser.add_argument("--json", action="store_true", help="print the tables as JSON")
    parser.add_argument(
        "--plot", metavar="FILE.png", default=None, help="also save a figure (needs matplotlib)"
    )
    parser.add_argument(
        "--progress", action="store_true", help="show a progress bar (tqdm if installed)"
    )
    parser.set_defaults(func=run_calibrate)
    return parser


def run_calibrate(args: argparse.Namespace) -> int:
    """Run the study, print its tables (text or JSON), optionally save a plot."""
    pyplot = _pyplot() if args.plot else None
    if args.plot and not str(args.plot).lower().endswith(".png"):
        raise ValueError(f"--plot must name a .png file; got {args.plot!r}")
    reps = (
        args.replications if args.replications is not None else _DEFAULT_REPLICATIONS[args.study]
    )
    common = {
        "replications": reps,
        "seed": args.seed,
        "n_threads": args.threads,
        "progress": True if args.progress else None,
    }
    tables: list[StudyTable]
    plot: Callable[[Any, list[StudyTable]], None]
    tables, plot = _RUNNERS[args.study](common)
    if args.json:
        print(json.dumps({"study": args.study, "tables": [t.to_dict() for t in tables]}, indent=2))
    else:
        print("\n\n".join(str(t) for t in tables))
    if pyplot is not None:
        figure = pyplot.figure(figsize=(11, 4))
        plot(figure, tables)
        figure.tight_layout()
        figure.savefig(args.plot, dpi=120)
        pyplot.close(figure)
        if not args.json:
            print(f"\nfigure saved to {args.plot}")
    return EXIT_OK


def _pyplot() -> Any:
    need = {"requirement": "matplotlib>=3.7", "extra": "plot", "purpose": "--plot"}
    optional_module("matplotlib", **need).use("Agg")
    return optional_module("matplotlib.pyplot", **need)


# ---------------------------------------------------------------------------- populations


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


# ---------------------------------------------------------------------------- studies


def _coverage(common: dict[str, Any]) -> tuple[list[StudyTable], Any]:
    rng = np.random.default_rng(common["seed"])  # the synthetic population
    population = _synthetic_gaps(5000, rng)
    strata = rng.integers(0, 4, size=5000)  # four strata, as a benchmark's subject areas
    intervals = INTERVAL_METHODS
    srs = coverage_study(population, [120, 400, 800, 1200], intervals=intervals, **common)
    strat = coverage_study(
        population, 400, design="stratified", strata=strata, intervals=intervals, **common
    )
    wide = _wide_coverage([srs, strat], intervals)
    return [wide], _plot_coverage


def _wide_coverage(tables: list[StudyTable], intervals: tuple[str, ...]) -> StudyTable:
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
        title=f"Coverage and half-width in the finite-population calibration (N = "
        f"{first.meta['population_size']:,}, {reps:,} replications per design)",
        columns=_columns(names, rows),
        notes=(
            f"Monte Carlo SE of a coverage at most {se:.4f}. Synthetic population: 70% zero "
            "gaps, the rest on {-1, -1/2, +1/2, +1}; four strata, proportional allocation.",
            *first.notes[1:],
        ),
        meta={"tables": [t.to_dict() for t in tables]},
    )


def _stress(common: dict[str, Any]) -> tuple[list[StudyTable], Any]:
    grid = stress_grid(**common)
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
        columns=_columns(
            ("interval", "coverage range", "settings below", "width vs Hoeffding"), rows
        ),
        notes=(f"settings below: coverage under the nominal {level:.2f}.",),
    )
    return [summary, grid], _plot_stress


def _detection(common: dict[str, Any]) -> tuple[list[StudyTable], Any]:
    rng = np.random.default_rng(common["seed"])  # the synthetic population
    public, fresh = _synthetic_bank(5, 1000, rng)
    sizes = (50, 100, 200, 400, 800)
    planted = detection_study(
        public, fresh, sizes=sizes, deltas=(0.02, 0.05, 0.10, 0.20), **common
    )
    null = detection_study(public, fresh, sizes=sizes, deltas=0.0, relabel=True, **common)
    mismatch = detection_study(
        public,
        fresh,
        sizes=400,
        deltas=0.0,
        relabel=True,
        form_gaps=(0.0, 0.02, 0.05, 0.088),
        **common,
    )
    wide: dict[str, list[Any]] = {"n": list(sizes)}
    for delta in (0.02, 0.05, 0.10, 0.20):
        rows = planted["delta"] == delta
        wide[f"interval d={delta:.2f}"] = planted["interval_rate"][rows].tolist()
        wide[f"test d={delta:.2f}"] = planted["test_rate"][rows].tolist()
    table11 = StudyTable(
        title="Detection rate for a planted public-form advantage, interval rule vs exact test "
        "(synthetic bank of 1,000 parents, 5 models pooled)",
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
    return [table11, fig10, table13, planted], _plot_detection


def _budget(common: dict[str, Any]) -> tuple[list[StudyTable], Any]:
    rng = np.random.default_rng(common["seed"])  # the synthetic population
    public, fresh = _synthetic_bank(5, 200, rng)
    # five models whose public-form advantages differ by a few points
    gaps = public - fresh.mean(axis=2)
    # and a public-form advantage of 0 to 12 points, planted by flipping incorrect public
    # answers of zero-gap parents
    for m, advantage in enumerate((0.0, 0.03, 0.06, 0.09, 0.12)):
        candidates = (gaps[m] == 0) & (public[m] == 0)
        flips = candidates & (rng.random(200) < advantage * 200 / max(1, candidates.sum()))
        gaps[m, flips] = 1.0
    names = {f"model {chr(65 + m)}": gaps[m] for m in range(5)}
    curves = budget_study(names, sizes=(25, 50, 100, 150), **common)
    plan = plan_audit_size(gaps, (0.02, 0.05, 0.10), population_size=1000)
    return [curves, plan], _plot_budget


_RUNNERS = {
    "coverage": _coverage,
    "stress": _stress,
    "detection": _detection,
    "budget": _budget,
}


# ---------------------------------------------------------------------------- plots


def _plot_coverage(figure: Any, tables: list[StudyTable]) -> None:
    srs = tables[0].meta["tables"][0]["columns"]
    n = np.asarray(srs["n"])
    interval = np.asarray(srs["interval"])
    left, right = figure.subplots(1, 2)
    for m in dict.fromkeys(interval.tolist()):
        rows = interval == m
        left.plot(n[rows], np.asarray(srs["half_width"])[rows], marker="o", label=m)
        right.plot(n[rows], np.asarray(srs["coverage"])[rows], marker="o", label=m)
    left.set(xlabel="audit size n", ylabel="mean half-width", title="Precision")
    right.axhline(0.95, color="grey", linestyle=":")
    right.set(xlabel="audit size n", ylabel="coverage", title="Coverage (SRS)")
    left.legend()


def _plot_stress(figure: Any, tables: list[StudyTable]) -> None:
    grid = tables[1]
    axis = figure.subplots(1, 1)
    x = np.arange(len(grid))
    for m in INTERVAL_METHODS:
        if m in grid.columns:
            axis.plot(x, grid[m], marker=".", linestyle="none", label=m)
    axis.axhline(1 - grid.meta["alpha"], color="grey", linestyle=":")
    axis.set(xlabel="stress setting", ylabel="coverage", title="Coverage across the stress grid")
    axis.legend()


def _plot_detection(figure: Any, tables: list[StudyTable]) -> None:
    planted = tables[3]
    null = tables[1]
    axes = figure.subplots(1, 3)
    for axis, delta in zip(axes[:2], (0.05, 0.10), strict=True):
        rows = planted["delta"] == delta
        axis.plot(planted["n"][rows], planted["test_rate"][rows], marker="o", label="exact test")
        axis.plot(planted["n"][rows], planted["interval_rate"][rows], marker="s", label="interval")
        axis.set(
            xlabel="audit size n",
            ylabel="detection rate",
            ylim=(0, 1.02),
            title=f"planted advantage {delta:.2f}",
        )
        axis.legend()
    axes[2].plot(null["n"], null["exact test"], marker="o")
    axes[2].axhline(0.05, color="grey", linestyle=":")
    axes[2].set(
        xlabel="audit size n",
        ylabel="type-I error of the exact test",
        ylim=(0, 0.1),
        title="null (relabelled)",
    )


def _plot_budget(figure: Any, tables: list[StudyTable]) -> None:
    curves = tables[0]
    left, right = figure.subplots(1, 2)
    left.plot(curves["n"], curves["half_width"], marker="o")
    left.set(xlabel="audited parents", ylabel="mean half-width", title="Precision")
    right.plot(curves["n"], curves["exact_order"], marker="o", label="exact order")
    right.plot(curves["n"], curves["pairs_correct"], marker="s", label="pairs correct")
    right.set(xlabel="audited parents", ylabel="share", title="Ordering recovered")
    right.legend()

"""The ``truescore-fast calibrate`` subcommand: run a named calibration study.

    truescore-fast calibrate {coverage,stress,detection,budget,sequential,sequential-orders}
        [--population FILE --n N [N ...] [--value-column V] [--strata-column S]]
        [--replications R] [--seed S] [--alpha A] [--threads T] [--intervals M ...]
        [--population-size N] [--json] [--wide] [--plot FILE.{png,svg,pdf}]
        [--progress | --no-progress] [--quiet] [--checkpoint FILE]
        [--executor {local,dask}] [--dask-scheduler ADDRESS]

Without data the studies run on synthetic populations built from ``--seed`` (described
in each table's notes), shaped like the CleanScore paper's tables: coverage (Table 2),
stress (Table 6), detection (Tables 11-13, Fig. 10), budget (Table 10, plus the audit-
size planner); sequential and sequential-orders measure the sequential audit under
continuous monitoring and the sequential order test (``sequential_study`` and
``sequential_order_study``). ``calibrate coverage --population FILE`` runs the coverage
study on the user's own per-item gaps instead. Exit 0 on success, 1 on bad input (the
main CLI turns ValueError into 1), 130 on Ctrl-C (a ``--checkpoint`` keeps what was
done).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._cli_common import integer_flag, seed_flag
from truescore_fast._engine import CheckpointRun
from truescore_fast._io import read_rows
from truescore_fast._plot import plot_budget, plot_coverage, plot_detection, plot_stress
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
from truescore_fast.sequential import sequential_order_study, sequential_study

__all__ = ["STUDIES", "add_calibrate_parser", "run_calibrate"]

EXIT_OK = 0
STUDIES = ("coverage", "stress", "detection", "budget", "sequential", "sequential-orders")
_DEFAULT_REPLICATIONS = {
    "coverage": 5000,
    "stress": 4000,
    "detection": 2000,
    "budget": 2000,
    "sequential": 1000,
    "sequential-orders": 2000,
}
_PLOTTED = ("coverage", "stress", "detection", "budget")  # the studies --plot draws
_DEFAULT_SIZES = (120, 400, 800, 1200)  # the paper's Table 2
PLOT_SUFFIXES = (".png", ".svg", ".pdf")
TABLE_WIDTH = 100  # characters, unless --wide


def add_calibrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``calibrate STUDY [options]`` (see the module docstring)."""
    parser = subparsers.add_parser(
        "calibrate",
        help="run a Monte Carlo calibration study and print its table",
        description=(
            "Run a named calibration study and print tables shaped like the CleanScore "
            "paper's: coverage (Table 2), stress (Table 6), detection (Tables 11-13, Fig. "
            "10), budget (Table 10 and an audit-size plan), sequential (the sequential "
            "audit under continuous monitoring) and sequential-orders (the sequential "
            "order test's size, power and orders scored). The studies run on seeded "
            "synthetic populations; 'coverage --population FILE' runs on your own audit's "
            "per-item gaps (a .csv or JSON Lines file, one row per parent item, the gap "
            "public - mean(fresh) in [-1, 1] in --value-column). Results are identical for "
            "any --threads, executor or resumed --checkpoint. Exit codes: 0 ran, 1 bad "
            "input or a missing optional dependency, 130 interrupted."
        ),
    )
    parser.add_argument("study", choices=STUDIES, help="which study to run")
    data = parser.add_argument_group("your own data (calibrate coverage)")
    data.add_argument(
        "--population",
        metavar="FILE",
        default=None,
        help="per-item gaps of your audit (.csv/.jsonl): sample from them as the finite "
        "population instead of the synthetic one",
    )
    data.add_argument(
        "--value-column",
        metavar="V",
        default="gap",
        help="the column holding each item's gap in [-1, 1] (default: gap)",
    )
    data.add_argument(
        "--strata-column",
        metavar="S",
        default=None,
        help="also run a stratified design (proportional allocation) over this column",
    )
    data.add_argument(
        "--n",
        metavar="N",
        type=integer_flag,
        nargs="+",
        default=None,
        help="audit sizes to simulate (default 120 400 800 1200, those below the population's "
        "size)",
    )
    study = parser.add_argument_group("study settings")
    study.add_argument(
        "--replications",
        metavar="R",
        type=integer_flag,
        default=None,
        help="replications per cell (defaults: coverage 5000, stress 4000, detection, budget "
        "and sequential-orders 2000, sequential 1000)",
    )
    study.add_argument("--seed", metavar="S", type=seed_flag, default=0, help="seed (default 0)")
    study.add_argument(
        "--alpha", metavar="A", type=float, default=0.05, help="1 - nominal level (default 0.05)"
    )
    study.add_argument(
        "--intervals",
        metavar="M",
        nargs="+",
        choices=INTERVAL_METHODS,
        default=None,
        help="interval methods for coverage and stress (default all: "
        f"{' '.join(INTERVAL_METHODS)})",
    )
    study.add_argument(
        "--population-size",
        metavar="N",
        type=integer_flag,
        default=None,
        help="budget: the benchmark size N the audit-size plan samples from (default: the "
        "bank's parents)",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="print the tables as JSON")
    output.add_argument(
        "--wide",
        action="store_true",
        help=f"print every column (default: fit {TABLE_WIDTH} characters, leaving out "
        "standard-error columns and wrapping the rest)",
    )
    output.add_argument(
        "--plot",
        metavar="FILE",
        default=None,
        help="also save a figure, .png, .svg or .pdf by the suffix (needs matplotlib)",
    )
    output.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: only when stderr is a terminal)",
    )
    output.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no status lines on stderr or stdout; only the tables",
    )
    run = parser.add_argument_group("running")
    run.add_argument(
        "--threads",
        metavar="T",
        type=integer_flag,
        default=None,
        help="threads per work item (default: every core of the machine running it)",
    )
    run.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="save progress to FILE and resume from it: run the same command again after "
        "an interruption and finished cells are not rerun (results bit-identical)",
    )
    run.add_argument(
        "--executor",
        choices=("local", "dask"),
        default="local",
        help="local threads (default) or a Dask cluster: --dask-scheduler's, the "
        "scheduler-address of Dask's configuration, else a local cluster started here",
    )
    run.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the cells on the Dask scheduler at ADDRESS (tcp://host:8786); every worker "
        "needs this version of truescore-fast installed",
    )
    parser.set_defaults(func=run_calibrate)
    return parser


def run_calibrate(args: argparse.Namespace) -> int:
    """Run the study, print its tables (text or JSON), optionally save a plot."""
    _check_flags(args)
    pyplot = _pyplot() if args.plot else None  # a missing matplotlib fails before the run
    reps = (
        args.replications if args.replications is not None else _DEFAULT_REPLICATIONS[args.study]
    )
    with _executor(args) as executor:
        common = {
            "replications": reps,
            "seed": args.seed,
            "alpha": args.alpha,
            "n_threads": args.threads,
            "progress": _progress(args),
            "executor": executor,
        }
        tables: list[StudyTable]
        plot: Callable[[Any, list[StudyTable]], Any] | None
        tables, plot, extra = _RUNNERS[args.study](args, common)
    if args.json:
        payload = {"study": args.study, **extra, "tables": [t.to_dict() for t in tables]}
        print(json.dumps(payload, indent=2, allow_nan=False))
    else:
        width = None if args.wide else TABLE_WIDTH
        print("\n\n".join(t.summary(width) for t in tables))
    if pyplot is not None and plot is not None:
        figure = plot(pyplot, tables)
        figure.savefig(args.plot, dpi=120)
        pyplot.close(figure)
        if not (args.json or args.quiet):
            print(f"\nfigure saved to {args.plot}")
    return EXIT_OK


def _check_flags(args: argparse.Namespace) -> None:
    if args.plot is not None and Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
        raise ValueError(
            f"--plot must name a .png, .svg or .pdf file (the suffix picks the format); got "
            f"{args.plot!r}"
        )
    if args.quiet and args.progress:
        raise ValueError("--quiet and --progress contradict each other: choose one")
    for flag, value, studies in (
        ("--population", args.population, ("coverage",)),
        ("--strata-column", args.strata_column, ("coverage",)),
        ("--n", args.n, ("coverage",)),
        ("--intervals", args.intervals, ("coverage", "stress")),
        ("--population-size", args.population_size, ("budget",)),
        ("--plot", args.plot, _PLOTTED),
    ):
        if value is not None and args.study not in studies:
            names = ", ".join(studies[:-1]) + " and " * (len(studies) > 1) + studies[-1]
            raise ValueError(f"{flag} applies to calibrate {names}, not {args.study}")
    if args.strata_column is not None and args.population is None:
        raise ValueError("--strata-column needs --population (the column is read from it)")
    if args.dask_scheduler is not None:
        args.executor = "dask"


def _progress(args: argparse.Namespace) -> bool | None:
    """The library's ``progress``: off with --quiet/--no-progress; with --progress on; by
    default a bar (after a second) only when stderr is a terminal."""
    if args.quiet or args.progress is False:
        return False
    if args.progress:
        return True
    return None if sys.stderr.isatty() else False


def _pyplot() -> Any:
    need = {"requirement": "matplotlib>=3.7", "extra": "plot", "purpose": "--plot"}
    optional_module("matplotlib", **need).use("Agg")
    return optional_module("matplotlib.pyplot", **need)


# ---------------------------------------------------------------------------- dask


@contextlib.contextmanager
def _executor(args: argparse.Namespace) -> Iterator[Any]:
    """None (local threads), or a Dask client's executor, the client closed on exit.

    The worker set-up a user would otherwise script: connect (or start a local cluster,
    which needs no ``if __name__ == "__main__"`` guard from the user: this process is the
    command line's), and check that every worker imports this version of truescore-fast.
    """
    if args.executor != "dask":
        yield None
        return
    distributed = optional_module(
        "distributed",
        requirement="dask[distributed]>=2024.1",
        extra="dask",
        purpose="--executor dask / --dask-scheduler",
    )
    address = args.dask_scheduler or _configured_scheduler()
    with contextlib.ExitStack() as stack:
        if address is None:
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=2, threads_per_worker=1, dashboard_address=None, processes=True
                )
            )
            address = cluster.scheduler_address
        try:
            client = stack.enter_context(
                distributed.Client(address, timeout="10s", set_as_default=False)
            )
        except (OSError, TimeoutError, ValueError) as error:
            raise ValueError(f"--dask-scheduler: cannot connect to {address!r}: {error}") from None
        _check_workers(client, address)
        yield client.get_executor()


def _configured_scheduler() -> str | None:
    dask = optional_module(
        "dask", requirement="dask[distributed]>=2024.1", extra="dask", purpose="--executor dask"
    )
    address = dask.config.get("scheduler-address", None)
    return str(address) if address else None


def _worker_version() -> str:  # runs on each worker
    import truescore_fast

    return str(truescore_fast.__version__)


def _check_workers(client: Any, address: str) -> None:
    from truescore_fast import __version__

    try:
        client.wait_for_workers(1, timeout=30)
        versions = client.run(_worker_version)
    except (ImportError, AttributeError) as error:
        raise ValueError(
            f"--dask-scheduler: the workers of {address} cannot import truescore_fast "
            f"({error}); install truescore-fast {__version__} on every worker"
        ) from None
    except (OSError, TimeoutError) as error:
        raise ValueError(
            f"--dask-scheduler: no worker joined {address} in 30 s ({error})"
        ) from None
    wrong = {w: v for w, v in versions.items() if v != __version__}
    if wrong:
        worker, version = next(iter(wrong.items()))
        raise ValueError(
            f"--dask-scheduler: worker {worker} runs truescore-fast {version}, this is "
            f"{__version__}; install the same version on every worker"
        )


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


def read_population(
    path: str, value_column: str, strata_column: str | None
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.str_] | None]:
    """The per-item gaps (and strata labels) of ``path``, every row checked."""
    rows = read_rows(path)
    for column in (value_column, strata_column):
        if column is not None and column not in rows[0]:
            flag = "--value-column" if column == value_column else "--strata-column"
            raise ValueError(
                f"--population {path} has no column {column!r} ({flag} names another); its "
                f"columns: {', '.join(map(str, rows[0]))}"
            )
    gaps = np.empty(len(rows))
    for i, row in enumerate(rows):
        raw = row.get(value_column)
        try:
            value = float(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ValueError(
                f"--population {path} row {i + 1}: {value_column}={raw!r} is not a number"
            ) from None
        if not (math.isfinite(value) and -1.0 <= value <= 1.0):
            raise ValueError(
                f"--population {path} row {i + 1}: {value_column}={raw!r} is not a gap in "
                "[-1, 1] (public minus mean fresh correctness)"
            )
        gaps[i] = value
    strata = None
    if strata_column is not None:
        labels = [row.get(strata_column) for row in rows]
        missing = [i + 1 for i, v in enumerate(labels) if v is None or str(v).strip() == ""]
        if missing:
            raise ValueError(
                f"--population {path} row {missing[0]}: no {strata_column!r} label "
                f"({len(missing)} row(s) without one)"
            )
        strata = np.array([str(v).strip() for v in labels])
    if gaps.size < 3:
        raise ValueError(
            f"--population {path} holds {gaps.size} item(s); a coverage study needs at least 3"
        )
    return gaps, strata


# ---------------------------------------------------------------------------- studies

# The tables, the figure maker (None: the study has no figure, and --plot is refused
# before it runs) and extra JSON fields.
_Run = tuple[list[StudyTable], Callable[[Any, list[StudyTable]], Any] | None, dict[str, Any]]


def _checkpoint(args: argparse.Namespace, run: str) -> CheckpointRun | None:
    """The --checkpoint file, named for one of the study's runs (a study may make several
    library calls; they share the file)."""
    return None if args.checkpoint is None else CheckpointRun(args.checkpoint, run)


def _coverage(args: argparse.Namespace, common: dict[str, Any]) -> _Run:
    intervals = tuple(args.intervals or INTERVAL_METHODS)
    extra: dict[str, Any] = {}
    if args.population is None:
        rng = np.random.default_rng(args.seed)  # the synthetic population
        population = _synthetic_gaps(5000, rng)
        strata: npt.NDArray[Any] | None = rng.integers(0, 4, size=5000)  # subject areas
        sizes = tuple(args.n or _DEFAULT_SIZES)
        strata_sizes: tuple[int, ...] = (400,) if args.n is None else sizes
        where = (
            "Synthetic population: 70% zero gaps, the rest on {-1, -1/2, +1/2, +1}; four "
            "strata, proportional allocation."
        )
    else:
        population, strata = read_population(
            args.population, args.value_column, args.strata_column
        )
        big_n = population.size
        sizes = tuple(args.n) if args.n else tuple(n for n in _DEFAULT_SIZES if n < big_n)
        sizes = sizes or (max(2, big_n // 2),)
        strata_sizes = sizes
        where = (
            f"Population: the {big_n:,} gaps of {args.population} ({args.value_column}), "
            "sampled without replacement as if they were the whole benchmark"
            + (
                f"; strata by {args.strata_column}, proportional allocation."
                if strata is not None
                else "."
            )
        )
        extra = {
            "population": {
                "file": str(args.population),
                "size": big_n,
                "value_column": args.value_column,
                "strata_column": args.strata_column,
                "mean_gap": float(population.mean()),
                "nonzero_share": float(np.mean(population != 0)),
            }
        }
    for n in sizes + strata_sizes:
        if not 2 <= n <= population.size:
            raise ValueError(
                f"--n {n}: an audit size must lie between 2 and the population's "
                f"{population.size:,} items"
            )
    srs = coverage_study(
        population, sizes, intervals=intervals, checkpoint=_checkpoint(args, "srs"), **common
    )
    tables = [srs]
    if strata is not None:
        tables.append(
            coverage_study(
                population,
                strata_sizes,
                design="stratified",
                strata=strata,
                intervals=intervals,
                checkpoint=_checkpoint(args, "stratified"),
                **common,
            )
        )
    return [_wide_coverage(tables, intervals, where)], plot_coverage, extra


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
        columns=_columns(names, rows),
        notes=(f"Monte Carlo SE of a coverage at most {se:.4f}. {where}", *first.notes[1:]),
        meta={"tables": [t.to_dict() for t in tables]},
        keys=("design", "n"),
    )


def _stress(args: argparse.Namespace, common: dict[str, Any]) -> _Run:
    intervals = tuple(args.intervals or INTERVAL_METHODS)
    grid = stress_grid(intervals=intervals, checkpoint=_checkpoint(args, "stress"), **common)
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
    return [summary, grid], plot_stress, {}


def _detection(args: argparse.Namespace, common: dict[str, Any]) -> _Run:
    rng = np.random.default_rng(args.seed)  # the synthetic population
    public, fresh = _synthetic_bank(5, 1000, rng)
    sizes = (50, 100, 200, 400, 800)
    deltas = (0.02, 0.05, 0.10, 0.20)
    planted = detection_study(
        public,
        fresh,
        sizes=sizes,
        deltas=deltas,
        checkpoint=_checkpoint(args, "planted"),
        **common,
    )
    null = detection_study(
        public,
        fresh,
        sizes=sizes,
        deltas=0.0,
        relabel=True,
        checkpoint=_checkpoint(args, "null"),
        **common,
    )
    mismatch = detection_study(
        public,
        fresh,
        sizes=400,
        deltas=0.0,
        relabel=True,
        form_gaps=(0.0, 0.02, 0.05, 0.088),
        checkpoint=_checkpoint(args, "mismatch"),
        **common,
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
    return [table11, fig10, table13, planted], plot_detection, {}


def _budget(args: argparse.Namespace, common: dict[str, Any]) -> _Run:
    rng = np.random.default_rng(args.seed)  # the synthetic population
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
    curves = budget_study(
        names, sizes=(25, 50, 100, 150), checkpoint=_checkpoint(args, "budget"), **common
    )
    population_size = big_n if args.population_size is None else args.population_size
    plan = plan_audit_size(
        gaps, (0.02, 0.05, 0.10), alpha=args.alpha, population_size=population_size
    )
    return [curves, _integer_plan(plan, population_size)], plot_budget, {}


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


def _sequential(args: argparse.Namespace, common: dict[str, Any]) -> _Run:
    rng = np.random.default_rng(args.seed)  # the synthetic bank
    public, fresh = _synthetic_bank(1, 2000, rng)
    table = sequential_study(
        public[0],
        fresh[0],
        deltas=(0.0, 0.05, 0.10),
        max_parents=1200,
        look_every=50,
        effect_size=0.05,
        checkpoint=_checkpoint(args, "sequential"),
        **common,
    )
    where = (
        "Synthetic bank: 2,000 parents, public and two fresh forms scored with per-parent "
        "difficulty Beta(2, 2) and no form effect; delta is planted as in calibrate detection."
    )
    notes = (*table.notes, where)
    return [dataclasses.replace(table, notes=notes)], None, {}


def _sequential_orders(args: argparse.Namespace, common: dict[str, Any]) -> _Run:
    table = sequential_order_study(
        n_shards=10,
        max_permutations=99,
        h=10,
        shifts=(0.0, 1.0, 2.0, 3.0),
        checkpoint=_checkpoint(args, "sequential-orders"),
        **common,
    )
    return [table], None, {}


_RUNNERS: dict[str, Callable[[argparse.Namespace, dict[str, Any]], _Run]] = {
    "coverage": _coverage,
    "stress": _stress,
    "detection": _detection,
    "budget": _budget,
    "sequential": _sequential,
    "sequential-orders": _sequential_orders,
}

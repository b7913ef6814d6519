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
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from truescore_fast import _catalog
from truescore_fast._output import check_checkpoint_path, check_output_path, output_file
from truescore_fast.cli._common import ExitCode, feeds, integer_flag, seed_flag

# The library is imported where it is used: --help loads neither NumPy nor SciPy.
INTERVAL_METHODS = _catalog.interval_methods()

__all__ = ["add_parser", "run_calibrate"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


class _StudyChoices:
    """The ``study`` argument's choices: the catalog's names where they are only listed
    (``--help`` loads no NumPy), the live registry where a name is checked, so a study
    added to ``STUDIES`` (``Study.of``) runs from the command line as the built-in ones."""

    def __iter__(self) -> Iterator[str]:
        names = [entry.name for entry in _catalog.STUDIES]
        registry = sys.modules.get("truescore_fast.studies.registry")
        if registry is not None:  # loaded: its added studies are choices too
            names += [name for name in registry.STUDIES if name not in names]
        return iter(names)

    def __contains__(self, name: object) -> bool:
        from truescore_fast.studies.registry import STUDIES

        return name in STUDIES


TABLE_WIDTH = 100  # characters, unless --wide


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``calibrate STUDY [options]`` (see the module docstring)."""
    parser = subparsers.add_parser(
        "calibrate",
        help="run a Monte Carlo calibration study and print its table",
        description=(
            "Run a named calibration study (listed below) and print tables shaped like "
            "the CleanScore paper's. The studies run on seeded "
            "synthetic populations; 'coverage --population FILE' runs on your own audit's "
            "per-item gaps (a .csv or JSON Lines file, one row per parent item, the gap "
            "public - mean(fresh) in [-1, 1] in --value-column). Results are identical for "
            "any --threads, executor or resumed --checkpoint. Exit codes: 0 ran, 1 bad "
            "input or a missing optional dependency, 130 interrupted."
        ),
    )
    parser.add_argument(
        "study",
        choices=_StudyChoices(),
        help="which study to run: "
        + "; ".join(f"{entry.name}, {entry.summary}" for entry in _catalog.STUDIES),
    )
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
        help="replications per cell (defaults: "
        + ", ".join(f"{entry.name} {entry.replications}" for entry in _catalog.STUDIES)
        + ")",
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
    feeds(
        run.add_argument(
            "--threads",
            metavar="T",
            type=integer_flag,
            default=None,
            help="threads per work item (default: every CPU it may use on the machine running it)",
        ),
        "n_threads",
        "threads",
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
    from truescore_fast.studies.options import StudyOptions, StudySettings
    from truescore_fast.studies.registry import STUDIES

    _check_flags(args)
    pyplot = _pyplot() if args.plot else None  # a missing matplotlib fails before the run
    study = STUDIES[args.study]
    with _executor(args) as executor:
        options = StudyOptions(
            replications=study.replications if args.replications is None else args.replications,
            alpha=args.alpha,
            seed=args.seed,
            n_threads=args.threads,
            progress=_progress(args),
            executor=executor,
            checkpoint=args.checkpoint,
        )
        settings = StudySettings(**{name: getattr(args, name) for name in StudySettings.names()})
        result = study.run(options, settings)
    tables, extra, plot = result.tables, result.extra, study.plot
    if args.json:
        payload = {"study": args.study, **extra, "tables": [t.to_dict() for t in tables]}
        print(json.dumps(payload, indent=2, allow_nan=False))
    else:
        width = None if args.wide else TABLE_WIDTH
        print("\n\n".join(t.summary(width, wider="--wide") for t in tables))
    if pyplot is not None and plot is not None:
        figure = plot(pyplot, tables)
        try:  # replaced only once written whole, as every output file (docs/cli.md)
            with output_file(args.plot, flag="--plot", binary=True) as handle:
                figure.savefig(handle, format=Path(args.plot).suffix.lower()[1:], dpi=120)
        finally:
            pyplot.close(figure)
        if not (args.json or args.quiet):
            print(f"\nfigure saved to {args.plot}")
    return ExitCode.OK


def _check_flags(args: argparse.Namespace) -> None:
    from truescore_fast.studies.options import StudySettings
    from truescore_fast.studies.registry import STUDIES

    if args.plot is not None:  # before any work: suffix, folder, no directory, no dead link
        check_output_path(args.plot, flag="--plot", suffixes=PLOT_SUFFIXES)
    if args.checkpoint is not None:
        check_checkpoint_path(args.checkpoint, flag="--checkpoint")
    if args.quiet and args.progress:
        raise ValueError("--quiet and --progress contradict each other: choose one")
    # a setting another study reads is refused, naming the studies that read it
    for name in (*StudySettings.names(), "plot"):
        value = getattr(args, name)
        if name == "plot":
            studies = [s.name for s in STUDIES.values() if s.plot is not None]
        else:
            studies = [s.name for s in STUDIES.values() if name in s.settings]
        if value is not None and args.study not in studies and name != "value_column":
            flag = "--" + name.replace("_", "-")
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
    from truescore_fast._validation import optional_module

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
    from truescore_fast._validation import optional_module

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
                distributed.LocalCluster(  # its HTTP server on any free loopback port
                    n_workers=2,
                    threads_per_worker=1,
                    dashboard_address="127.0.0.1:0",
                    processes=True,
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
    from truescore_fast._validation import optional_module

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

"""``truescore-fast suite TABLE_OR_MANIFEST``: the suite audit (every test on every model
and benchmark, p-values adjusted together) of one long table or of a manifest of harness
runs; exit 2 when anything is flagged after the adjustment, 0 when nothing is, 1 when it
cannot run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import textwrap
from collections.abc import Iterator
from typing import Any

from truescore_fast._catalog import SUITE_TESTS, harness_names
from truescore_fast._output import check_output_path
from truescore_fast.cli._common import ExitCode, feeds, integer_flag, seed_flag

# The library is imported where it is used: --help loads neither NumPy nor SciPy.

__all__ = ["add_parser", "run_suite"]

_TESTS = tuple(test.name for test in SUITE_TESTS)

_DESCRIPTION = """\
Which scores of a suite can you not trust? Every applicable test on every (model,
benchmark), the p-values of all of them adjusted together, and the (model, benchmark,
test) triples flagged at level --q.

Input: a long table (.csv, .tsv, JSON Lines or .parquet, each may be gzipped; - for
standard input), one row per (model, benchmark, parent, form):
  model, benchmark, parent  (--model-column, --benchmark-column, --parent-column)
  form     "public", a fresh form (fresh1, fresh2, ...) or "reference" (an item of a
           separate reference benchmark of the same task, its own parents)
  correct  the score in [0, 1]
Or a manifest (a table with a "path" column): one row per (model, benchmark, form) with
the columns model, benchmark, form, path; each path an lm-eval samples file, an Inspect
log or a table, relative to the manifest's folder (needs --match-key); form "loglik"
names the pair's log-likelihood table for the order test. With a long table, give
log-likelihood tables with --loglik MODEL BENCHMARK FILE.

Tests (--tests, default all; each runs where its data exist):
{tests}

Every p-value of the run is one family, adjusted by --fdr: bh (Benjamini-Hochberg,
default), by (Benjamini-Yekutieli: any dependence) or holm (family-wise error).

A flag is a test's finding after the adjustment, not proof of contamination (easier
public forms and plain ability differences are flagged too); no flag is not a clean
bill: a leak that carries over to the fresh forms is invisible to these tests.

Exit codes: 0 nothing flagged, 2 something flagged, 1 could not run.
"""


def _tests_help() -> str:
    """The catalog's suite tests, one paragraph each, for the description."""
    pad = max(len(test.name) for test in SUITE_TESTS) + 2
    return "\n".join(
        textwrap.fill(
            test.summary,
            88,
            initial_indent=f"  {test.name:<{pad}}",
            subsequent_indent=" " * (2 + pad),
        )
        for test in SUITE_TESTS
    )


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``suite TABLE_OR_MANIFEST [--q Q] [--fdr bh|by|holm] [--tests T ...]
    [--report FILE.html] [--plot FILE] [--json]`` (plus the column names, the manifest's
    harness options, --loglik, --alpha, --resamples, --reference-model, --seed and
    --threads)."""
    parser = subparsers.add_parser(
        "suite",
        help="audit a whole suite: every model x benchmark, every test, FDR-controlled flags",
        description=_DESCRIPTION.format(tests=_tests_help()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file",
        metavar="TABLE_OR_MANIFEST",
        help="long table (model, benchmark, parent, form, correct) or manifest (model, "
        "benchmark, form, path); - for standard input (a table only)",
    )
    parser.add_argument("--q", type=float, default=0.05, help="level of the flags (default 0.05)")
    parser.add_argument(
        "--fdr",
        choices=("bh", "by", "holm"),
        default="bh",
        help="adjustment: bh (default), by (any dependence) or holm (family-wise)",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        choices=_TESTS,
        default=None,
        help="the tests to run (default: all that the data allow)",
    )
    parser.add_argument(
        "--alpha",
        metavar="A",
        type=float,
        default=0.05,
        help="level of each row's interval, not adjusted (default 0.05)",
    )
    feeds(
        parser.add_argument(
            "--resamples",
            metavar="B",
            type=integer_flag,
            default=1000,
            help="ConStat's bootstrap resamples (default 1000)",
        ),
        "n_bootstrap",
        "n_resamples",
    )
    feeds(
        parser.add_argument(
            "--reference-model",
            metavar="MODEL",
            action="append",
            default=None,
            help="ConStat's reference models (repeat; at least 6; default: all other models)",
        ),
        "reference_models",
    )
    parser.add_argument(
        "--random-guess",
        metavar="[BENCHMARK=]P",
        action="append",
        default=None,
        help="ConStat's random-guess accuracy: P for every benchmark, BENCHMARK=P for one "
        "(repeat); default 0, ConStat's own; 0.25 for 4-way multiple choice",
    )
    parser.add_argument(
        "--seed", type=seed_flag, default=0, help="seed of the betting order and ConStat (0)"
    )
    feeds(
        parser.add_argument(
            "--threads", metavar="T", type=integer_flag, default=None, help="threads (default all)"
        ),
        "n_threads",
        "threads",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: only when stderr is a terminal)",
    )
    columns = parser.add_argument_group("table columns", "the long table's column names")
    for role in ("model", "benchmark", "parent", "form", "correct"):
        columns.add_argument(
            f"--{role}-column", metavar="NAME", default=role, help=f"default {role}"
        )
    columns.add_argument(
        "--public-form", metavar="NAME", default="public", help="the public form (public)"
    )
    columns.add_argument(
        "--reference-form",
        metavar="NAME",
        default="reference",
        help="the reference-benchmark form (reference)",
    )
    feeds(
        columns.add_argument(
            "--loglik",
            nargs=3,
            metavar=("MODEL", "BENCHMARK", "FILE"),
            action="append",
            default=None,
            help="a pair's log-likelihood table (kind, loglik[, shard]) for the order test; "
            "repeat",
        ),
        "logliks",
        "loglik",
    )
    runs = parser.add_argument_group("manifest", "reading a manifest of harness runs")
    runs.add_argument("--match-key", metavar="KEY", help="field matching a record to its parent")
    runs.add_argument("--metric", metavar="NAME", default=None, help="per-item correctness")
    runs.add_argument("--harness", choices=harness_names(), default="auto", help="default auto")
    runs.add_argument(
        "--drop-errored", action="store_true", help="leave out samples logged as errored"
    )
    output = parser.add_argument_group("output")
    output.add_argument("--json", action="store_true", help="print the result as JSON")
    output.add_argument(
        "--report", metavar="FILE.html", default=None, help="write a self-contained HTML report"
    )
    output.add_argument(
        "--plot", metavar="FILE", default=None, help="draw the models x benchmarks heatmap"
    )
    output.add_argument(
        "--order",
        choices=("auto", "name", "evidence", "strength"),
        default="auto",
        help="the heatmap's rows and columns (--report, --plot): by name, by evidence "
        "(flagged first), by strength (mean public score, strongest first) or auto "
        "(name when all are drawn, else evidence; default)",
    )
    output.add_argument(
        "--max-models",
        metavar="N",
        type=integer_flag,
        default=None,
        help="the most models the heatmap draws, flagged first (default 60; 0: all); the "
        "report's table has every row",
    )
    output.add_argument(
        "--max-benchmarks",
        metavar="N",
        type=integer_flag,
        default=None,
        help="the most benchmarks the heatmap draws (default 40; 0: all)",
    )
    parser.set_defaults(func=run_suite)
    return parser


def _is_manifest(path: str) -> bool:
    """Whether the file's header has a ``path`` column (a manifest), read from the header
    alone: the whole table is read once, by its reader. A file whose header cannot be read
    here is left to that reader, which says what is wrong with it."""
    if path == "-":
        return False
    import csv
    import gzip

    from truescore_fast._files import table_suffix

    suffix = table_suffix(path)
    try:
        if suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return "path" in pq.read_schema(path).names
        with open(path, "rb") as raw:
            gzipped = raw.read(2) == b"\x1f\x8b"
        opener: Any = gzip.open if gzipped else open
        with opener(path, "rt", encoding="utf-8-sig", newline="") as f:
            if suffix in (".csv", ".tsv", ".tab"):
                header = next(csv.reader(f, delimiter="," if suffix == ".csv" else "\t"), [])
                return "path" in [h.strip() for h in header]
            if suffix in (".jsonl", ".ndjson", ".json"):
                for line in f:
                    if line.strip().startswith("["):  # one JSON array: read it whole
                        from truescore_fast._files import read_rows

                        rows = read_rows(path)
                        return bool(rows) and "path" in rows[0]
                    if line.strip():
                        first = json.loads(line)
                        return isinstance(first, dict) and "path" in first
    except (OSError, ValueError, EOFError, ImportError, csv.Error):
        return False
    return False


def _read(args: argparse.Namespace) -> Any:
    if _is_manifest(args.file):
        from truescore_fast.io.suite import read_suite_manifest

        if args.match_key is None:
            raise ValueError(f"{args.file} is a manifest (it has a path column): give --match-key")
        if args.loglik:
            raise ValueError("--loglik is for a long table; a manifest names them (form loglik)")
        return read_suite_manifest(
            args.file,
            match_key=args.match_key,
            metric=args.metric,
            harness=args.harness,
            public_form=args.public_form,
            drop_errored=args.drop_errored,
        )
    from truescore_fast.suite.data import read_suite

    manifest_flags = [f for f, v in (("--match-key", args.match_key), ("--metric", args.metric))
                      if v is not None]  # fmt: skip
    if manifest_flags:
        raise ValueError(f"{manifest_flags[0]} applies to a manifest (a table with a path column)")
    roles = ("model", "benchmark", "parent", "form", "correct")
    try:
        return read_suite(
            args.file,
            columns={role: getattr(args, f"{role}_column") for role in roles},
            public_form=args.public_form,
            reference_form=args.reference_form,
            logliks={(m, b): path for m, b, path in args.loglik} if args.loglik else None,
        )
    except ValueError as error:  # the library names its argument; here, the flags
        if "columns= maps other names" not in str(error):
            raise
        flags = ", ".join(f"--{role}-column" for role in roles)
        raise ValueError(
            str(error).replace("columns= maps other names", f"{flags} name other columns")
        ) from None


@contextlib.contextmanager
def _flag_named(flag: str) -> Iterator[None]:
    """The library's errors about its ``path`` argument, told as ``flag``'s."""
    try:
        yield
    except ValueError as error:
        text = str(error)
        if text.startswith("path"):
            raise ValueError(flag + text[len("path") :]) from None
        raise


def _random_guess(values: list[str] | None, benchmarks: tuple[str, ...]) -> dict[str, float]:
    """--random-guess's values (P or BENCHMARK=P) as the accuracy of each benchmark."""
    every, named = 0.0, {}
    for value in values or ():
        name, sep, number = value.rpartition("=")
        try:
            p = float(number)
        except ValueError:
            raise ValueError(
                f"--random-guess takes P or BENCHMARK=P (P a number in [0, 1]); got {value!r}"
            ) from None
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"--random-guess must be in [0, 1]; got {value!r}")
        if not sep:
            every = p
        elif name not in benchmarks:
            raise ValueError(
                f"--random-guess names benchmark {name!r}, which the suite does not have; its "
                f"benchmarks are {list(benchmarks)}"
            )
        else:
            named[name] = p
    return {b: named.get(b, every) for b in benchmarks}


def run_suite(args: argparse.Namespace) -> int:
    """Run the suite audit; 2 when a triple is flagged after the adjustment, else 0."""
    from truescore_fast.suite.audit import SUITE_TESTS, suite_audit

    # the output files checked before any work (suffix, folder, no directory, no dead link)
    limits = (("--max-models", args.max_models), ("--max-benchmarks", args.max_benchmarks))
    for flag, value in limits:
        if value is not None and value < 0:
            raise ValueError(f"{flag} must be 0 (all) or more; got {value}")
    if args.report is not None:
        check_output_path(args.report, flag="--report", suffixes=(".html", ".htm"))
    if args.plot is not None:
        check_output_path(args.plot, flag="--plot", suffixes=(".png", ".svg", ".pdf"))
    data = _read(args)
    result = suite_audit(
        data,
        q=args.q,
        fdr=args.fdr,
        tests=tuple(args.tests) if args.tests else SUITE_TESTS,
        alpha=args.alpha,
        n_bootstrap=args.resamples,
        reference_models=args.reference_model,
        random_guess=_random_guess(args.random_guess, data.benchmarks),
        seed=args.seed,
        threads=args.threads,
        progress=args.progress if args.progress is not None else (
            None if sys.stderr.isatty() else False
        ),
    )  # fmt: skip
    if args.report is not None or args.plot is not None:
        from truescore_fast.suite.report import (
            MAX_BENCHMARKS,
            MAX_MODELS,
            plot_heatmap,
            write_report,
        )

        scores = None
        if args.order == "strength":  # each pair's public score, fraction correct
            scores = {(p.model, p.benchmark): float(p.public.mean()) for p in data.pairs}
        layout = {
            "order": args.order,
            "scores": scores,
            "max_models": MAX_MODELS if args.max_models is None else args.max_models or None,
            "max_benchmarks": (
                MAX_BENCHMARKS if args.max_benchmarks is None else args.max_benchmarks or None
            ),
        }
        # each written whole through a temporary file, or the old file left as it was
        with _flag_named("--report"):
            if args.report is not None:
                write_report(result, args.report, **layout)
        with _flag_named("--plot"):
            if args.plot is not None:
                plot_heatmap(result, args.plot, **layout)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    else:
        print(result.summary())
    return ExitCode.FINDING if result.n_flagged else ExitCode.OK

"""``truescore-fast compare FILE --a-column A --b-column B``: is system A better than
system B on the same examples? The paired bootstrap (optionally by cluster) or the
sign-flip permutation test of :mod:`truescore_fast.compare.paired`.

Exit codes: 2 a difference (p < --alpha), 0 none, 1 could not run.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from truescore_fast.cli._common import ExitCode, emit, feeds, integer_flag, number, seed_flag

__all__ = ["add_parser", "run_compare"]


_DESCRIPTION = """\
Paired comparison of two systems scored on the same examples: the difference in mean
score, A - B, with an interval and a two-sided p-value for "no difference".

Input: a .csv or JSON Lines (.jsonl, .ndjson, .json) table, one row per example.
  --a-column A        system A's score on the example (any finite number: 0/1
                      correctness, a rubric score, a log-likelihood...)
  --b-column B        system B's score on the same example
  --cluster-column C  optional: examples that are not independent (same passage, same
                      topic, several samples of one prompt) share a value; the bootstrap
                      then resamples whole clusters

Methods (--method):
  bootstrap    paired percentile bootstrap (default); with --cluster-column, the
               cluster bootstrap
  permutation  sign-flip permutation test (exact when 2^n <= --resamples); examples
               must be independent, so it refuses --cluster-column

Defaults: --method bootstrap, --alpha 0.05, --resamples 10000, --seed 0 (the result is
reproducible from the seed and identical for any number of threads).

A difference is a statement about these examples under this procedure, not about how
large or important it is; no difference is not evidence that the systems are equal.

Exit codes: 0 no difference (p >= --alpha), 2 a difference (p < --alpha), 1 could not
run (unreadable file, missing or non-numeric column, bad flag).
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``compare FILE --a-column A --b-column B [--cluster-column C]
    [--method bootstrap|permutation] [--alpha A] [--resamples R] [--seed S] [--json]``."""
    parser = subparsers.add_parser(
        "compare",
        help="paired comparison of two systems scored on the same examples",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help=".csv or JSON Lines file, one row per example")
    parser.add_argument("--a-column", metavar="A", required=True, help="system A's scores")
    parser.add_argument("--b-column", metavar="B", required=True, help="system B's scores")
    feeds(
        parser.add_argument(
            "--cluster-column",
            metavar="C",
            default=None,
            help="cluster of each example (bootstrap only; default: examples are independent)",
        ),
        "clusters",
        "cluster_column",
    )
    parser.add_argument(
        "--method",
        choices=("bootstrap", "permutation"),
        default="bootstrap",
        help="paired bootstrap (default) or sign-flip permutation test",
    )
    parser.add_argument(
        "--alpha", metavar="A", type=float, default=0.05, help="significance level (default 0.05)"
    )
    feeds(
        parser.add_argument(
            "--resamples",
            metavar="R",
            type=integer_flag,
            default=10000,
            help="bootstrap resamples or random sign flips (default 10000)",
        ),
        "n_bootstrap",
        "n_resamples",
    )
    parser.add_argument("--seed", metavar="S", type=seed_flag, default=0, help="seed (default 0)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run_compare)
    return parser


def run_compare(args: argparse.Namespace) -> int:
    """Compare the two columns; 2 when the difference is significant at --alpha, else 0."""
    from truescore_fast._files import read_rows
    from truescore_fast.compare.paired import paired_bootstrap, paired_permutation

    if args.a_column == args.b_column:
        raise ValueError(f"--a-column and --b-column both name {args.a_column!r}")
    if args.method == "permutation" and args.cluster_column is not None:
        raise ValueError(
            "--cluster-column: the permutation test flips single examples, which needs "
            "independent examples; use --method bootstrap for clustered data"
        )
    if args.resamples < 1:  # the drop-in keeps truescore's IndexError for 0
        raise ValueError(f"--resamples must be at least 1; got {args.resamples}")
    rows = read_rows(args.file)
    if not rows:
        raise ValueError(f"{args.file} has no rows")
    for flag, column in (
        ("--a-column", args.a_column),
        ("--b-column", args.b_column),
        ("--cluster-column", args.cluster_column),
    ):
        if column is not None and column not in rows[0]:
            raise ValueError(
                f"{flag}: {args.file} has no column {column!r}; its columns are "
                f"{', '.join(map(str, rows[0]))}"
            )
    a = _scores(rows, args.a_column, "--a-column", args.file)
    b = _scores(rows, args.b_column, "--b-column", args.file)
    if args.method == "permutation":
        result = paired_permutation(
            a, b, alpha=args.alpha, n_resamples=args.resamples, seed=args.seed
        )
    else:
        clusters = None
        if args.cluster_column is not None:
            clusters = [_cluster(row, args.cluster_column, i) for i, row in enumerate(rows, 1)]
        result = paired_bootstrap(
            a,
            b,
            alpha=args.alpha,
            n_bootstrap=args.resamples,
            seed=args.seed,
            clusters=clusters,
        )
    payload = {
        "test": "compare",
        "file": str(args.file),
        "a_column": args.a_column,
        "b_column": args.b_column,
        "cluster_column": args.cluster_column,
        **dataclasses.asdict(result),
        "alpha": args.alpha,
        "seed": args.seed,
        "significant": result.significant,
    }
    emit(args, result.explain(), payload)
    return ExitCode.FINDING if result.significant else ExitCode.OK


def _scores(rows: list[dict[str, Any]], column: str, flag: str, where: str) -> list[float]:
    try:
        return [number(row, column, i, where) for i, row in enumerate(rows, 1)]
    except ValueError as error:
        raise ValueError(f"{flag}: {error}") from None


def _cluster(row: dict[str, Any], column: str, line: int) -> str:
    value = row.get(column)
    if value is None or str(value).strip() == "":
        raise ValueError(f"row {line}: --cluster-column {column!r} is empty")
    return str(value).strip()

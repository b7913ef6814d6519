"""The ``truescore-fast`` command line.

    truescore-fast contamination FILE [--shard-column shard] [--json]
    truescore-fast audit FILE [--control FILE] [--population-size N] [--radius R] [--json]
    truescore-fast disclose validate FILE [--json]
    truescore-fast calibrate {coverage,stress,detection,budget} [--replications R]
        [--seed S] [--threads T] [--json] [--plot FILE.png]

FILE is a CSV (``.csv``), TSV (``.tsv``), JSON Lines (``.jsonl``, ``.ndjson``, ``.json``)
or Parquet (``.parquet``, the ``parquet`` extra) table, or ``-`` for standard input; a
disclosure record is a ``.json`` document. ``audit`` also reads evaluation-harness runs
(``--public RUN --fresh RUN ...``: lm-evaluation-harness samples files, Inspect logs).

Exit codes let a pipeline tell a finding from a failure:

    0  ran, found nothing
    2  ran, and found something (evidence of contamination)
    1  could not run: unreadable file, bad arguments, unusable data, a missing optional
       dependency (printed as one line: what needs it and the ``pip install`` that fixes it)

``disclose validate`` exits 1 for an invalid record (there, 1 is the finding).

argparse's own usage errors would exit 2, the code for a finding; this parser exits 1.
Every error is one line on stderr, never a traceback. Two more codes, as shells use them:

    130  interrupted (Ctrl-C); prints "interrupted"
    141  stdout was closed before the output was written (``... --json | head``):
         nothing more is printed; the code is not 0 because the result was not read
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from truescore_fast import __version__
from truescore_fast._cli_audit import add_audit_parser
from truescore_fast._cli_calibrate import add_calibrate_parser
from truescore_fast._cli_disclose import add_disclose_parser
from truescore_fast._io import read_rows
from truescore_fast._validation import MissingExtraError
from truescore_fast.contamination import exchangeability_test, exchangeability_tests

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_FINDING = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head`

__all__ = [
    "EXIT_CLOSED_PIPE",
    "EXIT_ERROR",
    "EXIT_FINDING",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "main",
]

# The library's error messages start with the name of the Python argument; the user
# typed a flag. One table, applied to every message main() prints.
_FLAG_OF_ARGUMENT = {
    "alpha": "--alpha",
    "correct_column": "--correct-column",
    "fallback": "--fallback",
    "form_column": "--form-column",
    "guardrail": "--guardrail",
    "match_key": "--match-key",
    "method": "--method",
    "metric": "--metric",
    "model_column": "--model-column",
    "n_threads": "--threads",
    "parent_column": "--parent-column",
    "population_size": "--population-size",
    "public_form": "--public-form",
    "public_match_key": "--public-match-key",
    "replications": "--replications",
    "seed": "--seed",
    "transport_radius": "--radius",
}
_LEADING_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\b")


def _with_flag_names(message: str) -> str:
    """``message`` with its leading Python argument name replaced by the CLI flag."""
    match = _LEADING_NAME.match(message)
    if match and match.group(1) in _FLAG_OF_ARGUMENT:
        return _FLAG_OF_ARGUMENT[match.group(1)] + message[match.end() :]
    return message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one line, like every other error of this command line (usage: --help)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(row: dict[str, Any], column: str, line: int) -> float:
    if column not in row:
        raise ValueError(f"row {line} has no column {column!r}")
    try:
        value = float(row[column])
    except (TypeError, ValueError) as error:
        raise ValueError(f"row {line}: {column}={row[column]!r} is not a number") from error
    if not math.isfinite(value):
        raise ValueError(f"row {line}: {column} is not finite")
    return value


def _is_canonical(row: dict[str, Any], kind_column: str) -> bool:
    return str(row.get(kind_column, "")).strip().lower() == "canonical"


def _emit(args: argparse.Namespace, text: str, payload: dict[str, Any]) -> None:
    print(json.dumps(payload, indent=2) if args.json else text)


def _cmd_contamination(args: argparse.Namespace) -> int:
    rows = read_rows(args.file)
    if not any(args.kind_column in row for row in rows):
        raise ValueError(
            f"{args.file} has no column {args.kind_column!r}: it marks the canonical row "
            f"({args.kind_column}=canonical); --kind-column names another column"
        )
    if args.shard_column is None:
        canonical = [
            _number(r, args.loglik_column, i)
            for i, r in enumerate(rows, 1)
            if _is_canonical(r, args.kind_column)
        ]
        permuted = [
            _number(r, args.loglik_column, i)
            for i, r in enumerate(rows, 1)
            if not _is_canonical(r, args.kind_column)
        ]
        if len(canonical) != 1:
            raise ValueError(
                f"expected exactly one row with {args.kind_column}=canonical; "
                f"found {len(canonical)} (use --shard-column for sharded files)"
            )
        if not permuted:
            raise ValueError("the file has no permuted rows")
        result = exchangeability_test(canonical[0], permuted, alpha=args.alpha)
        _emit(
            args,
            result.explain(),
            {
                "test": "exchangeability",
                "p_value": result.p_value,
                "canonical_loglik": result.canonical_loglik,
                "permutation_mean": result.permutation_mean,
                "permutation_std": result.permutation_std,
                "z_score": result.z_score,
                "n_permutations": result.n_permutations,
                "resolution": result.resolution,
                "alpha": args.alpha,
                "contaminated": result.contaminated,
            },
        )
        return EXIT_FINDING if result.contaminated else EXIT_OK

    canon: dict[str, float] = {}
    perms: dict[str, list[float]] = {}
    for i, row in enumerate(rows, 1):
        if args.shard_column not in row:
            raise ValueError(f"row {i} has no shard column {args.shard_column!r}")
        shard = str(row[args.shard_column])
        value = _number(row, args.loglik_column, i)
        if _is_canonical(row, args.kind_column):
            if shard in canon:
                raise ValueError(f"shard {shard!r} has more than one canonical row")
            canon[shard] = value
        else:
            perms.setdefault(shard, []).append(value)
    names = sorted(set(canon) & set(perms))
    skipped = sorted(set(canon) ^ set(perms))
    if skipped:
        print(
            f"warning: skipping {len(skipped)} shard(s) without both a canonical row and "
            f"permuted rows: {', '.join(skipped[:5])}{' ...' if len(skipped) > 5 else ''}",
            file=sys.stderr,
        )
    if not names:
        raise ValueError("no shard has both a canonical row and permuted rows")
    values = np.concatenate([np.asarray(perms[n], dtype=np.float64) for n in names])
    offsets = np.concatenate(([0], np.cumsum([len(perms[n]) for n in names])))
    batch = exchangeability_tests(
        np.array([canon[n] for n in names]), values, offsets=offsets, alpha=args.alpha
    )
    pooled = batch.combine(args.method)
    _emit(
        args,
        batch.summary() if args.method == "fisher" else batch.summary() + "\n" + pooled.summary(),
        {
            "test": "exchangeability, pooled",
            "method": pooled.method,
            "p_value": pooled.p_value,
            "log_p_value": pooled.log_p_value,
            "statistic": pooled.statistic,
            "n_shards": pooled.n_shards,
            "alpha": args.alpha,
            "contaminated": pooled.contaminated,
            "shards": [
                {
                    "shard": name,
                    "p_value": float(batch.p_values[k]),
                    "z_score": float(batch.z_scores[k]),
                    "n_permutations": int(batch.n_permutations[k]),
                }
                for k, name in enumerate(names)
            ],
        },
    )
    return EXIT_FINDING if pooled.contaminated else EXIT_OK


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="truescore-fast",
        description="Contamination tests for language-model benchmark scores.",
    )
    parser.add_argument("--version", action="version", version=f"truescore-fast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    contamination = sub.add_parser(
        "contamination",
        help="exact exchangeability test on published vs shuffled log-likelihoods",
        description="Rows with kind=canonical hold the published-order log-likelihood; "
        "every other row is a shuffled order. With --shard-column, each shard is tested "
        "exactly and the shards are pooled.",
    )
    contamination.add_argument(
        "file", help=".csv, .tsv, .jsonl or .parquet table, or - for standard input"
    )
    contamination.add_argument("--loglik-column", default="loglik")
    contamination.add_argument("--kind-column", default="kind")
    contamination.add_argument("--shard-column", help="pool independent shards by this column")
    contamination.add_argument(
        "--method",
        choices=("fisher", "stouffer", "average"),
        default="fisher",
        help="how to pool shards (default: fisher)",
    )
    contamination.add_argument("--alpha", type=float, default=0.05, help="significance level")
    contamination.add_argument("--json", action="store_true", help="print JSON instead of text")
    contamination.set_defaults(func=_cmd_contamination)
    add_audit_parser(sub)
    add_disclose_parser(sub)
    add_calibrate_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 nothing found, 2 finding, 1 error,
    130 interrupted, 141 stdout closed)."""
    try:
        parser = _build_parser()
        args = parser.parse_args(argv)
        try:
            code: int = args.func(args)
        except RecursionError:
            raise ValueError(f"{args.file}: nested too deeply to read") from None
        sys.stdout.flush()  # a closed pipe shows here, inside the handler below
        return code
    except (
        ValueError,
        OverflowError,
        OSError,
        KeyError,
        MissingExtraError,
    ) as error:
        if isinstance(error, BrokenPipeError):
            return _closed_pipe()
        print(f"error: {_with_flag_names(str(error))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _closed_pipe() -> int:
    # The reader went away. Point stdout at devnull so the interpreter's final flush
    # does not raise again (the recipe of the Python docs' signal module notes).
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (e.g. captured)
        pass
    return EXIT_CLOSED_PIPE


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

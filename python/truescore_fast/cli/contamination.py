"""``truescore-fast contamination FILE``: Oren et al.'s tests on published vs shuffled
log-likelihoods, in truescore's file format (columns ``kind``, ``loglik``, an optional
shard column).

    --test exact (default)  the exact rank test; with --shard-column one test per shard,
                            pooled by --method (fisher, stouffer or average)
    --test slct             the sharded likelihood comparison test (needs --shard-column)

One verdict, one exit code: 2 when the chosen test (or pooled test) finds evidence of
contamination at --alpha, 0 when it does not, 1 when the file cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from truescore_fast.cli._common import (
    SEQUENTIAL_EXIT_HELP,
    ExitCode,
    check_sequential_only,
    emit,
    integer_flag,
    number,
)

__all__ = ["add_parser", "run_contamination"]


_DESCRIPTION = """\
Is the published order of a benchmark favoured over shuffled orders of the same examples?

Input: a .csv, .tsv, JSON Lines (.jsonl, .ndjson, .json) or .parquet table, or - for
standard input, one row per scored order.
  kind    "canonical" marks the published order; any other value is a shuffled order
          (--kind-column names another column)
  loglik  the model's log-likelihood of the examples in that order (--loglik-column)
  shard   optional: which shard the row belongs to (--shard-column); the files written
          by `truescore-fast shard-orders` carry it

Tests (--test):
  exact   the exact rank test: p = (1 + #{shuffled >= canonical}) / (m + 1). With
          --shard-column each shard is tested exactly and the shards are pooled by
          --method: fisher (default), stouffer (mid-p; not valid for one shard) or
          average (Oren et al.'s averaged p, made valid as min(1, 2 x mean)).
  slct    Oren et al.'s sharded likelihood comparison test: a one-sided t test across
          shards of (canonical - mean shuffled); needs --shard-column and 2+ shards.
          --variant published reproduces the released code (sd with ddof=0, 1 - cdf).

The report gives one verdict, from the test chosen (and, for sharded exact tests, the
pooling chosen). No finding does not clear the model: training on shuffled or
paraphrased copies leaves the published order unremarkable.

Exit codes: 0 no finding, 2 finding (evidence of contamination at --alpha), 1 could not
run (unreadable file, bad column, bad flag); with --sequential also 3, continue scoring.
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``contamination FILE [--shard-column S] [--test exact|slct] [--method M]
    [--variant V] [--alpha A] [--json]``."""
    parser = subparsers.add_parser(
        "contamination",
        help="exact exchangeability test or SLCT on published vs shuffled log-likelihoods",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file",
        help=".csv, .tsv, JSON Lines or .parquet table (columns kind, loglik[, shard]), or - "
        "for standard input",
    )
    parser.add_argument(
        "--loglik-column", default="loglik", help="log-likelihood column (default loglik)"
    )
    parser.add_argument(
        "--kind-column",
        default="kind",
        help='column marking the published order with "canonical" (default kind)',
    )
    parser.add_argument(
        "--shard-column", help="column naming each row's shard (default: one unsharded test)"
    )
    parser.add_argument(
        "--test",
        choices=("exact", "slct"),
        default="exact",
        help="exact rank test (default) or the sharded likelihood comparison test",
    )
    parser.add_argument(
        "--method",
        choices=("fisher", "stouffer", "average"),
        default=None,
        help="how the exact test pools shards (default fisher); not used by --test slct",
    )
    parser.add_argument(
        "--variant",
        choices=("corrected", "published"),
        default=None,
        help="SLCT variant (default corrected; published = the released code's numbers)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    add_sequential_contamination_flags(parser)
    parser.set_defaults(func=run_contamination)
    return parser


def _is_canonical(row: dict[str, Any], kind_column: str) -> bool:
    return str(row.get(kind_column, "")).strip().lower() == "canonical"


def run_contamination(args: argparse.Namespace) -> int:
    """Run the chosen test; 2 when it finds evidence of contamination, else 0."""
    from truescore_fast._files import read_rows

    if args.test == "slct":
        if args.method is not None:
            raise ValueError("--method pools exact tests; --test slct does not pool p-values")
        if args.shard_column is None:
            raise ValueError("--test slct compares shards: name the shard column")
    elif args.variant is not None:
        raise ValueError("--variant applies to --test slct only")
    check_sequential_only(args, {"max_permutations": "--max-permutations", "h": "--h"})
    rows = read_rows(args.file)
    if not any(args.kind_column in row for row in rows):
        raise ValueError(
            f"{args.file} has no column {args.kind_column!r}: it marks the canonical row "
            f"({args.kind_column}=canonical); --kind-column names another column"
        )
    if args.sequential:
        return run_sequential_contamination(args, rows)
    if args.shard_column is None:
        return _unsharded(args, rows)
    names, canon, perms = _shards(args, rows)
    if args.test == "slct":
        return _slct(args, names, canon, perms)
    return _pooled(args, names, canon, perms)


def _unsharded(args: argparse.Namespace, rows: list[dict[str, Any]]) -> int:
    from truescore_fast.contamination.exact import exchangeability_test

    canonical = [
        number(r, args.loglik_column, i, args.file)
        for i, r in enumerate(rows, 1)
        if _is_canonical(r, args.kind_column)
    ]
    permuted = [
        number(r, args.loglik_column, i, args.file)
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
    emit(
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
    return ExitCode.FINDING if result.contaminated else ExitCode.OK


def _read_shard_rows(
    args: argparse.Namespace, rows: list[dict[str, Any]], *, published_first: bool = False
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Each shard's canonical log-likelihood and its shuffled orders' (in row order; shards
    in the order they first appear), from the --shard-column, --loglik-column and
    --kind-column of ``rows``; every row in shard ``"all"`` when there is no shard column.
    ``published_first``: a shuffled order before its shard's canonical row is an error
    (the sequential test reads the rows as scored)."""
    canon: dict[str, float] = {}
    perms: dict[str, list[float]] = {}
    shard_column = args.shard_column
    for i, row in enumerate(rows, 1):
        if shard_column is not None and shard_column not in row:
            raise ValueError(f"row {i} has no shard column {shard_column!r}")
        shard = "all" if shard_column is None else str(row[shard_column])
        value = number(row, args.loglik_column, i, args.file)
        if _is_canonical(row, args.kind_column):
            if shard in canon:
                raise ValueError(f"shard {shard!r} has more than one canonical row")
            canon[shard] = value
        else:
            if published_first and shard not in canon:
                raise ValueError(
                    f"row {i}: a shuffled order of shard {shard!r} before its published "
                    "order; score each shard's published order first"
                )
            perms.setdefault(shard, []).append(value)
    return canon, perms


def _shards(
    args: argparse.Namespace, rows: list[dict[str, Any]]
) -> tuple[list[str], dict[str, float], dict[str, list[float]]]:
    """The shards that have both a canonical row and shuffled rows (others are named on
    stderr and skipped), each shard's canonical value and its shuffled values."""
    canon, perms = _read_shard_rows(args, rows)
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
    return names, canon, perms


def _pooled(
    args: argparse.Namespace,
    names: list[str],
    canon: dict[str, float],
    perms: dict[str, list[float]],
) -> int:
    import numpy as np

    from truescore_fast.contamination.batch import exchangeability_tests

    method: Any = args.method or "fisher"  # argparse checked it against the choices
    values = np.concatenate([np.asarray(perms[n], dtype=np.float64) for n in names])
    offsets = np.concatenate(([0], np.cumsum([len(perms[n]) for n in names])))
    batch = exchangeability_tests(
        np.array([canon[n] for n in names]), values, offsets=offsets, alpha=args.alpha
    )
    pooled = batch.combine(method)
    emit(
        args,
        batch.summary(method),
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
    return ExitCode.FINDING if pooled.contaminated else ExitCode.OK


def _slct(
    args: argparse.Namespace,
    names: list[str],
    canon: dict[str, float],
    perms: dict[str, list[float]],
) -> int:
    import numpy as np

    from truescore_fast.contamination.sharded import sharded_likelihood_test

    result = sharded_likelihood_test(
        np.array([canon[n] for n in names], dtype=np.float64),
        [np.asarray(perms[n], dtype=np.float64) for n in names],
        variant=args.variant or "corrected",
        alpha=args.alpha,
    )
    payload = {"test": "slct", **result.to_dict(), "contaminated": result.contaminated}
    payload["shards"] = [
        {
            "shard": name,
            "difference": float(result.differences[k]),
            "n_permutations": len(perms[name]),
        }
        for k, name in enumerate(names)
    ]
    del payload["differences"]
    emit(args, result.summary(), payload)
    return ExitCode.FINDING if result.contaminated else ExitCode.OK


def add_sequential_contamination_flags(parser: argparse.ArgumentParser) -> None:
    """``--sequential --max-permutations M [--h H]``."""
    group = parser.add_argument_group(
        "sequential order test (the orders scored so far, in the order they were scored)",
        "Each shard's published order must be scored first; its shuffled orders are read "
        "in the order of the rows. A shard stops after H shuffled orders score at least its "
        "published one (Besag & Clifford), the pooled Fisher verdict as soon as no unscored "
        "order can change it. " + SEQUENTIAL_EXIT_HELP,
    )
    group.add_argument(
        "--sequential",
        action="store_true",
        help="read the rows as the orders scored so far and decide whether to stop",
    )
    group.add_argument(
        "--max-permutations",
        metavar="M",
        type=integer_flag,
        default=None,
        help="the most shuffled orders a shard scores (the --permutations of shard-orders); "
        "required with --sequential",
    )
    group.add_argument(
        "--h",
        metavar="H",
        type=integer_flag,
        default=None,
        help="a shard stops after H shuffled orders score at least its published one (default 10)",
    )


def run_sequential_contamination(args: argparse.Namespace, rows: list[dict[str, Any]]) -> int:
    """The pooled sequential verdict over the shards in ``rows``."""
    from truescore_fast.contamination.sequential import sequential_order_verdict

    if args.test != "exact" or args.method not in (None, "fisher"):
        raise ValueError("--sequential pools exact tests with Fisher's method only")
    if args.max_permutations is None:
        raise ValueError(
            "--max-permutations is required with --sequential (the shard-orders "
            "--permutations the run was planned with)"
        )
    canon, perms = _read_shard_rows(args, rows, published_first=True)
    if not canon:
        raise ValueError("no canonical row: score each shard's published order first")
    names = list(canon)
    verdict = sequential_order_verdict(
        [canon[n] for n in names],
        [perms.get(n, []) for n in names],
        max_permutations=args.max_permutations,
        h=10 if args.h is None else args.h,
        alpha=args.alpha,
    )
    code = {"finding": ExitCode.FINDING, "no finding": ExitCode.OK, "continue": ExitCode.CONTINUE}[
        verdict.decision
    ]
    lines = [verdict.summary()]
    for name, state in zip(names, verdict.shards, strict=True):
        lines.append(f"  {name}: " + state.summary().split(": ", 1)[1])
    if code == ExitCode.CONTINUE:
        open_shards = [n for n, s in zip(names, verdict.shards, strict=True) if not s.stopped]
        lines.append(f"Continue: score the next shuffled orders of {len(open_shards)} shard(s).")
    payload = verdict.to_dict()
    payload["shard_names"] = names
    payload["decision_exit_code"] = code
    emit(args, "\n".join(lines), payload)
    return code

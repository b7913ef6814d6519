"""``truescore-fast shard-orders N_EXAMPLES --shards R --permutations P``: the first step
of the sharded contamination tests, the orders to score, as JSON Lines
(:func:`truescore_fast.contamination.sharded.shard_orders`).

Exit codes: 0 written, 1 could not run (bad flag, output too large, unwritable file).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from truescore_fast.cli._common import (
    ExitCode,
    add_order_flags,
    add_output_flag,
    emit,
    integer_flag,
    write_output,
)

__all__ = ["add_parser", "estimated_bytes", "run_shard_orders"]

DEFAULT_MAX_BYTES = 1_000_000_000

_DESCRIPTION = """\
Write the orders a model must score for the sharded contamination tests (Oren et al.
2023): the benchmark's N_EXAMPLES examples, in published order, are split into --shards
contiguous shards (shard i holds N // R + (i < N % R) examples), and each shard gets
--permutations shuffled orders drawn from --seed. Re-running with the same arguments
writes the same orders (the streams are documented in truescore_fast.shard_orders, so
NumPy alone can regenerate them).

Output: JSON Lines, one object per order, shard by shard, the published order first:
  {"shard": 0, "permutation": null, "kind": "canonical", "canonical": true,
   "indices": [0, 1, 2, ...]}
  {"shard": 0, "permutation": 0, "kind": "permuted", "canonical": false,
   "indices": [7, 2, 11, ...]}
  shard        shard number, 0 .. R-1
  permutation  shuffled order number, 0 .. P-1 (null for the published order)
  kind         "canonical" or "permuted": the value `truescore-fast contamination`
               reads from its kind column
  canonical    true for the published order
  indices      the example indices (0-based positions in the published benchmark), in
               the order to concatenate and score

Score each order (the log-likelihood of its examples concatenated in that order), keep
shard and kind, add a loglik column, and run
  truescore-fast contamination SCORES --shard-column shard [--test slct]

The output has R x (P + 1) lines and about N x (P + 1) numbers. Its size is checked
before anything is written: above --max-bytes (default 1e9 bytes) the command stops
with an error instead.

Defaults: --seed 0, -o - (standard output), --max-bytes 1000000000. --shards and
--permutations are required.

Exit codes: 0 written, 1 could not run (bad numbers, output above --max-bytes, an
unwritable file).
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``shard-orders N_EXAMPLES --shards R --permutations P [--seed S]
    [-o FILE] [--max-bytes B] [--json]``."""
    parser = subparsers.add_parser(
        "shard-orders",
        help="write the shard orders to score for the sharded contamination tests",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "n_examples", metavar="N_EXAMPLES", type=integer_flag, help="benchmark size"
    )
    add_order_flags(parser)
    add_output_flag(parser, "the orders")
    parser.add_argument(
        "--max-bytes",
        metavar="B",
        type=integer_flag,
        default=DEFAULT_MAX_BYTES,
        help=f"refuse to write more than this (default {DEFAULT_MAX_BYTES})",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="with -o FILE, describe what was written as JSON (the orders are JSON Lines already)",
    )
    parser.set_defaults(func=run_shard_orders)
    return parser


def _digits_below(n: int) -> int:
    """Total decimal digits of 0, 1, ..., n - 1."""
    total, width, start = 0, 1, 0
    while start < n:
        end = min(n, 10**width)
        total += (end - start) * width
        start, width = end, width + 1
    return total


_LINE_OVERHEAD = len(
    '{"shard": , "permutation": , "kind": "permuted", "canonical": false, "indices": []}\n'
)


def estimated_bytes(n_examples: int, n_shards: int, permutations: int) -> int:
    """An upper bound on the output size, in bytes (exact for the index lists)."""
    orders = n_shards * (permutations + 1)
    indices = (permutations + 1) * (_digits_below(n_examples) + 2 * n_examples)
    return indices + orders * (_LINE_OVERHEAD + 2 * len(str(max(n_shards, permutations))))


def _lines(orders: Any) -> Iterator[str]:
    for shard in range(orders.n_shards):
        canonical = ", ".join(map(str, orders.canonical(shard).tolist()))
        yield (
            f'{{"shard": {shard}, "permutation": null, "kind": "canonical", '
            f'"canonical": true, "indices": [{canonical}]}}\n'
        )
        for j, row in enumerate(orders.permutations[shard].tolist()):
            yield (
                f'{{"shard": {shard}, "permutation": {j}, "kind": "permuted", '
                f'"canonical": false, "indices": [{", ".join(map(str, row))}]}}\n'
            )


def run_shard_orders(args: argparse.Namespace) -> int:
    """Write the orders; 0 on success."""
    to_stdout = args.output in (None, "-")
    if args.json and to_stdout:
        raise ValueError(
            "--json describes the file written by -o FILE; on standard output the orders "
            "are JSON Lines already"
        )
    if args.max_bytes < 1:
        raise ValueError(f"--max-bytes must be at least 1; got {args.max_bytes}")
    # the library's own checks, before the size (which needs valid numbers)
    for flag, value in (
        ("N_EXAMPLES", args.n_examples),
        ("--shards", args.shards),
        ("--permutations", args.permutations),
    ):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1; got {value}")
    if args.shards > args.n_examples:
        raise ValueError(
            f"--shards must be at most N_EXAMPLES ({args.n_examples}); got {args.shards}"
        )
    size = estimated_bytes(args.n_examples, args.shards, args.permutations)
    if size > args.max_bytes:
        raise ValueError(
            f"the orders would take about {size:,} bytes ({args.n_examples} examples x "
            f"{args.permutations + 1} orders), above --max-bytes {args.max_bytes:,}: use "
            "fewer --permutations, or raise --max-bytes"
        )
    from truescore_fast.contamination.sharded import shard_orders

    orders = shard_orders(args.n_examples, args.shards, args.permutations, seed=args.seed)
    write_output(args.output, _lines(orders))
    if not to_stdout:
        count = orders.n_shards * (orders.permutations_per_shard + 1)
        emit(
            args,
            f"{orders.summary()}\nwrote {count} orders to {args.output}",
            {
                "file": args.output,
                "n_examples": orders.n_examples,
                "n_shards": orders.n_shards,
                "permutations_per_shard": orders.permutations_per_shard,
                "seed": orders.seed,
                "orders": count,
                "offsets": orders.offsets.tolist(),
            },
        )
    return ExitCode.OK

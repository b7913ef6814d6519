"""Pieces the ``truescore-fast`` subcommands share: reading a number from a row, printing
text or JSON, writing an output file or standard output.

Standard library only: the command line imports this before it knows which subcommand
runs, and ``--version``/``--help`` must not pay for NumPy or SciPy.
"""

from __future__ import annotations

import argparse
import enum
import json
import math
import sys
from collections.abc import Iterable
from typing import Any

__all__ = [
    "SEQUENTIAL_EXIT_HELP",
    "ExitCode",
    "check_sequential_only",
    "add_output_flag",
    "argument_flags",
    "emit",
    "feeds",
    "integer_flag",
    "number",
    "seed_flag",
    "shown",
    "write_output",
]


class ExitCode(enum.IntEnum):
    """Every exit code of ``truescore-fast``, so a pipeline can tell a finding from a
    failure. A command returns one of these from ``main``; the shell sees its value."""

    OK = 0
    """Ran and found nothing (``--sequential``: stop without a finding; ``disclose
    validate``: the record is valid)."""
    ERROR = 1
    """Could not run: unreadable file, bad arguments, unusable data, a missing optional
    dependency. ``disclose validate`` also exits 1 for an invalid record (there, 1 is the
    finding)."""
    FINDING = 2
    """Ran and found something: evidence of contamination, an exposure claim, a
    significant difference."""
    CONTINUE = 3
    """``--sequential`` only: not decided yet, score more."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C): 128 + SIGINT, what a shell reports."""
    CLOSED_PIPE = 141
    """Standard output was closed before the output was written (``... | head``): 128 +
    SIGPIPE, what a shell reports for ``yes | head``."""


def feeds(action: argparse.Action, *arguments: str) -> argparse.Action:
    """Mark the flag ``action`` as the one that gives the library's ``arguments`` (by
    default a flag gives the argument named as its ``dest``: ``--population-size``,
    ``population_size``), so an error naming one of them names the flag instead."""
    action.feeds = arguments  # type: ignore[attr-defined]
    return action


def argument_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Library argument name -> the flag (or positional's metavar) of ``parser`` and its
    subcommands that gives it, as :func:`feeds` marked them (else each ``dest``)."""
    flags: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                for name, flag in argument_flags(sub).items():
                    flags.setdefault(name, flag)
            continue
        if action.dest in (argparse.SUPPRESS, "help", "version"):
            continue
        shown = max(action.option_strings, key=len, default=None) or str(
            action.metavar or action.dest
        )
        for name in getattr(action, "feeds", (action.dest,)):
            flags.setdefault(name, shown)
    return flags


def number(row: dict[str, Any], column: str, line: int, where: str = "") -> float:
    """``row[column]`` as a finite float; the error names the file ``where`` (the input
    file's name as given: every caller passes it), the row and the column."""
    where = "standard input" if where == "-" else where
    at = f"{where} row {line}" if where else f"row {line}"
    if column not in row:
        raise ValueError(f"{at} has no column {column!r}")
    try:
        value = float(row[column])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{at}: {column}={row[column]!r} is not a number") from error
    if not math.isfinite(value):
        raise ValueError(f"{at}: {column} is not finite")
    return value


def emit(args: argparse.Namespace, text: str, payload: dict[str, Any]) -> None:
    """Print ``payload`` as JSON with ``--json``, else ``text``."""
    print(json.dumps(payload, indent=2) if getattr(args, "json", False) else text)


def add_order_flags(parser: argparse.ArgumentParser) -> None:
    """``--shards R --permutations P [--seed S]``: the shard orders ``shard-orders``
    writes and ``score`` scores (the same orders from the same flags)."""
    feeds(
        parser.add_argument(
            "--shards", metavar="R", type=integer_flag, required=True, help="number of shards"
        ),
        "n_shards",
    )
    permutations = parser.add_argument(
        "--permutations",
        metavar="P",
        type=integer_flag,
        required=True,
        help="shuffled orders per shard",
    )
    feeds(permutations, "permutations_per_shard", "permutations")
    parser.add_argument("--seed", metavar="S", type=seed_flag, default=0, help="seed (default 0)")


def add_output_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """``-o/--output FILE`` (default ``-``, standard output), read by :func:`write_output`."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        default="-",
        help=f"where to write {what} (default -, standard output)",
    )


def write_output(path: str | None, chunks: Iterable[str], *, flag: str = "-o") -> None:
    """Write ``chunks`` to ``path``, or to standard output for ``None``, ``"-"`` or
    ``/dev/stdout`` (``/dev/fd/1``, ``/proc/self/fd/1``); a file is written as
    :func:`output_file` says (a regular file replaced only once everything is written, a
    FIFO or device written directly)."""
    if path is None or path in _STDOUT_PATHS:
        stdout = sys.stdout
        if stdout is None:  # fd 1 closed at start-up (``>&-``): main() refuses before this
            raise ValueError(f"{flag}: standard output is closed; name a file")
        for chunk in chunks:
            stdout.write(chunk)
        return
    from truescore_fast._output import output_file  # not loaded by --help and --version

    with output_file(path, flag=flag) as handle:
        for chunk in chunks:
            handle.write(chunk)


# Standard output by name: written through sys.stdout, as "-" (opening /dev/stdout would
# make a second, truncating description of a file the shell opened for it, and what is
# printed after the output would overwrite it)
_STDOUT_PATHS = ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")


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


SEQUENTIAL_EXIT_HELP = (
    "With --sequential the exit code is 2 finding (stop), 0 stop without a finding, 3 "
    "continue scoring, 1 could not run."
)


def check_sequential_only(args: argparse.Namespace, flags: dict[str, str]) -> None:
    """Refuse, naming the flag, a ``--sequential``-only option given without it."""
    if not args.sequential:
        used = [flag for name, flag in flags.items() if getattr(args, name) is not None]
        if used:
            raise ValueError(f"{used[0]} applies to --sequential only")

"""``truescore-fast disclose validate FILE``: check a disclosure record against the schema.

Exit codes: 0 the record is valid; 1 it is invalid (every problem is printed) or it
could not be read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from truescore_fast._io import check_input_file
from truescore_fast.disclosure import validate_disclosure

__all__ = ["add_disclose_parser", "run_disclose_validate"]

EXIT_VALID = 0
EXIT_INVALID = 1
# A problem quotes the offending value, which can be a 100 MB string: the printed line
# keeps this many characters of it at each end.
_KEEP = 80


def shorten_problem(problem: str) -> str:
    """``field: message`` with an overlong message cut in the middle (both ends kept:
    the start of the value, and the end, which says what was expected)."""
    field, sep, message = problem.partition(": ")
    if not sep:
        field, message = "", problem
    if len(message) <= 2 * _KEEP + 40:
        return problem
    cut = len(message) - 2 * _KEEP
    return f"{field}{sep}{message[:_KEEP]}… [{cut:,} characters] …{message[-_KEEP:]}"


def run_disclose_validate(args: argparse.Namespace) -> int:
    """Validate ``args.file``; print the verdict and every problem; return the exit code."""
    check_input_file(args.file)  # a directory or a FIFO is named as such
    result = validate_disclosure(args.file)
    result = dataclasses.replace(
        result, problems=tuple(shorten_problem(p) for p in result.problems)
    )
    if getattr(args, "json", False):
        payload: dict[str, Any] = {
            "file": result.source,
            "valid": result.valid,
            "problems": list(result.problems),
        }
        print(json.dumps(payload, indent=2))
    else:
        print(result.summary(), file=sys.stdout)
    return EXIT_VALID if result.valid else EXIT_INVALID


def add_disclose_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``disclose`` (with its ``validate`` subcommand) to the CLI's subparsers."""
    disclose = subparsers.add_parser(
        "disclose",
        help="contamination disclosure records for reported scores",
        description="Work with contamination disclosure records (JSON Schema draft 2020-12).",
    )
    actions = disclose.add_subparsers(dest="disclose_command", required=True)
    validate = actions.add_parser(
        "validate",
        help="check a disclosure record; exit 0 if valid, 1 if not (every problem listed)",
        description='Validate a disclosure record. "unknown" is a valid entry for every field.',
    )
    validate.add_argument("file", help="the record, a .json file")
    validate.add_argument("--json", action="store_true", help="print JSON instead of text")
    validate.set_defaults(func=run_disclose_validate)
    return disclose

"""``truescore-fast disclose validate FILE``: check a disclosure record against the schema.

Exit codes: 0 the record is valid; 1 it is invalid (every problem is printed) or it
could not be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from truescore_fast.disclosure import validate_disclosure

__all__ = ["add_disclose_parser", "run_disclose_validate"]

EXIT_VALID = 0
EXIT_INVALID = 1


def run_disclose_validate(args: argparse.Namespace) -> int:
    """Validate ``args.file``; print the verdict and every problem; return the exit code."""
    result = validate_disclosure(args.file)
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

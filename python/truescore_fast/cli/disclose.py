"""``truescore-fast disclose``: contamination disclosure records.

    disclose validate FILE     check a record against the schema; exit 0 valid, 1 invalid
                               (every problem is printed) or unreadable
    disclose template [-o F]   write a record to fill in, "unknown" in every field; exit 0
    disclose schema [-o F]     print the JSON Schema (draft 2020-12); exit 0

The library is imported inside the handlers: ``disclose --help`` loads neither NumPy nor
SciPy.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from truescore_fast.cli._common import ExitCode, add_output_flag, write_output

__all__ = [
    "add_parser",
    "run_disclose_schema",
    "run_disclose_template",
    "run_disclose_validate",
]

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
    from truescore_fast._files import check_input_file
    from truescore_fast.io.disclosure import validate_disclosure

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
    return ExitCode.OK if result.valid else ExitCode.ERROR


def run_disclose_template(args: argparse.Namespace) -> int:
    """Write a record with "unknown" in every field (to -o FILE or standard output)."""
    from truescore_fast.io.disclosure import disclosure_template

    write_output(args.output, [json.dumps(disclosure_template(), indent=2) + "\n"])
    return ExitCode.OK


def run_disclose_schema(args: argparse.Namespace) -> int:
    """Write the JSON Schema of a disclosure record (to -o FILE or standard output)."""
    from truescore_fast.io.disclosure import disclosure_schema

    write_output(args.output, [json.dumps(disclosure_schema(), indent=2) + "\n"])
    return ExitCode.OK


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``disclose`` (with its ``validate`` subcommand) to the CLI's subparsers."""
    disclose = subparsers.add_parser(
        "disclose",
        help="contamination disclosure records for reported scores",
        description="Work with contamination disclosure records (JSON Schema draft 2020-12): "
        "validate a record, write a template to fill in, print the schema. A record has four "
        'fields (mitigations, contamination, evaluation_run, audit_evidence); "unknown" is '
        "valid for every one of them and for every entry inside them.",
    )
    actions = disclose.add_subparsers(dest="disclose_command", required=True)
    validate = actions.add_parser(
        "validate",
        help="check a disclosure record; exit 0 if valid, 1 if not (every problem listed)",
        description='Validate a disclosure record (a .json file). "unknown" is a valid entry '
        "for every field. Needs the jsonschema package (pip install truescore-fast[disclose]). "
        "Exit codes: 0 valid, 1 invalid (every problem is printed, each naming its field) or "
        "the file could not be read.",
    )
    validate.add_argument("file", help="the record, a .json file")
    validate.add_argument("--json", action="store_true", help="print JSON instead of text")
    validate.set_defaults(func=run_disclose_validate)
    template = actions.add_parser(
        "template",
        help='write a record to fill in, "unknown" in every field',
        description='Write a disclosure record with "unknown" in every field, in the schema\'s '
        "shape (the five contamination types, the elicitation budget and exposure of the run, "
        "...). It validates as it is: a valid record that discloses nothing. Replace the "
        "unknowns you can answer. Exit code 0 (1 if the file cannot be written).",
    )
    schema = actions.add_parser(
        "schema",
        help="print the record's JSON Schema (draft 2020-12)",
        description="Print the JSON Schema a disclosure record is validated against (draft "
        "2020-12), as shipped in the package. Exit code 0 (1 if the file cannot be written).",
    )
    for action, func in ((template, run_disclose_template), (schema, run_disclose_schema)):
        add_output_flag(action, "it")
        action.add_argument(
            "--json",
            action="store_true",
            help="accepted for uniformity: the output is JSON either way",
        )
        action.set_defaults(func=func)
    return disclose

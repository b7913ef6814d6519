"""The ``truescore-fast audit`` subcommand: the matched-form audit of a long-format table
(a ``.csv`` or JSON Lines file, read by :func:`truescore_fast._io.read_audit_table`).

Kept apart from the main CLI module so the audit's options live with the audit;
``cli.py`` calls :func:`add_audit_parser` and dispatches to :func:`run_audit`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from truescore_fast._cli_common import integer_flag, seed_flag
from truescore_fast._cli_sequential import (
    add_sequential_audit_flags,
    check_sequential_only,
    run_sequential_audit,
)
from truescore_fast.audit import matched_form_audits, read_audit_table
from truescore_fast.intervals import _FALLBACK_METHODS

__all__ = ["add_audit_parser", "run_audit"]

EXIT_NO_CLAIM = 0
EXIT_CLAIM = 2
_SEQUENTIAL_FLAGS = {
    "target_half_width": "--target-half-width",
    "effect": "--effect",
    "max_parents": "--max-parents",
}


def add_audit_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``audit FILE [--control FILE] [--population-size N] [--radius R]
    [--alpha A] [--json]`` (plus ``--guardrail``, ``--fallback``, ``--seed``)."""
    parser = subparsers.add_parser(
        "audit",
        help="matched-form audit of a long-format table (parent, form, correct[, model])",
        description=(
            "Public-form advantage with valid intervals, the control bank's form gap and the "
            "sensitivity interval for the exposure effect, one audit per model. Form 'public' "
            "is the public form; any other form name is a fresh form. Exit codes: 0 no claim, "
            "2 exposure claimed for some model, 1 could not run. A run without a claim is not "
            "evidence of a clean score: most of a leak's effect can carry over to paraphrases. "
            "--randomization adds, per model, the exact randomization test of 'no form "
            "effect' (one-sided: public form above the fresh ones); it is reported, not used "
            "for the exit code, since ordinary form mismatch is rejected as readily as "
            "exposure. --sequential reads the table as the parents scored so far and says "
            "whether to stop (exit 2 finding, 0 stop, 3 continue)."
        ),
    )
    parser.add_argument(
        "file",
        help=".csv or JSON Lines (.jsonl/.ndjson/.json) table with columns parent, form, "
        "correct and optionally model",
    )
    parser.add_argument(
        "--control",
        metavar="FILE",
        default=None,
        help="control-bank table in the same format (never-public items)",
    )
    parser.add_argument(
        "--population-size",
        metavar="N",
        type=integer_flag,
        default=None,
        help="number of parents in the benchmark the audit sampled from",
    )
    parser.add_argument(
        "--radius",
        metavar="R",
        type=float,
        default=0.0,
        help="transport radius: assumed bound on |b - b_C| (default 0)",
    )
    parser.add_argument(
        "--alpha",
        metavar="A",
        type=float,
        default=0.05,
        help="error rate of the intervals and the claim (default 0.05)",
    )
    parser.add_argument(
        "--guardrail",
        metavar="G",
        type=integer_flag,
        default=30,
        help="nonzero gaps below which Wald is not trusted (default 30)",
    )
    parser.add_argument(
        "--fallback",
        default="betting",
        choices=list(_FALLBACK_METHODS),
        help="primary interval under the guardrail (default betting)",
    )
    parser.add_argument(
        "--seed",
        type=seed_flag,
        default=0,
        help="seed of the recorded parent order for the betting interval (default 0)",
    )
    parser.add_argument(
        "--randomization",
        action="store_true",
        help="also run the exact randomization test of no form effect per model (reported; "
        "the exit code stays the claim rule's)",
    )
    parser.add_argument("--json", action="store_true", help="print the full results as JSON")
    add_sequential_audit_flags(parser)
    parser.set_defaults(func=run_audit)
    return parser


def run_audit(args: argparse.Namespace) -> int:
    """Run the audit; 0 when no model meets the claim rule, 2 when one does.

    Raises:
        ValueError: unreadable file or bad data (the main CLI turns it into exit 1).
    """
    check_sequential_only(args, _SEQUENTIAL_FLAGS)
    try:
        data = read_audit_table(args.file)  # read once: the audit and the exact test share it
        if args.sequential:
            return run_sequential_audit(args, data)
        results = matched_form_audits(
            data,
            control=args.control,
            population_size=args.population_size,
            transport_radius=args.radius,
            alpha=args.alpha,
            guardrail=args.guardrail,
            fallback=args.fallback,
            seed=args.seed,
        )
    except OSError as error:
        raise ValueError(
            f"cannot read {error.filename or args.file}: {error.strerror or error}"
        ) from error
    exact = {}
    if getattr(args, "randomization", False):
        from truescore_fast.randomization import randomization_test

        exact = {m: randomization_test(d.public, d.fresh, seed=args.seed) for m, d in data.items()}
    claim = any(r.claim for r in results.values())
    if args.json:
        payload: dict[str, Any] = {
            "claim": claim,
            "models": {m: r.to_dict() for m, r in results.items()},
        }
        if exact:
            payload["randomization"] = {m: t.to_dict() for m, t in exact.items()}
        print(json.dumps(payload, indent=2))
    else:
        for model, result in results.items():
            print(f"== {model} ==")
            print(result.summary())
            if model in exact:
                print(exact[model].summary())
            print()
        claimed = [m for m, r in results.items() if r.claim]
        print(
            "Exposure claimed for: " + ", ".join(claimed)
            if claimed
            else "No model meets the claim rule."
        )
    return EXIT_CLAIM if claim else EXIT_NO_CLAIM

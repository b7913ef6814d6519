"""The ``truescore-fast audit`` subcommand: the matched-form audit of a long-format table
(CSV, TSV, JSON Lines or Parquet, or ``-`` for standard input, read by
:func:`truescore_fast.read_audit_table`), or of evaluation-harness runs named with
``--public RUN --fresh RUN ...`` (read by :func:`truescore_fast.io.harness.read_harness_runs`).

Kept apart from the main CLI module so the audit's options live with the audit;
``truescore_fast.cli`` calls :func:`add_parser` and dispatches to :func:`run_audit`.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import TYPE_CHECKING, Any

from truescore_fast._catalog import harness_names, interval_methods
from truescore_fast._text import visible
from truescore_fast.cli._common import (
    SEQUENTIAL_EXIT_HELP,
    ExitCode,
    check_sequential_only,
    emit,
    feeds,
    integer_flag,
    seed_flag,
)

if TYPE_CHECKING:
    from truescore_fast.audit.data import AuditData

# The library is imported where it is used: --help loads neither NumPy nor SciPy.

__all__ = ["add_parser", "run_audit"]

_SEQUENTIAL_FLAGS = {
    "target_half_width": "--target-half-width",
    "effect": "--effect",
    "max_parents": "--max-parents",
}


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``audit FILE [--control FILE] [--population-size N] [--radius R]
    [--alpha A] [--json]`` (plus ``--guardrail``, ``--fallback``, ``--seed``, the table's
    column names, and the harness runs ``--public RUN --fresh RUN ... --match-key KEY
    [--metric NAME] [--harness H] [--drop-errored]`` in place of FILE)."""
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
            "whether to stop (exit 2 finding, 0 stop, 3 continue). "
            "Instead of a table, give the harness runs: --public RUN --fresh RUN [--fresh RUN] "
            "--match-key KEY [--metric NAME]."
        ),
    )
    parser.add_argument(
        "file",
        nargs="?",
        default=None,
        help="long-format table, one row per (model, parent, form): .csv, .tsv, "
        ".jsonl/.ndjson/.json or .parquet (each may be gzipped: .csv.gz), or - for standard "
        "input; columns parent, form, "
        "correct and optionally model (or give harness runs with --public/--fresh)",
    )
    parser.add_argument(
        "--control",
        metavar="FILE",
        default=None,
        help="control-bank table in the same format (never-public items)",
    )
    _add_input_arguments(parser)
    parser.add_argument(
        "--population-size",
        metavar="N",
        type=integer_flag,
        default=None,
        help="number of parents in the benchmark the audit sampled from",
    )
    feeds(
        parser.add_argument(
            "--radius",
            metavar="R",
            type=float,
            default=0.0,
            help="transport radius: assumed bound on |b - b_C| (default 0)",
        ),
        "transport_radius",
        "radius",
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
        choices=list(interval_methods(fallback_only=True)),
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


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    columns = parser.add_argument_group(
        "table columns", "names of the long-format table's columns (default: their names)"
    )
    for role in ("parent", "form", "correct", "model"):
        columns.add_argument(
            f"--{role}-column", metavar="NAME", default=role, help=f"default {role}"
        )
    columns.add_argument(
        "--public-form",
        metavar="NAME",
        default="public",
        help="the form value that marks the public form (default public)",
    )
    runs = parser.add_argument_group(
        "harness runs",
        "the audit's runs as an evaluation harness wrote them, one run per form: "
        "lm-evaluation-harness --log_samples files (samples_<task>_<date>.jsonl), Inspect "
        "logs (.json or .eval) or per-run tables",
    )
    for prefix, whose in (("", "the audit's"), ("control-", "the control bank's")):
        runs.add_argument(f"--{prefix}public", metavar="RUN", help=f"{whose} public-form run")
        runs.add_argument(
            f"--{prefix}fresh",
            metavar="RUN",
            action="append",
            default=None,
            help=f"{whose} fresh-form run; repeat for every fresh form",
        )
    runs.add_argument(
        "--match-key",
        metavar="KEY",
        help="field matching a record to its parent: doc.parent_id (lm-eval), id, "
        "metadata.parent (Inspect), a column (table); doc_id, a row number, pairs the forms "
        "by position (warned about)",
    )
    runs.add_argument(
        "--public-match-key",
        metavar="KEY",
        default=None,
        help="the public run's match key when it differs (default --match-key)",
    )
    runs.add_argument(
        "--metric",
        metavar="NAME",
        default=None,
        help="per-item correctness: lm-eval metric (acc; exact_match,strict-match to pick "
        "a filter), Inspect scorer (match; scorer.key for a dict value) or a column; "
        "default: the only one there is",
    )
    runs.add_argument(
        "--harness",
        choices=harness_names(),
        default="auto",
        help="what wrote the runs (default auto: recognised from each file)",
    )
    runs.add_argument(
        "--drop-errored",
        action="store_true",
        help="drop every parent with a sample the harness logged as errored (Inspect), "
        "saying how many on stderr; not random: it can bias the estimate (default: an "
        "errored sample is an error)",
    )


_TABLE_FLAGS = ("parent_column", "form_column", "correct_column", "model_column", "public_form")
_RUN_FLAGS = ("match_key", "public_match_key", "metric", "control_public", "control_fresh")
_RUN_SWITCHES = ("drop_errored",)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _audit_inputs(
    args: argparse.Namespace,
) -> tuple[dict[str, AuditData], dict[str, AuditData] | None]:
    """The audit's data and control bank, from the table or from the harness runs."""
    from truescore_fast._files import STDIN
    from truescore_fast.audit.data import ALL_MODELS, read_audit_table

    if args.public is None:
        if args.file is None:
            raise ValueError(
                "give a long-format table (audit FILE) or harness runs (audit --public RUN "
                "--fresh RUN --match-key KEY)"
            )
        used = [f for f in (*_RUN_FLAGS, "fresh") if getattr(args, f) is not None]
        used += [f for f in _RUN_SWITCHES if getattr(args, f)]
        if used:
            raise ValueError(f"{_flag(used[0])} goes with --public (harness runs), not a table")
        if args.file == STDIN and args.control == STDIN:
            raise ValueError("standard input ('-') can be read once: give --control a file")
        columns = {name: getattr(args, name) for name in _TABLE_FLAGS}
        data = read_audit_table(args.file, **columns)
        banks = read_audit_table(args.control, **columns) if args.control else None
        return data, banks
    if args.file is not None:
        raise ValueError("give a table (FILE) or harness runs (--public/--fresh), not both")
    changed = [n for n in _TABLE_FLAGS if getattr(args, n) != n.split("_")[0]]
    if args.control is not None or changed:
        flag = "--control" if args.control is not None else _flag(changed[0])
        raise ValueError(
            f"{flag} reads a long-format table; with harness runs the control bank is "
            "--control-public RUN --control-fresh RUN"
        )
    if not args.fresh:
        raise ValueError("--public needs at least one --fresh run")
    if args.match_key is None:
        raise ValueError(
            "--match-key is required with harness runs: a field naming each record's parent "
            "(e.g. doc.parent_id for lm-eval, metadata.parent_id or id for Inspect); not "
            "doc_id, a row number that pairs the forms by position"
        )
    if (args.control_public is None) != (args.control_fresh is None):
        raise ValueError("--control-public and --control-fresh go together")
    options = {
        "match_key": args.match_key,
        "metric": args.metric,
        "harness": args.harness,
        "public_match_key": args.public_match_key,
        "drop_errored": args.drop_errored,
    }
    stdin_runs = [args.public, *args.fresh, args.control_public, *(args.control_fresh or [])]
    if stdin_runs.count(STDIN) > 1:
        raise ValueError("standard input ('-') can be read once: give the other runs as files")
    runs = _read_runs(args.public, args.fresh, options)
    if args.control_public is None:
        return {runs.model: runs}, None
    bank = _read_runs(args.control_public, args.control_fresh, options)
    if ALL_MODELS not in (runs.model, bank.model) and runs.model != bank.model:
        raise ValueError(
            f"the control runs were scored by {bank.model}, the audited runs by {runs.model}"
        )
    return {runs.model: runs}, {runs.model: bank}


def _read_runs(public: str, fresh: list[str], options: dict[str, Any]) -> AuditData:
    """:func:`read_harness_runs`, its warnings (parents dropped, a positional match key)
    printed on stderr as one line each."""
    from truescore_fast.io.harness import read_harness_runs

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = read_harness_runs(public, fresh, **options)
    for warning in caught:
        print(f"warning: {visible(str(warning.message))}", file=sys.stderr)
    return runs


def _dropped_line(data: AuditData) -> str:
    return (
        f"Dropped {len(data.dropped)} parent(s) with an errored sample (not at random: the "
        f"estimate may be biased): {', '.join(data.dropped)}"
    )


def run_audit(args: argparse.Namespace) -> int:
    """Run the audit; 0 when no model meets the claim rule, 2 when one does.

    Raises:
        ValueError: unreadable file or bad data (the main CLI turns it into exit 1).
    """
    from truescore_fast.audit.matched_form import matched_form_audits

    check_sequential_only(args, _SEQUENTIAL_FLAGS)
    try:
        data, banks = _audit_inputs(args)  # read once: the audit and the exact test share it
        if args.sequential:
            return run_sequential_audit(args, data, banks)
        results = matched_form_audits(
            data,
            control=banks,
            population_size=args.population_size,
            transport_radius=args.radius,
            alpha=args.alpha,
            guardrail=args.guardrail,
            fallback=args.fallback,
            seed=args.seed,
        )
    except OSError as error:
        if error.filename:
            raise ValueError(f"cannot read {error.filename}: {error.strerror or error}") from error
        raise ValueError(f"cannot read: {error}") from error
    exact = {}
    if getattr(args, "randomization", False):
        from truescore_fast.audit.randomization import randomization_test

        exact = {m: randomization_test(d.public, d.fresh, seed=args.seed) for m, d in data.items()}
    claim = any(r.claim for r in results.values())
    if args.json:
        payload: dict[str, Any] = {
            "claim": claim,
            "models": {m: r.to_dict() for m, r in results.items()},
        }
        if exact:
            payload["randomization"] = {m: t.to_dict() for m, t in exact.items()}
        dropped = {m: list(d.dropped) for m, d in data.items() if d.dropped}
        if dropped:
            payload["dropped_parents"] = dropped
        print(json.dumps(payload, indent=2))
    else:
        for model, result in results.items():
            print(f"== {visible(model)} ==")
            print(result.summary())
            if data[model].dropped:
                print(_dropped_line(data[model]))
            if model in exact:
                print(exact[model].summary())
            print()
        claimed = [m for m, r in results.items() if r.claim]
        print(
            "Exposure claimed for: " + ", ".join(claimed)
            if claimed
            else "No model meets the claim rule."
        )
    return ExitCode.FINDING if claim else ExitCode.OK


def add_sequential_audit_flags(parser: argparse.ArgumentParser) -> None:
    """``--sequential [--target-half-width W] [--effect D] [--max-parents N]``."""
    group = parser.add_argument_group(
        "sequential audit (the parents scored so far, in the order they were scored)",
        "Reads the table as a stream in the order of its rows (each parent's first row) "
        "and reports the anytime-valid decision: stopping whenever it says, or earlier, "
        "keeps the 1 - alpha guarantee, if the parents were scored in a random order "
        "(tsf.audit_order). " + SEQUENTIAL_EXIT_HELP,
    )
    group.add_argument(
        "--sequential",
        action="store_true",
        help="read the table as the parents scored so far and decide whether to stop",
    )
    group.add_argument(
        "--target-half-width",
        metavar="W",
        type=float,
        default=None,
        help="stop (bounded) once Delta's half-width is at most W",
    )
    feeds(
        group.add_argument(
            "--effect",
            metavar="D",
            type=float,
            default=None,
            help="stop (bounded) once Delta's interval lies below D",
        ),
        "effect_size",
        "effect",
    )
    group.add_argument(
        "--max-parents",
        metavar="N",
        type=integer_flag,
        default=None,
        help="stop (exhausted) after N parents; the bets are tuned to N (a budget)",
    )


def run_sequential_audit(
    args: argparse.Namespace, data: dict[str, Any], bank: dict[str, Any] | None
) -> int:
    """The sequential audit of every model in ``data`` ({model: AuditData}, parents in
    scoring order), with the control bank ``bank`` (the same form, or None)."""
    from truescore_fast.audit.matched_form import control_for
    from truescore_fast.audit.sequential import SequentialAudit

    if args.randomization:
        raise ValueError("--randomization is a fixed-sample test; not with --sequential")
    states = {}
    for model, item in data.items():
        audit = SequentialAudit(
            args.population_size,
            alpha=args.alpha,
            control=control_for(model, bank, "--control"),  # as matched_form_audits matches banks
            transport_radius=args.radius,
            target_half_width=args.target_half_width,
            effect_size=args.effect,
            max_parents=args.max_parents,
        )
        states[model] = audit.update(item.public, item.fresh)
    decisions = {m: s.decision for m, s in states.items()}
    if "finding" in decisions.values():
        code = ExitCode.FINDING
    elif "continue" in decisions.values():
        code = ExitCode.CONTINUE
    else:
        code = ExitCode.OK
    lines = []
    for model, state in states.items():
        lines += [f"== {visible(model)} ==", state.summary(), ""]
    lines.append(
        {
            ExitCode.FINDING: "Stop: exposure claimed for "
            + ", ".join(visible(m) for m, d in decisions.items() if d == "finding"),
            ExitCode.CONTINUE: "Continue scoring: "
            + ", ".join(visible(m) for m, d in decisions.items() if d == "continue")
            + " not decided yet.",
            ExitCode.OK: "Stop: no model meets the claim rule, and every audit is decided.",
        }[code]
    )
    emit(
        args,
        "\n".join(lines),
        {"decision_exit_code": code, "models": {m: s.to_dict() for m, s in states.items()}},
    )
    return code

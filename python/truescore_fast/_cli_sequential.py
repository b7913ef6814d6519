"""``--sequential`` for ``truescore-fast audit`` and ``truescore-fast contamination``:
read what has been scored so far and say whether to stop.

The input is the same table as the fixed command's, holding only the rows scored so far,
in the order they were scored (parents in the order ``audit_order`` gave; each shard's
shuffled orders in the order ``shard-orders`` listed them). Exit codes:

    2  finding: stop, the claim rule holds (audit) or the pooled test rejects (contamination)
    0  stop without a finding: bounded (audit: Delta's interval is narrow enough, or below
       --effect), every allowed parent scored, or (contamination) no unscored order can
       bring the pooled p below --alpha
    3  continue: score more (the audit prints a rough projection of how many)
    1  could not run
"""

from __future__ import annotations

import argparse
from typing import Any

from truescore_fast._cli_common import emit, integer_flag

__all__ = [
    "EXIT_CONTINUE",
    "add_sequential_audit_flags",
    "add_sequential_contamination_flags",
    "check_sequential_only",
    "run_sequential_audit",
    "run_sequential_contamination",
]

EXIT_STOP = 0
EXIT_FINDING = 2
EXIT_CONTINUE = 3

_EXIT_HELP = (
    "With --sequential the exit code is 2 finding (stop), 0 stop without a finding, 3 "
    "continue scoring, 1 could not run."
)


def add_sequential_audit_flags(parser: argparse.ArgumentParser) -> None:
    """``--sequential [--target-half-width W] [--effect D] [--max-parents N]``."""
    group = parser.add_argument_group(
        "sequential audit (the parents scored so far, in the order they were scored)",
        "Reads the table as a stream in the order of its rows (each parent's first row) "
        "and reports the anytime-valid decision: stopping whenever it says, or earlier, "
        "keeps the 1 - alpha guarantee, if the parents were scored in a random order "
        "(tsf.audit_order). " + _EXIT_HELP,
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
    group.add_argument(
        "--effect",
        metavar="D",
        type=float,
        default=None,
        help="stop (bounded) once Delta's interval lies below D",
    )
    group.add_argument(
        "--max-parents",
        metavar="N",
        type=integer_flag,
        default=None,
        help="stop (exhausted) after N parents; the bets are tuned to N (a budget)",
    )


def check_sequential_only(args: argparse.Namespace, flags: dict[str, str]) -> None:
    if not args.sequential:
        used = [flag for name, flag in flags.items() if getattr(args, name) is not None]
        if used:
            raise ValueError(f"{used[0]} applies to --sequential only")


def run_sequential_audit(
    args: argparse.Namespace, data: dict[str, Any], bank: dict[str, Any] | None
) -> int:
    """The sequential audit of every model in ``data`` ({model: AuditData}, parents in
    scoring order), with the control bank ``bank`` (the same form, or None)."""
    from truescore_fast.audit import _control_for
    from truescore_fast.sequential import SequentialAudit

    if args.randomization:
        raise ValueError("--randomization is a fixed-sample test; not with --sequential")
    states = {}
    for model, item in data.items():
        audit = SequentialAudit(
            args.population_size,
            alpha=args.alpha,
            control=_control_for(model, bank, "--control"),  # as matched_form_audits matches banks
            transport_radius=args.radius,
            target_half_width=args.target_half_width,
            effect_size=args.effect,
            max_parents=args.max_parents,
        )
        states[model] = audit.update(item.public, item.fresh)
    decisions = {m: s.decision for m, s in states.items()}
    if "finding" in decisions.values():
        code = EXIT_FINDING
    elif "continue" in decisions.values():
        code = EXIT_CONTINUE
    else:
        code = EXIT_STOP
    lines = []
    for model, state in states.items():
        lines += [f"== {model} ==", state.summary(), ""]
    lines.append(
        {
            EXIT_FINDING: "Stop: exposure claimed for "
            + ", ".join(m for m, d in decisions.items() if d == "finding"),
            EXIT_CONTINUE: "Continue scoring: "
            + ", ".join(m for m, d in decisions.items() if d == "continue")
            + " not decided yet.",
            EXIT_STOP: "Stop: no model meets the claim rule, and every audit is decided.",
        }[code]
    )
    emit(
        args,
        "\n".join(lines),
        {"decision_exit_code": code, "models": {m: s.to_dict() for m, s in states.items()}},
    )
    return code


def add_sequential_contamination_flags(parser: argparse.ArgumentParser) -> None:
    """``--sequential --max-permutations M [--h H]``."""
    group = parser.add_argument_group(
        "sequential order test (the orders scored so far, in the order they were scored)",
        "Each shard's published order must be scored first; its shuffled orders are read "
        "in the order of the rows. A shard stops after H shuffled orders score at least its "
        "published one (Besag & Clifford), the pooled Fisher verdict as soon as no unscored "
        "order can change it. " + _EXIT_HELP,
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
    from truescore_fast._cli_contamination import _read_shard_rows  # one reading of the rows
    from truescore_fast.sequential import sequential_order_verdict

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
    code = {"finding": EXIT_FINDING, "no finding": EXIT_STOP, "continue": EXIT_CONTINUE}[
        verdict.decision
    ]
    lines = [verdict.summary()]
    for name, state in zip(names, verdict.shards, strict=True):
        lines.append(f"  {name}: " + state.summary().split(": ", 1)[1])
    if code == EXIT_CONTINUE:
        open_shards = [n for n, s in zip(names, verdict.shards, strict=True) if not s.stopped]
        lines.append(f"Continue: score the next shuffled orders of {len(open_shards)} shard(s).")
    payload = verdict.to_dict()
    payload["shard_names"] = names
    payload["decision_exit_code"] = code
    emit(args, "\n".join(lines), payload)
    return code

"""``truescore-fast score BENCHMARK --model M --shards R --permutations P``: the log-likelihood
of every shard order with a Hugging Face ``transformers`` model
(:func:`truescore_fast.io.scoring.score_orders`), written as the table
``truescore-fast contamination`` reads.

Exit codes: 0 written, 1 could not run (bad flag, unreadable benchmark, a model that
cannot be loaded, the ``score`` extra missing, an unwritable file).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from truescore_fast.cli._common import (
    ExitCode,
    add_order_flags,
    add_output_flag,
    emit,
    integer_flag,
    write_output,
)

__all__ = ["add_parser", "run_score"]

_DESCRIPTION = """\
Score the orders of the sharded contamination tests (Oren et al. 2023) with a causal
language model from Hugging Face transformers (the `score` extra: torch, transformers).

The benchmark's examples, in published order, are split into --shards contiguous shards
with --permutations shuffled orders each, drawn from --seed exactly as `truescore-fast
shard-orders` draws them. Each example is tokenized on its own; an order's tokens are its
examples' tokens concatenated; its log-likelihood is summed by a sliding window of
--context-len tokens moved by --stride, each window scoring only the tokens the windows
before it did not (the released script's definition). A shard's orders hold the same
tokens and are scored together, --batch-size windows per forward pass.

BENCHMARK: .jsonl/.ndjson (one example a line: a JSON string, or an object whose
--text-field holds it), .json (a list of strings) or any other file as plain text (one
example a line, its line end kept, as the released script reads it).

Output: CSV, one row per order, shard by shard, the published order first:
  shard,permutation,kind,loglik
  0,,canonical,-1234.5678
  0,0,permuted,-1240.0123
which `truescore-fast contamination FILE --shard-column shard` reads as it is.

--checkpoint FILE saves each finished shard; run the same command again after an
interruption and the finished shards are read back (bit for bit), not scored again. A
file written for another benchmark, model, window or orders is refused.

Cost: the model reads every token of every order about context_len / stride times
(--stride equal to --context-len: once). The progress bar shows tokens per second and
the time left.

Defaults: --seed 0, --context-len 2048 (at most the model's longest input), --stride
1024, --batch-size 16, --device cpu, --dtype auto (a model's saved dtype is not read:
float32), -o - (standard output).

Exit codes: 0 written, 1 could not run.
"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``score BENCHMARK --model M --shards R --permutations P [...]``."""
    parser = subparsers.add_parser(
        "score",
        help="score the shard orders with a transformers model (log-likelihoods to test)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("benchmark", metavar="BENCHMARK", help="the benchmark's examples")
    parser.add_argument(
        "--model", metavar="M", required=True, help="model name or local path (transformers)"
    )
    parser.add_argument(
        "--tokenizer",
        metavar="T",
        default=None,
        help="tokenizer name or path (default: the model's)",
    )
    add_order_flags(parser)
    parser.add_argument(
        "--context-len",
        metavar="C",
        type=integer_flag,
        default=2048,
        help="tokens per window (default 2048)",
    )
    parser.add_argument(
        "--stride",
        metavar="S",
        type=integer_flag,
        default=1024,
        help="tokens between window starts (default 1024)",
    )
    parser.add_argument(
        "--batch-size",
        metavar="B",
        type=integer_flag,
        default=16,
        help="windows per forward pass (default 16)",
    )
    parser.add_argument(
        "--device", default="cpu", help="torch device: cpu, cuda, cuda:1, mps (default cpu)"
    )
    parser.add_argument(
        "--dtype",
        choices=("auto", "float32", "bfloat16", "float16"),
        default="auto",
        help="model weights' dtype (default auto: float32)",
    )
    parser.add_argument(
        "--text-field",
        metavar="NAME",
        default="text",
        help="the field of a JSON Lines object holding the example (default text)",
    )
    add_output_flag(parser, "the log-likelihoods (CSV)")
    parser.add_argument(
        "--checkpoint",
        metavar="FILE",
        default=None,
        help="save each finished shard to FILE and resume from it",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: only when stderr is a terminal)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="with -o FILE, describe the run as JSON (tokens, seconds, tokens per second)",
    )
    parser.set_defaults(func=run_score)
    return parser


def run_score(args: argparse.Namespace) -> int:
    """Score the orders and write them; 0 on success."""
    to_stdout = args.output in (None, "-")
    if args.json and to_stdout:
        raise ValueError("--json describes the run when -o FILE names the output file")
    for flag, value in (
        ("--shards", args.shards),
        ("--permutations", args.permutations),
        ("--context-len", args.context_len),
        ("--stride", args.stride),
        ("--batch-size", args.batch_size),
    ):
        if value < 1:
            raise ValueError(f"{flag} must be at least 1; got {value}")
    if args.stride > args.context_len:
        raise ValueError(
            f"--stride must be at most --context-len ({args.context_len}); got {args.stride}"
        )
    # the output and the checkpoint are checked before the model is loaded and run
    from truescore_fast._output import check_checkpoint_path, check_output_path

    if not to_stdout and args.output not in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        check_output_path(args.output, flag="-o")
    if args.checkpoint is not None:
        check_checkpoint_path(args.checkpoint, flag="--checkpoint")
    from truescore_fast.contamination.sharded import shard_orders
    from truescore_fast.io.scoring import read_examples, score_orders
    from truescore_fast.io.transformers_backend import TransformersScorer

    examples = read_examples(args.benchmark, text_field=args.text_field)
    if args.shards > len(examples):
        raise ValueError(
            f"--shards must be at most the number of examples ({len(examples)}); got {args.shards}"
        )
    orders = shard_orders(len(examples), args.shards, args.permutations, seed=args.seed)
    scorer = _load(args, TransformersScorer)
    progress = (
        args.progress if args.progress is not None else (None if sys.stderr.isatty() else False)
    )
    scores = score_orders(
        examples,
        orders,
        scorer,
        context_len=args.context_len,
        stride=args.stride,
        batch_size=args.batch_size,
        checkpoint=args.checkpoint,
        progress=progress,
    )
    write_output(args.output, scores.csv_lines())
    if not to_stdout:
        emit(
            args,
            f"{scores.summary()}\nwrote {scores.n_shards * (scores.permutations_per_shard + 1)} "
            f"log-likelihoods to {args.output}",
            {
                "file": args.output,
                "model": args.model,
                "n_examples": orders.n_examples,
                "n_shards": scores.n_shards,
                "permutations_per_shard": scores.permutations_per_shard,
                "seed": scores.seed,
                "context_len": scores.context_len,
                "stride": scores.stride,
                "tokens": int(scores.tokens.sum()) * (scores.permutations_per_shard + 1),
                "tokens_scored": scores.tokens_scored,
                "seconds": scores.seconds,
                "tokens_per_second": scores.tokens_per_second,
                "resumed_shards": scores.resumed_shards,
            },
        )
    return ExitCode.OK


def _load(args: argparse.Namespace, scorer_type: Any) -> Any:
    """The model, or a one-line error naming --model (a missing extra passes through)."""
    from truescore_fast._validation import MissingExtraError

    try:
        _quiet_transformers()
        return scorer_type(
            args.model,
            tokenizer=args.tokenizer,
            device=args.device,
            dtype=None if args.dtype == "auto" else args.dtype,
        )
    except MissingExtraError:
        raise
    except (OSError, ValueError, RuntimeError, ImportError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"--model {args.model}: cannot load it: {first}") from None


def _quiet_transformers() -> None:
    """transformers' own loading bars and notices off: stderr carries this command's
    progress and its one-line errors only."""
    import importlib

    try:
        logging = importlib.import_module("transformers.utils.logging")
    except ImportError:
        return  # TransformersScorer names the missing extra
    logging.set_verbosity_error()
    logging.disable_progress_bar()

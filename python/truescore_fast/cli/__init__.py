"""The ``truescore-fast`` command line.

    truescore-fast contamination FILE [--shard-column shard] [--test exact|slct] [--json]
    truescore-fast audit FILE [--control FILE] [--population-size N] [--radius R]
        [--randomization] [--sequential [--target-half-width W] [--effect D]] [--json]
    truescore-fast compare FILE --a-column A --b-column B [--cluster-column C]
        [--method bootstrap|permutation] [--json]
    truescore-fast shard-orders N_EXAMPLES --shards R --permutations P [--seed S] [-o FILE]
    truescore-fast score BENCHMARK --model M --shards R --permutations P [--seed S]
        [--context-len C] [--stride S] [--batch-size B] [--device D] [-o FILE]
        [--checkpoint FILE]
    truescore-fast disclose {validate FILE,template,schema} [--json]
    truescore-fast calibrate {coverage,stress,detection,budget,sequential,
        sequential-orders,suite} [--replications R]
        [--seed S] [--threads T] [--json] [--plot FILE.png]
    truescore-fast suite TABLE_OR_MANIFEST [--q 0.05] [--fdr bh|by|holm]
        [--report FILE.html] [--plot FILE] [--json]

FILE is a CSV (``.csv``), TSV (``.tsv``), JSON Lines (``.jsonl``, ``.ndjson``, ``.json``)
or Parquet (``.parquet``, the ``parquet`` extra) table, or ``-`` for standard input; a
disclosure record is a ``.json`` document. ``audit`` also reads evaluation-harness runs
(``--public RUN --fresh RUN ...``: lm-evaluation-harness samples files, Inspect logs).

Exit codes let a pipeline tell a finding from a failure:

    0  ran, found nothing
    2  ran, and found something (evidence of contamination)
    1  could not run: unreadable file, bad arguments, unusable data, a missing optional
       dependency (printed as one line: what needs it and the ``pip install`` that fixes it)

``disclose validate`` exits 1 for an invalid record (there, 1 is the finding).
``audit --sequential`` and ``contamination --sequential`` read the rows scored so far
and also exit 3: not decided yet, continue scoring (0 is then "stop without a finding").

argparse's own usage errors would exit 2, the code for a finding; this parser exits 1.
Each subcommand's ``--help`` lists its input columns, defaults and exit codes.
Every error is one line on stderr, never a traceback. Two more codes, as shells use them:

    130  interrupted (Ctrl-C); prints "interrupted"
    141  stdout was closed before the output was written (``... --json | head``):
         nothing more is printed; the code is not 0 because the result was not read.
         Also when stdout is closed from the start (``>&-``): then nothing runs, and one
         line on stderr says so

Only the chosen subcommand's module is imported (and it imports the library inside its
handler), so ``--version`` and ``--help`` load neither NumPy nor SciPy.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from truescore_fast import __version__
from truescore_fast.cli._common import ExitCode, argument_flags
from truescore_fast.errors import ArgumentError

__all__ = ["ExitCode", "main"]


class _Parser(argparse.ArgumentParser):
    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops a failed write without a word (--help > /dev/full exited 0 with
        # the help lost): here it is written and flushed, and a failure is main()'s error
        if not message:
            return
        file = file or sys.stderr
        if file is None:
            return
        if file is not sys.stdout:
            file.write(message)
            file.flush()
            return
        try:
            file.write(message)
        except BrokenPipeError:
            raise
        except OSError as error:
            _stdout_to_devnull()
            raise ValueError(f"cannot write standard output: {error.strerror or error}") from None
        _flush_stdout()

    def error(self, message: str) -> NoReturn:
        # one line, like every other error of this command line (usage: --help)
        self.exit(ExitCode.ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# Every subcommand and the one line the top-level --help lists it with. Command NAME is
# the module truescore_fast.cli.NAME (a dash read as an underscore), whose add_parser
# registers its options with that same line (a test checks it). Only the chosen command's
# module is imported.
_COMMANDS: dict[str, str] = {
    "contamination": "exact exchangeability test or SLCT on published vs shuffled log-likelihoods",
    "audit": "matched-form audit of a long-format table (parent, form, correct[, model])",
    "compare": "paired comparison of two systems scored on the same examples",
    "shard-orders": "write the shard orders to score for the sharded contamination tests",
    "score": "score the shard orders with a transformers model (log-likelihoods to test)",
    "disclose": "contamination disclosure records for reported scores",
    "calibrate": "run a Monte Carlo calibration study and print its table",
    "suite": "audit a whole suite: every model x benchmark, every test, FDR-controlled flags",
}


def _chosen_command(argv: Sequence[str]) -> str | None:
    # The top-level parser takes no option with a value, so the first word that is not
    # an option names the command.
    return next((word for word in argv if not word.startswith("-")), None)


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with ``command``'s options; every other command is listed by name and
    help line only, so its module is not imported."""
    parser = _Parser(
        prog="truescore-fast",
        description="Contamination tests for language-model benchmark scores. "
        "Exit codes: 0 nothing found, 2 finding, 1 could not run, 130 interrupted.",
        epilog="Run truescore-fast COMMAND --help for a command's input columns, defaults "
        "and exit codes.",
    )
    parser.add_argument("--version", action="version", version=f"truescore-fast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, help_line in _COMMANDS.items():
        if name == command:
            module = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
            module.add_parser(sub)
        else:
            sub.add_parser(name, help=help_line)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 nothing found, 2 finding, 1 error,
    130 interrupted, 141 stdout closed)."""
    parser: argparse.ArgumentParser | None = None
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        parser = _build_parser(_chosen_command(words))
        args = parser.parse_args(words)
        if sys.stdout is None:  # file descriptor 1 closed at start-up (``>&-``)
            return _closed_stdout()
        # loaded only now: --version and --help load no NumPy
        from truescore_fast._files import run_budget

        try:
            with run_budget():  # every file the command decompresses: one total
                code: int = args.func(args)
        except RecursionError:
            where = getattr(args, "file", None)  # calibrate, shard-orders: no file
            raise ValueError(f"{where or 'the input'}: nested too deeply to read") from None
        _flush_stdout()  # a closed pipe or a full disk shows here, inside the handlers below
        return int(code)  # an ExitCode is an int; the caller gets the plain number
    except (ValueError, OverflowError, OSError, KeyError, ImportError) as error:
        if isinstance(error, BrokenPipeError):
            return _closed_pipe()
        if isinstance(error, ImportError) and not _is_missing_extra(error):
            raise
        print(f"error: {_one_line(_message(error, parser))}", file=sys.stderr)
        return ExitCode.ERROR
    except MemoryError as error:  # a size the library refused, or one it could not get
        print(f"error: {_one_line(_message(error, parser)) or 'out of memory'}", file=sys.stderr)
        return ExitCode.ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED


def _flush_stdout() -> None:
    """Flush standard output; a write that fails (a full disk, ``/dev/full``) is a
    ValueError saying so, and what could not be written is dropped, so the interpreter's
    own flush at exit does not fail again after the one error line (a closed pipe raises
    BrokenPipeError, handled as such)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        _stdout_to_devnull()
        raise ValueError(f"cannot write standard output: {error.strerror or error}") from None


def _message(error: BaseException, parser: argparse.ArgumentParser | None) -> str:
    """The message of ``error``; an :class:`ArgumentError`'s with each library argument
    it names written as the flag that gives it (the chosen command's parser says which:
    ``_common.feeds``), not as the Python name the library uses."""
    if not isinstance(error, ArgumentError) or parser is None:
        return str(error)
    flags = argument_flags(parser)
    return error.render(lambda name: flags.get(name, name))


def _one_line(message: str) -> str:
    """An error message as the one line printed: every control character (a newline in a
    name read from a file) escaped."""
    from truescore_fast._text import visible  # NumPy-free; not loaded by --version

    return visible(message)


def _is_missing_extra(error: ImportError) -> bool:
    # imported here: _validation needs NumPy, which --version and --help never load
    from truescore_fast._validation import MissingExtraError

    return isinstance(error, MissingExtraError)


def _closed_stdout() -> int:
    # Python starts with sys.stdout None when descriptor 1 is closed: nothing could be
    # printed, so nothing is run (an hour's study would be lost); the code of a closed pipe
    print(
        "error: standard output is closed: nothing can be printed; redirect it to a file "
        "or /dev/null instead of closing it",
        file=sys.stderr,
    )
    return ExitCode.CLOSED_PIPE


def _closed_pipe() -> int:
    # The reader went away. Point stdout at devnull so the interpreter's final flush
    # does not raise again (the recipe of the Python docs' signal module notes).
    _stdout_to_devnull()
    return ExitCode.CLOSED_PIPE


def _stdout_to_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (e.g. captured)
        pass

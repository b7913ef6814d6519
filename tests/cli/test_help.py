"""Every subcommand's ``--help`` loads neither NumPy nor SciPy: the commands are read from
the parser itself (a new one is covered without touching this file), each run in a fresh
interpreter that then lists sys.modules. The lists the parsers need without the library
come from truescore_fast/_catalog.py, which the registries are built from
(tests/package/test_catalog.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from commands import loaded_modules
from truescore_fast.cli import _build_parser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {name: sub for action in actions for name, sub in action.choices.items()}


def command_paths() -> list[tuple[str, ...]]:
    """Every command and nested subcommand, as the parser with that command's options
    (only the chosen command's module is imported, so each is built in turn) lists them."""
    paths: list[tuple[str, ...]] = []

    def walk(prefix: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        paths.append(prefix)
        for name, sub in _subcommands(parser).items():
            walk((*prefix, name), sub)

    for command in _subcommands(_build_parser()):
        walk((command,), _subcommands(_build_parser(command))[command])
    return paths


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in ("numpy", "scipy"))


def test_the_parser_lists_every_command_and_the_nested_ones():
    paths = command_paths()
    assert {p[0] for p in paths} >= {"audit", "calibrate", "contamination", "disclose"}
    assert ("disclose", "validate") in paths  # a nested subcommand is found too


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_help_of_every_subcommand_loads_neither_numpy_nor_scipy(path):
    names, proc = loaded_modules(*path, "--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: truescore-fast " + " ".join(path)), proc.stdout[:200]
    assert heavy(names) == []


def test_the_check_sees_numpy_when_a_command_runs():
    # the test above can fail: the same listing shows NumPy once the audit runs
    names, proc = loaded_modules("audit", str(EXAMPLES / "audit_example.csv"))
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    assert "numpy" in heavy(names)

"""The test suite's own rules: the shared helpers in tests/ shadow no installed module,
and the fast subset (``pytest -m "not slow"``) keeps tests of every area."""

from __future__ import annotations

import importlib.machinery
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
HELPERS = sorted(
    p.stem
    for p in TESTS.glob("*.py")
    if not p.stem.startswith("test_") and p.stem not in {"__init__", "conftest"}
)
AREAS = sorted(p.parent.name for p in TESTS.glob("*/test_*.py"))


def test_the_helpers_are_found():
    assert {"reference", "commands", "kernel_paths"} <= set(HELPERS)
    assert {"package", "cli", "studies", "audit"} <= set(AREAS)


@pytest.mark.parametrize("name", HELPERS)
def test_no_installed_module_has_a_helpers_name(name):
    # tests/ comes first on sys.path (pyproject's pythonpath), so a helper named like an
    # installed module hides it from every library that imports it (as a helper named
    # kernels.py once hid the kernels package from transformers).
    elsewhere = [p for p in sys.path if Path(p or ".").resolve() != TESTS]
    spec = importlib.machinery.PathFinder.find_spec(name, elsewhere)
    assert spec is None, f"tests/{name}.py shadows {spec.origin}"


@pytest.mark.slow
def test_the_fast_subset_keeps_tests_of_every_area():
    # Collection only (nothing runs); every folder of tests/ keeps quick tests to run
    # while working on it.
    listing = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
        + ["-m", "not slow", str(TESTS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    ).stdout
    fast = Counter(
        Path(line.split("::")[0]).parts[1] for line in listing.splitlines() if "::" in line
    )
    assert {area: fast[area] for area in AREAS if fast[area] < 3} == {}

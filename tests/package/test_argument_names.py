"""Errors name their argument (issue 23): every argument of every public function, method
and constructor is given
each hostile value of tests/walking.py in turn (one child process); a refusal is a
documented exception of one line naming the argument, a drop-in raises exactly what
truescore 0.7.4 raises, and no argument of this library's own API accepts a complex or
datetime64 value or a string where something else is expected. The values that must be
refused, function by function, are in tests/package/test_validation.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("truescore")

TESTS = Path(__file__).resolve().parents[1]


def test_every_argument_of_every_function_is_named_when_refused() -> None:
    code = (
        f"import json, sys, warnings; sys.path.insert(0, {str(TESTS)!r}); "
        "warnings.simplefilter('ignore'); import walking; print(json.dumps(walking.walk()))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=900, check=False
    )
    assert child.returncode == 0, child.stderr[-2000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    counts = report["counts"]
    print("argument walk:", counts)  # the numbers for the closing note
    assert report["findings"] == [], "\n".join(report["findings"])
    # the walk reached what it should: every function with arguments, thousands of calls
    import walking
    from fuzzing import _public_functions

    with_arguments = {
        name for name, fn in _public_functions().items() if walking.signature_size(fn) > 0
    }
    assert with_arguments <= set(walking.VALID), sorted(with_arguments - set(walking.VALID))
    assert counts["functions"] == len(with_arguments)
    assert counts["refused"] == counts["named"] > 2000
    # and every argument of every public method and constructor (tests/methods.py)
    import methods

    assert counts["method_methods"] == len(methods.public_methods())
    assert counts["method_refused"] == counts["method_named"] > 250

"""Errors name their argument (issue 23): every argument of every public function, method
and constructor is given
each hostile value of tests/walking.py in turn (one child process); a refusal is a
documented exception of one line naming the argument, a drop-in raises exactly what
truescore 0.7.4 raises, and no argument of this library's own API accepts a complex or
datetime64 value or a string where something else is expected. The values that must be
refused, function by function, are in tests/package/test_validation.py."""

from __future__ import annotations

import methods
import pytest
import walking
from fuzzing import _public_functions, run_in_child


@pytest.mark.slow
def test_every_argument_of_every_function_is_named_when_refused() -> None:
    report = run_in_child("walking.walk()")
    counts = report["counts"]
    print("argument walk:", counts)  # the numbers for the closing note
    assert report["findings"] == [], "\n".join(report["findings"])
    # the walk reached what it should: every function with arguments, thousands of calls
    with_arguments = {
        name for name, fn in _public_functions().items() if walking.signature_size(fn) > 0
    }
    assert with_arguments <= set(walking.VALID), sorted(with_arguments - set(walking.VALID))
    assert counts["functions"] == len(with_arguments)
    assert counts["refused"] == counts["named"] > 2000
    # and every argument of every public method and constructor (tests/methods.py)
    assert counts["method_methods"] == len(methods.public_methods())
    assert counts["method_refused"] == counts["method_named"] > 250

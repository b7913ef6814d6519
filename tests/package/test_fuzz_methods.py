"""Fuzz every public method and constructor (issue 23), as test_fuzz.py fuzzes every public
function: the instance is built from random data of a drawn seed (tests/methods.py), and
each argument is valid or, about one time in three, hostile (NaN, infinities, huge and
negative numbers, arrays, complex and datetime values, strings, None...). The result holds
no NaN, or the call raises a documented exception whose message names an argument.

``test_every_public_method_has_a_fuzz_case`` finds the methods by introspection, so a new
method (or a new public class) without a way to build it and call it fails the suite.
"""

from __future__ import annotations

import math
from typing import Any

import methods
import numpy as np
import pytest
from fuzzing import EXAMPLES, Args, _public_functions, check, numbers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HOSTILE = st.one_of(
    numbers,
    st.sampled_from(
        [
            None,
            True,
            -1,
            0,
            2**63,
            10**400,
            2.5,
            math.nan,
            "abc",
            "",
            0.5 + 1j,
            {1: 2},
            [],
            [1.0, [2.0]],
            np.array([0.05, 0.5]),
            np.ones((2, 2)),
            np.array([0.5 + 1j]),
            np.arange(3).astype("M8[D]"),
            np.int64(1),
        ]
    ),
)

# building these instances runs a cross-validated classifier: fewer examples
SLOW = {"LeakageAudit", "PruneResult", "PruneStep"}


def _settings(name: str) -> settings:
    slow = name.split(".")[0] in SLOW
    return settings(
        max_examples=max(2, EXAMPLES // 5) if slow else EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


NAMES = sorted(methods.public_methods())


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_fuzz_method(name: str) -> None:
    if name.split(".")[0] in SLOW:
        pytest.importorskip("sklearn")

    @_settings(name)
    @given(data=st.data())
    def run(data: Any) -> None:
        a = Args(data)
        seed = data.draw(st.integers(0, 2**32 - 1))
        call = methods.bound(name, np.random.default_rng(seed))
        kwargs = {
            param: a(methods.ARGUMENTS[name].get(param), HOSTILE)
            for param in methods.parameters(name)
        }
        aliases = tuple(methods.parameters(name))
        check(call, lambda: call(**kwargs), aliases)

    run()


def test_every_public_method_has_a_fuzz_case() -> None:
    found = methods.public_methods()
    assert len(found) >= 60  # a sanity check of the introspection itself
    classes = {cls.__name__ for cls, _ in found.values()}
    assert classes <= set(methods.INSTANCES), sorted(classes - set(methods.INSTANCES))
    with_arguments = {name for name in found if methods.parameters(name)}
    assert with_arguments <= set(methods.ARGUMENTS), sorted(
        with_arguments - set(methods.ARGUMENTS)
    )
    stale = sorted(set(methods.ARGUMENTS) - set(found))
    assert not stale, f"arguments for no public method: {stale}"
    functions = _public_functions()
    # the numbers for the closing note
    print(f"fuzzed: {len(functions)} public functions, {len(found)} methods and constructors")

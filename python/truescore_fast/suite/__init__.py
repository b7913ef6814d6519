"""Auditing a whole evaluation suite: every model on every benchmark.

* :mod:`~truescore_fast.suite.constat` -- ConStat's performance-based contamination test
  (:func:`constat_test` for one model, :func:`constat_tests` for every model of a suite
  on one benchmark in one bootstrap pass).

A flag in a suite audit is evidence that a score is inflated relative to other models,
not proof of contamination.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.suite import constat as _constat
from truescore_fast.suite.constat import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_constat.__all__,
    ]

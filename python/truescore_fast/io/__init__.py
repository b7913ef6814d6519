"""Reading what evaluation harnesses and authors write.

* :mod:`~truescore_fast.io.harness` -- per-item correctness from evaluation-harness runs
  (lm-evaluation-harness samples files, Inspect logs, plain tables), as the audit's data;
* :mod:`~truescore_fast.io.disclosure` -- contamination disclosure records for reported
  scores: schema, template, validation and rater agreement;
* :mod:`~truescore_fast.io.suite` -- a whole suite from a manifest of harness runs.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.io import disclosure as _disclosure
from truescore_fast.io import harness as _harness
from truescore_fast.io import suite as _suite
from truescore_fast.io.disclosure import *
from truescore_fast.io.harness import *
from truescore_fast.io.suite import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_harness.__all__,
        *_disclosure.__all__,
        *_suite.__all__,
    ]

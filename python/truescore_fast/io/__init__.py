"""Reading what evaluation harnesses and authors write.

* :mod:`~truescore_fast.io.harness` -- per-item correctness from evaluation-harness runs
  (lm-evaluation-harness samples files, Inspect logs, plain tables), as the audit's data;
* :mod:`~truescore_fast.io.disclosure` -- contamination disclosure records for reported
  scores: schema, template, validation and rater agreement.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from truescore_fast.io import disclosure, harness
from truescore_fast.io.disclosure import *
from truescore_fast.io.harness import *

__all__: list[str] = []
__all__ += harness.__all__
__all__ += disclosure.__all__

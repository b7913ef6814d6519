"""Reading what evaluation harnesses and authors write.

* :mod:`~truescore_fast.io.harness` -- per-item correctness from evaluation-harness runs
  (lm-evaluation-harness samples files, Inspect logs, plain tables), as the audit's data;
* :mod:`~truescore_fast.io.disclosure` -- contamination disclosure records for reported
  scores: schema, template, validation and rater agreement;
* :mod:`~truescore_fast.io.suite` -- a whole suite from a manifest of harness runs;
* :mod:`~truescore_fast.io.scoring` -- the shard orders' log-likelihoods from a language
  model, the order tests' input; :mod:`~truescore_fast.io.transformers_backend` its
  Hugging Face backend (the ``score`` extra).
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.io import disclosure as _disclosure
from truescore_fast.io import harness as _harness
from truescore_fast.io import scoring as _scoring
from truescore_fast.io import suite as _suite
from truescore_fast.io import transformers_backend as _transformers_backend
from truescore_fast.io.disclosure import *
from truescore_fast.io.harness import *
from truescore_fast.io.scoring import *
from truescore_fast.io.suite import *
from truescore_fast.io.transformers_backend import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_harness.__all__,
        *_disclosure.__all__,
        *_suite.__all__,
        *_scoring.__all__,
        *_transformers_backend.__all__,
    ]

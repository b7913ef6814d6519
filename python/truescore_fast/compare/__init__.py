"""Comparing systems scored on the same examples.

* :mod:`~truescore_fast.compare.paired` -- the drop-in for ``truescore.compare``'s paired
  comparison of two systems (:func:`paired_bootstrap`, :func:`paired_permutation`) and its
  multiplicity corrections (:func:`holm`, :func:`benjamini_hochberg`);
* :mod:`~truescore_fast.compare.families` -- family-clustered bootstrap intervals and
  Holm correction over families (LeakScale);
* :mod:`~truescore_fast.compare.pacost` -- PaCoST: the model's confidence on original
  against rephrased questions.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.compare import families as _families
from truescore_fast.compare import pacost as _pacost
from truescore_fast.compare import paired as _paired
from truescore_fast.compare.families import *
from truescore_fast.compare.pacost import *
from truescore_fast.compare.paired import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_paired.__all__,
        *_families.__all__,
        *_pacost.__all__,
    ]

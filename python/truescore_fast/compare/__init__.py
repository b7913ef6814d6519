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

from truescore_fast.compare import families, pacost, paired
from truescore_fast.compare.families import *
from truescore_fast.compare.pacost import *
from truescore_fast.compare.paired import *

__all__: list[str] = []
__all__ += paired.__all__
__all__ += families.__all__
__all__ += pacost.__all__

"""Order-based contamination tests on log-likelihoods (Oren et al. 2023).

* :mod:`~truescore_fast.contamination.exact` -- the exact exchangeability (permutation-
  rank) test, one dataset or a batch, and the pooled verdict over shards
  (:func:`exchangeability_test`, :func:`exchangeability_tests`, :func:`combine_shards`):
  the drop-in for ``truescore.contamination``; :mod:`~truescore_fast.contamination.batch`
  runs many shards in one call;
* :mod:`~truescore_fast.contamination.sharded` -- the shard orders to score and the
  sharded likelihood comparison test (SLCT, :func:`sharded_likelihood_test`);
* :mod:`~truescore_fast.contamination.sequential` -- the sequential order test, which
  stops drawing shuffled orders when the verdict is known.

A finding says that the published order of a benchmark is special to the model; a
non-finding is not a clean bill (a model trained on shuffled or paraphrased copies leaves
the published order unremarkable).
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.contamination import batch as _batch
from truescore_fast.contamination import exact as _exact
from truescore_fast.contamination import sequential as _sequential
from truescore_fast.contamination import sharded as _sharded
from truescore_fast.contamination.batch import *
from truescore_fast.contamination.exact import *
from truescore_fast.contamination.sequential import *
from truescore_fast.contamination.sharded import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_exact.__all__,
        *_batch.__all__,
        *_sharded.__all__,
        *_sequential.__all__,
    ]

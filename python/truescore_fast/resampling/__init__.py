"""Resampling for audits and positive controls: permutation nulls, finite-population
bootstraps, difference in differences, seed-paired contrasts.

Each tool has its own module:

* :func:`pattern_permutation_test` (``patterns.py``) -- on how many parents do at least
  k of M models show a pattern (the CleanScore paper's Table 8), against a null that
  permutes the parents independently for every model.
* :func:`finite_population_bootstrap` (``finite_population.py``) -- the Rao-Wu
  rescaling bootstrap (default) and the Booth-Butler-Hall pseudo-population bootstrap of
  a (stratified) mean from a sample drawn without replacement.
* :func:`did_estimate` (``did.py``) -- difference in differences over parents
  (exposed/unexposed x before/after x public/fresh) with percentile and BCa bootstrap
  intervals, per model and pooled (Tables 14-16, 21).
* :func:`seed_contrast` (``signflip.py``) -- a seed-paired contrast: mean, t-interval,
  seeds positive and the exact two-sided sign-flip p (Table 1).

Randomness: every random function takes ``seed`` (default 0; any seed
``numpy.random.default_rng`` takes but None), turned into one Philox4x64-10 key by
the package's one seed normaliser (``truescore_fast._random.philox_key``).
Replicate (or permutation) b draws from its own stream, counter ``[0, 0, b, 0]``, so a
result is bit-identical for any ``n_threads`` and can be reproduced draw for draw with
``numpy.random.Philox`` (the order of draws is documented in
``src/cpp/truescore/resampling.hpp``). The compiled kernels release the GIL and keep
O(n) memory per thread: B replicates cost B numbers, never a B x n matrix.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.resampling import did as _did
from truescore_fast.resampling import finite_population as _finite_population
from truescore_fast.resampling import patterns as _patterns
from truescore_fast.resampling import signflip as _signflip
from truescore_fast.resampling.did import *
from truescore_fast.resampling.finite_population import *
from truescore_fast.resampling.patterns import *
from truescore_fast.resampling.signflip import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_did.__all__,
        *_finite_population.__all__,
        *_patterns.__all__,
        *_signflip.__all__,
    ]

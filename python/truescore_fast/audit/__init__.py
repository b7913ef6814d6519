"""The matched-form audit (CleanScore): public against fresh forms of the same items.

* :mod:`~truescore_fast.audit.intervals` -- the valid intervals for the mean gap, one per
  registered method (:data:`INTERVAL_METHODS`);
* :mod:`~truescore_fast.audit.data` -- the audit's data (:class:`AuditData`) and its
  long-format table reader (:func:`read_audit_table`);
* :mod:`~truescore_fast.audit.matched_form` -- the audit: intervals, control bank and
  transport radius (:func:`matched_form_audit`, :func:`matched_form_audits`);
* :mod:`~truescore_fast.audit.randomization` -- the exact randomization test of "no form
  effect";
* :mod:`~truescore_fast.audit.sequential` -- the sequential audit on confidence
  sequences, which stops scoring parents when the answer is known;
* :mod:`~truescore_fast.audit.prune` -- Audit-Prune: surface-feature leakage in
  binary-choice benchmarks.

An interval that covers zero does not mean the score is clean: a matched-form audit sees
only the part of a leak's effect that does not carry over to the fresh forms.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.audit import data as _data
from truescore_fast.audit import intervals as _intervals
from truescore_fast.audit import matched_form as _matched_form
from truescore_fast.audit import prune as _prune
from truescore_fast.audit import randomization as _randomization
from truescore_fast.audit import sequential as _sequential
from truescore_fast.audit.data import *
from truescore_fast.audit.intervals import *
from truescore_fast.audit.matched_form import *
from truescore_fast.audit.prune import *
from truescore_fast.audit.randomization import *
from truescore_fast.audit.sequential import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_intervals.__all__,
        *_data.__all__,
        *_matched_form.__all__,
        *_randomization.__all__,
        *_sequential.__all__,
        *_prune.__all__,
    ]

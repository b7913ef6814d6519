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

from truescore_fast.audit import data, intervals, matched_form, prune, randomization, sequential
from truescore_fast.audit.data import *
from truescore_fast.audit.intervals import *
from truescore_fast.audit.matched_form import *
from truescore_fast.audit.prune import *
from truescore_fast.audit.randomization import *
from truescore_fast.audit.sequential import *

__all__: list[str] = []
__all__ += intervals.__all__
__all__ += data.__all__
__all__ += matched_form.__all__
__all__ += randomization.__all__
__all__ += sequential.__all__
__all__ += prune.__all__

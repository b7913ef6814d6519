"""Auditing a whole evaluation suite: every model on every benchmark, every applicable
test, the error rate controlled across the suite (:func:`suite_audit`).

* :mod:`~truescore_fast.suite.data` -- the suite's scores (:class:`SuiteData`), read from
  one long table by :func:`read_suite`;
* :mod:`~truescore_fast.suite.constat` -- ConStat's performance-based contamination test
  (:func:`constat_test` for one model, :func:`constat_tests` for every model of a suite
  on one benchmark in one bootstrap pass);
* :mod:`~truescore_fast.suite.multiplicity` -- Benjamini-Hochberg, Benjamini-Yekutieli
  and Holm adjustments (:func:`adjust`);
* :mod:`~truescore_fast.suite.audit` -- the suite audit and its result
  (:class:`SuiteAudit`);
* :mod:`~truescore_fast.suite.report` -- a report to look at: the models x benchmarks
  heatmap (:func:`plot_heatmap`) and a self-contained HTML page (:func:`write_report`).

A flag in a suite audit is evidence that a score is inflated relative to its fresh forms
or to other models, not proof of contamination; no flag is not a clean bill.
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast.suite import audit as _audit
from truescore_fast.suite import constat as _constat
from truescore_fast.suite import data as _data
from truescore_fast.suite import multiplicity as _multiplicity
from truescore_fast.suite import report as _report
from truescore_fast.suite.audit import *
from truescore_fast.suite.constat import *
from truescore_fast.suite.data import *
from truescore_fast.suite.multiplicity import *
from truescore_fast.suite.report import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_constat.__all__,
        *_data.__all__,
        *_multiplicity.__all__,
        *_audit.__all__,
        *_report.__all__,
    ]

"""Every list a maintainer extends, written once: the studies, the harness formats, the
tests of the suite audit and the interval methods.

Each entry is a small frozen record naming its implementation by a ``"module:attribute"``
string, imported by :func:`load` on first use. This module imports nothing but the
compiled core (which loads neither NumPy nor SciPy), so the command line lists every
study, format, test and interval method in ``--help`` from here at no cost, and the
registries that run them (:data:`truescore_fast.studies.registry.STUDIES`,
:data:`truescore_fast.io.harness.HARNESSES`, :data:`truescore_fast.suite.audit.SUITE_TESTS`,
:data:`truescore_fast.audit.intervals.INTERVAL_METHODS`) are built from the same entries.

The interval methods are the compiled core's own table (``kIntervalTraits`` in
``src/cpp/truescore/intervals.hpp``): an interval is a formula in C++, so its one entry is
a row there, and :func:`interval_methods` reads it. docs/developer.md lists the steps to
add each kind of entry.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, NamedTuple

from truescore_fast import _core

__all__ = [
    "HARNESS_FORMATS",
    "INTERVAL_TRAITS",
    "STUDIES",
    "SUITE_TESTS",
    "HarnessFormat",
    "MethodTraits",
    "StudyEntry",
    "SuiteTest",
    "harness_names",
    "interval_methods",
    "load",
]


def load(target: str) -> Any:
    """The object ``target`` (``"package.module:attribute"``) names, importing its module."""
    module, colon, attribute = target.partition(":")
    if not colon or not module or not attribute:
        raise ValueError(f"an implementation is named 'module:attribute'; got {target!r}")
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


@dataclass(frozen=True)
class StudyEntry:
    """One study: ``calibrate NAME`` runs it.

    ``study`` names the study function (taking the shared keywords of ``StudyOptions``);
    ``tables`` names a ``run(options, settings) -> StudyRun`` that builds its printed
    tables, or is None when the printed table is the study function's own (called with the
    options' keywords). ``settings`` are the ``StudySettings`` fields (flags) it reads;
    ``plot`` names the function that draws its figure, or is None.
    """

    name: str
    summary: str
    replications: int
    study: str
    tables: str | None = None
    settings: tuple[str, ...] = ()
    plot: str | None = None


@dataclass(frozen=True)
class HarnessFormat:
    """One harness format: ``reader`` names its ``HarnessReader``. The order of
    :data:`HARNESS_FORMATS` is the order in which ``harness="auto"`` asks the readers to
    recognise a run."""

    name: str
    reader: str


@dataclass(frozen=True)
class SuiteTest:
    """One test of the suite audit: ``rows`` names its ``rows(task) -> (rows, reason)`` for
    one benchmark; ``needs`` is the data a pair needs for it, said when no pair has it (None:
    the test says why itself, benchmark by benchmark)."""

    name: str
    summary: str
    needs: str | None
    rows: str


_PRESETS = "truescore_fast.studies._presets"
_PLOT = "truescore_fast.studies._plot"

#: Every study, in the order ``calibrate --help`` lists them.
STUDIES: tuple[StudyEntry, ...] = (
    StudyEntry(
        "coverage",
        "coverage and half-width of every interval (Table 2)",
        5000,
        "truescore_fast.studies.coverage:coverage_study",
        f"{_PRESETS}:coverage_tables",
        ("population", "value_column", "strata_column", "n", "intervals"),
        f"{_PLOT}:plot_coverage",
    ),
    StudyEntry(
        "stress",
        "coverage over the 36 stress settings (Table 6)",
        4000,
        "truescore_fast.studies.stress:stress_grid",
        f"{_PRESETS}:stress_tables",
        ("intervals",),
        f"{_PLOT}:plot_stress",
    ),
    StudyEntry(
        "detection",
        "detection rates, type-I error and form mismatch (Tables 11-13, Fig. 10)",
        2000,
        "truescore_fast.studies.detection:detection_study",
        f"{_PRESETS}:detection_tables",
        plot=f"{_PLOT}:plot_detection",
    ),
    StudyEntry(
        "budget",
        "budget curves and an audit-size plan (Table 10)",
        2000,
        "truescore_fast.studies.budget:budget_study",
        f"{_PRESETS}:budget_tables",
        ("population_size",),
        f"{_PLOT}:plot_budget",
    ),
    StudyEntry(
        "sequential",
        "the sequential audit under continuous monitoring",
        1000,
        "truescore_fast.studies.sequential:sequential_study",
        f"{_PRESETS}:sequential_tables",
    ),
    StudyEntry(
        "sequential-orders",
        "the sequential order test's size, power and orders scored",
        2000,
        "truescore_fast.studies.sequential:sequential_order_study",
        f"{_PRESETS}:sequential_order_tables",
    ),
    StudyEntry(
        "suite",
        "the suite audit's false discovery rate and power per pair",
        200,
        "truescore_fast.studies.suite:suite_study",
    ),
)

#: Every harness format, in the order of ``HARNESSES`` and of ``"auto"``'s claims (the
#: table, which reads what no other format recognises, last).
HARNESS_FORMATS: tuple[HarnessFormat, ...] = (
    HarnessFormat("lm-eval", "truescore_fast.io._lm_eval:LM_EVAL"),
    HarnessFormat("inspect", "truescore_fast.io._inspect:INSPECT"),
    HarnessFormat("table", "truescore_fast.io._table:TABLE"),
)

_SUITE_TESTS = "truescore_fast.suite._tests"

#: Every test of the suite audit, in the order of its rows within a pair.
SUITE_TESTS: tuple[SuiteTest, ...] = (
    SuiteTest(
        "matched_form",
        "the matched-form audit's claim rule, inverted to a p-value",
        "fresh forms",
        f"{_SUITE_TESTS}:matched_form_rows",
    ),
    SuiteTest(
        "randomization",
        "the exact randomization test of no form effect (public above fresh)",
        "fresh forms",
        f"{_SUITE_TESTS}:randomization_rows",
    ),
    SuiteTest(
        "order",
        "the exact order test on log-likelihoods, shards pooled by Fisher",
        "log-likelihoods",
        f"{_SUITE_TESTS}:order_rows",
    ),
    SuiteTest(
        "constat",
        "ConStat: the model's public score against the other models' relation between "
        "benchmark and reference score (needs 6+ models per benchmark)",
        None,
        f"{_SUITE_TESTS}:constat_rows",
    ),
)


class MethodTraits(NamedTuple):
    """One row of the compiled core's table of interval methods (intervals.hpp)."""

    code: int  # the method's _core.IntervalMethod value
    needs_population: bool  # requires the population size N
    order_dependent: bool  # depends on the order of the gaps, not only on their moments
    uses_variance: bool  # reads the sample variance
    may_be_fallback: bool  # may serve as the fallback under the guardrail


#: Every interval method and its traits, in the core's order (its one table, read here).
INTERVAL_TRAITS: dict[str, MethodTraits] = {
    name: MethodTraits(**row) for name, row in _core.interval_method_traits().items()
}


def harness_names() -> tuple[str, ...]:
    """The values of ``harness``: ``"auto"``, then every format's name."""
    return ("auto", *(entry.name for entry in HARNESS_FORMATS))


def interval_methods(*, fallback_only: bool = False) -> tuple[str, ...]:
    """The interval methods in the core's order (those that may serve as the audit's
    fallback under the guardrail, with ``fallback_only``)."""
    return tuple(m for m, t in INTERVAL_TRAITS.items() if t.may_be_fallback or not fallback_only)

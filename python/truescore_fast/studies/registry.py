"""Every study, listed once: the command line's ``calibrate`` subcommands, their default
replications, the settings each takes and the figure each can draw all come from
:data:`STUDIES`.

Adding a study is its module (the study function, with its tests) and one
:class:`Study` entry here; the ``run`` that builds its printed tables can be the
function itself (:func:`Study.of`) or a preset in ``truescore_fast.studies._presets``.
Its name, summary and replications are repeated in ``truescore_fast/cli/_catalog.py``,
from which ``calibrate --help`` lists them without loading NumPy (a test checks the two
agree).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from truescore_fast._table import StudyTable
from truescore_fast._validation import one_line
from truescore_fast.studies import _plot, _presets
from truescore_fast.studies.options import StudyOptions, StudyRun, StudySettings
from truescore_fast.studies.suite import suite_study

__all__ = ["STUDIES", "Study"]

Plot = Callable[[Any, list[StudyTable]], Any]


@dataclass(frozen=True)
class Study:
    """One registered study."""

    name: str  # the subcommand: calibrate NAME
    summary: str  # what it measures, for --help
    replications: int  # the default replications per cell
    run: Callable[[StudyOptions, StudySettings], StudyRun]
    settings: tuple[str, ...] = ()  # the StudySettings fields (flags) it reads
    plot: Plot | None = None  # draws the figure of its tables (matplotlib's pyplot first)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.replace("-", "_").isidentifier():
            raise ValueError(
                f"a study's name must be a word, hyphens allowed (calibrate NAME); got "
                f"{one_line(self.name)}"
            )
        if not isinstance(self.summary, str) or not self.summary.strip():
            raise TypeError(f"study {self.name!r}: summary must be a non-empty str")
        if isinstance(self.replications, bool) or not isinstance(self.replications, int):
            raise TypeError(f"study {self.name!r}: replications must be an int")
        if self.replications < 1:
            raise ValueError(f"study {self.name!r}: replications must be at least 1")
        if not callable(self.run) or (self.plot is not None and not callable(self.plot)):
            raise TypeError(f"study {self.name!r}: run (and plot, if given) must be callable")
        if not isinstance(self.settings, tuple):
            raise TypeError(f"study {self.name!r}: settings must be a tuple of setting names")
        unknown = set(self.settings) - set(StudySettings.names())
        if unknown:
            raise ValueError(f"study {self.name!r}: no such setting {sorted(unknown)}")

    @classmethod
    def of(
        cls,
        function: Callable[..., StudyTable],
        name: str,
        summary: str,
        replications: int,
        plot: Plot | None = None,
    ) -> Study:
        """A study whose printed table is ``function(**options.keywords(name))``: a study
        function that needs no setting of the command line's."""

        def run(options: StudyOptions, settings: StudySettings) -> StudyRun:
            return StudyRun([function(**options.keywords(name))])

        return cls(name, summary, replications, run, (), plot)


STUDIES: dict[str, Study] = {
    study.name: study
    for study in (
        Study(
            "coverage",
            "coverage and half-width of every interval (Table 2)",
            5000,
            _presets.coverage_tables,
            ("population", "value_column", "strata_column", "n", "intervals"),
            _plot.plot_coverage,
        ),
        Study(
            "stress",
            "coverage over the 36 stress settings (Table 6)",
            4000,
            _presets.stress_tables,
            ("intervals",),
            _plot.plot_stress,
        ),
        Study(
            "detection",
            "detection rates, type-I error and form mismatch (Tables 11-13, Fig. 10)",
            2000,
            _presets.detection_tables,
            plot=_plot.plot_detection,
        ),
        Study(
            "budget",
            "budget curves and an audit-size plan (Table 10)",
            2000,
            _presets.budget_tables,
            ("population_size",),
            _plot.plot_budget,
        ),
        Study(
            "sequential",
            "the sequential audit under continuous monitoring",
            1000,
            _presets.sequential_tables,
        ),
        Study(
            "sequential-orders",
            "the sequential order test's size, power and orders scored",
            2000,
            _presets.sequential_order_tables,
        ),
        Study.of(
            suite_study,
            "suite",
            "the suite audit's false discovery rate and power per pair",
            200,
        ),
    )
}

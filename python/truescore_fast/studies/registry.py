"""Every study, ready to run: the command line's ``calibrate`` subcommands, their default
replications, the settings each takes and the figure each can draw all come from
:data:`STUDIES`.

The studies are written once, as entries of :data:`truescore_fast._catalog.STUDIES` (from
which ``calibrate --help`` lists them without loading NumPy); :data:`STUDIES` holds each
as a :class:`Study`, its functions imported. Adding a study is its module (the study
function, with its tests) and one catalog entry; the ``run`` that builds its printed
tables can be the function itself (:func:`Study.of`, an entry without ``tables``) or a
preset in ``truescore_fast.studies._presets``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from truescore_fast import _catalog
from truescore_fast._table import StudyTable
from truescore_fast._validation import one_line
from truescore_fast.studies.options import StudyOptions, StudyRun, StudySettings

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


def _registered(entry: _catalog.StudyEntry) -> Study:
    """The catalog's entry as a :class:`Study`, its functions imported."""
    plot = None if entry.plot is None else _catalog.load(entry.plot)
    if entry.tables is None:
        return Study.of(_catalog.load(entry.study), entry.name, entry.summary,
                        entry.replications, plot)  # fmt: skip
    return Study(entry.name, entry.summary, entry.replications, _catalog.load(entry.tables),
                 entry.settings, plot)  # fmt: skip


# Every study by name: the catalog's, and any a caller adds (STUDIES["name"] =
# Study.of(...)) runs from the command line too. (docs/api documents it.)
STUDIES: dict[str, Study] = {entry.name: _registered(entry) for entry in _catalog.STUDIES}

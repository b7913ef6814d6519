"""The keyword block every study shares, and what a registered study returns.

Every study function takes the same keywords after its own: ``replications``, ``alpha``,
``seed``, ``n_threads``, ``progress``, ``executor`` and ``checkpoint``.
:class:`StudyOptions` holds them once, for a caller that runs several studies or several
calls of one (the command line's ``calibrate``), and hands them to each call with
:meth:`StudyOptions.keywords`. :class:`StudySettings` holds the few settings that only
some studies take (their command-line flags), and :class:`StudyRun` is what a registered
study's ``run`` returns: its tables and any extra JSON fields.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields
from typing import Any

from truescore_fast._random import SeedLike
from truescore_fast._table import StudyTable
from truescore_fast.studies._checkpoint import CheckpointRun

__all__ = ["StudyOptions", "StudyRun", "StudySettings"]


@dataclass(frozen=True)
class StudyOptions:
    """The keywords every study takes, checked by the study functions themselves (so the
    errors are theirs, naming the keyword).

    ``checkpoint`` is one file for every call made with these options: each call's
    progress is kept in it under the run name given to :meth:`keywords`, so a study that
    makes several calls resumes each one.
    """

    replications: int
    alpha: float = 0.05
    seed: SeedLike = 0
    n_threads: int | None = None
    progress: bool | None = None
    executor: Executor | None = None
    checkpoint: str | os.PathLike[str] | None = None

    def keywords(self, run: str) -> dict[str, Any]:
        """The keyword arguments of one study call, its checkpoint named ``run``."""
        return {
            "replications": self.replications,
            "alpha": self.alpha,
            "seed": self.seed,
            "n_threads": self.n_threads,
            "progress": self.progress,
            "executor": self.executor,
            "checkpoint": None if self.checkpoint is None else CheckpointRun(self.checkpoint, run),
        }


@dataclass(frozen=True)
class StudySettings:
    """The settings only some studies take; a registered study names those it reads
    (:attr:`~truescore_fast.studies.registry.Study.settings`), and the command line
    refuses the others' flags for it (``--population`` for ``calibrate stress``).
    Each field is the command-line flag of the same name (``value_column`` is
    ``--value-column``)."""

    population: str | None = None  # a file of the user's own per-item gaps
    value_column: str = "gap"
    strata_column: str | None = None
    n: Sequence[int] | None = None  # audit sizes
    intervals: Sequence[str] | None = None  # interval methods
    population_size: int | None = None  # the benchmark size a plan samples from

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every setting's name."""
        return tuple(f.name for f in fields(cls))


@dataclass(frozen=True)
class StudyRun:
    """A registered study's tables, in the order they are printed, and extra fields for
    the JSON output."""

    tables: list[StudyTable]
    extra: dict[str, Any] = field(default_factory=dict)

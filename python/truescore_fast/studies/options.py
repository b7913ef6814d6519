"""The keyword block every study shares, and what a registered study returns.

Every study function takes the same keywords after its own: ``replications``, ``alpha``,
``seed``, ``n_threads``, ``progress``, ``executor`` and ``checkpoint``.
:class:`StudyOptions` holds them once, for a caller that runs several studies or several
calls of one (the command line's ``calibrate``), and hands them to each call with
:meth:`StudyOptions.keywords`. :class:`StudySettings` holds the few settings that only
some studies take (their command-line flags), and :class:`StudyRun` is what a registered
study's ``run`` returns: its tables and any extra JSON fields. Every call made with one
:class:`StudyOptions` has the same seed, hence the same Philox key, and numbers its cells
from 0: cell c of each call reads the same streams (docs/guide/conventions.md, "Seeds").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_n_threads,
    check_positive_int,
    check_sequence,
    one_line,
)
from truescore_fast.errors import ArgumentTypeError
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

    def __post_init__(self) -> None:
        # checked when made, with the study functions' own checks and messages: an
        # options object that no study could run is refused here, not at its first use
        check_positive_int("replications", self.replications)
        check_alpha(self.alpha)
        philox_key(self.seed)
        check_n_threads(self.n_threads)
        if not (self.progress is None or isinstance(self.progress, (bool, np.bool_))):
            raise ValueError(
                f"progress must be True, False or None (auto); got {one_line(self.progress)}"
            )
        if self.executor is not None and not isinstance(self.executor, Executor):
            raise ValueError(
                "executor must be a concurrent.futures.Executor; got "
                f"{type(self.executor).__name__}"
            )
        if self.checkpoint is not None and not isinstance(self.checkpoint, (str, os.PathLike)):
            raise TypeError(
                f"checkpoint must be a file path; got {type(self.checkpoint).__name__}"
            )

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

    def __post_init__(self) -> None:
        for name in ("population", "strata_column"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise ArgumentTypeError(
                    name, f"{name} must be None or a str; got {one_line(value)}"
                )
        if not isinstance(self.value_column, str) or not self.value_column.strip():
            raise TypeError(
                f"value_column must be a non-empty str; got {one_line(self.value_column)}"
            )
        if self.n is not None:
            for size in check_sequence("n", self.n, "audit sizes"):
                check_positive_int("n", size)
        if self.intervals is not None:
            for method in check_sequence("intervals", self.intervals, "interval methods"):
                if not isinstance(method, str):
                    raise TypeError(f"intervals must hold method names; got {one_line(method)}")
        if self.population_size is not None:
            check_positive_int("population_size", self.population_size)

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

"""The Monte Carlo studies that justify the tests, on one engine.

The studies the CleanScore paper's tables rest on, as library calls that take a
population (real audit data or a synthetic one) and a grid of settings, and return a
:class:`StudyTable` with Monte Carlo standard errors:

* :func:`coverage_study` -- coverage and mean half-width of every interval under simple
  random or stratified sampling from a finite population (CleanScore, Table 2);
* :func:`stress_grid` -- the same over a grid of (N, n, gap shape, sparsity) settings,
  with the Bernstein/Hoeffding width ratio (CleanScore, Table 6); :func:`stress_settings` is the
  default 36-setting grid;
* :func:`detection_study` -- detection rate of a planted public-form advantage, interval
  rule against the exact randomization test (Tables 11-12), type-I error with the labels
  relabelled so the null holds (Fig. 10), rejections under pure form mismatch (Table 13);
* :func:`budget_study` -- subsample n parents of a multi-model audit: mean half-width,
  recovery of the full-sample ordering of the models, share of pairs ordered as in the
  full sample (Table 10); :func:`plan_audit_size` -- parents needed for a given power.

How the work is split. A study is a list of cells (one per grid setting); a cell's R
replications are split into tasks of ``REPLICATIONS_PER_TASK`` consecutive replications,
and task t of cell c draws from its own Philox stream, ``numpy.random.Philox(key=
philox_key(seed), counter=[0, 0, c * 2**32 + t, 0])``. Each task returns partial sums;
they are added in task order. The result therefore never depends on the thread count,
on how tasks are grouped into calls (the progress bar's chunks), or on which process
or machine ran a cell (``executor=``); memory does not grow with R.

Execution. ``n_threads`` (default: every usable CPU) threads run inside the compiled core with
the GIL released. Tasks are run in chunks of about a tenth of a second, so a progress
bar (tqdm when installed; ``progress=None`` shows one for runs longer than a second) can
update and Ctrl-C stops a sweep within a second, with no thread left running.
``executor=`` maps the cells over any ``concurrent.futures.Executor`` (a process
pool, Dask's ``Client.get_executor()``) in work items of about half a second; results
are identical to the local run. With an executor, Ctrl-C cancels the work not yet
started and the items already running end within about a second, so the interpreter
can exit.

Checkpoints. ``checkpoint=FILE`` (every study) saves each cell's partial sums to FILE
as the sweep runs (every few seconds, when a cell finishes, and on Ctrl-C or any other
exception); run the same call again with the same FILE and finished cells are not
rerun, unfinished ones go on from their last saved task. Because a task's streams depend
only on (seed, cell, task), the resumed result is bit-identical to an uninterrupted one.
FILE is append-only JSON Lines whose header records a fingerprint of the study's cells
(data, settings, seed, replications, library version); a FILE written for a different
call is refused with a ``ValueError``, never silently mixed in. Every line carries a
SHA-256 checksum of its content and every record is checked when it is read back (its
cell, task count, number of sums, finite sums, counts in range): a damaged file, or one
edited without recomputing the checksums, is refused in one line naming the file and the
line. The checksum needs no secret: it detects corruption and careless edits, not a
deliberate edit that recomputes it (such a record, if possible, is resumed from).
Only a regular file of at most 1 GiB is read, one bounded line at a time; a last line
cut off by a kill during the write is dropped. A checkpoint is not a cache of finished
studies across library versions: a new version refuses it (checkpoints written before
the checksums, format version 1, included).

Each study has its own module and builds its grid of cells and turns the summed rows
into a table; the engine that runs the cells (tasks, chunks, progress, interrupts,
executors, checkpoints) is ``truescore_fast.studies._engine``. Every study is listed once
in :mod:`~truescore_fast.studies.registry`, from which the command line takes its
subcommands.

What these numbers do not mean: a coverage or detection rate is a property of the
population and design simulated. Synthetic populations (the stress grid) say how an
interval behaves on gap distributions of that shape, not on yours; run the study on
your own audit data before relying on an interval's coverage.

Reference:
    J. Opoku and D. Banahene, "CleanScore: Black-Box Benchmark Audits with Negative
    Controls and Sensitivity Bounds"; the tables
    cited above are that paper's.

:func:`sequential_study` and :func:`sequential_order_study` measure what stopping early
costs and saves (:mod:`~truescore_fast.studies.sequential`); :func:`suite_study` measures
the suite audit's false discovery rate and power (:mod:`~truescore_fast.studies.suite`).
"""

# ruff: noqa: F403  (each module's __all__ is the one list of its public names)

from typing import TYPE_CHECKING

from truescore_fast import _table
from truescore_fast._table import *
from truescore_fast.studies import budget as _budget
from truescore_fast.studies import coverage as _coverage
from truescore_fast.studies import detection as _detection
from truescore_fast.studies import options as _options
from truescore_fast.studies import registry as _registry
from truescore_fast.studies import sequential as _sequential
from truescore_fast.studies import stress as _stress
from truescore_fast.studies import suite as _suite
from truescore_fast.studies.budget import *
from truescore_fast.studies.coverage import *
from truescore_fast.studies.detection import *
from truescore_fast.studies.options import *
from truescore_fast.studies.registry import *
from truescore_fast.studies.sequential import *
from truescore_fast.studies.stress import *
from truescore_fast.studies.suite import *

# The list the top level searches for a name. Type checkers read the star imports above
# instead (mypy does not follow an __all__ built from other modules' lists).
if not TYPE_CHECKING:
    __all__ = [
        *_table.__all__,
        *_coverage.__all__,
        *_stress.__all__,
        *_detection.__all__,
        *_budget.__all__,
        *_sequential.__all__,
        *_suite.__all__,
        *_options.__all__,
        *_registry.__all__,
    ]

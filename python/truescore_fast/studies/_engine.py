"""The execution engine of the calibration studies: cells, tasks, progress, executors.

A study (:mod:`truescore_fast.studies`) describes its grid as a list of
:class:`Cell` s, one compiled task kernel and its arguments per setting (the sequential
studies of :mod:`truescore_fast.studies.sequential` give a Python task function instead, run on
threads, with tasks of their own size and stream numbering). This module runs them: a
cell's replications are split into tasks of ``REPLICATIONS_PER_TASK``; task
t of cell c draws from Philox stream ``c * CELL_STRIDE + t``, and the tasks' rows of
partial sums are added in task order (:func:`_run_cell`), so neither the thread count,
nor the chunking of tasks into calls, nor the process that ran a cell changes a result.
Tasks run in chunks of about ``_CHUNK_SECONDS`` so the progress bar (:class:`_Progress`)
and the checkpoint keep up (Ctrl-C stops a running chunk, as it stops every long kernel:
``bindings/interrupt.hpp``); :func:`execute` runs the cells locally
or over a ``concurrent.futures.Executor`` in slices of about ``_SLICE_SECONDS``, so that
Ctrl-C cancels what has not started and what runs ends within a second. The positions
within a task's row of partial sums are named once, by :class:`CoverageSums`,
:class:`DetectionSums` and :class:`BudgetSums`, and each kernel's row is described by a
:class:`RowLayout` the cell carries.

Checkpoints. A cell's total after its first t tasks is the same number however the run
was split, so it can be saved and a later run can go on from it: the sweep's state is the
list of (cell, tasks done, partial sums), kept in a file by
:class:`~truescore_fast.studies._checkpoint.Checkpoint` under a SHA-256 fingerprint of
everything that determines the cells (kernel, arguments, Philox key, stream offsets,
replications, block size, library version); a file for another fingerprint is refused. A
cell says what its saved sums can be (:meth:`Cell.sums_problem`, from its
:class:`RowLayout`), so a record that no run could have written is refused too.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._progress import Progress as _Progress
from truescore_fast._validation import one_line, threads_used
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._checkpoint import Checkpoint

__all__ = [
    "BUDGET_LAYOUT",
    "CELL_STRIDE",
    "DETECTION_LAYOUT",
    "REPLICATIONS_PER_TASK",
    "BudgetSums",
    "Cell",
    "CoverageSums",
    "DetectionSums",
    "RowLayout",
    "coverage_layout",
    "execute",
]

#: Replications per task: fixed, so results never depend on how the work is split.
REPLICATIONS_PER_TASK: int = _core.CALIBRATION_BLOCK  # the table in parallel.hpp
CELL_STRIDE = 2**32  # task index of cell c, task t: c * 2**32 + t
_CHUNK_SECONDS = 0.1
# An executor work item (a slice of a cell's chunks) ends after about this long, which
# bounds how long Ctrl-C waits for the items already running on workers.
_SLICE_SECONDS = 0.5
# A chunk's per-task partial sums are held until they are added in task order, so the
# chunk size bounds the memory a sweep needs; capping it keeps memory flat however many
# replications are asked for (256 tasks is still only a few tens of milliseconds).
_MAX_CHUNK_TASKS = 256
# A cell's unfinished state is saved to a checkpoint at most this often (a finished cell
# and the state at an interruption are always saved).
_CHECKPOINT_SECONDS = 5.0


# The positions of each task's partial sums, as the compiled kernels write them. C++
# defines them (calibration.hpp: the CoverageSum, DetectionSum and BudgetSum enums,
# written as row[kCovered] etc.); these IntEnums spell them for Python's type checker, and
# _check_layout compares them with the compiled core's at import, so the two can never
# drift apart silently.


class CoverageSums(IntEnum):
    """A coverage task's row: these sums for each interval method, methods in order."""

    COVERED = 0  # replications whose interval contains the truth
    HALF_WIDTH = 1  # sum of half-widths
    HALF_WIDTH_SQUARES = 2  # sum of squared half-widths


class DetectionSums(IntEnum):
    """A detection task's row."""

    CLAIMS = 0  # the interval rule claims (primary interval above zero)
    REJECTIONS = 1  # the exact randomization test rejects
    DELTA_HAT = 2  # sum of Delta-hat


class BudgetSums(IntEnum):
    """A budget task's row."""

    HALF_WIDTH = 0  # sum of the mean half-width over models
    HALF_WIDTH_SQUARES = 1  # sum of its square
    EXACT_ORDER = 2  # replications that order every model as the full sample does
    PAIRS_CORRECT = 3  # sum of the share of pairs ordered as in the full sample
    PAIRS_CORRECT_SQUARES = 4  # sum of its square


def _check_layout(names: type[IntEnum], core: dict[str, int]) -> None:
    ours = {member.name: int(member) for member in names}
    if ours != dict(core):
        raise ImportError(
            f"{names.__name__} {ours} disagrees with the compiled core's {dict(core)}: "
            "rebuild truescore_fast (the C++ and Python sides are out of step)"
        )


_check_layout(CoverageSums, _core.COVERAGE_SUMS)
_check_layout(DetectionSums, _core.DETECTION_SUMS)
_check_layout(BudgetSums, _core.BUDGET_SUMS)


@dataclass(frozen=True)
class RowLayout:
    """What a kernel's row of partial sums holds, for checking a saved total: its width;
    the positions of counts of replications, of sums of shares in [0, 1] and of other sums
    that cannot be negative; and where a histogram of the replications starts (each
    replication counted once), or None. Each kernel gives its own (the compiled ones:
    :func:`coverage_layout`, :data:`DETECTION_LAYOUT`, :data:`BUDGET_LAYOUT`), so the
    engine never asks which kernel it runs."""

    width: int
    counts: tuple[int, ...] = ()
    shares: tuple[int, ...] = ()
    nonnegative: tuple[int, ...] = ()
    histogram: int | None = None


def coverage_layout(n_methods: int) -> RowLayout:
    """The row of ``_core.coverage_tasks`` for ``n_methods`` interval methods: the
    CoverageSums of each method, methods in order."""
    starts = range(0, n_methods * len(CoverageSums), len(CoverageSums))
    return RowLayout(
        width=n_methods * len(CoverageSums),
        counts=tuple(k + CoverageSums.COVERED for k in starts),
        nonnegative=tuple(
            k + s
            for k in starts
            for s in (CoverageSums.HALF_WIDTH, CoverageSums.HALF_WIDTH_SQUARES)
        ),
    )


#: The row of ``_core.detection_tasks``.
DETECTION_LAYOUT = RowLayout(
    width=len(DetectionSums), counts=(DetectionSums.CLAIMS, DetectionSums.REJECTIONS)
)
#: The row of ``_core.budget_tasks``.
BUDGET_LAYOUT = RowLayout(
    width=len(BudgetSums),
    counts=(BudgetSums.EXACT_ORDER,),
    shares=(BudgetSums.PAIRS_CORRECT, BudgetSums.PAIRS_CORRECT_SQUARES),
    nonnegative=(BudgetSums.HALF_WIDTH, BudgetSums.HALF_WIDTH_SQUARES),
)


# ---------------------------------------------------------------------------- execution


@dataclass(frozen=True)
class Cell:
    """One grid cell: a task kernel, its leading arguments, its streams and its row.

    The kernel is a compiled one's name in ``_core`` (the calibration studies), or a
    Python function ``kernel(key, stream, size, *args)`` returning one task's row of
    sums for ``size`` replications drawn only from Philox stream ``stream`` of ``key``
    (the sequential studies, :mod:`truescore_fast.studies.sequential`); task t of the cell is
    stream ``task_offset + t``. ``layout`` is what the kernel's row holds; ``block`` is
    the replications per task.
    """

    kernel: str | Callable[..., npt.ArrayLike]
    args: tuple[Any, ...]
    key: tuple[int, int]
    task_offset: int
    replications: int
    layout: RowLayout
    block: int = REPLICATIONS_PER_TASK

    @property
    def n_tasks(self) -> int:
        return -(-self.replications // self.block)

    @property
    def width(self) -> int:
        """The number of sums in a task's row."""
        return self.layout.width

    def sums_problem(self, sums: npt.NDArray[np.float64], tasks: int) -> str | None:
        """Why ``sums`` (finite) cannot be this cell's total after its first ``tasks``
        tasks, or None: the row's width, and the counts, shares and squares in it."""
        if sums.shape != (self.width,):
            return f"{sums.shape[0]} sums, where this cell's rows have {self.width}"
        done = min(self.replications, tasks * self.block)
        layout = self.layout
        counts, shares = list(layout.counts), list(layout.shares)
        if np.any(sums[list(layout.nonnegative)] < 0.0):
            return "a sum of half-widths or of squares is negative"
        of = f"{done} (the replications of {tasks} tasks)"
        share = sums[shares]
        if np.any((share < 0.0) | (share > done * (1.0 + 1e-9))):
            return f"a sum of shares is outside [0, {of}]"
        count = sums[counts]
        if np.any((count < 0.0) | (count > done) | (count != np.round(count))):
            return f"a count is not a whole number from 0 to {of}"
        if layout.histogram is not None:
            histogram = sums[layout.histogram :]
            whole = np.all((histogram >= 0.0) & (histogram == np.round(histogram)))
            if not whole or histogram.sum() != done:
                return f"the histogram of the replications does not count {done} of them"
        return None

    def run(self, begin: int, end: int, n_threads: int | None) -> npt.NDArray[np.float64]:
        if callable(self.kernel):
            return _python_tasks(self, begin, end, n_threads)
        out = getattr(_core, self.kernel)(
            *self.args,
            self.key[0],
            self.key[1],
            self.task_offset,
            self.replications,
            self.block,
            begin,
            end,
            n_threads=n_threads,
        )
        return np.asarray(out).reshape(end - begin, -1)


def _python_tasks(
    cell: Cell, begin: int, end: int, n_threads: int | None
) -> npt.NDArray[np.float64]:
    """Rows ``begin`` to ``end`` of a Python kernel's tasks, on up to ``n_threads``
    threads. Each task draws only from its own stream, so the threads change no row; on
    an exception (Ctrl-C) the tasks not started are cancelled and the running ones end."""
    assert callable(cell.kernel)
    kernel = cell.kernel

    def task(t: int) -> npt.NDArray[np.float64]:
        size = min(cell.block, cell.replications - t * cell.block)
        row = kernel(cell.key, cell.task_offset + t, size, *cell.args)
        return np.asarray(row, dtype=np.float64)

    threads = min(threads_used(n_threads), end - begin)
    if threads <= 1:
        return np.stack([task(t) for t in range(begin, end)])
    pool = ThreadPoolExecutor(threads)
    try:
        return np.stack(list(pool.map(task, range(begin, end))))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _add_in_task_order(total: npt.NDArray[np.float64], part: npt.NDArray[np.float64]) -> None:
    for row in part:  # one task at a time: the order of the additions is fixed
        total += row


def _chunks(
    cell: Cell, begin: int, chunk: int, n_threads: int | None
) -> Iterator[tuple[int, int, npt.NDArray[np.float64], int]]:
    """Run a cell's tasks from ``begin`` in chunks of about _CHUNK_SECONDS.

    Yields ``(begin, end, rows, next_chunk)`` per chunk. The chunk size changes only how
    tasks are grouped into calls, never a task's rows.
    """
    threads = threads_used(n_threads)
    while begin < cell.n_tasks:
        end = min(cell.n_tasks, begin + chunk)
        started = time.perf_counter()
        part = cell.run(begin, end, n_threads)
        elapsed = time.perf_counter() - started
        if elapsed < _CHUNK_SECONDS / 2:
            chunk = min(2 * chunk, max(threads, _MAX_CHUNK_TASKS))
        elif elapsed > 2 * _CHUNK_SECONDS and chunk > threads:
            chunk = max(threads, chunk // 2)
        yield begin, end, part, chunk
        begin = end


def _replications_in(cell: Cell, begin: int, end: int) -> int:
    return min(cell.replications, end * cell.block) - min(cell.replications, begin * cell.block)


def _run_cell(
    cell: Cell,
    n_threads: int | None = None,
    bar: _Progress | None = None,
    start: tuple[int, npt.NDArray[np.float64] | None] = (0, None),
    store: Checkpoint | None = None,
    index: int = 0,
) -> npt.NDArray[np.float64]:
    """All tasks of one cell, reduced in task order (the local run), from ``start`` (the
    first task not run and the sum of the tasks before it, from a checkpoint).

    Chunks of about _CHUNK_SECONDS keep the progress bar up to date. With a
    ``store``, the state is saved every _CHECKPOINT_SECONDS, at the end and on any
    exception (Ctrl-C included): the sum then holds exactly the tasks before ``done``.
    """
    # (tasks done, their sum) changes in one assignment, so an exception (Ctrl-C) between
    # any two statements leaves a consistent state to save
    state = start
    if state[1] is not None and state[0] >= cell.n_tasks:
        return state[1]
    try:
        first_chunk = threads_used(n_threads)
        for begin, end, part, _ in _chunks(cell, state[0], first_chunk, n_threads):
            state = (end, _added(state[1], part))
            if store is not None:
                store.save(index, *state, final=end == cell.n_tasks)
            if bar is not None:
                bar.update(_replications_in(cell, begin, end))
    except BaseException:
        if store is not None:
            store.save(index, *state, final=True)
        raise
    assert state[1] is not None
    return state[1]


def _added(
    total: npt.NDArray[np.float64] | None, part: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """A new array: ``total`` (None: zeros) plus ``part``'s rows, in task order."""
    out = np.zeros(part.shape[1]) if total is None else total.copy()
    _add_in_task_order(out, part)
    return out


def _run_slice(
    cell: Cell, begin: int, chunk: int, n_threads: int | None
) -> tuple[npt.NDArray[np.float64], int, int]:
    """What an executor worker runs: a cell's tasks from ``begin`` for about _SLICE_SECONDS.

    Returns the tasks' rows (the caller adds them in task order, so slicing never changes
    a result), the first task not run, and the chunk size to continue with. A work item
    that ends within a second is what lets Ctrl-C stop an executor run: no executor can
    stop a running item, and a process pool cannot shut down until its items end.
    """
    deadline = time.perf_counter() + _SLICE_SECONDS
    parts: list[npt.NDArray[np.float64]] = []
    end, next_chunk = begin, chunk
    for _, end, part, next_chunk in _chunks(cell, begin, chunk, n_threads):  # noqa: B007
        parts.append(part)
        if time.perf_counter() > deadline:
            break
    return np.concatenate(parts), end, next_chunk


def execute(
    cells: Sequence[Cell],
    *,
    n_threads: int | None,
    progress: bool | None,
    executor: Executor | None,
    desc: str,
    checkpoint: str | os.PathLike[str] | None = None,
) -> list[npt.NDArray[np.float64]]:
    if not (progress is None or isinstance(progress, (bool, np.bool_))):
        raise ArgumentError(
            "progress", f"progress must be True, False or None (auto); got {one_line(progress)}"
        )
    if executor is not None and not isinstance(executor, Executor):
        raise ArgumentError(
            "executor",
            f"executor must be a concurrent.futures.Executor; got {type(executor).__name__}",
        )
    store = None if checkpoint is None else _checkpoint(checkpoint, cells, desc)
    try:
        starts = store.resume() if store is not None else [(0, None)] * len(cells)
        bar = _Progress(progress, sum(c.replications for c in cells), desc)
        bar.done = sum(_replications_in(c, 0, s[0]) for c, s in zip(cells, starts, strict=True))
        try:
            if executor is not None:
                return _execute_on(executor, cells, n_threads, bar, starts, store)
            return [
                _run_cell(cell, n_threads, bar, start, store, c)
                for c, (cell, start) in enumerate(zip(cells, starts, strict=True))
            ]
        finally:
            bar.close()
    finally:
        if store is not None:
            store.close()


def _execute_on(
    executor: Executor,
    cells: Sequence[Cell],
    n_threads: int | None,
    bar: _Progress,
    starts: Sequence[tuple[int, npt.NDArray[np.float64] | None]],
    store: Checkpoint | None,
) -> list[npt.NDArray[np.float64]]:
    """Each cell as a sequence of slices, one slice of a cell on the executor at a time.

    On any exception (Ctrl-C included) the slices not yet started are cancelled and no
    new one is submitted; the running ones end within about _SLICE_SECONDS. The cells'
    states are saved to ``store`` as slices come back, and all of them on an exception.
    """
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    first_chunk = threads_used(n_threads)
    states = list(starts)  # (tasks done, their sum) per cell, each replaced in one step
    running: dict[Future[tuple[npt.NDArray[np.float64], int, int]], tuple[int, int]] = {}
    try:
        for c, cell in enumerate(cells):
            if states[c][1] is None or states[c][0] < cell.n_tasks:
                future = executor.submit(_run_slice, cell, states[c][0], first_chunk, n_threads)
                running[future] = (c, states[c][0])
        while running:
            finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                c, begin = running.pop(future)
                rows, end, chunk = future.result()
                states[c] = (end, _added(states[c][1], np.asarray(rows, dtype=np.float64)))
                if store is not None:
                    store.save(c, *states[c], final=end == cells[c].n_tasks)
                bar.update(_replications_in(cells[c], begin, end))
                if end < cells[c].n_tasks:
                    nxt = executor.submit(_run_slice, cells[c], end, chunk, n_threads)
                    running[nxt] = (c, end)
    except BaseException:
        for future in running:
            future.cancel()
        if store is not None:
            for c, state in enumerate(states):
                store.save(c, *state, final=True)
        raise
    totals = [total for _, total in states]
    assert all(total is not None for total in totals)
    return [total for total in totals if total is not None]


def _fingerprint(cells: Sequence[Cell]) -> str:
    """SHA-256 of everything that determines the cells' sums."""
    digest = hashlib.sha256()

    def feed(value: Any) -> None:
        if isinstance(value, np.ndarray):
            array = np.ascontiguousarray(value)
            digest.update(f"array {array.dtype.str} {array.shape}\n".encode())
            digest.update(array.tobytes())
        else:
            digest.update(f"{type(value).__name__} {value!r}\n".encode())

    feed(_core.__version__)
    feed(REPLICATIONS_PER_TASK)
    for cell in cells:
        if callable(cell.kernel):  # a Python kernel: its name, and its own block size
            feed(f"{cell.kernel.__module__}.{cell.kernel.__qualname__}")
            feed(cell.block)
        else:
            feed(cell.kernel)
        for value in (*cell.key, cell.task_offset, cell.replications, *cell.args):
            feed(value)
    return digest.hexdigest()


def _checkpoint(path: str | os.PathLike[str], cells: Sequence[Cell], desc: str) -> Checkpoint:
    """The checkpoint of a sweep of ``cells`` (called ``desc``) in the file ``path``."""
    header = {
        "fingerprint": _fingerprint(cells),
        "truescore_fast": _core.__version__,
        "study": desc,
        "cells": len(cells),
        "replications": sorted({c.replications for c in cells}),
        "key": [str(k) for k in cells[0].key] if cells else [],
    }
    width = max((cell.width for cell in cells), default=0)
    return Checkpoint(path, desc, header, cells, width=width, every=_CHECKPOINT_SECONDS)

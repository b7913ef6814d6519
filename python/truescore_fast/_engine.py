"""The execution engine of the calibration studies: cells, tasks, progress, executors.

A study (:mod:`truescore_fast.calibration`) describes its grid as a list of
:class:`_Cell` s, one compiled task kernel and its arguments per setting. This module
runs them: a cell's replications are split into tasks of ``REPLICATIONS_PER_TASK``; task
t of cell c draws from Philox stream ``c * _CELL_STRIDE + t``, and the tasks' rows of
partial sums are added in task order (:func:`_run_cell`), so neither the thread count,
nor the chunking of tasks into calls, nor the process that ran a cell changes a result.
Tasks run in chunks of about ``_CHUNK_SECONDS`` so the progress bar (:class:`_Progress`)
updates and Ctrl-C stops a sweep within a second; :func:`_execute` runs the cells locally
or over a ``concurrent.futures.Executor`` in slices of about ``_SLICE_SECONDS``, so that
Ctrl-C cancels what has not started and what runs ends within a second. The positions
within a task's row of partial sums are named once, by :class:`CoverageSums`,
:class:`DetectionSums` and :class:`BudgetSums`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._validation import threads_used

__all__ = [
    "REPLICATIONS_PER_TASK",
    "BudgetSums",
    "CoverageSums",
    "DetectionSums",
]

#: Replications per task: fixed, so results never depend on how the work is split.
REPLICATIONS_PER_TASK: int = _core.CALIBRATION_BLOCK  # the table in parallel.hpp
_CELL_STRIDE = 2**32  # task index of cell c, task t: c * 2**32 + t
_CHUNK_SECONDS = 0.1
# An executor work item (a slice of a cell's chunks) ends after about this long, which
# bounds how long Ctrl-C waits for the items already running on workers.
_SLICE_SECONDS = 0.5
# A chunk's per-task partial sums are held until they are added in task order, so the
# chunk size bounds the memory a sweep needs; capping it keeps memory flat however many
# replications are asked for (256 tasks is still only a few tens of milliseconds).
_MAX_CHUNK_TASKS = 256


# The positions in one task's row of partial sums, as the compiled kernels write them:
# The positions of each task's partial sums. C++ defines them (calibration.hpp: the
# CoverageSum, DetectionSum and BudgetSum enums, written as row[kCovered] etc.); these
# IntEnums spell them for Python's type checker, and _check_layout compares them with the
# compiled core's at import, so the two can never drift apart silently.


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


# ---------------------------------------------------------------------------- execution


@dataclass(frozen=True)
class _Cell:
    """One grid cell: a compiled task kernel, its leading arguments and its streams."""

    kernel: str  # "coverage_tasks" | "detection_tasks" | "budget_tasks"
    args: tuple[Any, ...]
    key: tuple[int, int]
    task_offset: int
    replications: int

    @property
    def n_tasks(self) -> int:
        return -(-self.replications // REPLICATIONS_PER_TASK)

    def run(self, begin: int, end: int, n_threads: int | None) -> npt.NDArray[np.float64]:
        out = getattr(_core, self.kernel)(
            *self.args,
            self.key[0],
            self.key[1],
            self.task_offset,
            self.replications,
            REPLICATIONS_PER_TASK,
            begin,
            end,
            n_threads=n_threads,
        )
        return np.asarray(out).reshape(end - begin, -1)


def _add_in_task_order(total: npt.NDArray[np.float64], part: npt.NDArray[np.float64]) -> None:
    for row in part:  # one task at a time: the order of the additions is fixed
        total += row


def _chunks(
    cell: _Cell, begin: int, chunk: int, n_threads: int | None
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


def _replications_in(cell: _Cell, begin: int, end: int) -> int:
    return min(cell.replications, end * REPLICATIONS_PER_TASK) - min(
        cell.replications, begin * REPLICATIONS_PER_TASK
    )


def _run_cell(
    cell: _Cell, n_threads: int | None = None, bar: _Progress | None = None
) -> npt.NDArray[np.float64]:
    """All tasks of one cell, reduced in task order (the local run).

    Chunks of about _CHUNK_SECONDS keep Ctrl-C and the progress bar responsive.
    """
    total: npt.NDArray[np.float64] | None = None
    for begin, end, part, _ in _chunks(cell, 0, threads_used(n_threads), n_threads):
        if total is None:
            total = np.zeros(part.shape[1])
        _add_in_task_order(total, part)
        if bar is not None:
            bar.update(_replications_in(cell, begin, end))
    assert total is not None
    return total


def _run_slice(
    cell: _Cell, begin: int, chunk: int, n_threads: int | None
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


class _Progress:
    """tqdm when installed (else a plain stderr line); ``None`` starts it after 1 s."""

    def __init__(self, enabled: bool | None, total: int, desc: str) -> None:
        self.enabled, self.total, self.desc = enabled, total, desc
        self.done = 0
        self.start = time.perf_counter()
        self.bar: Any = None
        self.last_print = 0.0

    def _open(self) -> None:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.bar = False
            return
        self.bar = tqdm(total=self.total, desc=self.desc, unit="rep", initial=self.done)

    def update(self, count: int) -> None:
        self.done += count
        if self.enabled is False:
            return
        now = time.perf_counter()
        if self.bar is None and (self.enabled or now - self.start > 1.0):
            self._open()
            if self.bar:
                return
        if self.bar:
            self.bar.update(count)
        elif self.bar is False and now - self.last_print > 1.0:
            self.last_print = now
            print(f"\r{self.desc}: {self.done}/{self.total}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar:
            self.bar.close()
        elif self.bar is False and self.last_print:
            print(file=sys.stderr)


def _execute(
    cells: Sequence[_Cell],
    *,
    n_threads: int | None,
    progress: bool | None,
    executor: Executor | None,
    desc: str,
) -> list[npt.NDArray[np.float64]]:
    if progress not in (None, True, False):
        raise ValueError(f"progress must be True, False or None (auto); got {progress!r}")
    if executor is not None and not isinstance(executor, Executor):
        raise ValueError(
            f"executor must be a concurrent.futures.Executor; got {type(executor).__name__}"
        )
    bar = _Progress(progress, sum(c.replications for c in cells), desc)
    try:
        if executor is not None:
            return _execute_on(executor, cells, n_threads, bar)
        return [_run_cell(cell, n_threads, bar) for cell in cells]
    finally:
        bar.close()


def _execute_on(
    executor: Executor, cells: Sequence[_Cell], n_threads: int | None, bar: _Progress
) -> list[npt.NDArray[np.float64]]:
    """Each cell as a sequence of slices, one slice of a cell on the executor at a time.

    On any exception (Ctrl-C included) the slices not yet started are cancelled and no
    new one is submitted; the running ones end within about _SLICE_SECONDS.
    """
    from concurrent.futures import FIRST_COMPLETED, Future, wait

    first_chunk = threads_used(n_threads)
    totals: list[npt.NDArray[np.float64] | None] = [None] * len(cells)
    running: dict[Future[tuple[npt.NDArray[np.float64], int, int]], tuple[int, int]] = {}
    try:
        for c, cell in enumerate(cells):
            running[executor.submit(_run_slice, cell, 0, first_chunk, n_threads)] = (c, 0)
        while running:
            done, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                c, begin = running.pop(future)
                rows, end, chunk = future.result()
                rows = np.asarray(rows, dtype=np.float64)
                total = totals[c]
                if total is None:
                    total = totals[c] = np.zeros(rows.shape[1])
                _add_in_task_order(total, rows)
                bar.update(_replications_in(cells[c], begin, end))
                if end < cells[c].n_tasks:
                    nxt = executor.submit(_run_slice, cells[c], end, chunk, n_threads)
                    running[nxt] = (c, end)
    except BaseException:
        for future in running:
            future.cancel()
        raise
    assert all(total is not None for total in totals)
    return [total for total in totals if total is not None]

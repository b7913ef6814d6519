"""Checkpoint files of the calibration studies: what :mod:`truescore_fast.studies._engine`
saves of a sweep and reads back to resume it.

A checkpoint file is JSON Lines, appended to and never rewritten: a header line per run (a
study call) with a SHA-256 fingerprint of everything that determines its cells, then one
record per saved state of a cell, ``{"run", "cell", "tasks", "sums", "check"}``, the sums
as ``float.hex`` strings so they are read back bit for bit. ``check`` is the SHA-256 of
the run's fingerprint and the line's other fields (canonical JSON): a record damaged,
edited or copied from another run no longer matches it. The latest record of a cell wins.
The threat model is corruption, not forgery: the checksum has no secret key, so an edit
that recomputes it is read if the record is one the cell could hold (the checks below
refuse the rest); tests/studies/test_checkpoint.py shows both.

Reading it back trusts nothing: every line is checked (its checksum; a record's cell,
its task count, its number of sums, each sum finite and what the cell's sums can be:
:meth:`CheckpointCell.sums_problem`) and the first bad line is refused in one line naming
the file and the line. Only what a checkpoint can hold is read: a regular file of at most
:data:`MAX_CHECKPOINT_BYTES`, one line at a time, none longer than a record of the widest
row can be (a FIFO, ``/dev/zero`` or a 6 GiB file is refused before anything is read).
A last line without its newline was cut off by an interruption (``kill -9`` during the
write): it is dropped, and the file is truncated to its whole lines before appending.

Format version 2 (this one) added the checksums; a version-1 file (written before them)
is refused, as its records cannot be verified.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import numpy.typing as npt

from truescore_fast._output import check_checkpoint_path, file_kind

__all__ = ["MAX_CHECKPOINT_BYTES", "Checkpoint", "CheckpointCell", "CheckpointRun"]

_FORMAT = "truescore_fast calibration checkpoint"
_FORMAT_VERSION = 2

#: The largest checkpoint file read back (1 GiB: years of saves every few seconds).
MAX_CHECKPOINT_BYTES = 1 << 30
# A line longer than this is not a checkpoint line: a header, or a record of
# _LINE_PER_SUM bytes per sum (a float.hex string, quoted, and a comma) of the widest row.
_LINE_BYTES = 1 << 16
_LINE_PER_SUM = 32

_RECORD_FIELDS = frozenset({"run", "cell", "tasks", "sums", "check"})

State = tuple[int, "npt.NDArray[np.float64] | None"]


class CheckpointCell(Protocol):
    """What a checkpoint needs of a cell: its task count, its row width, and what its
    sums can be after some tasks."""

    @property
    def n_tasks(self) -> int: ...

    def sums_problem(self, sums: npt.NDArray[np.float64], tasks: int) -> str | None:
        """Why ``sums`` cannot be this cell's total after ``tasks`` tasks (None: they can)."""
        ...


class CheckpointRun(os.PathLike[str]):
    """A checkpoint path and the name of the run in it: a caller that makes several study
    calls (the command line's ``calibrate detection``) keeps them in one file."""

    def __init__(self, path: str | os.PathLike[str], run: str) -> None:
        self.path, self.run = os.fspath(path), run

    def __fspath__(self) -> str:
        return self.path


def _digest(fingerprint: str, fields: dict[str, Any]) -> str:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{fingerprint}\n{text}".encode()).hexdigest()


def _could_begin_a_header(raw: bytes) -> bool:
    """Whether ``raw``, a file's only (unfinished) line, is the start of a header as
    ``Checkpoint._write`` writes it (its first field the format): a header cut off by a
    crash, not somebody's file that a resume must not overwrite."""
    start = ('{"format":' + json.dumps(_FORMAT)).encode()
    return raw.startswith(start) or start.startswith(raw)


class Checkpoint:
    """The saved states of one run's cells in an append-only JSON Lines file.

    ``header`` holds what identifies the run (``fingerprint`` first among them); a cell's
    state is saved at most every ``every`` seconds unless final.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        run: str,
        header: dict[str, Any],
        cells: Sequence[CheckpointCell],
        *,
        width: int,
        every: float,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"checkpoint must be a file path; got {type(path).__name__}")
        self.path = Path(path)
        self.run = path.run if isinstance(path, CheckpointRun) else run
        self.cells, self.every = cells, every
        self.header = {
            "format": _FORMAT,
            "version": _FORMAT_VERSION,
            "run": self.run,
            **header,
            "width": width,
        }
        self.fingerprint: str = header["fingerprint"]
        self.file: IO[str] | None = None
        self.last_save = [time.perf_counter()] * len(cells)

    def _where(self, line: int) -> str:
        return f"checkpoint {self.path}, line {line}"

    # ------------------------------------------------------------------------ reading

    def resume(self) -> list[State]:
        """The saved state of every cell ((0, None): nothing saved), after checking every
        line of the file; opens the file for appending (a header written when the file
        has none for this run)."""
        states: list[State] = [(0, None)] * len(self.cells)
        keep, found = self._read(states)
        try:
            if keep is not None:
                with open(self.path, "r+b") as file:
                    file.truncate(keep)
            self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - see close()
        except OSError as error:
            raise OSError(
                error.errno, f"checkpoint {self.path} cannot be written: {error.strerror}"
            ) from None
        if not found:
            self._write(self.header, sync=True)
        return states

    def _read(self, states: list[State]) -> tuple[int | None, bool]:
        """Read every whole line into ``states``: (the length to truncate the file to when
        its last line was cut off, else None; whether this run's header was found)."""
        check_checkpoint_path(self.path, flag="checkpoint")  # links, hard links, a folder
        try:
            info = os.stat(self.path)  # before opening: opening a FIFO would block
        except FileNotFoundError:
            return None, False
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(
                f"checkpoint {self.path} is {file_kind(info.st_mode)}, not a file: name a "
                "regular file (or a new one)"
            )
        if info.st_size > MAX_CHECKPOINT_BYTES:
            raise ValueError(
                f"checkpoint {self.path} holds {info.st_size:,} bytes, more than a "
                f"checkpoint can ({MAX_CHECKPOINT_BYTES:,}): not a checkpoint of this "
                "study; name another file"
            )
        runs: dict[str, tuple[str, int]] = {}  # run name -> its fingerprint, its row width
        whole, number = 0, 0
        with open(self.path, "rb") as file:
            while True:
                # a header, or a record of the widest row of the runs read so far
                widest = max((width for _, width in runs.values()), default=0)
                limit = _LINE_BYTES + _LINE_PER_SUM * widest
                raw = file.readline(limit + 1)
                if not raw.endswith(b"\n"):
                    if len(raw) > limit:
                        raise ValueError(
                            f"{self._where(number + 1)} is longer than a line of this "
                            f"checkpoint can be ({limit:,} bytes): the file is damaged or "
                            "not a checkpoint"
                        )
                    if number == 0 and raw and not _could_begin_a_header(raw):
                        # not even a first line: some other file, never overwritten
                        raise ValueError(
                            f"{self._where(1)} is not a checkpoint's header: the file is not "
                            "a checkpoint; name another file"
                        )
                    # the end; a last line without its newline was cut off: dropped
                    return (whole if raw else None), self.run in runs
                number += 1
                whole += len(raw)
                self._line(raw, number, runs, states)

    def _line(
        self, raw: bytes, number: int, runs: dict[str, tuple[str, int]], states: list[State]
    ) -> None:
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{self._where(number)} is not JSON: the file is damaged") from None
        if not isinstance(line, dict):
            raise ValueError(f"{self._where(number)} is not a JSON object")
        if number == 1 and line.get("format") != _FORMAT:
            raise ValueError(
                f"checkpoint {self.path} is not a truescore_fast calibration checkpoint "
                "(its first line is not a checkpoint header): name a new file"
            )
        if "format" in line:
            self._header(line, number, runs)
            return
        run = line.get("run")
        if not isinstance(run, str) or run not in runs:
            raise ValueError(f"{self._where(number)}: a record before its run's header")
        fields = {name: value for name, value in line.items() if name != "check"}
        if set(line) != _RECORD_FIELDS or line["check"] != _digest(runs[run][0], fields):
            raise ValueError(
                f"{self._where(number)}: the record does not match its checksum (damaged "
                "or edited): delete the file or name another"
            )
        if run == self.run:
            cell, tasks, total = self._record(line, number)
            if tasks >= states[cell][0]:
                states[cell] = (tasks, total)

    def _header(self, line: dict[str, Any], number: int, runs: dict[str, tuple[str, int]]) -> None:
        if line.get("version") != _FORMAT_VERSION:
            old = " (written before records had checksums: they cannot be verified)"
            raise ValueError(
                f"{self._where(number)}: checkpoint format version {line.get('version')!r}"
                f"{old if line.get('version') == 1 else ''}; this truescore_fast reads "
                f"version {_FORMAT_VERSION}: delete the file or name another"
            )
        fields = {name: value for name, value in line.items() if name != "check"}
        fingerprint, run, width = line.get("fingerprint"), line.get("run"), line.get("width")
        if (
            not isinstance(fingerprint, str)
            or not isinstance(run, str)
            or type(width) is not int
            or not 0 <= width <= MAX_CHECKPOINT_BYTES // _LINE_PER_SUM
            or line.get("check") != _digest(fingerprint, fields)
        ):
            raise ValueError(
                f"{self._where(number)}: the header does not match its checksum (damaged "
                "or edited): delete the file or name another"
            )
        runs[run] = (fingerprint, width)
        if run == self.run:
            self._check_header(line)

    def _check_header(self, line: dict[str, Any]) -> None:
        if line.get("fingerprint") == self.header["fingerprint"]:
            return
        differ = [
            f"{name} {line.get(name)!r} (this run: {self.header[name]!r})"
            for name in ("truescore_fast", "cells", "replications", "key")
            if line.get(name) != self.header.get(name)
        ]
        what = "; ".join(differ) if differ else "its populations, sizes or settings differ"
        raise ValueError(
            f"checkpoint {self.path} was written for a different {self.run} run ({what}): "
            "its results cannot be reused; delete it or name another file"
        )

    def _record(
        self, line: dict[str, Any], number: int
    ) -> tuple[int, int, npt.NDArray[np.float64]]:
        where = self._where(number)
        cell, tasks, sums = line["cell"], line["tasks"], line["sums"]
        if type(cell) is not int or not 0 <= cell < len(self.cells):
            raise ValueError(f"{where}: no cell {cell!r} in this run")
        if type(tasks) is not int or not 0 < tasks <= self.cells[cell].n_tasks:
            raise ValueError(f"{where}: {tasks!r} tasks done is out of range")
        if not isinstance(sums, list) or not all(isinstance(x, str) for x in sums):
            raise ValueError(f"{where}: sums must be a list of hexadecimal floats")
        try:
            values = [float.fromhex(x) for x in sums]
        except (ValueError, OverflowError):  # 0x1p99999 overflows
            raise ValueError(f"{where}: sums must be hexadecimal floats") from None
        if not all(math.isfinite(x) for x in values):
            raise ValueError(f"{where}: a sum is not finite")
        total = np.array(values, dtype=np.float64)
        problem = self.cells[cell].sums_problem(total, tasks)
        if problem is not None:
            raise ValueError(f"{where}: {problem}")
        return cell, tasks, total

    # ------------------------------------------------------------------------ writing

    def _write(self, line: dict[str, Any], *, sync: bool) -> None:
        assert self.file is not None
        line = {**line, "check": _digest(self.fingerprint, line)}
        try:
            self.file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self.file.flush()
            if sync:
                os.fsync(self.file.fileno())
        except OSError as error:  # a full disk: the error names the file
            raise OSError(
                error.errno, f"checkpoint {self.path} cannot be written: {error.strerror}"
            ) from None

    def save(
        self, cell: int, tasks: int, total: npt.NDArray[np.float64] | None, *, final: bool
    ) -> None:
        """Record that cell ``cell``'s first ``tasks`` tasks sum to ``total``: always when
        ``final``, else at most every ``every`` seconds (None: nothing run yet)."""
        now = time.perf_counter()
        if total is None or tasks == 0:
            return
        if not final and now - self.last_save[cell] < self.every:
            return
        self.last_save[cell] = now
        record = {
            "run": self.run,
            "cell": cell,
            "tasks": tasks,
            "sums": [float(x).hex() for x in total],
        }
        self._write(record, sync=final)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None

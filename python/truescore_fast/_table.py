"""The table every calibration study returns.

A study is a grid of settings, each with Monte Carlo estimates and their standard
errors. :class:`StudyTable` keeps the columns as NumPy arrays in a fixed order, prints
like the tables in the CleanScore paper, and follows the result protocol of
:mod:`truescore_fast._result` (``to_dict``: ``{"title", "columns": {name: list},
"notes", "meta"}``; ``to_frame`` when pandas is installed).

``summary(width=W)`` fits the text into W characters (the command line uses 100): it
leaves out the Monte Carlo standard-error columns (naming the largest in a note) and, if
that is not enough, wraps the columns into blocks that each repeat the table's key
columns, as pandas wraps a wide frame. ``summary()`` prints every column on one line.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from truescore_fast._result import TabularResult, cell_text
from truescore_fast._validation import one_line
from truescore_fast.errors import ArgumentError, ArgumentTypeError

__all__ = ["StudyTable"]


@dataclass(frozen=True, repr=False)
class StudyTable(TabularResult):
    """Columns of equal length, in display order.

    Attributes:
        title: One line naming the study.
        columns: Column name -> 1-D array (numbers or strings), all the same length.
        notes: Lines printed under the table: what the numbers do and do not mean,
            the seed, the number of replications.
        meta: Anything a caller may want to re-run or cite (seed, replications, alpha).
        keys: The columns that name a row (a setting), repeated in every block when a
            narrow ``summary(width=...)`` wraps the table; default: the leading columns
            that do not hold floats. Not part of ``to_dict()``.
    """

    _dict_exclude: ClassVar[tuple[str, ...]] = ("keys",)

    title: str
    columns: Mapping[str, npt.NDArray[Any]]
    notes: Sequence[str] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    keys: Sequence[str] = ()

    def __post_init__(self) -> None:
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"StudyTable columns must have equal lengths; got {sorted(lengths)}")

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self.columns[name]

    def __repr__(self) -> str:
        return f"StudyTable(title={self.title!r}, rows={len(self)}, columns={len(self.columns)})"

    def _columns(self) -> Mapping[str, npt.NDArray[Any]]:
        return self.columns

    def summary(self, width: int | None = None, *, wider: str = "summary(width=None)") -> str:
        """The table as text: title, header, one line per row, then the notes.

        Args:
            width: None (default): every column on one line. An int (at least 40): fit
                the text into that many characters by leaving out the standard-error
                columns (a note gives the largest) and then, if needed, wrapping the
                columns into blocks that each repeat the key columns; the title and notes
                are wrapped too. No number is shortened.
            wider: how to print the whole table, as the note on left-out columns says it
                (the command line passes its own flag).
        """
        if not isinstance(wider, str):
            raise ArgumentTypeError("wider", f"wider must be a str; got {one_line(wider)}")
        names = list(self.columns)
        cells = {n: [cell_text(v) for v in self.columns[n]] for n in names}
        widths = {n: max([len(n)] + [len(c) for c in cells[n]]) for n in names}
        if width is None:
            return "\n".join([self.title, *self._block(names, cells, widths), *list(self.notes)])
        if isinstance(width, bool) or not isinstance(width, int) or width < 40:
            raise ArgumentError(
                "width", f"width must be None or an integer >= 40; got {one_line(width)}"
            )
        notes = list(self.notes)
        if _line_width(names, widths) > width:
            errors = [n for n in names if _is_standard_error(n)]
            if errors and len(errors) < len(names):
                names = [n for n in names if n not in errors]
                largest = max(
                    (float(v) for n in errors for v in self.columns[n] if _is_number(v)),
                    default=math.nan,
                )
                notes.append(
                    f"Monte Carlo standard errors left out to fit {width} characters "
                    f"(the largest is {cell_text(largest)}); print the table with {wider} "
                    "to see them."
                )
        keys = [n for n in self._keys() if n in names]
        blocks: list[list[str]] = []
        current: list[str] = []
        for n in names:
            if n in keys:
                continue
            trial = keys + current + [n]
            if current and _line_width(trial, widths) > width:
                blocks.append(current)
                current = []
            current.append(n)
        if current or not blocks:
            blocks.append(current)
        lines = textwrap.wrap(self.title, width) or [""]
        for k, block in enumerate(blocks):
            if k:
                lines.append("")
            lines += self._block(keys + block, cells, widths)
        for note in notes:
            indent = note[: len(note) - len(note.lstrip())]
            lines += textwrap.wrap(note, width, subsequent_indent=indent + "  ") or [""]
        return "\n".join(lines)

    def _keys(self) -> list[str]:
        if self.keys:
            return list(self.keys)
        out = []
        for n, values in self.columns.items():
            if np.asarray(values).dtype.kind == "f":
                break
            out.append(n)
        return out[: max(0, len(self.columns) - 1)]

    def _block(
        self, names: list[str], cells: Mapping[str, list[str]], widths: Mapping[str, int]
    ) -> list[str]:
        lines = ["  ".join(n.rjust(widths[n]) for n in names)]
        lines.append("  ".join("-" * widths[n] for n in names))
        lines += ["  ".join(cells[n][i].rjust(widths[n]) for n in names) for i in range(len(self))]
        return lines


def _line_width(names: Sequence[str], widths: Mapping[str, int]) -> int:
    return sum(widths[n] for n in names) + 2 * max(0, len(names) - 1)


def _is_standard_error(name: str) -> bool:
    return name.endswith(("_se", " SE")) or name == "SE"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)

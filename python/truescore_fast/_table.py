"""The table every calibration study returns.

A study is a grid of settings, each with Monte Carlo estimates and their standard
errors. :class:`StudyTable` keeps the columns as NumPy arrays in a fixed order, prints
like the tables in the CleanScore paper, and follows the result protocol of
:mod:`truescore_fast._result` (``to_dict``: ``{"title", "columns": {name: list},
"notes", "meta"}``; ``to_frame`` when pandas is installed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy.typing as npt

from truescore_fast._result import TabularResult, cell_text

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
    """

    title: str
    columns: Mapping[str, npt.NDArray[Any]]
    notes: Sequence[str] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

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

    def summary(self) -> str:
        """The table as text: title, header, one line per row, then the notes."""
        names = list(self.columns)
        cells = [[cell_text(self.columns[n][i]) for n in names] for i in range(len(self))]
        widths = [max([len(n)] + [len(row[j]) for row in cells]) for j, n in enumerate(names)]
        lines = [self.title, "  ".join(n.rjust(w) for n, w in zip(names, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
        lines += list(self.notes)
        return "\n".join(lines)

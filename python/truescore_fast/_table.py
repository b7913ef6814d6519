"""The table every calibration study returns.

A study is a grid of settings, each with Monte Carlo estimates and their standard
errors. :class:`StudyTable` keeps the columns as NumPy arrays in a fixed order, prints
like the tables in the CleanScore paper, and converts to plain Python (``to_dict``) or
to pandas (``to_frame``, when pandas is installed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._validation import optional_module

__all__ = ["StudyTable"]


@dataclass(frozen=True)
class StudyTable:
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

    def to_dict(self) -> dict[str, Any]:
        """Plain Python: ``{"title", "columns": {name: list}, "notes", "meta"}`` (JSON-ready)."""
        return {
            "title": self.title,
            "columns": {k: _plain(v) for k, v in self.columns.items()},
            "notes": list(self.notes),
            "meta": {k: _plain(v) for k, v in self.meta.items()},
        }

    def to_frame(self) -> Any:
        """A pandas DataFrame of the columns (requires pandas)."""
        pd = optional_module("pandas", requirement="pandas", extra=None, purpose="to_frame()")
        return pd.DataFrame({k: np.asarray(v) for k, v in self.columns.items()})

    def __str__(self) -> str:
        names = list(self.columns)
        cells = [[_cell(self.columns[n][i]) for n in names] for i in range(len(self))]
        widths = [max([len(n)] + [len(row[j]) for row in cells]) for j, n in enumerate(names)]
        lines = [self.title, "  ".join(n.rjust(w) for n, w in zip(names, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
        lines += list(self.notes)
        return "\n".join(lines)


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "-"
        return f"{value:.4f}"
    return str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value

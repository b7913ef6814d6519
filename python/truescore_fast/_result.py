"""One protocol for every result type the package defines (not the truescore drop-ins).

Every result is a frozen dataclass that inherits :class:`Result` and is declared with
``@dataclass(frozen=True, repr=False)`` (so the short ``repr`` below is not replaced by
the dataclass one). A result then offers:

``summary()``
    A readable report, including what the result does not mean. ``str(result)`` is the
    same text, so ``print(result)`` shows it.
``repr(result)``
    One line naming the type and a few key numbers (the class's ``_repr_fields``).
``to_dict()``
    Plain Python that ``json.dumps(..., allow_nan=False)`` accepts: every dataclass field
    (less ``_dict_exclude``), NumPy arrays as lists, NumPy scalars as Python numbers,
    nested results as dicts, tuples as lists, NaN as ``None`` and +-infinity as the
    strings ``"inf"`` and ``"-inf"`` (``float()`` reads them back; an infinite end is a
    one-sided interval, so its sign must survive).
``to_frame()``
    Only on :class:`TabularResult`: a pandas DataFrame of the rows ``_columns()`` gives
    (pandas is optional; a missing pandas raises
    :class:`~truescore_fast.MissingExtraError`, an :class:`ImportError`, saying so).
``_repr_html_()``
    For notebooks: the table as an HTML ``<table>`` for a tabular result, the summary
    in a ``<pre>`` block otherwise.

The same quantity has the same field name in every type: ``estimate`` (the point
estimate), ``low`` and ``high`` (the interval's ends), ``alpha`` (the interval has level
1 - alpha; a test flags at p < alpha), ``p_value`` and ``standard_error``.
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import numpy as np

from truescore_fast._validation import optional_module

_T = TypeVar("_T")

__all__ = ["Result", "TabularResult", "cell_text", "to_plain"]


def to_plain(value: Any) -> Any:
    """``value`` as JSON-ready Python (see the module docstring for the conventions)."""
    if isinstance(value, Result):
        return value.to_dict()
    if isinstance(value, np.ndarray):
        if value.ndim == 0:  # a 0-d array (alpha=np.array(0.05)): its one value
            return to_plain(value[()])
        return (
            [to_plain(v) for v in value.tolist()] if value.dtype.kind in "fcO" else value.tolist()
        )
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return str(value)


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.4g}"
    if isinstance(value, np.ndarray):
        return f"array(shape={value.shape})"
    return repr(value)


class Result:
    """Base of every result type: see the module docstring for the protocol."""

    # Names (attributes or properties) shown by repr, most important first.
    _repr_fields: ClassVar[tuple[str, ...]] = ()
    # Fields left out of to_dict (large and recoverable, such as a recorded shuffle).
    _dict_exclude: ClassVar[tuple[str, ...]] = ()

    def summary(self) -> str:
        """A readable report of the result."""
        raise NotImplementedError  # pragma: no cover - every result type defines it

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={_short(getattr(self, name))}" for name in self._repr_fields)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-ready Python (see the module docstring)."""
        return {
            f.name: to_plain(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if f.name not in self._dict_exclude
        }

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.summary())}</pre>"


class TabularResult(Result):
    """A result whose content is rows: adds ``to_frame()`` and an HTML table."""

    def _columns(self) -> Mapping[str, Any]:
        """Column name -> values (a sequence or 1-D array), all the same length, in order."""
        raise NotImplementedError  # pragma: no cover - every tabular type defines it

    def to_frame(self) -> Any:
        """A pandas DataFrame of the rows (requires pandas)."""
        pd = optional_module("pandas", requirement="pandas", extra=None, purpose="to_frame()")
        return pd.DataFrame({k: np.asarray(v) for k, v in self._columns().items()})

    def _repr_html_(self) -> str:
        columns = self._columns()
        names = list(columns)
        rows = len(next(iter(columns.values()))) if columns else 0
        head = "".join(f"<th>{html.escape(str(n))}</th>" for n in names)
        body = "".join(
            "<tr>"
            + "".join(f"<td>{html.escape(cell_text(columns[n][i]))}</td>" for n in names)
            + "</tr>"
            for i in range(rows)
        )
        caption = html.escape(self.summary().splitlines()[0]) if self.summary() else ""
        return (
            f"<table><caption>{caption}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )


def cell_text(value: Any) -> str:
    """A table cell: floats to 4 decimals, NaN as "-", anything else by str()."""
    if isinstance(value, (float, np.floating)):
        return "-" if math.isnan(value) else f"{float(value):.4f}"
    return str(value)


def built(cls: type[_T], **fields: Any) -> _T:
    """An instance of the frozen dataclass ``cls`` holding ``fields``, made without the
    generated ``__init__``, which sets every field through ``object.__setattr__`` (about
    0.1 µs a field: most of what a small call such as ``matched_form_audit`` costs beyond
    its compiled work). The same object as ``cls(**fields)`` when every field is given
    and ``cls`` has no ``__post_init__`` (the caller applies it):
    tests/audit/test_built_results.py holds each call site to that."""
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj

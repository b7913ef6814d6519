"""The matched-form audit's data: one model's public and fresh scores
(:class:`AuditData`), read from a long-format table (:func:`read_audit_table`) or checked
from arrays. The evaluation-harness readers in :mod:`truescore_fast.io.harness` build
:class:`AuditData` too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._files import read_columns
from truescore_fast._validation import one_line
from truescore_fast.errors import ArgumentError, literal

__all__ = [
    "AuditData",
    "read_audit_table",
]


"""The name that reads standard input instead of a file (the convention of pandas, csv
tools and most command lines)."""


# ---------------------------------------------------------------------------- audit tables


@dataclass(frozen=True)
class AuditData:
    """One model's scores from a long-format table: ``public`` (n,), ``fresh`` (n, K);
    ``dropped`` names the parents left out (harness runs read with ``drop_errored``)."""

    model: str
    parents: tuple[str, ...]
    fresh_forms: tuple[tuple[str, ...], ...]
    public: npt.NDArray[np.float64]
    fresh: npt.NDArray[np.float64]
    dropped: tuple[str, ...] = ()


ALL_MODELS = "all"


def read_audit_table(
    table: Any,
    *,
    parent_column: str = "parent",
    form_column: str = "form",
    correct_column: str = "correct",
    model_column: str = "model",
    public_form: str = "public",
) -> dict[str, AuditData]:
    """Read a long-format audit table: one row per (model, parent, form).

    Columns ``parent``, ``form``, ``correct`` and optionally ``model`` (other names with
    ``parent_column``, ``form_column``, ``correct_column``, ``model_column``). The form
    named ``public`` (``public_form``) is the public form; any other name is a fresh form.
    Every parent needs exactly one public row and the same number K >= 1 of fresh forms.
    ``table`` is a path to a CSV, TSV, JSON Lines or Parquet file (see :func:`read_rows`;
    ``"-"`` is standard input), an open CSV text file, or a mapping of columns (a pandas
    DataFrame works).

    Returns:
        ``{model: AuditData}`` in order of first appearance; without a model column
        the single key is ``"all"``.

    Raises:
        ValueError: a missing column, a non-numeric or out-of-range correctness, a
            duplicated (model, parent, form), a parent without its public form or
            without fresh forms, or parents with different numbers of fresh forms.
    """
    return _read_table(
        table,
        "table",
        parent_column=parent_column,
        form_column=form_column,
        correct_column=correct_column,
        model_column=model_column,
        public_form=public_form,
    )


def _read_table(
    table: Any,
    name: str,
    *,
    parent_column: str,
    form_column: str,
    correct_column: str,
    model_column: str,
    public_form: str,
) -> dict[str, AuditData]:
    """:func:`read_audit_table`, its messages naming the table ``name`` (``control``)."""
    for argument, given in (
        ("parent_column", parent_column),
        ("form_column", form_column),
        ("correct_column", correct_column),
        ("model_column", model_column),
        ("public_form", public_form),
    ):
        if not isinstance(given, str) or not given.strip():
            raise ArgumentError(
                argument, f"{argument} must be a non-empty string; got {one_line(given)}"
            )
    p_col, f_col, c_col, m_col = (
        parent_column.strip(),
        form_column.strip(),
        correct_column.strip(),
        model_column.strip(),
    )
    public_name = public_form.strip()
    if len({p_col, f_col, c_col, m_col}) < 4:
        raise ArgumentError(
            "parent_column",
            template="{parent_column}, {form_column}, {correct_column} and {model_column} must "
            "name four different columns; got "
            + literal(f"{p_col!r}, {f_col!r}, {c_col!r}, {m_col!r}"),
        )
    cols = read_columns(table, name, expected="parent, form, correct")
    for required in (p_col, f_col, c_col):
        if required not in cols:
            raise ArgumentError(
                name,
                f"{name} is missing the column {required!r} (need {p_col}, {f_col}, {c_col}; "
                f"optional {m_col}); got {sorted(cols)}",
            )
    has_model = m_col in cols
    if not has_model and model_column != "model":  # named, so meant: not silently dropped
        raise ArgumentError(
            name,
            template=f"{{{name}}} has no column {literal(repr(m_col))} ({{model_column}}); "
            f"got {literal(str(sorted(cols)))}",
        )
    rows = len(cols[p_col])
    if rows == 0:
        raise ArgumentError(name, f"{name} has no rows")
    models = cols[m_col] if has_model else [ALL_MODELS] * rows
    grouped: dict[str, dict[str, dict[str, float]]] = {}
    for i in range(rows):
        model = str(models[i]).strip() if models[i] is not None else ""
        parent = str(cols[p_col][i]).strip() if cols[p_col][i] is not None else ""
        form = str(cols[f_col][i]).strip() if cols[f_col][i] is not None else ""
        if not parent or not form or (not model and has_model):
            raise ArgumentError(name, f"{name} row {i + 1}: empty model, parent or form")
        raw = cols[c_col][i]
        try:
            value = float(raw.strip() if isinstance(raw, str) else raw)
        except (TypeError, ValueError) as error:
            raise ArgumentError(
                name,
                f"{name} row {i + 1}: {c_col} must be a number; got {one_line(cols[c_col][i])}",
            ) from error
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ArgumentError(
                name, f"{name} row {i + 1}: {c_col} must lie in [0, 1]; got {value}"
            )
        forms = grouped.setdefault(model, {}).setdefault(parent, {})
        if form in forms:
            raise ValueError(
                f"{name} row {i + 1}: duplicate form {form!r} for parent {parent!r}"
                + (f" (model {model!r})" if has_model else "")
            )
        forms[form] = value
    out: dict[str, AuditData] = {}
    for model, parents in grouped.items():
        where = f" (model {model!r})" if has_model else ""
        k: int | None = None
        pub: list[float] = []
        fresh: list[list[float]] = []
        names: list[tuple[str, ...]] = []
        for parent, forms in parents.items():
            if public_name not in forms:
                raise ValueError(
                    f"parent {parent!r}{where} is missing its public form "
                    f"({f_col} = {public_name!r})"
                )
            fresh_names = tuple(sorted(f for f in forms if f != public_name))
            if not fresh_names:
                raise ValueError(f"parent {parent!r}{where} has no fresh form")
            if k is None:
                k = len(fresh_names)
            elif len(fresh_names) != k:
                raise ValueError(
                    f"parent {parent!r}{where} has {len(fresh_names)} fresh forms; earlier "
                    f"parents have {k}: every parent needs the same number"
                )
            pub.append(forms[public_name])
            fresh.append([forms[f] for f in fresh_names])
            names.append(fresh_names)
        out[model] = AuditData(
            model=model,
            parents=tuple(parents),
            fresh_forms=tuple(names),
            public=np.array(pub, dtype=np.float64),
            fresh=np.array(fresh, dtype=np.float64),
        )
    return out

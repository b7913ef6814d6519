"""Reading the tables the command line and the audit take: CSV or JSON Lines rows
(:func:`read_rows`), and long-format audit tables (:func:`read_audit_table`, one
:class:`AuditData` per model)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "ALL_MODELS",
    "AuditData",
    "NotJsonError",
    "check_input_file",
    "parse_json",
    "read_audit_table",
    "read_json_file",
    "read_rows",
]


def check_input_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path if it names a regular file; otherwise an error saying what it is.

    Raises:
        FileNotFoundError: nothing is there.
        ValueError: a directory, a FIFO, a device or a socket (reading a FIFO or a
            device could block for ever or never end).
    """
    file_path = Path(path)
    try:
        mode = file_path.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {file_path}") from None
    if stat.S_ISREG(mode):
        return file_path
    if stat.S_ISDIR(mode):
        what = "a directory"
    elif stat.S_ISFIFO(mode):
        what = "a FIFO (named pipe)"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device"
    elif stat.S_ISSOCK(mode):
        what = "a socket"
    else:
        what = "not a regular file"
    raise ValueError(f"{file_path} is {what}, not a file: give the path of a regular file")


class NotJsonError(ValueError):
    """Text that is not a JSON document this package reads (the message says where)."""


def parse_json(text: str, where: str, **hooks: Any) -> Any:
    """``json.loads(text, **hooks)``, the one JSON parser of the package (tables, rows,
    disclosure records). Text that is not JSON, or that a hook refuses, or that is nested
    too deeply for the parser (about 1,000 levels: it recurses once per level) is a
    :class:`NotJsonError` starting with ``where``; never a ``RecursionError``."""
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise NotJsonError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as error:  # json.JSONDecodeError, or a hook's refusal
        raise NotJsonError(f"{where}: not valid JSON: {error}") from None


def read_json_file(path: str | os.PathLike[str], where: str | None = None, **hooks: Any) -> Any:
    """The JSON document in the file ``path`` (UTF-8, a byte-order mark skipped), parsed by
    :func:`parse_json`; messages start with ``where`` (default: the path).

    Raises:
        FileNotFoundError, ValueError: as :func:`check_input_file` (not a regular file).
        NotJsonError: not UTF-8, not JSON, or nested too deeply.
    """
    file_path = check_input_file(path)
    where = str(file_path) if where is None else where
    try:
        text = file_path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotJsonError(f"{where}: not UTF-8 text: {error}") from None
    return parse_json(text, where, **hooks)


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a ``.csv`` or JSON Lines (``.jsonl``/``.ndjson``/``.json``) file as dicts.

    A UTF-8 byte-order mark (Excel's "CSV UTF-8") is skipped. A ``.json`` file may also
    hold one JSON array of objects.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: not a regular file, unknown suffix, an unparsable line or field (with
            its line number), a row that is not an object, or no rows.
    """
    file_path = check_input_file(path)
    try:
        rows = _read_rows(file_path)
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{file_path}: not UTF-8 text (byte {error.start} is {error.object[error.start]:#x}); "
            "save it as UTF-8"
        ) from None
    if not rows:
        raise ValueError(f"{file_path} has no rows")
    return rows


def _read_rows(file_path: Path) -> list[dict[str, Any]]:
    suffix = file_path.suffix.lower()
    if suffix == ".csv":
        with file_path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            try:
                rows = [dict(row) for row in reader]
            except csv.Error as error:
                # line_num counts the lines fully read: the bad row starts on the next one
                start = reader.line_num + 1
                raise ValueError(f"{file_path} row starting on line {start}: {error}") from None
    elif suffix in {".jsonl", ".ndjson", ".json"}:
        # Lines end at "\n", "\r\n" or "\r" (universal newlines, as the csv reader counts
        # them) and nowhere else: str.splitlines would also split at U+2028, U+0085 or a
        # form feed, which JSON allows inside a string, and misnumber every later line.
        text = file_path.read_text(encoding="utf-8-sig")
        if text.lstrip().startswith("["):
            loaded = parse_json(text, str(file_path))
            if not isinstance(loaded, list):  # pragma: no cover - "[" starts an array
                raise ValueError(f"{file_path}: expected a JSON array of objects")
            for number, item in enumerate(loaded, start=1):
                if not isinstance(item, dict):
                    raise ValueError(
                        f"{file_path} item {number}: expected a JSON object (one row); "
                        f"got {type(item).__name__}"
                    )
            rows = list(loaded)
        else:
            rows = []
            for number, line in enumerate(text.split("\n"), start=1):
                if line.strip():
                    item = parse_json(line, f"{file_path} line {number}")
                    if not isinstance(item, dict):
                        raise ValueError(
                            f"{file_path} line {number}: expected a JSON object (one row); "
                            f"got {type(item).__name__}"
                        )
                    rows.append(item)
    else:
        raise ValueError(f"unsupported file type {suffix!r}: use .csv, .jsonl, .ndjson or .json")
    return rows


# ---------------------------------------------------------------------------- audit tables


@dataclass(frozen=True)
class AuditData:
    """One model's scores from a long-format table: ``public`` (n,), ``fresh`` (n, K)."""

    model: str
    parents: tuple[str, ...]
    fresh_forms: tuple[tuple[str, ...], ...]
    public: npt.NDArray[np.float64]
    fresh: npt.NDArray[np.float64]


ALL_MODELS = "all"


def _columns(source: Any) -> dict[str, list[Any]]:
    if isinstance(source, (str, os.PathLike)):
        return _columns_from_rows(read_rows(source), str(source))
    if isinstance(source, io.IOBase) or hasattr(source, "read"):
        return _columns_from_rows(list(csv.DictReader(source)), "table")
    if isinstance(source, Mapping) or hasattr(source, "columns"):
        names = list(source.keys()) if isinstance(source, Mapping) else list(source.columns)
        return {str(c).strip(): list(np.asarray(source[c]).tolist()) for c in names}
    raise ValueError("table must be a path, an open text file or a mapping of columns")


def _columns_from_rows(rows: list[dict[str, Any]], where: str) -> dict[str, list[Any]]:
    if not rows:
        raise ValueError(f"{where} is empty: expected a header with parent, form, correct")
    names = list(rows[0])
    cols: dict[str, list[Any]] = {str(n).strip(): [] for n in names}
    for row in rows:
        for raw in names:
            cols[str(raw).strip()].append(row.get(raw))
    return cols


def read_audit_table(table: Any) -> dict[str, AuditData]:
    """Read a long-format audit table: one row per (model, parent, form).

    Columns ``parent``, ``form``, ``correct`` and optionally ``model``. A form named
    ``public`` is the public form; any other name is a fresh form. Every parent needs
    exactly one public row and the same number K >= 1 of fresh forms. ``table`` is a
    path to a CSV or JSON Lines file, an open CSV text file, or a mapping of columns
    (a pandas DataFrame works).

    Returns:
        ``{model: AuditData}`` in order of first appearance; without a ``model`` column
        the single key is ``"all"``.

    Raises:
        ValueError: a missing column, a non-numeric or out-of-range ``correct``, a
            duplicated (model, parent, form), a parent without its public form or
            without fresh forms, or parents with different numbers of fresh forms.
    """
    cols = _columns(table)
    for required in ("parent", "form", "correct"):
        if required not in cols:
            raise ValueError(
                f"table is missing the column {required!r} (need parent, form, correct; "
                f"optional model); got {sorted(cols)}"
            )
    rows = len(cols["parent"])
    if rows == 0:
        raise ValueError("table has no rows")
    models = cols.get("model", [ALL_MODELS] * rows)
    grouped: dict[str, dict[str, dict[str, float]]] = {}
    for i in range(rows):
        model = str(models[i]).strip() if models[i] is not None else ""
        parent = str(cols["parent"][i]).strip() if cols["parent"][i] is not None else ""
        form = str(cols["form"][i]).strip() if cols["form"][i] is not None else ""
        if not parent or not form or (not model and "model" in cols):
            raise ValueError(f"table row {i + 1}: empty model, parent or form")
        try:
            value = float(cols["correct"][i])
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"table row {i + 1}: correct must be a number; got {cols['correct'][i]!r}"
            ) from error
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"table row {i + 1}: correct must lie in [0, 1]; got {value}")
        forms = grouped.setdefault(model, {}).setdefault(parent, {})
        if form in forms:
            raise ValueError(
                f"table row {i + 1}: duplicate form {form!r} for parent {parent!r}"
                + (f" (model {model!r})" if "model" in cols else "")
            )
        forms[form] = value
    out: dict[str, AuditData] = {}
    for model, parents in grouped.items():
        where = f" (model {model!r})" if "model" in cols else ""
        k: int | None = None
        pub: list[float] = []
        fresh: list[list[float]] = []
        names: list[tuple[str, ...]] = []
        for parent, forms in parents.items():
            if "public" not in forms:
                raise ValueError(f"parent {parent!r}{where} is missing its public form")
            fresh_names = tuple(sorted(f for f in forms if f != "public"))
            if not fresh_names:
                raise ValueError(f"parent {parent!r}{where} has no fresh form")
            if k is None:
                k = len(fresh_names)
            elif len(fresh_names) != k:
                raise ValueError(
                    f"parent {parent!r}{where} has {len(fresh_names)} fresh forms; earlier "
                    f"parents have {k}: every parent needs the same number"
                )
            pub.append(forms["public"])
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

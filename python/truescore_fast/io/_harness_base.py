"""What the harness readers share: a run's file and the views a reader recognises it by,
the records and runs the readers return, the reader record the registry holds, and the
helpers that find a record's match key and map its score to [0, 1].

Not a public API: :func:`truescore_fast.read_harness_runs` is the public reader, and
:mod:`truescore_fast.io.harness` documents the formats, holds the registry and says how to
add a format.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from truescore_fast._files import (
    STDIN,
    decode_text,
    parquet_rows,
    read_input_bytes,
    sniff_format,
    table_suffix,
    text_rows,
)
from truescore_fast._validation import one_line

__all__ = [
    "HarnessReader",
    "MetricReader",
    "Record",
    "Run",
    "RunFile",
    "correctness",
    "field_names",
    "key_value",
    "lookup",
    "mean",
    "text",
]

# Inspect's score letters (inspect_ai.scorer: CORRECT, PARTIAL, INCORRECT, NOANSWER) and
# the values its default value_to_float gives them.
_GRADES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}


class Record:
    """One scored record of a run: where it is (for messages), its fields, the identity
    that tells epochs of one sample from two samples (records of one run with the same
    identity are epochs of one sample, reduced to one score by the metric reader's
    ``reduce``; a format without epochs gives each record its own number), and ``error``:
    the message of the error the harness logged for it, or None when it ran."""

    __slots__ = ("where", "fields", "identity", "epoch", "error")

    def __init__(
        self,
        where: str,
        fields: Mapping[str, Any],
        identity: Any,
        epoch: Any,
        error: str | None = None,
    ):
        self.where = where
        self.fields = fields
        self.identity = identity
        self.epoch = epoch
        self.error = error


class Run:
    """A run read from disk: where it is, the model its log names (or None), its records,
    and what else of the log its reader's ``metric`` needs (``info``)."""

    def __init__(
        self,
        where: str,
        model: str | None,
        records: list[Record],
        info: Mapping[str, Any] | None = None,
    ):
        self.where = where
        self.model = model
        self.records = records
        self.info: Mapping[str, Any] = info or {}


class RunFile:
    """One run's file, as read from disk or standard input (gzip undone), with the views
    the readers recognise it by: its bytes and name (``data``, ``suffix``, ``sniffed``;
    ``path``, None for standard input),
    then, each read once when first asked for, its ``text``, the text as one JSON object
    (``document``) and its JSON (Lines) ``records``."""

    def __init__(self, path: str | os.PathLike[str]):
        self.where, self.data = read_input_bytes(path)
        self.path = None if isinstance(path, str) and path == STDIN else Path(self.where)
        self.suffix = table_suffix(path)  # looking through .gz; "" for standard input
        self.sniffed = sniff_format(self.data)  # "zip", "parquet", "json", "tsv" or "csv"

    @cached_property
    def text(self) -> str:
        """The content as UTF-8 text, or a ValueError naming the byte that is not."""
        return decode_text(self.data, self.where)

    @cached_property
    def document(self) -> dict[str, Any] | None:
        """The text as one JSON object, or None when it is JSON Lines or an array."""
        stripped = self.text.strip()
        if not stripped.startswith("{"):
            return None
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            return None  # several lines of objects: JSON Lines
        except RecursionError:
            raise ValueError(f"{self.where}: JSON nested too deeply to read") from None
        return value if isinstance(value, dict) else None

    @cached_property
    def records(self) -> list[dict[str, Any]]:
        """The JSON object, or the JSON Lines (or array) of objects, as rows; never empty."""
        document = self.document
        rows = [document] if document is not None else self.rows("json")
        if not rows:
            raise ValueError(f"{self.where} has no records")
        return rows

    def rows(self, kind: str) -> list[dict[str, Any]]:
        """The content read as a table of ``kind``: ``"parquet"``, ``"csv"``, ``"tsv"`` or
        ``"json"`` (JSON Lines or an array of objects)."""
        if kind == "parquet":
            return parquet_rows(self.data, self.where)
        return text_rows(self.text, kind, self.where)


def mean(scores: Sequence[float]) -> float:
    """The mean of one sample's epoch scores (Inspect's default epoch reducer)."""
    return float(statistics.mean(scores))


class MetricReader(NamedTuple):
    """What a reader's ``metric`` gives: the metric's name, a function giving a record's
    raw score, the records it scores, and the reduction of one sample's epoch scores (in
    [0, 1], in epoch order) to its score; a plain 3-tuple means the mean."""

    name: str
    value: Callable[[Record], Any]
    records: list[Record]
    reduce: Callable[[Sequence[float]], float] = mean


@dataclass(frozen=True)
class HarnessReader:
    """One harness format, registered by ``name`` in :mod:`truescore_fast.io.harness`.

    ``load`` reads a :class:`RunFile` into a :class:`Run` (a ValueError naming the file when
    it is not of this format); ``metric`` gives the :data:`MetricReader` of a loaded run for
    the user's ``metric`` (None: the only one there is).

    A run is recognised in three rounds; each asks the readers in registration order and
    the first to answer wins:

    1. ``claim_file(file)``: by the file's bytes and name (a zip archive, a ``.csv``);
    2. ``claim_document(document)``: by the text read as one JSON object (an Inspect log's
       ``samples``), asked only when the text is one;
    3. ``looks_like(record)``: by the first JSON (Lines) record (lm-eval's ``doc_id`` with
       ``resps``), asked only for ``harness="auto"``; a run no reader recognises is read by
       the ``catch_all`` reader (at most one: the table).

    A claim (rounds 1 and 2) is certain: the claim returns what the file is (``"a zip
    archive (an Inspect .eval log)"``), and a run that another reader claims is refused
    when the user named this one, with ``refusal`` formatted with ``where`` (the file),
    ``what`` (the claim) and ``harness`` (the format named). A claim may raise a ValueError
    for a file that says it is of the format but is not (a ``.eval`` that is no zip).
    Round 3 is a guess: a named reader reads what no claim took (its ``load`` refuses it).

    ``positional_keys`` are match keys that number the records rather than name them (a
    row index): a run matched by one gets a warning, ``positional_warning`` formatted
    with ``where``.
    """

    name: str
    load: Callable[[RunFile], Run]
    metric: Callable[[Run, str | None], MetricReader]
    claim_file: Callable[[RunFile], str | None] | None = None
    claim_document: Callable[[Mapping[str, Any]], str | None] | None = None
    looks_like: Callable[[Mapping[str, Any]], bool] | None = None
    refusal: str = "{where} is {what}, not {harness}"
    catch_all: bool = False
    positional_keys: tuple[str, ...] = ()
    positional_warning: str = "{where}: its match key is a row index"


# ------------------------------------------------------------------------ key and metric


def lookup(fields: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """``fields[path]``, or the dotted path into nested objects; (found, value)."""
    if path in fields:
        return True, fields[path]
    value: Any = fields
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return False, None
    return True, value


def field_names(fields: Mapping[str, Any]) -> str:
    """The first dozen field names of a record, for a message (``doc.x`` for nested)."""
    names = []
    for name, value in fields.items():
        if isinstance(value, Mapping) and name in ("doc", "metadata"):
            names += [f"{name}.{inner}" for inner in value]
        else:
            names.append(str(name))
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")


def text(value: Any) -> str:
    """A key or name as the text it is compared by."""
    return str(value).strip()


def key_value(record: Record, key: str) -> str:
    """The record's match key as text, or an error naming the record."""
    found, value = lookup(record.fields, key)
    if not found:
        raise ValueError(
            f"{record.where}: no field {key!r} to match parents by (fields: "
            f"{field_names(record.fields)})"
        )
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not text(value):
        raise ValueError(
            f"{record.where}: the match key {key} must be a non-empty string or an integer; "
            f"got {one_line(value)}"
        )
    return text(value)


def correctness(value: Any, where: str, metric: str) -> float:
    """A score mapped to [0, 1] as Inspect's default value_to_float maps it, or an error."""
    number: float | None = None
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        stripped = value.strip()
        if stripped in _GRADES:
            number = _GRADES[stripped]
        elif stripped.lower() in _WORDS:
            number = _WORDS[stripped.lower()]
        else:
            try:
                number = float(stripped)
            except ValueError:
                number = None
    if number is None:
        raise ValueError(
            f"{where}: {metric} = {value!r} is not a per-item score (expected a number, a "
            "boolean, yes/no/true/false or an Inspect grade C/P/I/N)"
        )
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ValueError(f"{where}: {metric} must be a score in [0, 1]; got {one_line(value)}")
    return number

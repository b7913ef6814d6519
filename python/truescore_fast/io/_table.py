"""The ``table`` harness format: one row per item, ``match_key`` and ``metric`` column
names, as :mod:`truescore_fast.io.harness` documents it. Recognised for certain by its
name or bytes (``.csv``, ``.tsv``/``.tab``, Parquet); JSON (Lines) rows that no other
reader recognises are read as a table too (the catch-all). Not a public API.
"""

from __future__ import annotations

from typing import Any

from truescore_fast.errors import ArgumentError
from truescore_fast.io._harness_base import (
    HarnessReader,
    MetricReader,
    Record,
    Run,
    RunFile,
    field_names,
    lookup,
)

__all__ = ["TABLE"]

_TABLE_SUFFIXES = {".csv", ".tsv", ".tab", ".parquet", ".pq"}


def _claim_file(file: RunFile) -> str | None:
    if file.sniffed == "parquet" or file.suffix in _TABLE_SUFFIXES:
        return f"a table ({file.suffix or file.sniffed})"
    return None


def _load(file: RunFile) -> Run:
    if file.sniffed == "parquet" or file.suffix in (".parquet", ".pq"):
        rows = file.rows("parquet")
    elif file.suffix in _TABLE_SUFFIXES:
        kind = "tsv" if file.suffix in (".tsv", ".tab") or file.sniffed == "tsv" else "csv"
        rows = file.rows(kind)
    else:  # JSON (Lines) rows no other reader claimed
        rows = file.records
    if not rows:
        raise ValueError(f"{file.where} has no rows")
    records = [Record(f"{file.where} row {i}", row, i, None) for i, row in enumerate(rows, 1)]
    return Run(file.where, None, records)


def _metric(run: Run, metric: str | None) -> MetricReader:
    if metric is None:
        raise ArgumentError(
            "metric",
            f"metric must name the column of {run.where} that holds the per-item "
            f"correctness (columns: {field_names(run.records[0].fields)})",
        )
    name = metric

    def column(record: Record) -> Any:
        found, value = lookup(record.fields, name)
        if not found:
            raise ValueError(
                f"{record.where}: no column {name!r} (columns: {field_names(record.fields)})"
            )
        return value

    return MetricReader(name, column, run.records)


TABLE = HarnessReader(
    name="table",
    load=_load,
    metric=_metric,
    claim_file=_claim_file,
    refusal="{where} is {what}, not {harness} output",
    catch_all=True,
)

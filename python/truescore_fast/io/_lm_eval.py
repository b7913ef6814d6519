"""The ``lm-eval`` harness format: lm-evaluation-harness ``--log_samples`` output
(``samples_<task>_<date>.jsonl``, or one JSON array of its records), as
:mod:`truescore_fast.io.harness` documents it. Recognised by its first record (a guess:
``doc_id`` with ``resps``/``filtered_resps``/``arguments``); ``metric`` is a metric name
or ``"name,filter"``. Not a public API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from truescore_fast.io._harness_base import (
    HarnessReader,
    MetricReader,
    Record,
    Run,
    RunFile,
    text,
)

__all__ = ["LM_EVAL"]


def _looks_like(row: Mapping[str, Any]) -> bool:
    return "doc_id" in row and any(f in row for f in ("resps", "filtered_resps", "arguments"))


def _load(file: RunFile) -> Run:
    rows = file.records
    if not _looks_like(rows[0]):
        raise ValueError(
            f"{file.where} is not an lm-evaluation-harness samples file: its first record has "
            "no 'doc_id' with 'resps'/'filtered_resps' (write one with --log_samples)"
        )
    records = [Record(f"{file.where} record {i}", row, i, None) for i, row in enumerate(rows, 1)]
    return Run(file.where, None, records)


def _metric(run: Run, metric: str | None) -> MetricReader:
    records = run.records
    names = [str(n) for n in run.records[0].fields.get("metrics") or []]
    filters = sorted({text(r.fields.get("filter", "none")) for r in run.records})
    chosen_filter: str | None = None
    if metric is None:
        if len(names) != 1:
            raise ValueError(
                f"metric must name the per-item metric of {run.where}: it holds "
                f"{', '.join(names) or 'no metrics list'}"
            )
        name = names[0]
    else:
        name, _, chosen_filter = metric.partition(",")
        name = name.strip()
        chosen_filter = chosen_filter.strip() or None
    if chosen_filter is None and len(filters) > 1:
        raise ValueError(
            f"{run.where} holds the filters {', '.join(filters)}: name one with the metric "
            f"(--metric {name},{filters[0]}: lm-eval's metric,filter spelling)"
        )
    if chosen_filter is not None:
        if chosen_filter not in filters:
            raise ValueError(
                f"{run.where} has no filter {chosen_filter!r}; it has {', '.join(filters)}"
            )
        records = [r for r in records if text(r.fields.get("filter", "none")) == chosen_filter]

    def value(record: Record) -> Any:
        if name not in record.fields:
            listed = record.fields.get("metrics") or []
            raise ValueError(
                f"{record.where}: no metric {name!r} (this record has "
                f"{', '.join(str(n) for n in listed) or 'no metrics list'})"
            )
        return record.fields[name]

    return name, value, records


LM_EVAL = HarnessReader(name="lm-eval", load=_load, metric=_metric, looks_like=_looks_like)

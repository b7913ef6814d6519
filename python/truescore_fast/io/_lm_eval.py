"""The ``lm-eval`` harness format: lm-evaluation-harness ``--log_samples`` output
(``samples_<task>_<date>.jsonl``, or one JSON array of its records), as
:mod:`truescore_fast.io.harness` documents it. Recognised by its first record (a guess:
``doc_id`` with ``resps``/``filtered_resps``/``arguments``); ``metric`` is a metric name
or ``"name,filter"``.

The samples files do not name the model: the run's ``results_<date>.json``, written
beside them with the same date, does, and is read for it. A results file given in place
of a samples file is recognised (for certain: a JSON object with ``results`` and
``configs``) and refused. ``doc_id`` is the document's row in its task's dataset, so a
run matched by it gets a warning. Not a public API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from truescore_fast._files import read_json_file
from truescore_fast.errors import ArgumentError, literal
from truescore_fast.io._harness_base import (
    HarnessReader,
    MetricReader,
    Record,
    Run,
    RunFile,
    text,
)

__all__ = ["LM_EVAL"]

_SAMPLES_NAME = re.compile(r"samples_(?P<task>.+)_(?P<date>[^_]+)\.jsonl(\.gz)?")
# the keys lm-eval derives its model_name from (GeneralConfigTracker._get_model_name)
_NAMING_ARGS = ("peft", "delta", "pretrained", "model", "path", "engine")


def _looks_like(row: Mapping[str, Any]) -> bool:
    return "doc_id" in row and any(f in row for f in ("resps", "filtered_resps", "arguments"))


def _claim_document(document: Mapping[str, Any]) -> str | None:
    if isinstance(document.get("results"), Mapping) and "configs" in document:
        return "an lm-eval results file (the aggregate scores)"
    return None


def _load(file: RunFile) -> Run:
    document = file.document
    if document is not None and _claim_document(document) is not None:
        raise ValueError(
            f"{file.where} is an lm-eval results file (the aggregate scores): pass the "
            "samples_<task>_<date>.jsonl files written beside it (with --log_samples)"
        )
    rows = file.records
    if not _looks_like(rows[0]):
        raise ValueError(
            f"{file.where} is not an lm-evaluation-harness samples file: its first record has "
            "no 'doc_id' with 'resps'/'filtered_resps' (write one with --log_samples)"
        )
    records = [Record(f"{file.where} record {i}", row, i, None) for i, row in enumerate(rows, 1)]
    return Run(file.where, _model(file), records)


def _model(file: RunFile) -> str | None:
    """The model the run's ``results_<date>.json`` (beside the samples file, of the same
    date) names; None when there is no such file (standard input, a renamed file)."""
    if file.path is None:
        return None
    match = _SAMPLES_NAME.fullmatch(file.path.name)
    if match is None:
        return None
    results = file.path.with_name(f"results_{match.group('date')}.json")
    if not results.is_file():
        return None
    document = read_json_file(results)
    if not isinstance(document, Mapping):
        return None
    config = document.get("config")
    config = config if isinstance(config, Mapping) else {}
    args = config.get("model_args")
    named = document.get("model_name")
    arg_names = list(args) if isinstance(args, Mapping) else re.findall(r"(\w+)=", str(args))
    if isinstance(named, str) and named and any(a in _NAMING_ARGS for a in arg_names):
        return named  # lm-eval's own name, derived from pretrained=... (else it is random)
    model = config.get("model")
    if not isinstance(model, str) or not model:
        return None
    return f"{model} ({args})" if args else model


def _metric(run: Run, metric: str | None) -> MetricReader:
    records = run.records
    names = [str(n) for n in run.records[0].fields.get("metrics") or []]
    filters = sorted({text(r.fields.get("filter", "none")) for r in run.records})
    chosen_filter: str | None = None
    if metric is None:
        if len(names) != 1:
            raise ArgumentError(
                "metric",
                f"metric must name the per-item metric of {run.where}: it holds "
                f"{', '.join(names) or 'no metrics list'}",
            )
        name = names[0]
    else:
        name, _, chosen_filter = metric.partition(",")
        name = name.strip()
        chosen_filter = chosen_filter.strip() or None
    if chosen_filter is None and len(filters) > 1:
        raise ArgumentError(
            "metric",
            template=literal(f"{run.where} holds the filters {', '.join(filters)}")
            + ": name one with the metric ({metric} "
            + literal(f"{name},{filters[0]}: lm-eval's metric,filter spelling)"),
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

    return MetricReader(name, value, records)


LM_EVAL = HarnessReader(
    name="lm-eval",
    load=_load,
    metric=_metric,
    claim_document=_claim_document,
    looks_like=_looks_like,
    refusal=(
        "{where} is {what}, not {harness} output: pass the samples_<task>_<date>.jsonl "
        "files written beside it (with --log_samples)"
    ),
    positional_keys=("doc_id",),
    positional_warning=(
        "{where}: matched by doc_id, the document's row in its task's dataset: that "
        "pairs the forms by position, right only if every form's dataset lists the parents "
        "in the same order; match by a field of the document (doc.parent_id) instead"
    ),
)

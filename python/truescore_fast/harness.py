"""Evaluation-harness outputs read directly for the matched-form audit.

A matched-form audit scores every sampled parent item on its public form and on K fresh
forms. Users run those scorings with an evaluation harness, one run per form, and
:func:`read_harness_runs` turns the runs into the arrays :func:`matched_form_audit`
takes. The user names which run is the public form and which are fresh forms, the field
that matches a record to its parent (``match_key``) and the per-item correctness
(``metric``). Three kinds of run are read:

``lm-eval``
    lm-evaluation-harness ``--log_samples`` output, ``samples_<task>_<date>.jsonl``: one
    JSON object per line per (document, filter) with ``doc_id``, ``doc``, ``target``,
    ``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics`` (the names of
    the per-item metrics) and each metric's value as a top-level field (``acc``,
    ``exact_match``, ...). ``metric`` is a metric name, or ``"name,filter"`` (the
    harness's own ``exact_match,strict-match`` spelling) when the task has several
    filters. A file holding one JSON array of such objects is read too.
``inspect``
    Inspect eval logs, both formats Inspect writes: the JSON log (one ``EvalLog``
    object: ``eval`` with the task and model, ``samples`` each with ``id``, ``epoch``,
    ``scores`` ``{scorer: {value, answer, explanation, metadata}}`` and ``metadata``)
    and the ``.eval`` archive (a zip with ``header.json`` or ``_journal/start.json`` and
    one ``samples/<id>_epoch_<n>.json`` per sample). ``metric`` is a scorer name, or
    ``"scorer.key"`` for a scorer whose value is a dict. Epochs of one sample are
    averaged (the mean, Inspect's default epoch reducer), so a parent's score may lie
    strictly between 0 and 1. Runs whose logs name different models are refused.
``table``
    Any table :func:`~truescore_fast._io.read_rows` reads (CSV, TSV, JSON Lines,
    Parquet), one row per item: ``match_key`` and ``metric`` are column names.

Any of these may be gzip-compressed (``samples_<task>_<date>.jsonl.gz``, ``log.json.gz``):
the content is recognised by gzip's magic bytes and read as the file it holds.

``match_key`` is a field of the record (``doc_id``, ``id``) or a dotted path into it
(``doc.parent_id``, ``metadata.parent``); a field whose own name contains a dot is found
first. Its values must be strings or integers; they are compared as text, so doc_id 7 in
one run matches ``"7"`` in a table.

Scores map to [0, 1] the way Inspect's ``value_to_float`` does by default: numbers and
booleans as themselves, the letter grades ``C`` 1, ``P`` 0.5, ``I`` and ``N`` 0,
``yes``/``true`` 1 and ``no``/``false`` 0 (any case), numeric strings as numbers. Where
Inspect logs a warning and counts an unreadable value as 0, this reader raises a
``ValueError`` naming the record: a silently zeroed item would bias the gap.

Which parents: those of the fresh runs. Every fresh run must hold the same parents, one
record each (after averaging epochs); the public run must hold every one of them and may
hold more (a public run over the whole benchmark when only a sample of parents has fresh
forms): the extra public records are not part of the audit. Parents keep the public
run's order.

Why small readers here and not a dependency (the decision issue 12 asked for):

* truescore 0.7.4's ``truescore.adapters.read_eval`` (truescore is the library this
  package is a drop-in for) flattens records into its own column names
  (``score.<slug>``, ``meta.<key>``, ``doc.<key>``), keeps only one level of scalar
  fields, and reads Inspect's JSON log but not the ``.eval`` archive, Inspect's default
  log format. Matching records to parents, choosing a filter, refusing duplicates and
  mismatched models would still be ours, so the dependency would save only the JSON walk
  while renaming the fields the user must type and wrapping every error message in
  another library's words.
* ``inspect_ai.log.read_eval_log`` reads both Inspect formats, but installing Inspect
  (pydantic, httpx, textual and dozens more) to read a JSON document is out of proportion
  for a statistics library whose run-time dependencies are numpy and scipy;
  lm-evaluation-harness has no reader for its samples files at all.
* The fields needed are few and documented by the harnesses: the readers use only
  ``json`` and ``zipfile`` from the standard library, need no extra, and every error
  names the file, the record and the problem. The examples in ``examples/harness/`` are
  written in the documented formats and tested end to end; they were written by this
  project, not by the harnesses, so a harness's future format change shows as a reader
  error naming the missing field, not as a wrong number.

What a result does not mean: the reader checks that every parent was scored on every
form and that the runs agree on the model when their logs say which; it cannot check
that the fresh forms are faithful rewrites of their parents, that the parents were
sampled at random, or that the runs used the same prompts and settings.
"""

from __future__ import annotations

import io
import json
import math
import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truescore_fast._io import (
    ALL_MODELS,
    STDIN,
    AuditData,
    _parquet_rows,
    _text_rows,
    decode_text,
    parse_json,
    read_input_bytes,
    sniff_format,
    table_suffix,
)
from truescore_fast._validation import check_choice

__all__ = ["HARNESSES", "read_harness_runs"]

HARNESSES: tuple[str, ...] = ("auto", "lm-eval", "inspect", "table")
"""The values of ``harness``: ``"auto"`` recognises each run by its content."""

# Inspect's score letters (inspect_ai.scorer: CORRECT, PARTIAL, INCORRECT, NOANSWER) and
# the values its default value_to_float gives them.
_GRADES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_TABLE_SUFFIXES = {".csv", ".tsv", ".tab", ".parquet", ".pq"}
_MAX_LISTED = 5


class _Record:
    """One scored record of a run: where it is (for messages), its fields, and the
    identity that tells epochs of one sample from two samples."""

    __slots__ = ("where", "fields", "identity", "epoch")

    def __init__(self, where: str, fields: Mapping[str, Any], identity: Any, epoch: Any):
        self.where = where
        self.fields = fields
        self.identity = identity
        self.epoch = epoch


class _Run:
    """A run read from disk: its kind, the model its log names (or None), its records."""

    def __init__(self, where: str, kind: str, model: str | None, records: list[_Record]):
        self.where = where
        self.kind = kind
        self.model = model
        self.records = records


def read_harness_runs(
    public: str | os.PathLike[str],
    fresh: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    match_key: str,
    metric: str | None = None,
    harness: str = "auto",
    public_match_key: str | None = None,
) -> AuditData:
    """Read an audit's harness runs: one public-form run and K fresh-form runs.

    Args:
        public: The run that scored the public forms: an lm-evaluation-harness samples
            file, an Inspect log (``.json`` or ``.eval``) or a table; ``"-"`` reads
            standard input.
        fresh: The fresh-form runs, one path per fresh form (a single path for K = 1).
        match_key: The field matching a record to its parent (``doc_id``,
            ``doc.parent_id``, ``id``, ``metadata.parent``; a column for a table).
        metric: The per-item correctness: an lm-eval metric (``acc``, or
            ``exact_match,strict-match`` to choose a filter), an Inspect scorer
            (``match``; ``scorer.key`` for a dict value) or a table column. None takes the
            only one there is, and is an error when there are several.
        harness: ``"auto"`` (recognise each run), ``"lm-eval"``, ``"inspect"`` or
            ``"table"``.
        public_match_key: The public run's match key when it differs from the fresh
            runs' (the public run's ``doc.id`` against the fresh runs'
            ``doc.parent_id``); default ``match_key``.

    Returns:
        :class:`~truescore_fast.audit.AuditData` with ``public`` (n,) and ``fresh``
        (n, K) in [0, 1], ready for ``matched_form_audit(data.public, data.fresh)``;
        ``parents`` are the match-key values, ``fresh_forms`` the fresh runs' paths and
        ``model`` the model the Inspect logs name (``"all"`` when no log names one).

    Raises:
        FileNotFoundError: a run does not exist.
        ValueError: a run that is not of the kind named or of any kind known, a record
            without the key or the metric, a score that is not a number in [0, 1], a
            parent twice in one run, fresh runs covering different parents, a parent
            missing from the public run, runs scored by different models, a run given
            twice; every message names the file and the record.
        MissingExtraError: a Parquet table without pyarrow.

    The reader does not check that the fresh forms are faithful rewrites or that the
    parents were sampled at random; see the module docstring.
    """
    check_choice("harness", harness, HARNESSES)
    key = _check_name("match_key", match_key)
    public_key = (
        key if public_match_key is None else _check_name("public_match_key", public_match_key)
    )
    if metric is not None:
        metric = _check_name("metric", metric)
    fresh_paths = _as_paths(fresh)
    _check_distinct(public, fresh_paths)

    public_run = _load(public, harness)
    fresh_runs = [_load(path, harness) for path in fresh_paths]
    public_scores = _scores(public_run, public_key, metric)
    fresh_scores = [_scores(run, key, metric) for run in fresh_runs]
    model = _common_model([public_run, *fresh_runs])

    parents_fresh = fresh_scores[0]
    for run, scores in zip(fresh_runs[1:], fresh_scores[1:], strict=True):
        _check_same_parents(fresh_runs[0], parents_fresh, run, scores)
    missing = [p for p in parents_fresh if p not in public_scores]
    if missing:
        raise ValueError(
            f"public run {public_run.where} has no record for {len(missing)} of the "
            f"{len(parents_fresh)} parents of the fresh runs ({public_key} = "
            f"{_listing(missing)}): every parent needs a score on its public form"
        )
    parents = [p for p in public_scores if p in parents_fresh]
    labels = tuple(run.where for run in fresh_runs)
    return AuditData(
        model=model,
        parents=tuple(parents),
        fresh_forms=tuple(labels for _ in parents),
        public=np.array([public_scores[p] for p in parents], dtype=np.float64),
        fresh=np.array(
            [[scores[p] for scores in fresh_scores] for p in parents], dtype=np.float64
        ).reshape(len(parents), len(fresh_scores)),
    )


# ----------------------------------------------------------------------------- arguments


def _check_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string; got {value!r}")
    return value.strip()


def _as_paths(
    fresh: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[str | os.PathLike[str]]:
    if isinstance(fresh, (str, os.PathLike)):
        return [fresh]
    if not isinstance(fresh, Sequence) or isinstance(fresh, (bytes, bytearray)):
        raise ValueError(f"fresh must be a path or a sequence of paths; got {fresh!r}")
    paths = list(fresh)
    if not paths:
        raise ValueError("fresh must name at least one fresh-form run")
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise ValueError(f"fresh must hold paths; got {path!r}")
    return paths


def _identity(path: str | os.PathLike[str]) -> str:
    if isinstance(path, str) and path == STDIN:
        return STDIN
    return str(Path(path).resolve())


def _check_distinct(
    public: str | os.PathLike[str], fresh: Sequence[str | os.PathLike[str]]
) -> None:
    if not isinstance(public, (str, os.PathLike)):
        raise ValueError(f"public must be a path; got {public!r}")
    seen: dict[str, str] = {}
    for role, path in [("public", public), *(("fresh", p) for p in fresh)]:
        ident = _identity(path)
        if ident in seen:
            what = "standard input ('-')" if ident == STDIN else f"{os.fspath(path)}"
            raise ValueError(
                f"{what} is given as a {seen[ident]} run and again as a {role} run: each "
                "form needs its own run"
                + (" (standard input can be read once)" if ident == STDIN else "")
            )
        seen[ident] = role


# ------------------------------------------------------------------------------ reading


def _load(path: str | os.PathLike[str], harness: str) -> _Run:
    where, data = read_input_bytes(path)
    suffix = table_suffix(path)
    sniffed = sniff_format(data)
    if suffix == ".eval" and sniffed != "zip":
        raise ValueError(f"{where}: not a .eval archive (an Inspect .eval log is a zip file)")
    if sniffed == "zip":
        if harness not in ("auto", "inspect"):
            raise ValueError(f"{where} is a zip archive (an Inspect .eval log), not {harness}")
        return _inspect_archive(where, data)
    if sniffed == "parquet" or suffix in _TABLE_SUFFIXES:
        if harness not in ("auto", "table"):
            raise ValueError(f"{where} is a table ({suffix or sniffed}), not {harness} output")
        if sniffed == "parquet" or suffix in (".parquet", ".pq"):
            rows = _parquet_rows(data, where)
        else:
            kind = "tsv" if suffix in (".tsv", ".tab") or sniffed == "tsv" else "csv"
            rows = _text_rows(decode_text(data, where), kind, where)
        return _table_run(where, rows)
    text = decode_text(data, where)
    document = _whole_json_object(text, where)
    if document is not None and "samples" in document:
        if harness not in ("auto", "inspect"):
            raise ValueError(f"{where} is an Inspect log (it has 'samples'), not {harness}")
        return _inspect_log(where, document)
    if harness == "inspect":
        raise ValueError(
            f"{where} is not an Inspect log: expected a JSON object with 'eval' and "
            "'samples' (a .json log written with samples) or a .eval archive"
        )
    rows = [document] if document is not None else _text_rows(text, "json", where)
    if not rows:
        raise ValueError(f"{where} has no records")
    if harness == "lm-eval" or (harness == "auto" and _looks_like_lm_eval(rows[0])):
        return _lm_eval_run(where, rows)
    return _table_run(where, rows)


def _whole_json_object(text: str, where: str) -> dict[str, Any] | None:
    """The text as one JSON object, or None when it is JSON Lines or an array."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        return None  # several lines of objects: JSON Lines
    except RecursionError:
        raise ValueError(f"{where}: JSON nested too deeply to read") from None
    return value if isinstance(value, dict) else None


def _looks_like_lm_eval(row: Mapping[str, Any]) -> bool:
    return "doc_id" in row and any(f in row for f in ("resps", "filtered_resps", "arguments"))


def _lm_eval_run(where: str, rows: list[dict[str, Any]]) -> _Run:
    if not _looks_like_lm_eval(rows[0]):
        raise ValueError(
            f"{where} is not an lm-evaluation-harness samples file: its first record has no "
            "'doc_id' with 'resps'/'filtered_resps' (write one with --log_samples)"
        )
    records = [_Record(f"{where} record {i}", row, i, None) for i, row in enumerate(rows, 1)]
    return _Run(where, "lm-eval", None, records)


def _table_run(where: str, rows: list[dict[str, Any]]) -> _Run:
    if not rows:
        raise ValueError(f"{where} has no rows")
    records = [_Record(f"{where} row {i}", row, i, None) for i, row in enumerate(rows, 1)]
    return _Run(where, "table", None, records)


def _inspect_log(where: str, document: Mapping[str, Any]) -> _Run:
    samples = document.get("samples")
    if not isinstance(samples, list) or not samples:
        raise ValueError(
            f"{where}: an Inspect log without samples (was it written with "
            "--no-log-samples, or did the run fail? status: "
            f"{document.get('status', 'unknown')})"
        )
    return _Run(where, "inspect", _inspect_model(document), _inspect_records(where, samples))


def _inspect_model(header: Mapping[str, Any] | None) -> str | None:
    spec = header.get("eval") if isinstance(header, Mapping) else None
    model = spec.get("model") if isinstance(spec, Mapping) else None
    return model if isinstance(model, str) and model else None


def _inspect_records(where: str, samples: Sequence[Any]) -> list[_Record]:
    records = []
    for number, sample in enumerate(samples, 1):
        if not isinstance(sample, Mapping):
            raise ValueError(
                f"{where} sample {number}: expected a JSON object; got {type(sample).__name__}"
            )
        sample_id = sample.get("id", number)
        epoch = sample.get("epoch", 1)
        label = f"{where} sample {sample_id!r} epoch {epoch}"
        records.append(_Record(label, sample, _text(sample_id), epoch))
    return records


def _inspect_archive(where: str, data: bytes) -> _Run:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ValueError(f"{where}: not a readable .eval archive ({error})") from None
    with archive:
        names: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            names[info.filename] = info  # a sample logged again: the last copy wins
        header = None
        for member in ("header.json", "_journal/start.json"):
            if member in names:
                header = _archive_json(archive, names[member], where)
                break
        samples = []
        for name, info in names.items():
            if name.startswith("samples/") and name.endswith(".json"):
                samples.append(_archive_json(archive, info, where))
    if not samples:
        raise ValueError(
            f"{where}: a .eval archive without samples/ (was it written with "
            "--no-log-samples, or did the run stop before scoring?)"
        )
    model = _inspect_model(header if isinstance(header, Mapping) else None)
    return _Run(where, "inspect", model, _inspect_records(where, samples))


def _archive_json(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> Any:
    member = f"{where} member {info.filename}"
    try:
        raw = archive.read(info)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
        raise ValueError(f"{member}: cannot read ({error})") from None
    return parse_json(decode_text(raw, member), member)


# ------------------------------------------------------------------------ key and metric


def _lookup(fields: Mapping[str, Any], path: str) -> tuple[bool, Any]:
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


def _field_names(fields: Mapping[str, Any]) -> str:
    names = []
    for name, value in fields.items():
        if isinstance(value, Mapping) and name in ("doc", "metadata"):
            names += [f"{name}.{inner}" for inner in value]
        else:
            names.append(str(name))
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")


def _text(value: Any) -> str:
    return str(value).strip()


def _key_value(record: _Record, key: str) -> str:
    found, value = _lookup(record.fields, key)
    if not found:
        raise ValueError(
            f"{record.where}: no field {key!r} to match parents by (fields: "
            f"{_field_names(record.fields)})"
        )
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not _text(value):
        raise ValueError(
            f"{record.where}: the match key {key} must be a non-empty string or an integer; "
            f"got {value!r}"
        )
    return _text(value)


def _correctness(value: Any, where: str, metric: str) -> float:
    """A score mapped to [0, 1] as Inspect's default value_to_float maps it, or an error."""
    number: float | None = None
    if isinstance(value, bool):
        number = float(value)
    elif isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if text in _GRADES:
            number = _GRADES[text]
        elif text.lower() in _WORDS:
            number = _WORDS[text.lower()]
        else:
            try:
                number = float(text)
            except ValueError:
                number = None
    if number is None:
        raise ValueError(
            f"{where}: {metric} = {value!r} is not a per-item score (expected a number, a "
            "boolean, yes/no/true/false or an Inspect grade C/P/I/N)"
        )
    if not (math.isfinite(number) and 0.0 <= number <= 1.0):
        raise ValueError(f"{where}: {metric} must be a score in [0, 1]; got {value!r}")
    return number


_Reader = tuple[str, Callable[[_Record], Any], list[_Record]]


def _metric_reader(run: _Run, metric: str | None) -> _Reader:
    """(the metric's name, a function giving a record's raw score, the records it scores)."""
    if run.kind == "inspect":
        return _inspect_metric(run, metric)
    if run.kind == "lm-eval":
        return _lm_eval_metric(run, metric)
    if metric is None:
        raise ValueError(
            f"metric must name the column of {run.where} that holds the per-item "
            f"correctness (columns: {_field_names(run.records[0].fields)})"
        )
    name = metric

    def column(record: _Record) -> Any:
        found, value = _lookup(record.fields, name)
        if not found:
            raise ValueError(
                f"{record.where}: no column {name!r} (columns: {_field_names(record.fields)})"
            )
        return value

    return name, column, run.records


def _lm_eval_metric(run: _Run, metric: str | None) -> _Reader:
    records = run.records
    names = [str(n) for n in run.records[0].fields.get("metrics") or []]
    filters = sorted({_text(r.fields.get("filter", "none")) for r in run.records})
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
        records = [r for r in records if _text(r.fields.get("filter", "none")) == chosen_filter]

    def value(record: _Record) -> Any:
        if name not in record.fields:
            listed = record.fields.get("metrics") or []
            raise ValueError(
                f"{record.where}: no metric {name!r} (this record has "
                f"{', '.join(str(n) for n in listed) or 'no metrics list'})"
            )
        return record.fields[name]

    return name, value, records


def _inspect_metric(run: _Run, metric: str | None) -> _Reader:
    if metric is None:
        scorers: list[str] = []
        for record in run.records:
            scores = record.fields.get("scores")
            if isinstance(scores, Mapping):
                scorers += [str(s) for s in scores if str(s) not in scorers]
        if len(scorers) != 1:
            raise ValueError(
                f"metric must name the scorer of {run.where} that gives the per-item "
                f"correctness: it has {', '.join(scorers) or 'no scores'}"
            )
        metric = scorers[0]
    name = metric

    def value(record: _Record) -> Any:
        scores = record.fields.get("scores")
        if not isinstance(scores, Mapping) or not scores:
            raise ValueError(
                f"{record.where}: no scores (did the sample fail before it was scored?)"
            )
        scorer, key = name, None
        if scorer not in scores and "." in name:
            scorer, key = name.rsplit(".", 1)
        if scorer not in scores:
            raise ValueError(
                f"{record.where}: no scorer {name!r} (it has {', '.join(map(str, scores))})"
            )
        score = scores[scorer]
        raw = score.get("value") if isinstance(score, Mapping) else None
        if isinstance(raw, Mapping):
            if key is None:
                raise ValueError(
                    f"{record.where}: scorer {scorer!r} gives several values "
                    f"({', '.join(map(str, raw))}): name one with the metric "
                    f"(--metric {scorer}.<name>)"
                )
            if key not in raw:
                raise ValueError(
                    f"{record.where}: scorer {scorer!r} has no value {key!r} "
                    f"(it has {', '.join(map(str, raw))})"
                )
            return raw[key]
        if key is not None:
            raise ValueError(f"{record.where}: no scorer {name!r} (it has {scorer!r})")
        return raw

    return name, value, run.records


def _scores(run: _Run, key: str, metric: str | None) -> dict[str, float]:
    """``{parent: score}`` of one run, epochs of one Inspect sample averaged."""
    name, raw_score, records = _metric_reader(run, metric)
    found: dict[str, list[tuple[_Record, float]]] = {}
    for record in records:
        parent = _key_value(record, key)
        score = _correctness(raw_score(record), record.where, name)
        entries = found.setdefault(parent, [])
        if entries:
            first = entries[0][0]
            same_sample = run.kind == "inspect" and first.identity == record.identity
            if not same_sample or any(r.epoch == record.epoch for r, _ in entries):
                raise ValueError(
                    f"{record.where}: {key} = {parent!r} appears again (first at "
                    f"{first.where}): a run holds one record per parent; give each "
                    "fresh form as its own run"
                )
        entries.append((record, score))
    return {parent: float(np.mean([s for _, s in e])) for parent, e in found.items()}


def _common_model(runs: Sequence[_Run]) -> str:
    named = [(run.where, run.model) for run in runs if run.model is not None]
    models = {model for _, model in named}
    if len(models) > 1:
        raise ValueError(
            "the runs were scored by different models ("
            + "; ".join(f"{where}: {model}" for where, model in named)
            + "): an audit compares one model's forms"
        )
    return models.pop() if models else ALL_MODELS


def _check_same_parents(
    first: _Run, first_scores: Mapping[str, float], run: _Run, scores: Mapping[str, float]
) -> None:
    missing = [p for p in first_scores if p not in scores]
    extra = [p for p in scores if p not in first_scores]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"lacks {len(missing)} parent(s) of {first.where} ({_listing(missing)})")
        if extra:
            parts.append(f"has {len(extra)} parent(s) {first.where} lacks ({_listing(extra)})")
        raise ValueError(
            f"fresh run {run.where} "
            + " and ".join(parts)
            + ": every fresh run must score the same parents"
        )


def _listing(values: Sequence[str]) -> str:
    shown = ", ".join(repr(v) for v in values[:_MAX_LISTED])
    return shown + (", ..." if len(values) > _MAX_LISTED else "")

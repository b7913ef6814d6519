"""Evaluation-harness outputs read directly for the matched-form audit.

A matched-form audit scores every sampled parent item on its public form and on K fresh
forms. Users run those scorings with an evaluation harness, one run per form, and
:func:`read_harness_runs` turns the runs into the arrays :func:`matched_form_audit`
takes. The user names which run is the public form and which are fresh forms, the field
that matches a record to its parent (``match_key``) and the per-item correctness
(``metric``). The kinds of run read (:data:`HARNESSES`, less ``"auto"``):

``lm-eval``
    lm-evaluation-harness ``--log_samples`` output, ``samples_<task>_<date>.jsonl``: one
    JSON object per line per (document, filter) with ``doc_id``, ``doc``, ``target``,
    ``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics`` (the names of
    the per-item metrics) and each metric's value as a top-level field (``acc``,
    ``exact_match``, ...). ``metric`` is a metric name, or ``"name,filter"`` (the
    harness's own ``exact_match,strict-match`` spelling) when the task has several
    filters. A file holding one JSON array of such objects is read too. The model is
    read from the ``results_<date>.json`` lm-eval writes beside the samples files (same
    date); a results file given in place of a samples file is refused, saying so.
    ``doc_id`` is the document's row in its task's dataset: a run matched by it gets a
    warning (it pairs the forms by position).
``inspect``
    Inspect eval logs, both formats Inspect writes: the JSON log (one ``EvalLog``
    object: ``eval`` with the task and model, ``samples`` each with ``id``, ``epoch``,
    ``scores`` ``{scorer: {value, answer, explanation, metadata}}`` and ``metadata``)
    and the ``.eval`` archive (a zip with ``header.json``, ``reductions.json`` and one
    ``samples/<id>_epoch_<n>.json`` per sample, each member Zstandard-compressed as
    Inspect writes them, or deflated). ``metric`` is a scorer name, or ``"scorer.key"``
    for a scorer whose value is a dict. A sample's epochs reduce to the score Inspect
    reports: the log's ``reductions``, else its recorded ``epochs_reducer`` applied here
    (mean by default, median, mode, max, at_least_k, pass_at_k, pass_k), so a parent's
    score may lie strictly between 0 and 1. A sample logged with an ``error`` is refused,
    quoting it, unless ``drop_errored``; a run whose ``status`` is not ``success`` (or a
    ``.eval`` without ``header.json``), a log without samples and a log format
    ``version`` newer than the reader knows are refused.
``table``
    Any table :func:`~truescore_fast._files.read_rows` reads (CSV, TSV, JSON Lines,
    Parquet), one row per item: ``match_key`` and ``metric`` are column names.

Any of these may be gzip-compressed (``samples_<task>_<date>.jsonl.gz``, ``log.json.gz``):
the content is recognised by gzip's magic bytes and read as the file it holds. Runs whose
logs name different models are refused.

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
record each (after reducing epochs); the public run must hold every one of them and may
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
  ``json`` and ``zipfile`` from the standard library, with Zstandard from
  ``compression.zstd`` (Python 3.14) or the small ``zstandard`` package, need no extra,
  and every error names the file, the record and the problem. The examples in
  ``examples/harness/`` are written by this project in the documented formats;
  ``tests/io/harness_logs/`` holds logs written by Inspect 0.3.285 and
  lm-evaluation-harness 0.4.13 themselves, and the tests check that each form's mean
  read from them equals the metric the harness reported. A log of a newer format
  version is refused; other format changes show as a reader error naming the missing
  field, not as a wrong number.

What a result does not mean: the reader checks that every parent was scored on every
form and that the runs agree on the model when their logs say which; it cannot check
that the fresh forms are faithful rewrites of their parents, that the parents were
sampled at random, or that the runs used the same prompts and settings.

How a run is recognised, and how to add a format: each kind of run is one reader, a
``HarnessReader`` (``io/_harness_base.py``) defined in its own module
(``io/_lm_eval.py``, ``io/_inspect.py``, ``io/_table.py``) with its own sniffing, its
loading and its metric reader, named in the catalog (``truescore_fast/_catalog.py``) and
registered here at import; :data:`HARNESSES` is ``"auto"`` and the registered names, in
registration order. ``harness="auto"`` asks the readers, in that order, to claim a run
by its bytes and name (a zip archive is an Inspect ``.eval`` log; ``.csv``, ``.tsv``,
Parquet are tables), then by its text read as one JSON object (an Inspect log has
``samples``), then guesses from its first JSON record (lm-eval's ``doc_id`` with
``resps``); what nothing recognises is read as a table. A run claimed by another reader
than the one named is refused, saying what it is ("... is a table (.csv), not inspect
output"). A new format is one module defining its reader, one entry of
:data:`truescore_fast._catalog.HARNESS_FORMATS` (its place there is its place in
``HARNESSES`` and in the order of claims; the command line's ``--harness`` choices are
read from there without importing a reader), its entry in the list of formats above, and
its tests in ``tests/io/test_harness.py``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from truescore_fast import _catalog
from truescore_fast._files import STDIN, run_budget
from truescore_fast._validation import check_bool, check_choice, one_line
from truescore_fast.audit.data import AuditData
from truescore_fast.errors import ArgumentError
from truescore_fast.io._harness_base import (
    HarnessReader,
    Run,
)
from truescore_fast.io._runs import READERS, common_model, errored_parents, load_run, run_scores

__all__ = ["HARNESSES", "read_harness_runs"]

HARNESSES: tuple[str, ...] = ("auto",)
"""The values of ``harness``: ``"auto"`` recognises each run by its content."""

_MAX_LISTED = 5

# --------------------------------------------------------------------------- the registry


def _register(reader: HarnessReader) -> None:
    """Add a format to the registry (and its name to ``HARNESSES``)."""
    global HARNESSES
    if reader.name == "auto" or reader.name in READERS:
        raise ValueError(f"the harness name {reader.name!r} is taken")
    if reader.catch_all and any(r.catch_all for r in READERS.values()):
        raise ValueError(f"{reader.name!r}: only one harness format reads what none recognises")
    READERS[reader.name] = reader
    HARNESSES = ("auto", *READERS)


def _unregister(name: str) -> None:
    """Remove a format from the registry (and its name from ``HARNESSES``)."""
    global HARNESSES
    del READERS[name]
    HARNESSES = ("auto", *READERS)


for _format in _catalog.HARNESS_FORMATS:
    _register(_catalog.load(_format.reader))
del _format


def read_harness_runs(
    public: str | os.PathLike[str],
    fresh: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    match_key: str,
    metric: str | None = None,
    harness: str = "auto",
    public_match_key: str | None = None,
    drop_errored: bool = False,
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
            ``"table"``: one of :data:`HARNESSES`.
        public_match_key: The public run's match key when it differs from the fresh
            runs' (the public run's ``doc.id`` against the fresh runs'
            ``doc.parent_id``); default ``match_key``.
        drop_errored: Drop every parent that has a sample the harness logged as errored
            (Inspect's ``error``) in any run, and say how many with a warning: parents
            that fail are not a random sample of the parents, so dropping them can bias
            the estimate. Default False: an errored sample is an error naming it.

    Returns:
        :class:`~truescore_fast.audit.matched_form.AuditData` with ``public`` (n,) and ``fresh``
        (n, K) in [0, 1], ready for ``matched_form_audit(data.public, data.fresh)``;
        ``parents`` are the match-key values, ``fresh_forms`` the fresh runs' paths,
        ``model`` the model the logs name (``"all"`` when no log names one) and
        ``dropped`` the parents ``drop_errored`` dropped.

    Raises:
        FileNotFoundError: a run does not exist.
        ValueError: a run that is not of the kind named or of any kind known, a record
            without the key or the metric, a score that is not a number in [0, 1], a
            parent twice in one run, fresh runs covering different parents, a parent
            missing from the public run, runs scored by different models, a run given
            twice, a sample that errored (without ``drop_errored``), an Inspect run that
            did not finish or a log format version newer than the reader knows; every
            message names the file and the record.
        MissingExtraError: a Parquet table without pyarrow.

    Warns:
        UserWarning: parents dropped by ``drop_errored``; an lm-eval run matched by
            ``doc_id`` (a row index: it pairs the forms by position).

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
    check_bool("drop_errored", drop_errored)
    fresh_paths = _as_paths(fresh)
    _check_distinct(public, fresh_paths)

    with run_budget():  # the runs are held together: one total for all they decompress
        public_reader, public_run = load_run(public, harness)
        fresh_read = [load_run(path, harness) for path in fresh_paths]
    fresh_runs = [run for _, run in fresh_read]
    model = common_model([public_run, *fresh_runs])
    keyed = [(public_reader, public_run, public_key), *((r, run, key) for r, run in fresh_read)]
    for reader in {id(r): r for r, _, _ in keyed}.values():
        positional = [run.where for r, run, k in keyed if r is reader and k in r.positional_keys]
        if positional:
            more = f" (and {len(positional) - 1} other run(s))" if len(positional) > 1 else ""
            warning = reader.positional_warning.format(where=positional[0] + more)
            warnings.warn(warning, stacklevel=2)
    dropped = errored_parents(keyed, drop_errored)
    if dropped:
        warnings.warn(
            f"dropped {len(dropped)} parent(s) with an errored sample ({_listing(dropped)}): "
            "the parents that fail are not a random sample of the parents, so dropping "
            "them can bias the estimate",
            stacklevel=2,
        )
    public_scores = run_scores(public_reader, public_run, public_key, metric, dropped)
    fresh_scores = [run_scores(reader, run, key, metric, dropped) for reader, run in fresh_read]

    parents_fresh = fresh_scores[0]
    for run, scores in zip(fresh_runs[1:], fresh_scores[1:], strict=True):
        _check_same_parents(fresh_runs[0], parents_fresh, run, scores)
    missing = [p for p in parents_fresh if p not in public_scores]
    if missing:
        raise ArgumentError(
            "public",
            f"public run {public_run.where} has no record for {len(missing)} of the "
            f"{len(parents_fresh)} parents of the fresh runs ({public_key} = "
            f"{_listing(missing)}): every parent needs a score on its public form",
        )
    parents = [p for p in public_scores if p in parents_fresh]
    if dropped and not parents:
        raise ValueError(
            f"every parent had an errored sample ({len(dropped)} dropped): no parent is "
            "left to audit; run the evaluation again"
        )
    labels = tuple(run.where for run in fresh_runs)
    return AuditData(
        model=model,
        parents=tuple(parents),
        fresh_forms=tuple(labels for _ in parents),
        public=np.array([public_scores[p] for p in parents], dtype=np.float64),
        fresh=np.array(
            [[scores[p] for scores in fresh_scores] for p in parents], dtype=np.float64
        ).reshape(len(parents), len(fresh_scores)),
        dropped=tuple(dropped),
    )


# ----------------------------------------------------------------------------- arguments


def _check_name(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(name, f"{name} must be a non-empty string; got {one_line(value)}")
    return value.strip()


def _as_paths(
    fresh: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> list[str | os.PathLike[str]]:
    if isinstance(fresh, (str, os.PathLike)):
        return [fresh]
    if not isinstance(fresh, Sequence) or isinstance(fresh, (bytes, bytearray)):
        raise ArgumentError(
            "fresh", f"fresh must be a path or a sequence of paths; got {one_line(fresh)}"
        )
    paths = list(fresh)
    if not paths:
        raise ArgumentError("fresh", "fresh must name at least one fresh-form run")
    for path in paths:
        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentError("fresh", f"fresh must hold paths; got {one_line(path)}")
    return paths


def _identity(path: str | os.PathLike[str]) -> str:
    if isinstance(path, str) and path == STDIN:
        return STDIN
    return str(Path(path).resolve())


def _check_distinct(
    public: str | os.PathLike[str], fresh: Sequence[str | os.PathLike[str]]
) -> None:
    if not isinstance(public, (str, os.PathLike)):
        raise ArgumentError("public", f"public must be a path; got {one_line(public)}")
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


def _check_same_parents(
    first: Run, first_scores: Mapping[str, float], run: Run, scores: Mapping[str, float]
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

"""A suite read from a manifest of evaluation-harness runs (:func:`read_suite_manifest`).

The manifest is a table (CSV, TSV, JSON Lines or Parquet, gzip or not) with one row per
(model, benchmark, form): columns ``model``, ``benchmark``, ``form`` and ``path``. ``form``
is ``public``, a fresh form (``fresh1``, ...), ``reference`` (the model's run on the
reference benchmark, its own items) or ``loglik`` (the pair's log-likelihood table for
the order-based test, in the ``contamination`` command's format: ``kind``, ``loglik``,
optional ``shard``). ``path`` names the run: an lm-evaluation-harness samples file, an
Inspect log or a table, each read by the harness readers of
:mod:`truescore_fast.io.harness`; a relative path is read from the manifest's folder.

What it does not check: that the runs of a pair used the same prompts and settings, that
the fresh forms are faithful rewrites, or that the model a run's log names is the model
the manifest names (runs whose logs name different models within one pair are refused).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from truescore_fast._files import read_columns, run_budget
from truescore_fast._validation import check_bool, check_choice, one_line
from truescore_fast.errors import ArgumentError
from truescore_fast.io._runs import common_model, errored_parents, load_run, run_scores
from truescore_fast.io.harness import HARNESSES
from truescore_fast.suite.data import OrderData, SuiteData, read_order_table

__all__ = ["MANIFEST_COLUMNS", "read_suite_manifest"]

#: The manifest's columns.
MANIFEST_COLUMNS: tuple[str, ...] = ("model", "benchmark", "form", "path")


def read_suite_manifest(
    manifest: str | os.PathLike[str],
    *,
    match_key: str,
    metric: str | None = None,
    harness: str = "auto",
    public_form: str = "public",
    drop_errored: bool = False,
) -> SuiteData:
    """Read a suite from a manifest of harness runs (see the module docstring).

    Args:
        manifest: The manifest table's path.
        match_key: The field matching a record to its parent (``doc_id``,
            ``doc.parent_id``, ``id``, ``metadata.parent``; a column for a table), the same
            in every run; a reference run's parents are its own.
        metric: The per-item correctness (an lm-eval metric, an Inspect scorer, a column);
            None takes the only one there is.
        harness: ``"auto"`` or one of :data:`~truescore_fast.io.harness.HARNESSES`.
        public_form: The form value marking the public run.
        drop_errored: Leave out the samples a harness logged as errored (Inspect) instead
            of refusing them; their parents then lack that form.

    Returns:
        A :class:`~truescore_fast.suite.data.SuiteData`.

    Raises:
        FileNotFoundError: the manifest or a run does not exist.
        ValueError: a missing column, an empty cell, a form given twice for a pair, a run
            that cannot be read (the harness readers' errors), a fresh run with parents
            the public run lacks, runs of one pair naming different models.
    """
    check_choice("harness", harness, HARNESSES)
    check_bool("drop_errored", drop_errored)
    for argument, given in (("match_key", match_key), ("public_form", public_form)):
        if not isinstance(given, str) or not given.strip():
            raise ArgumentError(
                argument, f"{argument} must be a non-empty string; got {one_line(given)}"
            )
    if metric is not None and (not isinstance(metric, str) or not metric.strip()):
        raise ArgumentError(
            "metric", f"metric must be None or a non-empty string; got {one_line(metric)}"
        )
    if not isinstance(manifest, (str, os.PathLike)):
        raise ArgumentError("manifest", f"manifest must be a path; got {one_line(manifest)}")
    folder = Path(manifest).parent
    cols = read_columns(manifest, "manifest", expected=", ".join(MANIFEST_COLUMNS))
    missing = [c for c in MANIFEST_COLUMNS if c not in cols]
    if missing:
        raise ArgumentError(
            "manifest", f"manifest is missing the column(s) {missing}; got {sorted(cols)}"
        )
    runs: dict[tuple[str, str], dict[str, Path]] = {}
    row_of: dict[tuple[str, str, str], int] = {}
    for i in range(len(cols["path"])):
        model, benchmark, form, path = (str(cols[c][i] or "").strip() for c in MANIFEST_COLUMNS)
        if not (model and benchmark and form and path):
            raise ArgumentError(
                "manifest", f"manifest row {i + 1}: empty model, benchmark, form or path"
            )
        forms = runs.setdefault((model, benchmark), {})
        if form in forms:
            raise ArgumentError(
                "manifest",
                f"manifest row {i + 1}: form {form!r} of model {model!r} on {benchmark!r} "
                "given twice",
            )
        forms[form] = folder / path
        row_of[(model, benchmark, form)] = i + 1
    key = match_key.strip()
    scores: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    references: dict[tuple[str, str], dict[str, float]] = {}
    orders: dict[tuple[str, str], OrderData] = {}
    for pair, forms in runs.items():
        with run_budget(separate=True):  # the runs of one pair are held together
            loaded = {
                form: _in_row(row_of[(pair[0], pair[1], form)], load_run, path, harness)
                for form, path in forms.items()
                if form != "loglik"
            }
        common_model([run for _, run in loaded.values()])
        read: dict[str, dict[str, float]] = {
            form: run_scores(
                reader, run, key, metric, errored_parents([(reader, run, key)], drop_errored)
            )
            for form, (reader, run) in loaded.items()
        }
        if "reference" in read:
            references[pair] = read.pop("reference")
        if "loglik" in forms:
            orders[pair] = read_order_table(forms["loglik"], name=str(forms["loglik"]))
        if read:
            scores[pair] = _pair_forms(pair, read, public_form, forms)
    return SuiteData.from_scores(
        scores, references=references, orders=orders, public_form=public_form
    )


def _in_row(row: int, read: Any, *args: Any) -> Any:
    """``read(*args)``, an error it raises prefixed by the manifest row that named the run."""
    try:
        return read(*args)
    except FileNotFoundError as error:
        raise FileNotFoundError(f"manifest row {row}: {error}") from None
    except ValueError as error:
        raise ValueError(f"manifest row {row}: {error}") from None


def _pair_forms(
    pair: tuple[str, str],
    read: dict[str, dict[str, float]],
    public_form: str,
    paths: dict[str, Path],
) -> dict[str, dict[str, float]]:
    """``{parent: {form: score}}`` of one pair's public and fresh runs."""
    if public_form not in read:
        raise ValueError(
            f"model {pair[0]!r} on {pair[1]!r} has fresh runs but no {public_form!r} run"
        )
    parents = {p: {public_form: v} for p, v in read[public_form].items()}
    for form, values in read.items():
        if form == public_form:
            continue
        extra = [p for p in values if p not in parents]
        if extra:
            raise ValueError(
                f"fresh run {paths[form]} has {len(extra)} parent(s) the public run "
                f"{paths[public_form]} lacks ({', '.join(map(repr, extra[:5]))}): every "
                "fresh parent needs its public form"
            )
        for parent, value in values.items():
            parents[parent][form] = value
    return parents

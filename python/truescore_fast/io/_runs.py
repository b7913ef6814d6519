"""Reading harness runs through the registry of readers: :data:`READERS` (filled by
:mod:`truescore_fast.io.harness` from the catalog), a run loaded by the reader that
claims it, its per-parent scores, its errored parents and the model it names. Shared by
:func:`~truescore_fast.io.harness.read_harness_runs` and
:func:`~truescore_fast.io.suite.read_suite_manifest`. Not a public API (the module is
private).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from truescore_fast.audit.data import ALL_MODELS
from truescore_fast.errors import ArgumentError, literal
from truescore_fast.io._harness_base import (
    HarnessReader,
    MetricReader,
    Record,
    Run,
    RunFile,
    correctness,
    key_value,
)

__all__ = ["READERS", "common_model", "errored_parents", "load_run", "run_scores"]

READERS: dict[str, HarnessReader] = {}
"""The harness formats by name, in registration order: the order of ``HARNESSES`` and
the order in which ``harness="auto"`` asks them to recognise a run."""


def load_run(path: str | os.PathLike[str], harness: str) -> tuple[HarnessReader, Run]:
    """The run at ``path`` and the reader that read it: the one named, or for ``"auto"``
    the one that recognises it (see :class:`HarnessReader` for the rounds)."""
    file = RunFile(path)
    reader = _claimant(file, harness)
    if reader is None:
        reader = _guess(file) if harness == "auto" else READERS[harness]
    return reader, reader.load(file)


def _claimant(file: RunFile, harness: str) -> HarnessReader | None:
    """The reader that claims the file by its bytes and name, or else by its text read as
    one JSON object; None when no reader claims it. A file claimed by another reader than
    the one named is refused, saying what it is."""
    for reader in READERS.values():
        if reader.claim_file is not None:
            what = reader.claim_file(file)
            if what is not None:
                return _claimed(reader, what, file, harness)
    document = file.document  # read whatever the harness: a text that is not UTF-8 fails here
    if document is not None:
        for reader in READERS.values():
            if reader.claim_document is not None:
                what = reader.claim_document(document)
                if what is not None:
                    return _claimed(reader, what, file, harness)
    return None


def _claimed(reader: HarnessReader, what: str, file: RunFile, harness: str) -> HarnessReader:
    if harness not in ("auto", reader.name):
        raise ValueError(reader.refusal.format(where=file.where, what=what, harness=harness))
    return reader


def _guess(file: RunFile) -> HarnessReader:
    """For ``"auto"``: the reader whose guess takes the file's first record, or the one
    that reads what no reader recognises."""
    first = file.records[0]
    for reader in READERS.values():
        if reader.looks_like is not None and reader.looks_like(first):
            return reader
    for reader in READERS.values():
        if reader.catch_all:
            return reader
    raise ValueError(  # pragma: no cover - the table reads what no other reader recognises
        f"{file.where} is not a run of a known kind ({', '.join(READERS)})"
    )


def errored_parents(keyed: Sequence[tuple[HarnessReader, Run, str]], drop: bool) -> list[str]:
    """The parents with a sample the harness logged as errored, in any run, in the order
    found; an error naming the first such sample and quoting its error unless ``drop``."""
    errored: list[str] = []
    for _, run, key in keyed:
        for record in run.records:
            if record.error is None:
                continue
            if not drop:
                raise ArgumentError(
                    "drop_errored",
                    template=literal(f"{record.where} errored ({record.error})")
                    + ": it has no score; run it again (inspect eval-retry), or drop the "
                    "parents with an errored sample ({drop_errored})",
                )
            parent = key_value(record, key)
            if parent not in errored:
                errored.append(parent)
    return errored


def run_scores(
    reader: HarnessReader, run: Run, key: str, metric: str | None, dropped: Sequence[str]
) -> dict[str, float]:
    """``{parent: score}`` of one run, the epochs of one sample (one identity) reduced by
    the reader's reducer, in epoch order; the parents in ``dropped`` left out."""
    name, raw_score, records, reduce = MetricReader(*reader.metric(run, metric))
    skip = set(dropped)
    found: dict[str, list[tuple[Record, float]]] = {}
    for record in records:
        parent = key_value(record, key)
        if parent in skip:
            continue
        score = correctness(raw_score(record), record.where, name)
        entries = found.setdefault(parent, [])
        if entries:
            first = entries[0][0]
            same_sample = first.identity == record.identity
            if not same_sample or any(r.epoch == record.epoch for r, _ in entries):
                raise ValueError(
                    f"{record.where}: {key} = {parent!r} appears again (first at "
                    f"{first.where}): a run holds one record per parent; give each "
                    "fresh form as its own run"
                )
        entries.append((record, score))
    return {parent: float(reduce([s for _, s in _by_epoch(e)])) for parent, e in found.items()}


def _by_epoch(entries: list[tuple[Record, float]]) -> list[tuple[Record, float]]:
    """One sample's epochs in epoch order (a log lists them in the order they finished)."""
    return sorted(entries, key=lambda pair: pair[0].epoch if isinstance(pair[0].epoch, int) else 0)


def common_model(runs: Sequence[Run]) -> str:
    named = [(run.where, run.model) for run in runs if run.model is not None]
    models = {model for _, model in named}
    if len(models) > 1:
        raise ValueError(
            "the runs were scored by different models ("
            + "; ".join(f"{where}: {model}" for where, model in named)
            + "): an audit compares one model's forms"
        )
    return models.pop() if models else ALL_MODELS

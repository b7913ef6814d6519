"""The ``inspect`` harness format: Inspect eval logs, the JSON log (one ``EvalLog`` object)
and the ``.eval`` zip archive (its members in any compression Inspect writes, Zstandard
included), as :mod:`truescore_fast.io.harness` documents them. Recognised for certain: a
zip archive by its bytes, a JSON log by its ``samples`` (or, written without samples, by
``eval`` with ``status``). ``metric`` is a scorer name or ``"scorer.key"``.

A log is read only when Inspect says the run finished (``status`` ``success``) and its
format ``version`` is one this reader knows. A sample's epochs reduce to the score Inspect
reports for it: the log's ``reductions`` where it has them, else the reducer it records
(``eval.config.epochs_reducer``, the mean by default) applied here. A sample that errored
keeps its error message (:attr:`Record.error`). Not a public API.
"""

from __future__ import annotations

import io
import math
import re
import statistics
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from truescore_fast._files import Budget, decode_text, parse_json
from truescore_fast._text import visible
from truescore_fast.errors import ArgumentError, literal
from truescore_fast.io._archive import read_member
from truescore_fast.io._harness_base import (
    HarnessReader,
    MetricReader,
    Record,
    Run,
    RunFile,
    mean,
    text,
)

__all__ = ["INSPECT", "NEWEST_LOG_VERSION", "REDUCERS"]

NEWEST_LOG_VERSION = 2
"""The newest Inspect log format version this reader knows (Inspect 0.3.285 writes 2)."""

REDUCERS = ("mean", "median", "mode", "max", "at_least_<k>", "pass_at_<k>", "pass_k_<k>")
"""The epoch reducers applied when a log records a reducer but not its reductions."""

_NO_SAMPLES = (
    "{where}: an Inspect log without samples (written with --no-log-samples or "
    "log_samples=False): re-run the evaluation without --no-log-samples"
)


def _claim_file(file: RunFile) -> str | None:
    if file.suffix == ".eval" and file.sniffed != "zip":
        raise ValueError(f"{file.where}: not a .eval archive (an Inspect .eval log is a zip file)")
    return "a zip archive (an Inspect .eval log)" if file.sniffed == "zip" else None


def _claim_document(document: Mapping[str, Any]) -> str | None:
    if "samples" in document:
        return "an Inspect log (it has 'samples')"
    if isinstance(document.get("eval"), Mapping) and "status" in document:
        return "an Inspect log (it has 'eval' and 'status')"
    return None


def _load(file: RunFile) -> Run:
    if file.sniffed == "zip":
        return _archive(file.where, file.data)
    document = file.document
    if document is not None and _claim_document(document) is not None:
        return _log(file.where, document)
    raise ValueError(
        f"{file.where} is not an Inspect log: expected a JSON object with 'eval' and "
        "'samples' (a .json log written with samples) or a .eval archive"
    )


# ----------------------------------------------------------------------- the log itself


def _log(where: str, document: Mapping[str, Any]) -> Run:
    _check_header(where, document)
    samples = document.get("samples")
    if samples is None:
        raise ValueError(_NO_SAMPLES.format(where=where))
    if not isinstance(samples, list) or not samples:
        raise ValueError(
            f"{where}: an Inspect log without samples (its 'samples' is {samples!r}): "
            "nothing to read"
        )
    return _run(where, document, samples, document.get("reductions"))


def _check_header(where: str, header: Mapping[str, Any]) -> None:
    """Refuses a log of a format version this reader does not know, and a run that did not
    finish: an unfinished run's samples are not the evaluation's."""
    version = header.get("version")
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError(f"{where}: the log's format version is {version!r}, not a number")
        if version > NEWEST_LOG_VERSION:
            raise ValueError(
                f"{where}: an Inspect log of format version {version}; this reader knows "
                f"versions up to {NEWEST_LOG_VERSION} (a newer truescore-fast may read it)"
            )
    status = header.get("status")
    if status is not None and status != "success":
        error = header.get("error")
        cause = _message(error) if error else None
        raise ValueError(
            f"{where}: the run's status is {status!r}"
            + (f" ({cause})" if cause else "")
            + ", not 'success': its samples are not a finished evaluation; finish it "
            "(inspect eval-retry) or run it again"
        )


def _message(error: Any) -> str:
    """The first line of an error Inspect logged (``{"message": ..., "traceback": ...}``)."""
    message = error.get("message") if isinstance(error, Mapping) else error
    lines = str(message).strip().splitlines() or [""]
    first = lines[0]
    return first if len(first) <= 200 else first[:197] + "..."


def _run(where: str, header: Mapping[str, Any], samples: Sequence[Any], reductions: Any) -> Run:
    spec = header.get("eval")
    spec = spec if isinstance(spec, Mapping) else {}
    model = spec.get("model")
    config = spec.get("config")
    reducer = config.get("epochs_reducer") if isinstance(config, Mapping) else None
    info = {"reductions": reductions, "epochs_reducer": reducer}
    return Run(
        where, model if isinstance(model, str) and model else None, _records(where, samples), info
    )


def _records(where: str, samples: Sequence[Any]) -> list[Record]:
    records = []
    for number, sample in enumerate(samples, 1):
        if not isinstance(sample, Mapping):
            raise ValueError(
                f"{where} sample {number}: expected a JSON object; got {type(sample).__name__}"
            )
        sample_id = sample.get("id", number)
        epoch = sample.get("epoch", 1)
        label = f"{where} sample {sample_id!r} epoch {epoch}"
        error = sample.get("error")
        message = _message(error) if error else None
        records.append(Record(label, sample, text(sample_id), epoch, message))
    return records


def _archive(where: str, data: bytes) -> Run:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,
        ValueError,
        OSError,
        EOFError,
    ) as error:  # a damaged central directory: zipfile's own errors ("zip file version
        # 24.6" is a NotImplementedError), a seek before the start, a short read
        raise ValueError(f"{where}: not a readable .eval archive ({error})") from None
    budget = Budget(where)  # the bytes every member together may decompress to
    with archive:
        names: dict[str, zipfile.ZipInfo] = {}
        for info in archive.infolist():
            names[info.filename] = info  # a sample logged again: the last copy wins

        def member(name: str) -> Any:
            label = f"{where} member {visible(name)}"
            raw = read_member(data, archive, names[name], label, budget)
            return parse_json(decode_text(raw, label), label)

        if "header.json" not in names:
            start = member("_journal/start.json") if "_journal/start.json" in names else {}
            _check_header(where, start if isinstance(start, Mapping) else {})
            raise ValueError(
                f"{where}: a .eval archive without header.json: the run has not finished "
                "(still running, or stopped before it wrote its results); finish it "
                "(inspect eval-retry) or run it again"
            )
        header = member("header.json")
        if not isinstance(header, Mapping):
            raise ValueError(f"{where} member header.json: expected a JSON object")
        _check_header(where, header)
        samples = [
            member(name)
            for name in names
            if name.startswith("samples/") and name.endswith(".json")
        ]
        reductions = member("reductions.json") if "reductions.json" in names else None
    if not samples:
        raise ValueError(_NO_SAMPLES.format(where=where))
    return _run(where, header, samples, reductions)


# -------------------------------------------------------------------- scores and epochs


def _metric(run: Run, metric: str | None) -> MetricReader:
    if metric is None:
        scorers: list[str] = []
        for record in run.records:
            scores = record.fields.get("scores")
            if isinstance(scores, Mapping):
                scorers += [str(s) for s in scores if str(s) not in scorers]
        if len(scorers) != 1:
            raise ArgumentError(
                "metric",
                f"metric must name the scorer of {run.where} that gives the per-item "
                f"correctness: it has {', '.join(scorers) or 'no scores'}",
            )
        metric = scorers[0]
    name = metric

    def pick(where: str, scores: Any) -> Any:
        """The metric's value among a sample's (or a reduction's) ``{scorer: score}``."""
        if not isinstance(scores, Mapping) or not scores:
            raise ValueError(f"{where}: no scores (did the sample fail before it was scored?)")
        scorer, key = name, None
        if scorer not in scores and "." in name:
            scorer, key = name.rsplit(".", 1)
        if scorer not in scores:
            raise ValueError(f"{where}: no scorer {name!r} (it has {', '.join(map(str, scores))})")
        score = scores[scorer]
        raw = score.get("value") if isinstance(score, Mapping) else None
        if isinstance(raw, Mapping):
            if key is None:
                raise ArgumentError(
                    "metric",
                    template=literal(
                        f"{where}: scorer {scorer!r} gives several values "
                        f"({', '.join(map(str, raw))})"
                    )
                    + ": name one with the metric ({metric} "
                    + literal(f"{scorer}.<name>)"),
                )
            if key not in raw:
                raise ValueError(
                    f"{where}: scorer {scorer!r} has no value {key!r} "
                    f"(it has {', '.join(map(str, raw))})"
                )
            return raw[key]
        if key is not None:
            raise ValueError(f"{where}: no scorer {name!r} (it has {scorer!r})")
        return raw

    reduced = _reductions(run, name)
    if reduced is not None:

        def from_reduction(record: Record) -> Any:
            if record.identity not in reduced:
                raise ValueError(f"{record.where}: the log's reductions have no score for it")
            return pick(record.where, reduced[record.identity])

        return MetricReader(name, from_reduction, run.records, _first)
    reducer = _reducer(run)
    return MetricReader(
        name, lambda r: pick(r.where, r.fields.get("scores")), run.records, reducer
    )


def _reductions(run: Run, name: str) -> dict[str, dict[str, Any]] | None:
    """``{sample id: {scorer: reduced score}}`` of the scorer that ``name`` names, from the
    log's ``reductions`` (one entry per scorer and reducer); None when it has none."""
    reductions = run.info.get("reductions")
    if not isinstance(reductions, list):
        return None
    entries = [e for e in reductions if isinstance(e, Mapping)]
    scorer = name
    if not any(e.get("scorer") == scorer for e in entries) and "." in name:
        scorer = name.rsplit(".", 1)[0]
    mine = [e for e in entries if e.get("scorer") == scorer]
    if not mine:
        return None
    if len(mine) > 1:
        raise ValueError(
            f"{run.where}: the epochs of {scorer!r} are reduced by several reducers "
            f"({', '.join(str(e.get('reducer')) for e in mine)}); an audit needs one score "
            "per sample: run the evaluation with one epochs reducer"
        )
    samples = mine[0].get("samples") or []
    if not isinstance(samples, list):
        raise ValueError(
            f"{run.where}: the reductions of {scorer!r} hold {type(samples).__name__}, not a "
            "list of samples"
        )
    out: dict[str, dict[str, Any]] = {}
    for sample in samples:
        if isinstance(sample, Mapping) and "sample_id" in sample:
            out[text(sample["sample_id"])] = {scorer: sample}
    return out


def _first(scores: Sequence[float]) -> float:
    """Every epoch of a sample carries the sample's reduced score: it, once."""
    return scores[0]


def _reducer(run: Run) -> Callable[[Sequence[float]], float]:
    """The epoch reducer the log records (the mean when it records none), as a function of
    a sample's epoch scores in [0, 1], or an error naming a reducer not known here."""
    recorded = run.info.get("epochs_reducer")
    if recorded is not None and not isinstance(recorded, (str, list)):
        raise ValueError(
            f"{run.where}: eval.config.epochs_reducer must be a reducer's name or a list of "
            f"them; got {type(recorded).__name__}"
        )
    names = [recorded] if isinstance(recorded, str) else list(recorded or ["mean"])
    if len(names) != 1:
        raise ValueError(
            f"{run.where}: the epochs are reduced by several reducers "
            f"({', '.join(map(str, names))}) and the log has no reductions; an audit needs "
            "one score per sample"
        )
    (name,) = names
    plain: dict[str, Callable[[Sequence[float]], float]] = {
        "mean": mean,
        "median": lambda v: float(statistics.median(v)),
        "max": max,
        "mode": lambda v: Counter(v).most_common(1)[0][0],  # ties: the first epoch's value
    }
    if name in plain:
        return plain[name]
    match = re.fullmatch(r"(at_least|pass_at|pass_k)_(\d+)", str(name))
    if match is None:
        raise ValueError(
            f"{run.where}: the epochs are reduced by {name!r}, a reducer this reader does "
            f"not apply ({', '.join(REDUCERS)}), and the log has no reductions to read"
        )
    kind, k = match.group(1), int(match.group(2))

    def counted(values: Sequence[float]) -> float:
        n, correct = len(values), sum(1 for v in values if v >= 1.0)
        if kind == "at_least":
            return 1.0 if correct >= k else 0.0
        if n < k:
            raise ValueError(f"{run.where}: {name} needs {k} epochs per sample; one has {n}")
        if kind == "pass_k":
            return math.comb(correct, k) / math.comb(n, k)
        return 1.0 - math.comb(n - correct, k) / math.comb(n, k)  # pass_at: Chen et al. 2021

    return counted


INSPECT = HarnessReader(
    name="inspect",
    load=_load,
    metric=_metric,
    claim_file=_claim_file,
    claim_document=_claim_document,
)

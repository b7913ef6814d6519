"""The ``inspect`` harness format: Inspect eval logs, the JSON log (one ``EvalLog`` object
with ``samples``) and the ``.eval`` zip archive, as :mod:`truescore_fast.io.harness`
documents them. Recognised for certain: a zip archive by its bytes, a JSON log by its
``samples``. ``metric`` is a scorer name or ``"scorer.key"``; epochs of one sample share
an identity and are averaged. Not a public API.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping, Sequence
from typing import Any

from truescore_fast._files import decode_text, parse_json
from truescore_fast.io._harness_base import (
    HarnessReader,
    MetricReader,
    Record,
    Run,
    RunFile,
    text,
)

__all__ = ["INSPECT"]


def _claim_file(file: RunFile) -> str | None:
    if file.suffix == ".eval" and file.sniffed != "zip":
        raise ValueError(f"{file.where}: not a .eval archive (an Inspect .eval log is a zip file)")
    return "a zip archive (an Inspect .eval log)" if file.sniffed == "zip" else None


def _claim_document(document: Mapping[str, Any]) -> str | None:
    return "an Inspect log (it has 'samples')" if "samples" in document else None


def _load(file: RunFile) -> Run:
    if file.sniffed == "zip":
        return _archive(file.where, file.data)
    document = file.document
    if document is not None and "samples" in document:
        return _log(file.where, document)
    raise ValueError(
        f"{file.where} is not an Inspect log: expected a JSON object with 'eval' and "
        "'samples' (a .json log written with samples) or a .eval archive"
    )


def _log(where: str, document: Mapping[str, Any]) -> Run:
    samples = document.get("samples")
    if not isinstance(samples, list) or not samples:
        raise ValueError(
            f"{where}: an Inspect log without samples (was it written with "
            "--no-log-samples, or did the run fail? status: "
            f"{document.get('status', 'unknown')})"
        )
    return Run(where, _model(document), _records(where, samples))


def _model(header: Mapping[str, Any] | None) -> str | None:
    spec = header.get("eval") if isinstance(header, Mapping) else None
    model = spec.get("model") if isinstance(spec, Mapping) else None
    return model if isinstance(model, str) and model else None


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
        records.append(Record(label, sample, text(sample_id), epoch))
    return records


def _archive(where: str, data: bytes) -> Run:
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
    model = _model(header if isinstance(header, Mapping) else None)
    return Run(where, model, _records(where, samples))


def _archive_json(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> Any:
    member = f"{where} member {info.filename}"
    try:
        raw = archive.read(info)
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
        raise ValueError(f"{member}: cannot read ({error})") from None
    return parse_json(decode_text(raw, member), member)


def _metric(run: Run, metric: str | None) -> MetricReader:
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

    def value(record: Record) -> Any:
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


INSPECT = HarnessReader(
    name="inspect",
    load=_load,
    metric=_metric,
    claim_file=_claim_file,
    claim_document=_claim_document,
)

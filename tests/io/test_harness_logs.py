"""read_harness_runs (truescore_fast.io.harness) on the logs the harnesses themselves wrote
(tests/io/harness_logs/: Inspect 0.3.285 and lm-evaluation-harness 0.4.13 on offline
stand-in models; VERSIONS.txt). The expected numbers are the harnesses' own: each form's
mean score read here must equal the metric the harness reported for that run (Inspect's
``results`` accuracy, lm-eval's ``results_<date>.json``), parsed in this file with plain
json, zipfile and zstandard. Also: errored samples, unfinished runs, logs without
samples, log versions, two models, a results file given by mistake, ``doc_id``."""

from __future__ import annotations

import gzip
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from commands import assert_one_line_error, run_cli
from truescore_fast.cli import ExitCode

if sys.version_info >= (3, 14):
    from compression.zstd import decompress
else:
    from zstandard import ZstdDecompressor

    def decompress(raw):
        return ZstdDecompressor().stream_reader(raw, read_across_frames=True).read()


LOGS = Path(__file__).resolve().parent / "harness_logs"
INSPECT = LOGS / "inspect"
LM_EVAL = LOGS / "lm_eval"
KEY = "metadata.parent_id"


# --------------------------------------------------- the logs parsed here, independently


def eval_members(path: Path) -> dict[str, object]:
    """Every JSON member of an Inspect .eval archive: the Zstandard bytes cut at the local
    header (30 bytes, then the name and the extra field) and decompressed."""
    data = path.read_bytes()
    out = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            at = info.header_offset
            skip = 30 + int.from_bytes(data[at + 26 : at + 28], "little")
            skip += int.from_bytes(data[at + 28 : at + 30], "little")
            raw = data[at + skip : at + skip + info.compress_size]
            out[info.filename] = json.loads(decompress(raw))
    return out


def inspect_log(path: Path) -> dict:
    """An Inspect log as one EvalLog-shaped dict (header, samples, reductions)."""
    if path.suffix == ".eval":
        members = eval_members(path)
        log = dict(members["header.json"])
        log["samples"] = [v for k, v in members.items() if k.startswith("samples/")]
        if "reductions.json" in members:
            log["reductions"] = members["reductions.json"]
        return log
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.suffix == ".gz" else data)


def reported_accuracy(path: Path) -> float:
    (score,) = inspect_log(path)["results"]["scores"]
    return score["metrics"]["accuracy"]["value"]


def write_eval(path: Path, members: dict[str, object]) -> Path:
    """An .eval archive of ``members`` (deflate: what Inspect reads too)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            archive.writestr(name, json.dumps(value))
    return path


def lm_eval_results(model: str) -> dict:
    (path,) = (LM_EVAL / model).glob("results_*.json")
    return json.loads(path.read_text())


def lm_eval_samples(model: str, task: str) -> Path:
    (path,) = (LM_EVAL / model).glob(f"samples_{task}_*.jsonl")
    return path


# ------------------------------------------------------------- Inspect: the numbers


def form_means(data) -> list[float]:
    return [float(np.mean(data.public)), *(float(m) for m in data.fresh.mean(axis=0))]


def test_inspect_default_logs_read_with_the_accuracy_inspect_reports():
    """2 epochs, the mean reducer; .eval (Zstandard) and a (gzipped) .json log."""
    runs = [INSPECT / "mean" / n for n in ("arith-public.eval", "arith-fresh1.eval")]
    runs.append(INSPECT / "mean" / "arith-fresh2.json.gz")
    data = tf.read_harness_runs(runs[0], runs[1:], match_key=KEY, metric="match")
    assert data.model == "mockllm/model" and data.parents == tuple(
        f"arith-{i:02d}" for i in range(8)
    )
    reported = [reported_accuracy(p) for p in runs]
    assert form_means(data) == pytest.approx(reported, abs=1e-12)
    assert np.any((data.fresh > 0) & (data.fresh < 1))  # epochs that disagree: a half


def epoch_mean(path: Path) -> float:
    """The mean over samples of each sample's mean over epochs: what reading every
    reducer as the mean would give."""
    by_id: dict[str, list[float]] = {}
    for sample in inspect_log(path)["samples"]:
        value = sample["scores"]["match"]["value"]
        by_id.setdefault(sample["id"], []).append({"C": 1.0, "I": 0.0}[value])
    return float(np.mean([np.mean(v) for v in by_id.values()]))


def test_a_max_reducer_reads_as_inspect_reports_it_not_as_the_mean():
    public, fresh = INSPECT / "max" / "arith-public.eval", INSPECT / "max" / "arith-fresh1.eval"
    data = tf.read_harness_runs(public, fresh, match_key=KEY)
    reported = [reported_accuracy(public), reported_accuracy(fresh)]
    assert form_means(data) == pytest.approx(reported, abs=1e-12)
    # the mean of the epochs is another number here: the test tells the two apart
    assert epoch_mean(fresh) < reported[1] - 0.1


REDUCED = sorted((INSPECT / "reducers").glob("*.eval"))


@pytest.mark.parametrize("log", REDUCED, ids=[p.stem for p in REDUCED])
def test_each_reducer_from_the_reductions_and_applied_here(tmp_path, log):
    """median, mode, at_least_2, pass_at_2 over 4 epochs: read from the log's reductions,
    then from a copy without them, where the reader applies the recorded reducer."""
    public = INSPECT / "mean" / "arith-public.eval"
    reported = reported_accuracy(log)
    assert abs(epoch_mean(log) - reported) > 0.02  # the mean would be another number
    data = tf.read_harness_runs(public, log, match_key=KEY)
    assert float(np.mean(data.fresh)) == pytest.approx(reported, abs=1e-12)
    members = eval_members(log)
    del members["reductions.json"]
    bare = write_eval(tmp_path / log.name, members)
    applied = tf.read_harness_runs(public, bare, match_key=KEY)
    assert float(np.mean(applied.fresh)) == pytest.approx(reported, abs=1e-12)
    np.testing.assert_allclose(applied.fresh, data.fresh, rtol=0, atol=1e-12)


def test_the_reducers_give_different_scores_here():
    scores = {
        p.stem.split("-")[-1]: tuple(
            tf.read_harness_runs(INSPECT / "mean" / "arith-public.eval", p, match_key=KEY).fresh[
                :, 0
            ]
        )
        for p in REDUCED
    }
    assert len(set(scores.values())) == len(scores) == 4, scores


def test_a_reducer_not_known_here_without_reductions_is_refused(tmp_path):
    members = eval_members(REDUCED[0])
    del members["reductions.json"]
    header = members["header.json"]
    header["eval"]["config"]["epochs_reducer"] = ["majority"]
    bare = write_eval(tmp_path / "majority.eval", members)
    with pytest.raises(ValueError, match=r"reduced by 'majority', a reducer this reader does"):
        tf.read_harness_runs(bare, INSPECT / "mean" / "arith-fresh1.eval", match_key=KEY)


def test_a_reducer_or_reductions_of_the_wrong_type_are_one_line_errors(tmp_path):
    members = eval_members(REDUCED[0])
    del members["reductions.json"]
    members["header.json"]["eval"]["config"]["epochs_reducer"] = 5
    odd = write_eval(tmp_path / "reducer5.eval", members)
    with pytest.raises(ValueError, match="epochs_reducer must be a reducer's name"):
        tf.read_harness_runs(odd, INSPECT / "mean" / "arith-fresh1.eval", match_key=KEY)
    members = eval_members(REDUCED[0])
    members["reductions.json"][0]["samples"] = 5
    odd = write_eval(tmp_path / "samples5.eval", members)
    with pytest.raises(ValueError, match="hold int, not a list of samples"):
        tf.read_harness_runs(odd, INSPECT / "mean" / "arith-fresh1.eval", match_key=KEY)


# ----------------------------------------------------------- Inspect: errored samples

ERRORED = [INSPECT / "errored" / f"arith-{f}.eval" for f in ("public", "fresh1", "fresh2")]


def test_an_errored_sample_is_refused_naming_it_and_quoting_its_error():
    assert all(inspect_log(p)["status"] == "success" for p in ERRORED)  # fail_on_error=0.5
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(ERRORED[0], ERRORED[1:], match_key=KEY)
    message = str(info.value)
    assert "\n" not in message
    assert "arith-public.eval sample 'arith-03-public' epoch 1 errored" in message
    assert "RuntimeError('simulated sandbox failure on arith-03-public (epoch 1)')" in message
    # the remedy names the argument; the command line writes its flag (below)
    assert message.endswith("with an errored sample (drop_errored)")
    assert info.value.argument == "drop_errored" and "--" not in message


def test_drop_errored_that_would_drop_every_parent_is_refused(tmp_path):
    members = eval_members(ERRORED[1])
    samples = [name for name in members if name.startswith("samples/")]
    error = next(members[n]["error"] for n in samples if members[n].get("error"))
    for name in samples:
        members[name]["error"] = error
    every = write_eval(tmp_path / "all-errored.eval", members)
    with pytest.warns(UserWarning, match="dropped"):
        with pytest.raises(ValueError, match="every parent had an errored sample"):
            tf.read_harness_runs(ERRORED[0], [every], match_key=KEY, drop_errored=True)


def test_drop_errored_drops_the_parents_in_every_form_and_says_so():
    with pytest.warns(UserWarning, match=r"dropped 2 parent\(s\) .*'arith-03', 'arith-07'.*bias"):
        data = tf.read_harness_runs(ERRORED[0], ERRORED[1:], match_key=KEY, drop_errored=True)
    assert data.dropped == ("arith-03", "arith-07")
    kept = [f"arith-{i:02d}" for i in range(8) if i not in (3, 7)]
    assert list(data.parents) == kept
    # each form's scores are Inspect's reductions of the parents kept
    for column, path in zip([data.public, *data.fresh.T], ERRORED, strict=True):
        (reduction,) = inspect_log(path)["reductions"]
        inspect = {s["sample_id"].rsplit("-", 1)[0]: s["value"] for s in reduction["samples"]}
        np.testing.assert_array_equal(column, [inspect[p] for p in kept])


def test_cli_drop_errored_reports_the_parents_dropped():
    argv = ["audit", "--public", ERRORED[0], "--fresh", ERRORED[1], "--fresh", ERRORED[2]]
    argv += ["--match-key", KEY]
    code, _, err = run_cli(*argv)
    assert_one_line_error(code, err, "sample 'arith-03-public' epoch 1 errored", "RuntimeError")
    assert err.rstrip().endswith("with an errored sample (--drop-errored)")
    code, out, err = run_cli(*argv, "--drop-errored")
    assert code == ExitCode.OK, err
    assert err.startswith("warning: dropped 2 parent(s) with an errored sample")
    assert "not a random sample" in err and len(err.strip().splitlines()) == 1
    assert "n = 6 parents" in out and "Dropped 2 parent(s) with an errored sample" in out
    code, out, _ = run_cli(*argv, "--drop-errored", "--json")
    assert json.loads(out)["dropped_parents"] == {"mockllm/model": ["arith-03", "arith-07"]}
    code, _, err = run_cli("audit", "x.csv", "--drop-errored")
    assert_one_line_error(code, err, "--drop-errored goes with --public")


# ------------------------------------------- Inspect: unfinished runs, versions, samples


def test_a_run_with_status_error_is_refused_quoting_its_error():
    log = INSPECT / "status_error" / "arith-fresh1.eval"
    assert inspect_log(log)["status"] == "error"
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(INSPECT / "mean" / "arith-public.eval", log, match_key=KEY)
    message = str(info.value)
    assert "status is 'error' (RuntimeError('simulated sandbox failure on arith-05" in message
    assert "not 'success'" in message and "eval-retry" in message and "\n" not in message


@pytest.mark.parametrize("status", ["started", "cancelled"])
def test_a_run_started_or_cancelled_is_refused(tmp_path, status):
    log = inspect_log(INSPECT / "mean" / "arith-fresh2.json.gz")
    log["status"] = status
    path = tmp_path / "run.json"
    path.write_text(json.dumps(log))
    with pytest.raises(ValueError, match=f"status is '{status}', not 'success'"):
        tf.read_harness_runs(INSPECT / "mean" / "arith-public.eval", path, match_key=KEY)


@pytest.mark.parametrize("name", ["arith-fresh1.json", "arith-fresh1.eval"])
def test_a_log_without_samples_gets_the_no_samples_message(name):
    log = INSPECT / "no_samples" / name
    if name.endswith(".json"):
        assert "samples" not in json.loads(log.read_text())  # Inspect leaves the key out
    code, _, err = run_cli(
        "audit", "--public", INSPECT / "mean" / "arith-public.eval", "--fresh", log,
        "--match-key", KEY,
    )  # fmt: skip
    assert_one_line_error(code, err, name, "without samples", "without --no-log-samples")


def test_a_log_of_a_future_format_version_is_one_clear_error(tmp_path):
    log = inspect_log(INSPECT / "mean" / "arith-fresh2.json.gz")
    assert log["version"] == 2
    log["version"] = 3
    path = tmp_path / "future.json"
    path.write_text(json.dumps(log))
    public = INSPECT / "mean" / "arith-public.eval"
    with pytest.raises(ValueError, match=r"future.json: an Inspect log of format version 3; "):
        tf.read_harness_runs(public, path, match_key=KEY)
    members = eval_members(INSPECT / "mean" / "arith-fresh1.eval")
    members["header.json"]["version"] = 3
    with pytest.raises(ValueError, match="format version 3; this reader knows versions up to 2"):
        tf.read_harness_runs(public, write_eval(tmp_path / "f.eval", members), match_key=KEY)


def test_inspect_runs_of_two_models_are_refused_naming_both():
    public = INSPECT / "mean" / "arith-public.eval"
    other = INSPECT / "other_model" / "arith-fresh1.eval"
    with pytest.raises(ValueError, match="different models.*mockllm/model.*mockllm/other"):
        tf.read_harness_runs(public, other, match_key=KEY)


# ------------------------------------------------------------------------ lm-eval


@pytest.mark.parametrize("model", ["toy__alpha", "toy__beta"])
@pytest.mark.parametrize(
    ("kind", "metric"),
    [
        ("mc", "acc"),
        ("mc", "acc_norm"),
        ("gen", "exact_match,strict-match"),
        ("gen", "exact_match,flexible-extract"),
    ],
)
def test_lm_eval_runs_read_with_the_metrics_lm_eval_reports(model, kind, metric):
    forms = [lm_eval_samples(model, f"arith_{kind}_{f}") for f in ("public", "fresh1", "fresh2")]
    data = tf.read_harness_runs(forms[0], forms[1:], match_key="doc.parent_id", metric=metric)
    results = lm_eval_results(model)
    key = metric if "," in metric else f"{metric},none"
    reported = [
        results["results"][f"arith_{kind}_{f}"][key] for f in ("public", "fresh1", "fresh2")
    ]
    assert form_means(data) == pytest.approx(reported, abs=1e-12)
    assert data.model == results["model_name"] == f"toy/{model[5:]}"


def test_lm_eval_filters_give_different_scores():
    forms = [lm_eval_samples("toy__alpha", f"arith_gen_{f}") for f in ("public", "fresh1")]
    strict, flexible = (
        tf.read_harness_runs(forms[0], forms[1], match_key="doc.parent_id", metric=m)
        for m in ("exact_match,strict-match", "exact_match,flexible-extract")
    )
    assert np.all(strict.public <= flexible.public) and np.sum(strict.public) < np.sum(
        flexible.public
    )


def test_lm_eval_samples_of_two_models_are_refused_naming_both():
    alpha = lm_eval_samples("toy__alpha", "arith_mc_public")
    beta = lm_eval_samples("toy__beta", "arith_mc_fresh1")
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(alpha, beta, match_key="doc.parent_id", metric="acc")
    message = str(info.value)
    assert "different models" in message and "toy/alpha" in message and "toy/beta" in message


def test_lm_eval_model_is_unnamed_without_its_results_file(tmp_path):
    """A samples file copied away from its results file names no model: read as before."""
    alpha = tmp_path / lm_eval_samples("toy__alpha", "arith_mc_public").name
    alpha.write_bytes(lm_eval_samples("toy__alpha", "arith_mc_public").read_bytes())
    beta = lm_eval_samples("toy__beta", "arith_mc_fresh1")
    data = tf.read_harness_runs(alpha, beta, match_key="doc.parent_id", metric="acc")
    assert data.model == "toy/beta"


def test_lm_eval_model_without_a_name_lm_eval_derived_is_its_class_and_arguments(tmp_path):
    """lm-eval makes up a random model_name when model_args has no pretrained=, model=,
    path=, ...: then the model is config.model with its arguments, so that two runs of
    one model agree."""
    source = lm_eval_samples("toy__alpha", "arith_mc_public")
    results = lm_eval_results("toy__alpha")
    names = []
    for folder, made_up in (("a", "abc123"), ("b", "xyz789")):
        (tmp_path / folder).mkdir()
        copy = tmp_path / folder / source.name
        copy.write_bytes(source.read_bytes())
        date = source.stem.rsplit("_", 1)[1]
        results = {**results, "model_name": made_up}
        results["config"] = {**results["config"], "model_args": "seed=1"}
        (tmp_path / folder / f"results_{date}.json").write_text(json.dumps(results))
        names.append(copy)
    data = tf.read_harness_runs(names[0], names[1], match_key="doc.parent_id", metric="acc")
    assert data.model == "toy-lm (seed=1)"


def test_an_lm_eval_results_file_given_by_mistake_is_named():
    (results,) = (LM_EVAL / "toy__alpha").glob("results_*.json")
    fresh = lm_eval_samples("toy__alpha", "arith_mc_fresh1")
    for harness in ("auto", "lm-eval"):
        with pytest.raises(ValueError) as info:
            tf.read_harness_runs(results, fresh, match_key="doc.parent_id", harness=harness)
        assert "is an lm-eval results file" in str(info.value)
        assert "pass the samples_<task>_<date>.jsonl files" in str(info.value)
    with pytest.raises(ValueError, match="results file .*not table output: pass the samples_"):
        tf.read_harness_runs(results, fresh, match_key="doc.parent_id", harness="table")
    code, _, err = run_cli("audit", "--public", results, "--fresh", fresh, "--match-key", "doc_id")
    assert_one_line_error(code, err, "is an lm-eval results file", "samples_<task>_<date>.jsonl")


def test_doc_id_pairs_forms_by_position_and_warns():
    """The fresh2 dataset lists its parents in another order: doc_id pairs row i of the
    public form with row i of fresh2, whatever parents they are."""
    public = lm_eval_samples("toy__alpha", "arith_mc_public")
    fresh2 = lm_eval_samples("toy__alpha", "arith_mc_fresh2")
    by_parent = tf.read_harness_runs(public, fresh2, match_key="doc.parent_id", metric="acc")
    with pytest.warns(UserWarning, match=r"matched by doc_id, the document's row .* position"):
        by_row = tf.read_harness_runs(public, fresh2, match_key="doc_id", metric="acc")
    rows = [json.loads(line) for line in fresh2.read_text().splitlines()]
    parent_of_row = {str(r["doc_id"]): r["doc"]["parent_id"] for r in rows}
    assert [parent_of_row[p] for p in by_row.parents] != list(by_parent.parents)
    code, _, err = run_cli(
        "audit", "--public", public, "--fresh", fresh2, "--match-key", "doc_id",
        "--metric", "acc",
    )  # fmt: skip
    assert code in (ExitCode.OK, ExitCode.FINDING)
    assert err.startswith("warning: ") and "matched by doc_id" in err
    assert len(err.strip().splitlines()) == 1


def test_a_gzipped_json_log_and_an_archive_from_standard_input(tmp_path):
    """Inspect logs read from standard input: the .eval's zip bytes, the JSON's gzip."""
    public = INSPECT / "mean" / "arith-public.eval"
    fresh = INSPECT / "mean" / "arith-fresh2.json.gz"
    base = ["audit", "--match-key", KEY, "--json"]
    code, out, err = run_cli(*base, "--public", public, "--fresh", fresh)
    assert code == ExitCode.OK, err
    code2, out2, err2 = run_cli(
        *base, "--public", "-", "--fresh", fresh, stdin=public.read_bytes()
    )
    assert (code2, out2) == (code, out), err2
    buffer = io.BytesIO(fresh.read_bytes())
    code3, out3, _ = run_cli(*base, "--public", public, "--fresh", "-", stdin=buffer.getvalue())
    assert (code3, out3) == (code, out)

"""Evaluation-harness runs read for the matched-form audit (truescore_fast.io.harness): the
shipped lm-evaluation-harness and Inspect examples end to end, at the Python level and as
a process, against references that parse the files here with plain json/zipfile; the
score mapping against Inspect's documented value_to_float; and every refusal."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from commands import assert_one_line_error, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from truescore_fast.cli import ExitCode
from truescore_fast.cli.audit import add_parser as add_audit_parser
from truescore_fast.io import harness as harness_module
from truescore_fast.io._harness_base import HarnessReader, Record, Run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


LM_EVAL = EXAMPLES / "harness" / "lm_eval"


INSPECT = EXAMPLES / "harness" / "inspect"


def lm_eval_file(form: str) -> Path:
    (path,) = LM_EVAL.glob(f"samples_arith_{form}_*.jsonl")
    return path


LM_PUBLIC = lm_eval_file("public")


LM_FRESH = [lm_eval_file("fresh1"), lm_eval_file("fresh2")]


IN_PUBLIC = INSPECT / "arith-public.json"


IN_FRESH = [INSPECT / "arith-fresh1.json", INSPECT / "arith-fresh2.eval"]


LM_ARGS = ["--public-match-key", "doc.id", "--match-key", "doc.parent_id"]


IN_ARGS = [
    *("--public", IN_PUBLIC, "--fresh", IN_FRESH[0], "--fresh", IN_FRESH[1]),
    *("--match-key", "metadata.parent_id"),
]


def read_lm_eval_example(metric="exact_match,strict-match"):
    return tf.read_harness_runs(
        LM_PUBLIC, LM_FRESH, public_match_key="doc.id", match_key="doc.parent_id", metric=metric
    )


# ------------------------------------------------------------- references parsed here


def reference_lm_eval(path, key, filter_name):
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if record["filter"] == filter_name:
                out[record["doc"][key]] = record["exact_match"]
    return out


def inspect_samples(path):
    if path.suffix == ".eval":
        with zipfile.ZipFile(path) as archive:
            return [
                json.loads(archive.read(name))
                for name in archive.namelist()
                if name.startswith("samples/")
            ]
    return json.loads(path.read_text())["samples"]


def reference_inspect(path):
    by_parent: dict[str, list[float]] = {}
    for sample in inspect_samples(path):
        grade = sample["scores"]["match"]["value"]
        by_parent.setdefault(sample["metadata"]["parent_id"], []).append(grade == "C")
    return {parent: float(np.mean(v)) for parent, v in by_parent.items()}


# ------------------------------------------------------------------- the shipped examples


@pytest.mark.parametrize("filter_name", ["strict-match", "flexible-extract"])
def test_lm_eval_example_reads_the_chosen_filter(filter_name):
    data = read_lm_eval_example(f"exact_match,{filter_name}")
    public = reference_lm_eval(LM_PUBLIC, "id", filter_name)
    fresh = [reference_lm_eval(p, "parent_id", filter_name) for p in LM_FRESH]
    assert data.parents == tuple(public)  # the public run's order
    assert data.model == "all"  # lm-eval's samples files do not name the model
    np.testing.assert_array_equal(data.public, [public[p] for p in data.parents])
    np.testing.assert_array_equal(data.fresh, [[f[p] for f in fresh] for p in data.parents])
    assert data.fresh_forms[0] == tuple(str(p) for p in LM_FRESH)


def test_the_two_lm_eval_filters_differ_where_the_answer_line_is_missing():
    metrics = ("exact_match,strict-match", "exact_match,flexible-extract")
    read = [read_lm_eval_example(m) for m in metrics]
    # strict-match never scores an answer that flexible-extract misses
    assert np.all(read[0].public <= read[1].public)
    assert not np.array_equal(read[0].public, read[1].public)


def test_inspect_example_averages_epochs_and_reads_both_log_formats():
    data = tf.read_harness_runs(IN_PUBLIC, IN_FRESH, match_key="metadata.parent_id")
    public = reference_inspect(IN_PUBLIC)
    fresh = [reference_inspect(p) for p in IN_FRESH]
    assert data.model == "example/clean-model"
    np.testing.assert_array_equal(data.public, [public[p] for p in data.parents])
    np.testing.assert_array_equal(data.fresh, [[f[p] for f in fresh] for p in data.parents])
    assert set(np.unique(data.fresh)) <= {0.0, 0.5, 1.0} and np.any(data.fresh == 0.5)


def test_harness_audit_equals_the_audit_of_the_arrays():
    data = read_lm_eval_example()
    direct = tf.matched_form_audit(data.public, data.fresh, seed=0)
    (via_table,) = tf.matched_form_audits(data, seed=0).values()
    assert via_table.to_dict() == direct.to_dict()
    assert direct.claim  # the example's model saw the public forms


def test_cli_lm_eval_example_is_a_claim():
    code, out, err = run_cli(
        "audit",
        "--public",
        LM_PUBLIC,
        *[a for p in LM_FRESH for a in ("--fresh", p)],
        *LM_ARGS,
        "--metric",
        "exact_match,strict-match",
    )
    assert code == ExitCode.FINDING, err
    assert "n = 30 parents, K = 2 fresh form(s)" in out
    assert "Exposure claimed for: all" in out


def test_cli_inspect_example_is_no_claim_and_json_matches_python():
    argv = ["audit", *IN_ARGS, "--metric", "match"]
    code, out, err = run_cli(*argv)
    assert code == ExitCode.OK, err
    assert "== example/clean-model ==" in out and "No model meets the claim rule." in out
    code, out, _ = run_cli(*argv, "--json", "--seed", "5")
    assert code == ExitCode.OK
    doc = json.loads(out)
    data = tf.read_harness_runs(IN_PUBLIC, IN_FRESH, match_key="metadata.parent_id")
    expected = tf.matched_form_audit(data.public, data.fresh, seed=5).to_dict()
    assert doc["claim"] is False
    assert doc["models"]["example/clean-model"] == json.loads(json.dumps(expected))


def test_cli_reads_one_run_from_standard_input():
    base = [*[a for p in LM_FRESH for a in ("--fresh", p)], *LM_ARGS, "--json"]
    metric = ["--metric", "exact_match,strict-match"]
    code_file, out_file, _ = run_cli("audit", "--public", LM_PUBLIC, *base, *metric)
    code, out, err = run_cli(
        "audit", "--public", "-", *base, *metric, stdin=LM_PUBLIC.read_bytes()
    )
    assert (code, out) == (code_file, out_file), err
    # a .eval archive from standard input is recognised by its zip signature
    argv = [{str(IN_FRESH[1]): "-"}.get(str(a), a) for a in IN_ARGS]
    code, out, err = run_cli("audit", *argv, stdin=IN_FRESH[1].read_bytes())
    assert code == ExitCode.OK and "K = 2" in out, err


def test_shipped_harness_examples_are_reproduced_by_their_seeded_script(tmp_path):
    spec = importlib.util.spec_from_file_location("make", EXAMPLES / "make_harness_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = tmp_path
    module.main()
    shipped = sorted(p.relative_to(EXAMPLES) for p in (EXAMPLES / "harness").rglob("*.*"))
    made = sorted(p.relative_to(tmp_path) for p in (tmp_path / "harness").rglob("*.*"))
    assert made == shipped and len(made) == 6
    for rel in shipped:
        if rel.suffix == ".eval":  # compare the members: deflate output may vary with zlib
            with zipfile.ZipFile(EXAMPLES / rel) as a, zipfile.ZipFile(tmp_path / rel) as b:
                assert a.namelist() == b.namelist()
                assert all(a.read(n) == b.read(n) for n in a.namelist())
        else:
            assert (tmp_path / rel).read_bytes() == (EXAMPLES / rel).read_bytes()


# ------------------------------------------------------------------- the score mapping

# Inspect's value_to_float, as its documentation and tests state it: numbers and booleans
# as themselves, CORRECT "C" 1, PARTIAL "P" 0.5, INCORRECT "I" and NOANSWER "N" 0,
# "yes"/"true" 1 and "no"/"false" 0 in any case, numeric strings as numbers.
VALUE_TO_FLOAT = [
    ("C", 1.0),
    ("P", 0.5),
    ("I", 0.0),
    ("N", 0.0),
    (True, 1.0),
    (False, 0.0),
    (1, 1.0),
    (0.25, 0.25),
    ("yes", 1.0),
    ("No", 0.0),
    ("TRUE", 1.0),
    ("false", 0.0),
    ("1.0", 1.0),
    ("0.5", 0.5),
]


def inspect_log(path, grades, *, model="m", parent=lambda i: f"p{i}", scorer="match"):
    """An Inspect JSON log: grades[i] is sample i's value, or a list of one per epoch."""
    samples = []
    for i, grade in enumerate(grades):
        for epoch, value in enumerate(grade if isinstance(grade, list) else [grade], 1):
            samples.append(
                {
                    "id": i,
                    "epoch": epoch,
                    "scores": {scorer: {"value": value}},
                    "metadata": {"parent": parent(i)},
                }
            )
    path.write_text(json.dumps({"version": 2, "eval": {"model": model}, "samples": samples}))
    return path


@pytest.mark.parametrize(("value", "expected"), VALUE_TO_FLOAT)
def test_scores_map_as_inspects_value_to_float(tmp_path, value, expected):
    public = inspect_log(tmp_path / "pub.json", [value, 1])
    fresh = inspect_log(tmp_path / "fresh.json", [0, 0])
    data = tf.read_harness_runs(public, fresh, match_key="metadata.parent")
    assert data.public[0] == expected and data.public.dtype == np.float64


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("maybe", ["'maybe'", "not a per-item score"]),
        (1.5, ["must be a score in [0, 1]", "1.5"]),
        (-0.5, ["[0, 1]"]),
        (None, ["None", "not a per-item score"]),
        ([[1, 0]], ["not a per-item score"]),  # one epoch whose value is a list
        ("nan", ["[0, 1]"]),
    ],
)
def test_an_unreadable_score_is_refused_naming_the_sample(tmp_path, value, words):
    # Inspect itself would count these as 0 with a warning; a zeroed item biases the gap
    public = inspect_log(tmp_path / "pub.json", [1, value])
    fresh = inspect_log(tmp_path / "fresh.json", [0, 0])
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(public, fresh, match_key="metadata.parent")
    message = str(info.value)
    assert "pub.json sample 1 epoch 1" in message
    for word in words:
        assert word in message


def test_epochs_are_averaged_and_a_repeated_epoch_is_refused(tmp_path):
    public = inspect_log(tmp_path / "pub.json", [["C", "I", "C", "C"], ["I", "P"]])
    fresh = inspect_log(tmp_path / "fresh.json", [0, 1])
    data = tf.read_harness_runs(public, fresh, match_key="id")
    np.testing.assert_array_equal(data.public, [0.75, 0.25])
    doc = json.loads(public.read_text())
    doc["samples"].append(doc["samples"][0])  # epoch 1 of sample 0 again
    public.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="id = '0' appears again"):
        tf.read_harness_runs(public, fresh, match_key="id")


def test_a_recorded_reducer_sees_the_epochs_in_epoch_order(tmp_path):
    """Inspect's mode breaks a tie by the first epoch; a log lists samples in the order
    they finished, so epoch 2 may come first."""
    samples = [
        {"id": 0, "epoch": 2, "scores": {"match": {"value": "I"}}},
        {"id": 0, "epoch": 1, "scores": {"match": {"value": "C"}}},
        {"id": 1, "epoch": 1, "scores": {"match": {"value": "I"}}},
        {"id": 1, "epoch": 2, "scores": {"match": {"value": "C"}}},
    ]
    config = {"epochs": 2, "epochs_reducer": ["mode"]}
    log = {"version": 2, "status": "success", "eval": {"model": "m", "config": config}}
    public = tmp_path / "pub.json"
    public.write_text(json.dumps({**log, "samples": samples}))
    fresh = inspect_log(tmp_path / "fresh.json", [0, 1])
    data = tf.read_harness_runs(public, fresh, match_key="id")
    np.testing.assert_array_equal(data.public, [1.0, 0.0])


def test_a_dict_valued_scorer_needs_its_key(tmp_path):
    public = inspect_log(tmp_path / "pub.json", [{"acc": 1, "f1": 0.5}, {"acc": 0, "f1": 0}])
    fresh = inspect_log(tmp_path / "fresh.json", [{"acc": 0, "f1": 0}, {"acc": 1, "f1": 1}])
    data = tf.read_harness_runs(public, fresh, match_key="id", metric="match.f1")
    np.testing.assert_array_equal(data.public, [0.5, 0.0])
    np.testing.assert_array_equal(data.fresh[:, 0], [0.0, 1.0])
    with pytest.raises(
        ValueError, match=r"several values \(acc, f1\).*\(metric match.<name>\)"
    ) as info:
        tf.read_harness_runs(public, fresh, match_key="id")
    assert info.value.argument == "metric"
    assert "(--metric match.<name>)" in info.value.render(lambda name: f"--{name}")
    with pytest.raises(ValueError, match="no value 'recall'"):
        tf.read_harness_runs(public, fresh, match_key="id", metric="match.recall")


# ------------------------------------------------------------------- matching parents


def lm_eval_file_of(path, rows, *, filters=("none",), metric="acc"):
    with open(path, "w") as fh:
        for i, (key, value) in enumerate(rows):
            for f in filters:
                record = {
                    "doc_id": i,
                    "doc": {"parent": key},
                    "target": "x",
                    "arguments": {},
                    "resps": [["x"]],
                    "filtered_resps": ["x"],
                    "filter": f,
                    "metrics": [metric],
                    metric: value,
                }
                fh.write(json.dumps(record) + "\n")
    return path


def test_public_may_hold_more_parents_than_the_fresh_runs(tmp_path):
    public = lm_eval_file_of(tmp_path / "p.jsonl", [("a", 1), ("b", 0), ("c", 1), ("d", 1)])
    fresh = lm_eval_file_of(tmp_path / "f.jsonl", [("c", 0), ("a", 1)])
    data = tf.read_harness_runs(public, fresh, match_key="doc.parent")
    assert data.parents == ("a", "c")  # the sampled parents, in the public run's order
    np.testing.assert_array_equal(data.public, [1, 1])
    np.testing.assert_array_equal(data.fresh, [[1], [0]])


def test_match_keys_compare_as_text_across_kinds_of_run(tmp_path):
    public = lm_eval_file_of(tmp_path / "p.jsonl", [("a", 1), ("b", 0)])  # doc_id 0, 1
    fresh = tmp_path / "fresh.csv"
    fresh.write_text("item,acc\n1,true\n0,no\n")
    with pytest.warns(UserWarning, match=r"p.jsonl: matched by doc_id, .* by position"):
        data = tf.read_harness_runs(
            public, fresh, match_key="item", public_match_key="doc_id", metric="acc"
        )
    assert data.parents == ("0", "1")
    np.testing.assert_array_equal(data.fresh, [[0.0], [1.0]])


@pytest.mark.parametrize(
    ("public_rows", "fresh_rows", "second_rows", "words"),
    [
        ([("a", 1), ("b", 1)], [("a", 1), ("c", 1)], None, ["has no record for 1", "'c'"]),
        ([("a", 1), ("b", 1)], [("a", 1), ("b", 1)], [("a", 1)], ["lacks 1 parent", "'b'"]),
        ([("a", 1), ("b", 1)], [("a", 1)], [("a", 1), ("b", 0)], ["has 1 parent", "'b'"]),
        ([("a", 1), ("a", 0)], [("a", 1)], None, ["record 2", "'a' appears again"]),
    ],
)
def test_runs_must_cover_the_same_parents_once(
    tmp_path, public_rows, fresh_rows, second_rows, words
):
    public = lm_eval_file_of(tmp_path / "p.jsonl", public_rows)
    fresh = [lm_eval_file_of(tmp_path / "f1.jsonl", fresh_rows)]
    if second_rows is not None:
        fresh.append(lm_eval_file_of(tmp_path / "f2.jsonl", second_rows))
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(public, fresh, match_key="doc.parent")
    for word in words:
        assert word in str(info.value)


def test_lm_eval_metric_and_filter_choice(tmp_path):
    rows = [("a", 1), ("b", 0)]
    two = lm_eval_file_of(tmp_path / "two.jsonl", rows, filters=("strict", "flex"))
    fresh = lm_eval_file_of(tmp_path / "fresh.jsonl", rows[::-1], filters=("strict", "flex"))
    one = lm_eval_file_of(tmp_path / "one.jsonl", rows)
    other = lm_eval_file_of(tmp_path / "f.jsonl", rows)
    with pytest.raises(
        ValueError, match=r"filters flex, strict.*the metric \(metric acc,flex"
    ) as info:
        tf.read_harness_runs(two, fresh, match_key="doc.parent")
    # the argument it names, for the command line to write as its flag
    assert info.value.argument == "metric"
    assert "(--metric acc,flex:" in info.value.render(lambda name: f"--{name}")
    data = tf.read_harness_runs(two, fresh, match_key="doc.parent", metric="acc,strict")
    np.testing.assert_array_equal(data.public, [1, 0])
    np.testing.assert_array_equal(data.fresh, [[1], [0]])
    with pytest.raises(ValueError, match="has no filter 'loose'; it has flex, strict"):
        tf.read_harness_runs(two, fresh, match_key="doc.parent", metric="acc,loose")
    # one filter and one metric: nothing to choose
    data = tf.read_harness_runs(one, other, match_key="doc.parent")
    np.testing.assert_array_equal(data.public, [1, 0])
    with pytest.raises(ValueError, match="record 1: no metric 'f1' .this record has acc"):
        tf.read_harness_runs(one, other, match_key="doc.parent", metric="f1")


def test_missing_fields_are_named_with_the_fields_there_are(tmp_path):
    public = lm_eval_file_of(tmp_path / "p.jsonl", [("a", 1), ("b", 0)])
    fresh = lm_eval_file_of(tmp_path / "f.jsonl", [("a", 1), ("b", 0)])
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(public, fresh, match_key="doc.parent_id")
    message = str(info.value)
    assert "p.jsonl record 1: no field 'doc.parent_id'" in message and "doc.parent" in message


def test_runs_scored_by_different_models_are_refused(tmp_path):
    public = inspect_log(tmp_path / "pub.json", [1, 0], model="org/model-a")
    fresh = inspect_log(tmp_path / "fresh.json", [1, 0], model="org/model-b")
    with pytest.raises(ValueError, match="different models.*model-a.*model-b"):
        tf.read_harness_runs(public, fresh, match_key="id")


@pytest.mark.parametrize(
    ("make", "harness", "words"),
    [
        (lambda p: inspect_log(p / "log.json", [1, 0]), "lm-eval", ["Inspect log", "lm-eval"]),
        (
            lambda p: lm_eval_file_of(p / "s.jsonl", [("a", 1), ("b", 1)]),
            "inspect",
            ["not an Inspect log"],
        ),
        (lambda p: _write(p / "t.csv", "id,ok\n1,1\n"), "inspect", ["is a table"]),
        (lambda p: _write(p / "t.jsonl", '{"id": 1}\n'), "lm-eval", ["not an lm-evaluation"]),
        (lambda p: _write(p / "x.eval", "{}"), "auto", ["not a .eval archive"]),
        (lambda p: _write(p / "x.json", '{"eval": {}, "samples": []}'), "auto", ["without"]),
        (
            lambda p: _write(p / "bad.eval", "PK\x03\x04 broken"),
            "auto",
            ["not a readable .eval archive"],
        ),
    ],
)
def test_a_run_of_the_wrong_kind_is_named(tmp_path, make, harness, words):
    run = make(tmp_path)
    other = inspect_log(tmp_path / "other.json", [1, 0])
    with pytest.raises(ValueError) as info:
        tf.read_harness_runs(run, other, match_key="id", harness=harness)
    for word in words:
        assert word in str(info.value)


def _write(path, text):
    path.write_text(text)
    return path


def test_an_eval_archive_without_samples_and_a_sample_relogged(tmp_path):
    path = tmp_path / "run.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps({"eval": {"model": "m"}}))
    other = inspect_log(tmp_path / "other.json", [1, 0])
    with pytest.raises(ValueError, match="without samples .*without --no-log-samples"):
        tf.read_harness_runs(path, other, match_key="id")

    def write(finished):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("_journal/start.json", json.dumps({"eval": {"model": "m"}}))
            for i, value in enumerate(["C", "C"]):
                sample = {"id": i, "epoch": 1, "scores": {"s": {"value": value}}}
                archive.writestr(f"samples/{i}_epoch_1.json", json.dumps(sample))
            # sample 1 logged again after a retry: the archive's last copy is the one read
            with pytest.warns(UserWarning, match="Duplicate name"):
                archive.writestr(
                    "samples/1_epoch_1.json",
                    json.dumps({**sample, "scores": {"s": {"value": "I"}}}),
                )
            if finished:  # Inspect writes header.json last, when the run ends
                archive.writestr("header.json", json.dumps({"status": "success"}))

    write(finished=False)  # a run still going (or killed): samples but no header.json
    with pytest.raises(ValueError, match="without header.json: the run has not finished"):
        tf.read_harness_runs(path, other, match_key="id")
    write(finished=True)
    data = tf.read_harness_runs(path, other, match_key="id")
    np.testing.assert_array_equal(data.public, [1.0, 0.0])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"match_key": ""}, "match_key must be a non-empty string"),
        ({"match_key": "id", "metric": 3}, "metric must be a non-empty string"),
        ({"match_key": "id", "harness": "promptfoo"}, "harness"),
        ({"match_key": "id", "public_match_key": " "}, "public_match_key must be"),
    ],
)
def test_bad_arguments_name_themselves(tmp_path, kwargs, match):
    public = inspect_log(tmp_path / "pub.json", [1, 0])
    fresh = inspect_log(tmp_path / "fresh.json", [1, 0])
    with pytest.raises(ValueError, match=match):
        tf.read_harness_runs(public, fresh, **kwargs)


@pytest.mark.parametrize("flag", ["yes", 1, np.ones((2, 2))])
def test_drop_errored_must_be_a_bool(tmp_path, flag):
    public = inspect_log(tmp_path / "pub.json", [1, 0])
    fresh = inspect_log(tmp_path / "fresh.json", [1, 0])
    with pytest.raises(TypeError, match="drop_errored must be True or False; got"):
        tf.read_harness_runs(public, [fresh], match_key="id", drop_errored=flag)


def test_a_run_given_twice_is_refused(tmp_path):
    public = inspect_log(tmp_path / "pub.json", [1, 0])
    with pytest.raises(ValueError, match="given as a public run and again as a fresh run"):
        tf.read_harness_runs(public, [public], match_key="id")
    with pytest.raises(ValueError, match="fresh must name at least one"):
        tf.read_harness_runs(public, [], match_key="id")
    with pytest.raises(FileNotFoundError, match="no such file"):
        tf.read_harness_runs(public, tmp_path / "missing.json", match_key="id")


# -------------------------------------------------------------- the command line refuses


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ([], ["--public needs at least one --fresh"]),
        (["--fresh", "F", "--parent-column", "item"], ["--parent-column", "long-format table"]),
        (["--fresh", "F", "--control", "c.csv"], ["--control", "--control-public"]),
        (["--fresh", "F", "--control-public", "F"], ["--control-public and --control-fresh"]),
        (["--fresh", "-", "--fresh", "-"], ["standard input"]),
        (["--fresh", "F", "--metric", "exact_match,nope"], ["no filter 'nope'"]),
        (
            ["--fresh", "F", "--match-key", "doc.nope", "--metric", "exact_match,strict-match"],
            ["no field 'doc.nope'"],
        ),
    ],
)
def test_cli_harness_errors_are_one_line(extra, words):
    fresh = str(LM_FRESH[0])
    extra = [fresh if a == "F" else a for a in extra]
    if "--match-key" not in extra:
        extra += ["--match-key", "doc.parent_id", "--public-match-key", "doc.id"]
    code, _, err = run_cli("audit", "--public", LM_PUBLIC, *extra)
    assert_one_line_error(code, err, *words)


def test_cli_table_and_runs_do_not_mix():
    code, _, err = run_cli("audit", EXAMPLES / "audit_example.csv", "--public", LM_PUBLIC)
    assert_one_line_error(code, err, "not both")
    code, _, err = run_cli("audit", EXAMPLES / "audit_example.csv", "--metric", "acc")
    assert_one_line_error(code, err, "--metric goes with --public")
    code, _, err = run_cli("audit")
    assert_one_line_error(code, err, "give a long-format table")
    code, _, err = run_cli("audit", "--public", LM_PUBLIC, "--fresh", LM_FRESH[0])
    assert_one_line_error(code, err, "--match-key is required")


def test_cli_control_runs_match_the_python_control_bank(tmp_path):
    rng = np.random.default_rng(7)

    def log(name, p, n):
        grades = ["C" if x else "I" for x in rng.random(n) < p]
        return inspect_log(tmp_path / name, grades, parent=lambda i: f"q{i}")

    runs = [log("pub.json", 0.9, 60), log("f1.json", 0.5, 60), log("f2.json", 0.5, 60)]
    bank = [log("cp.json", 0.6, 40), log("cf1.json", 0.6, 40), log("cf2.json", 0.6, 40)]
    code, out, err = run_cli(
        "audit",
        "--public", runs[0], "--fresh", runs[1], "--fresh", runs[2],
        "--control-public", bank[0], "--control-fresh", bank[1], "--control-fresh", bank[2],
        "--match-key", "metadata.parent", "--radius", "0.05", "--json",
    )  # fmt: skip
    assert code in (ExitCode.OK, ExitCode.FINDING), err
    data = tf.read_harness_runs(runs[0], runs[1:], match_key="metadata.parent")
    ctrl = tf.read_harness_runs(bank[0], bank[1:], match_key="metadata.parent")
    expected = tf.matched_form_audit(
        data.public, data.fresh, control=(ctrl.public, ctrl.fresh), transport_radius=0.05
    )
    assert json.loads(out)["models"]["m"] == json.loads(json.dumps(expected.to_dict()))
    assert code == (ExitCode.FINDING if expected.claim else ExitCode.OK)


# ------------------------------------------------------------------------ any input

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["C", "P", "I", "N", "yes", "No", "0.5", "2", "x", ""]),
    st.lists(st.integers(0, 1), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 1), max_size=2),
)


_KEYS = st.one_of(
    st.none(), st.booleans(), st.integers(0, 3), st.floats(0, 3), st.sampled_from(["a", "b", ""])
)


@settings(max_examples=60, deadline=None)
@given(
    public=st.lists(st.tuples(_KEYS, _VALUES), min_size=0, max_size=5),
    fresh=st.lists(st.tuples(_KEYS, _VALUES), min_size=0, max_size=5),
    inspect=st.booleans(),
)
def test_property_any_run_gives_scores_in_the_unit_interval_or_value_error(public, fresh, inspect):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for name, rows in (("pub", public), ("fresh", fresh)):
            if inspect:
                samples = [
                    {"id": i, "epoch": 1, "scores": {"s": {"value": v}}, "metadata": {"k": k}}
                    for i, (k, v) in enumerate(rows)
                ]
                path = Path(folder) / f"{name}.json"
                path.write_text(json.dumps({"eval": {"model": "m"}, "samples": samples}))
            else:
                path = Path(folder) / f"{name}.jsonl"
                path.write_text(
                    "".join(
                        json.dumps({"doc_id": i, "doc": {"k": k}, "resps": [], "acc": v}) + "\n"
                        for i, (k, v) in enumerate(rows)
                    )
                )
            paths.append(path)
        key = "metadata.k" if inspect else "doc.k"
        try:
            data = tf.read_harness_runs(
                paths[0], paths[1], match_key=key, metric=None if inspect else "acc"
            )
        except ValueError:
            return
    assert data.public.shape == (len(data.parents),) and data.fresh.shape[1] == 1
    for values in (data.public, data.fresh):
        assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))


def test_gzipped_harness_logs_read_as_the_plain_ones(tmp_path):
    """lm-eval samples files and Inspect logs are often kept gzipped (``.jsonl.gz``,
    ``.json.gz``, even ``.eval.gz``): the same runs, the same scores."""
    import gzip

    def packed(path):
        out = tmp_path / (path.name + ".gz")
        out.write_bytes(gzip.compress(path.read_bytes()))
        return out

    lm_keys = dict(
        public_match_key="doc.id", match_key="doc.parent_id", metric="exact_match,strict-match"
    )
    pairs = [
        (
            tf.read_harness_runs(LM_PUBLIC, LM_FRESH, **lm_keys),
            tf.read_harness_runs(packed(LM_PUBLIC), [packed(p) for p in LM_FRESH], **lm_keys),
        ),
        (
            tf.read_harness_runs(IN_PUBLIC, IN_FRESH, match_key="metadata.parent_id"),
            tf.read_harness_runs(
                packed(IN_PUBLIC), [packed(p) for p in IN_FRESH], match_key="metadata.parent_id"
            ),
        ),
    ]
    for plain, got in pairs:
        assert got.parents == plain.parents and got.model == plain.model
        np.testing.assert_array_equal(got.public, plain.public)
        np.testing.assert_array_equal(got.fresh, plain.fresh)


# ------------------------------------------------------------- the registry of formats

BUILT_IN = ("auto", "lm-eval", "inspect", "table")


def _sheet_load(file):
    """A toy format: one JSON object ``{"sheet": {item: score}, "model": ...}``."""
    document = file.document
    if document is None or not isinstance(document.get("sheet"), dict):
        raise ValueError(f"{file.where} is not a score sheet")
    records = [
        Record(f"{file.where} item {item}", {"item": item, "score": score}, number, None)
        for number, (item, score) in enumerate(document["sheet"].items(), 1)
    ]
    return Run(file.where, document.get("model"), records)


SHEET = HarnessReader(
    name="sheet",
    load=_sheet_load,
    metric=lambda run, metric: (metric or "score", lambda r: r.fields["score"], run.records),
    claim_document=lambda document: (
        "a score sheet (it has 'sheet')" if "sheet" in document else None
    ),
)


def _tally_load(file):
    """A toy format guessed from its first record: JSON Lines with a ``tally`` field."""
    rows = file.records
    records = [Record(f"{file.where} tally {i}", row, i, None) for i, row in enumerate(rows, 1)]
    return Run(file.where, None, records)


TALLY = HarnessReader(
    name="tally",
    load=_tally_load,
    metric=lambda run, metric: ("tally", lambda r: r.fields["tally"], run.records),
    looks_like=lambda record: "tally" in record,
)


@pytest.fixture
def register(monkeypatch):
    """Registers toy formats for one test and removes them after it (the module's
    HARNESSES object itself is put back: the package's top level holds the same object)."""
    monkeypatch.setattr(harness_module, "HARNESSES", harness_module.HARNESSES)
    added = []

    def add(reader):
        harness_module._register(reader)
        added.append(reader.name)

    yield add
    for name in reversed(added):
        harness_module._unregister(name)
    assert harness_module.HARNESSES == BUILT_IN
    monkeypatch.undo()


def sheet(path, scores, model="m"):
    path.write_text(json.dumps({"model": model, "sheet": scores}))
    return path


def test_harnesses_are_auto_then_the_registered_formats_in_order():
    assert harness_module.HARNESSES == ("auto", *harness_module.READERS) == BUILT_IN
    assert tf.HARNESSES == BUILT_IN
    audit = add_audit_parser(argparse.ArgumentParser().add_subparsers())
    (choices,) = [action.choices for action in audit._actions if action.dest == "harness"]
    assert tuple(choices) == BUILT_IN  # the command line's --harness choices


def test_a_registered_format_is_read_by_name_and_recognised_by_auto(tmp_path, register):
    with pytest.raises(ValueError, match="harness must be one of 'auto', 'lm-eval', 'inspect'"):
        tf.read_harness_runs(tmp_path / "a", tmp_path / "b", match_key="item", harness="sheet")
    register(SHEET)
    assert harness_module.HARNESSES == (*BUILT_IN, "sheet")
    public = sheet(tmp_path / "pub.json", {"a": 1, "b": "C", "c": 0})
    fresh = sheet(tmp_path / "fresh.json", {"b": 0, "a": 0.5})
    by_name = tf.read_harness_runs(public, fresh, match_key="item", harness="sheet")
    by_auto = tf.read_harness_runs(public, fresh, match_key="item")
    for data in (by_name, by_auto):
        assert data.parents == ("a", "b") and data.model == "m"
        np.testing.assert_array_equal(data.public, [1.0, 1.0])
        np.testing.assert_array_equal(data.fresh, [[0.5], [0.0]])
    # a sheet beside the other formats: matched to an lm-eval run by text
    runs = lm_eval_file_of(tmp_path / "f.jsonl", [("a", 1), ("b", 0)])
    with pytest.warns(UserWarning, match="matched by doc_id"):
        mixed = tf.read_harness_runs(
            sheet(tmp_path / "ids.json", {"0": 1, "1": 0}), runs, match_key="doc_id",
            public_match_key="item", metric="acc",
        )  # fmt: skip
    assert mixed.parents == ("0", "1") and mixed.model == "m"


def test_a_registered_format_is_refused_as_another_and_refuses_the_others(tmp_path, register):
    register(SHEET)
    path = sheet(tmp_path / "s.json", {"a": 1})
    other = sheet(tmp_path / "other.json", {"a": 0})
    for named in ("lm-eval", "inspect", "table"):
        with pytest.raises(
            ValueError, match=rf"s.json is a score sheet \(it has 'sheet'\), not {named}$"
        ):
            tf.read_harness_runs(path, other, match_key="item", harness=named)
    refusals = [
        (
            inspect_log(tmp_path / "log.json", [1, 0]),
            "is an Inspect log (it has 'samples'), not sheet",
        ),
        (_write(tmp_path / "t.csv", "item,ok\na,1\n"), "is a table (.csv), not sheet output"),
        (lm_eval_file_of(tmp_path / "l.jsonl", [("a", 1)]), "l.jsonl is not a score sheet"),
    ]
    for run, words in refusals:
        with pytest.raises(ValueError) as info:
            tf.read_harness_runs(run, other, match_key="item", harness="sheet")
        assert words in str(info.value)


def test_a_guessed_format_registered_after_the_table_comes_before_the_catch_all(
    tmp_path, register
):
    register(TALLY)
    rows = [{"who": "a", "tally": 1}, {"who": "b", "tally": 0}]
    path = _write(tmp_path / "t.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    other = _write(tmp_path / "o.jsonl", "".join(json.dumps(r) + "\n" for r in rows[::-1]))
    data = tf.read_harness_runs(path, other, match_key="who")  # no metric: the tally's own
    np.testing.assert_array_equal(data.public, [1.0, 0.0])
    # what no reader recognises is still a table; a named lm-eval still refuses a tally
    plain = _write(tmp_path / "p.jsonl", '{"who": "a", "ok": 1}\n{"who": "b", "ok": 0}\n')
    with pytest.raises(ValueError, match="metric must name the column of .*p.jsonl"):
        tf.read_harness_runs(plain, other, match_key="who")
    with pytest.raises(ValueError, match="not an lm-evaluation-harness samples file"):
        tf.read_harness_runs(path, other, match_key="who", harness="lm-eval")


def test_the_registry_refuses_a_name_twice_and_a_second_catch_all(register):
    register(SHEET)
    for name in ("sheet", "auto"):
        with pytest.raises(ValueError, match=f"the harness name '{name}' is taken"):
            harness_module._register(dataclasses.replace(SHEET, name=name))
    with pytest.raises(ValueError, match="only one harness format reads what none recognises"):
        harness_module._register(dataclasses.replace(SHEET, name="rows", catch_all=True))
    assert harness_module.HARNESSES == (*BUILT_IN, "sheet")

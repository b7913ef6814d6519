"""Audit tables read by ``audit/data.py`` (``read_audit_table``, ``AuditData``): the long
format, one audit per model, control tables, JSON lines like CSV, and errors that name the
problem."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from common import k2_scores

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ------------------------------------------------------------------ long-format table


def long_table(models: dict[str, tuple[np.ndarray, np.ndarray]]) -> str:
    out = io.StringIO()
    out.write("model,parent,form,correct\n")
    for model, (pub, fr) in models.items():
        for i in range(pub.size):
            out.write(f"{model},p{i},public,{pub[i]}\n")
            for k in range(fr.shape[1]):
                out.write(f"{model},p{i},fresh{k},{fr[i, k]}\n")
    return out.getvalue()


def test_long_format_table_gives_one_audit_per_model(tmp_path):
    rng = np.random.default_rng(13)
    data = {"m1": k2_scores(rng, 60), "m2": k2_scores(rng, 60, p_public=0.9)}
    path = tmp_path / "audit.csv"
    path.write_text(long_table(data))
    tables = tf.read_audit_table(path)
    assert list(tables) == ["m1", "m2"]
    for model, (pub, fr) in data.items():
        np.testing.assert_array_equal(tables[model].public, pub)
        np.testing.assert_array_equal(tables[model].fresh, fr)
    results = tf.matched_form_audits(path, seed=3)
    direct = tf.matched_form_audit(*data["m2"], seed=3)
    assert results["m2"].intervals == direct.intervals
    # a mapping of columns works too, and no model column means one audit
    cols = {
        "parent": ["a", "a", "b", "b"],
        "form": ["public", "f", "public", "f"],
        "correct": [1, 0, 1, 1],
    }
    assert list(tf.read_audit_table(cols)) == ["all"]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("parent,form,correct\na,fresh,1\na,fresh2,0\n", "missing its public form"),
        ("parent,form,correct\na,public,1\n", "no fresh form"),
        ("parent,form,correct\na,public,1\na,public,0\na,f,1\n", "duplicate"),
        ("parent,form,correct\na,public,x\na,f,1\n", "correct must be a number"),
        ("parent,form,correct\na,public,2\na,f,1\n", r"\[0, 1\]"),
        ("parent,correct\na,1\n", "missing the column 'form'"),
        ("parent,form,correct\na,public,1\na,f,1\nb,public,1\nb,f,1\nb,g,0\n", "same number"),
    ],
)
def test_table_errors_name_the_problem(text, match):
    with pytest.raises(ValueError, match=match):
        tf.read_audit_table(io.StringIO(text))


def test_control_table_must_cover_every_model(tmp_path):
    rng = np.random.default_rng(14)
    main = tmp_path / "a.csv"
    ctrl = tmp_path / "c.csv"
    main.write_text(long_table({"m1": k2_scores(rng, 20), "m2": k2_scores(rng, 20)}))
    ctrl.write_text(long_table({"m1": k2_scores(rng, 20)}))
    with pytest.raises(ValueError, match="control has no rows for model 'm2'"):
        tf.matched_form_audits(main, control=ctrl)


def test_audit_table_reads_json_lines_like_csv(tmp_path):
    import csv as csv_module
    import json

    from truescore_fast import read_audit_table

    with (EXAMPLES / "audit_example.csv").open(newline="") as handle:
        rows = list(csv_module.DictReader(handle))
    path = tmp_path / "audit.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    from_csv = read_audit_table(EXAMPLES / "audit_example.csv")
    from_jsonl = read_audit_table(path)
    assert list(from_csv) == list(from_jsonl)
    for model in from_csv:
        np.testing.assert_array_equal(from_csv[model].public, from_jsonl[model].public)
        np.testing.assert_array_equal(from_csv[model].fresh, from_jsonl[model].fresh)

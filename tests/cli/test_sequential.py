"""``audit --sequential`` and ``contamination --sequential`` end to end (main(argv) in
this process, test_cli.run_cli) on the shipped partial tables
(examples/sequential_*_partial.csv). The expected decisions are recomputed from the files
read with the csv module and fed to the library's sequential classes in file order: the
test checks what the command reads and how it decides, the statistics being tested in
tests/test_sequential.py."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from commands import assert_one_line_error, run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AUDIT = str(EXAMPLES / "sequential_audit_partial.csv")
ORDERS = str(EXAMPLES / "sequential_orders_partial.csv")


def _audit_arrays(model):
    public, fresh = {}, {}
    with open(AUDIT, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["model"] != model:
                continue
            if row["form"] == "public":
                public[row["parent"]] = float(row["correct"])
            else:
                fresh.setdefault(row["parent"], []).append(float(row["correct"]))
    parents = list(public)  # file order = scoring order
    return np.array([public[p] for p in parents]), np.array([fresh[p] for p in parents])


def test_audit_part_way_says_continue_with_a_projection():
    code, out, err = run_cli("audit", AUDIT, "--sequential", "--population-size", "2000", "--json")
    assert code == 3, err
    payload = json.loads(out)
    assert payload["decision_exit_code"] == 3
    for model in ("leaky", "clean"):
        want = tf.SequentialAudit(2000).update(*_audit_arrays(model))
        got = payload["models"][model]
        assert got["decision"] == want.decision == "continue"
        assert got["n_parents"] == 300
        assert got["delta"]["low"] == want.delta.low and got["delta"]["high"] == want.delta.high
        assert got["more_parents"] == want.more_parents
    # the leak is projected to be found; with no effect size or target the clean model
    # has no decision in reach, and the projection says so (None)
    assert payload["models"]["leaky"]["more_parents"] > 0
    assert payload["models"]["clean"]["more_parents"] is None
    code, out, _ = run_cli("audit", AUDIT, "--sequential", "--population-size", "2000")
    assert code == 3 and "Continue scoring" in out and "more parents" in out


def test_audit_finding_exits_2_and_bounded_or_exhausted_exit_0():
    argv = ["audit", AUDIT, "--sequential", "--population-size", "2000"]
    code, out, err = run_cli(*argv, "--alpha", "0.3", "--json")
    assert code == 2, err
    decisions = {m: s["decision"] for m, s in json.loads(out)["models"].items()}
    assert decisions == {"leaky": "finding", "clean": "continue"}
    want = tf.SequentialAudit(2000, alpha=0.3).update(*_audit_arrays("leaky"))
    assert want.claim
    code, out, err = run_cli(*argv, "--effect", "0.2", "--json")
    assert code == 0, err
    assert {s["decision"] for s in json.loads(out)["models"].values()} == {"bounded"}
    code, out, err = run_cli(*argv, "--max-parents", "300")
    assert code == 0, err
    assert "exhausted" in out


def test_audit_max_parents_tunes_the_bets_to_that_budget():
    argv = ["audit", AUDIT, "--sequential", "--population-size", "2000"]
    code, out, err = run_cli(*argv, "--max-parents", "1000", "--json")
    assert code == 3, err
    for model, got in json.loads(out)["models"].items():
        want = tf.SequentialAudit(2000, max_parents=1000).update(*_audit_arrays(model))
        assert got["horizon"] == want.horizon == 1000
        assert got["delta"]["low"] == want.delta.low and got["delta"]["high"] == want.delta.high
        free = tf.SequentialAudit(2000).update(*_audit_arrays(model))
        assert got["delta"]["low"] != free.delta.low  # not the horizon-free sequence


def _order_scores():
    canon, perms = {}, {}
    with open(ORDERS, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["kind"] == "canonical":
                canon[row["shard"]] = float(row["loglik"])
            else:
                perms.setdefault(row["shard"], []).append(float(row["loglik"]))
    return list(canon.values()), [perms[s] for s in canon]


def test_contamination_part_way_stops_a_clean_model():
    argv = ["contamination", ORDERS, "--shard-column", "shard", "--sequential"]
    code, out, err = run_cli(*argv, "--max-permutations", "99", "--json")
    assert code == 0, err
    payload = json.loads(out)
    want = tf.sequential_order_verdict(*_order_scores(), max_permutations=99, h=10)
    assert payload["decision"] == want.decision == "no finding"
    assert payload["p_low"] == want.p_low and payload["orders_scored"] == want.orders_scored
    assert payload["shard_names"] == [str(i) for i in range(10)]
    assert payload["orders_scored"] == 131  # as the README says
    code, out, _ = run_cli(*argv, "--max-permutations", "99")
    assert code == 0 and "no finding" in out and "of 990 shuffled orders scored" in out


def test_contamination_continue_exits_3():
    # With h above the 15 orders scored, no shard has stopped; at alpha 0.5 the pooled
    # verdict is not decided yet.
    argv = ["contamination", ORDERS, "--shard-column", "shard", "--sequential"]
    code, out, err = run_cli(*argv, "--max-permutations", "99", "--h", "50", "--alpha", "0.5")
    want = tf.sequential_order_verdict(*_order_scores(), max_permutations=99, h=50, alpha=0.5)
    assert want.decision == "continue"
    assert code == 3, err
    assert "Continue" in out


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["audit", AUDIT, "--effect", "0.1"], ["--effect", "--sequential"]),
        (["audit", AUDIT, "--sequential", "--randomization"], ["--randomization"]),
        (["audit", AUDIT, "--sequential", "--population-size", "100"], ["--population-size"]),
        (["contamination", ORDERS, "--shard-column", "shard", "--sequential"], ["--max-perm"]),
        (["contamination", ORDERS, "--h", "3"], ["--h", "--sequential"]),
        (
            ["contamination", ORDERS, "--shard-column", "shard", "--sequential"]
            + ["--max-permutations", "10"],
            ["more than --max-permutations"],
        ),
        (
            ["contamination", ORDERS, "--shard-column", "shard", "--sequential"]
            + ["--max-permutations", "99", "--method", "average"],
            ["Fisher"],
        ),
    ],
)
def test_bad_sequential_use_is_one_line_exit_1(argv, words):
    code, _, err = run_cli(*argv)
    assert_one_line_error(code, err, *words)


def test_shuffled_before_published_is_refused(tmp_path):
    path = tmp_path / "orders.csv"
    path.write_text("shard,kind,loglik\n0,shuffled,-3\n0,canonical,-2\n")
    code, _, err = run_cli(
        "contamination", str(path), "--shard-column", "shard", "--sequential",
        "--max-permutations", "9",
    )  # fmt: skip
    assert_one_line_error(code, err, "row 1", "published order first")


def test_the_readme_command_says_what_the_readme_says():
    argv = ["audit", AUDIT, "--sequential", "--population-size", "2000", "--effect", "0.05"]
    code, out, err = run_cli(*argv, "--json")
    assert code == 3, err
    more = {m: s["more_parents"] for m, s in json.loads(out)["models"].items()}
    assert round(more["leaky"], -1) == 150 and round(more["clean"], -1) == 490


def test_a_control_bank_without_the_model_names_the_flag(tmp_path):
    control = tmp_path / "control.csv"
    with open(AUDIT, newline="") as source, open(control, "w", newline="") as target:
        rows = list(csv.DictReader(source))
        writer = csv.DictWriter(target, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            if row["model"] == "leaky":
                writer.writerow({**row, "model": "other"})
    argv = ["audit", AUDIT, "--sequential", "--population-size", "2000", "--control", control]
    code, _, err = run_cli(*argv)
    assert_one_line_error(code, err, "--control has no rows for model")


def test_audit_a_parent_short_of_the_census_is_not_a_false_verdict(tmp_path):
    # Issue 22's reproducer: 200 gaps (four +1, two -1, the rest 0; Delta = 0.01), 199
    # scored in a random order, the unscored one a -1. It used to print "empty ... no
    # value is consistent with the data in this order"; now the sequence holds Delta and
    # lies within the values the 199 parents allow.
    gaps = np.random.default_rng(22).permutation([1.0] * 4 + [-1.0] + [0.0] * 194)
    path = tmp_path / "near_census.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["model", "parent", "form", "correct"])
        for i, g in enumerate(gaps):
            writer.writerow(["m", f"p{i}", "public", int(g >= 0)])
            writer.writerow(["m", f"p{i}", "fresh1", int(g <= 0)])
    code, out, err = run_cli(
        "audit", str(path), "--sequential", "--population-size", "200", "--json"
    )
    delta = json.loads(out)["models"]["m"]["delta"]
    assert not delta["empty"], (code, err)
    assert delta["low"] <= 0.01 <= delta["high"]
    assert 0.01 - 1e-12 <= delta["low"] and delta["high"] <= 0.02 + 1e-12  # (3 -/+ 1) / 200
    code, out, _ = run_cli("audit", str(path), "--sequential", "--population-size", "200")
    assert "empty" not in out and "not consistent" not in out

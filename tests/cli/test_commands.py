"""The commands of issue 12, end to end on the shipped examples: compare, shard-orders,
contamination --test slct and its one pooled verdict, audit --randomization, disclose
template|schema, and every subcommand's --help. Expected numbers come from the example
files through independent computations (csv, NumPy, SciPy), never from the functions the
commands call. Each command runs as main(argv) in this process (test_cli.run_cli); a
closed pipe needs a real process."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from commands import assert_one_line_error, run_cli
from scipy import stats

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
COMPARE = str(EXAMPLES / "compare_example.csv")
SHARDED = str(EXAMPLES / "contamination_sharded.csv")
SCHEMA = Path(__file__).resolve().parents[2] / "python/truescore_fast/schemas"


def column(path, name, cast=float):
    with open(path, newline="") as handle:
        return [cast(row[name]) for row in csv.DictReader(handle)]


# ---------------------------------------------------------------------------- compare


def test_compare_finds_the_planted_difference_with_clusters():
    argv = ["compare", COMPARE, "--a-column", "system_a", "--b-column", "system_b"]
    code, out, err = run_cli(*argv, "--cluster-column", "topic")
    assert code == 2, err
    assert "differ beyond what chance" in out and "40 clusters" in out
    code, out, err = run_cli(*argv, "--cluster-column", "topic", "--json")
    assert code == 2, err
    payload = json.loads(out)
    a, b = column(COMPARE, "system_a"), column(COMPARE, "system_b")
    assert payload["difference"] == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)
    assert payload["n_pairs"] == len(a) == 400
    assert payload["significant"] is True and payload["p_value"] < 0.05
    assert payload["low"] > 0 and payload["cluster_column"] == "topic"
    assert payload["level"] == 0.95 and payload["seed"] == 0


@pytest.mark.parametrize("method", ["bootstrap", "permutation"])
def test_compare_finds_nothing_between_equal_systems(method):
    argv = ["compare", COMPARE, "--a-column", "system_b", "--b-column", "system_c"]
    code, out, err = run_cli(*argv, "--method", method, "--json")
    assert code == 0, err
    payload = json.loads(out)
    b, c = column(COMPARE, "system_b"), column(COMPARE, "system_c")
    assert payload["difference"] == pytest.approx(np.mean(b) - np.mean(c), abs=1e-12)
    assert payload["significant"] is False and payload["p_value"] >= 0.05
    assert payload["low"] < 0 < payload["high"]
    assert ("permutation" in payload["method"]) == (method == "permutation")


def test_compare_is_reproducible_from_the_seed():
    argv = ["compare", COMPARE, "--a-column", "system_a", "--b-column", "system_b", "--json"]
    first, second = run_cli(*argv), run_cli(*argv)
    assert first == second
    other = json.loads(run_cli(*argv, "--seed", "7")[1])
    assert other["seed"] == 7 and other["p_value"] != json.loads(first[1])["p_value"]


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--b-column", "nope"], ["--b-column", "'nope'", "system_a"]),
        (["--b-column", "topic"], ["--b-column", "row 1", "not a number"]),
        (["--b-column", "system_a"], ["--a-column", "--b-column", "both"]),
        (["--b-column", "system_b", "--resamples", "0"], ["--resamples", "at least 1"]),
        (["--b-column", "system_b", "--alpha", "2"], ["--alpha"]),
        (
            ["--b-column", "system_b", "--cluster-column", "topic", "--method", "permutation"],
            ["--cluster-column", "--method bootstrap"],
        ),
        (["--b-column", "system_b", "--cluster-column", "nope"], ["--cluster-column"]),
        (["--b-column", "system_b", "--method", "t-test"], ["--method"]),
    ],
)
def test_compare_bad_input_is_one_line_naming_the_flag(extra, words):
    code, _, err = run_cli("compare", COMPARE, "--a-column", "system_a", *extra)
    assert_one_line_error(code, err, *words)


def test_compare_without_its_columns_is_a_usage_error():
    code, _, err = run_cli("compare", COMPARE)
    assert_one_line_error(code, err, "--a-column", "--b-column")


def test_compare_reads_json_lines(tmp_path):
    path = tmp_path / "scores.jsonl"
    a, b = column(COMPARE, "system_a"), column(COMPARE, "system_b")
    path.write_text(
        "".join(json.dumps({"a": x, "b": y}) + "\n" for x, y in zip(a, b, strict=True))
    )
    code, out, err = run_cli("compare", str(path), "--a-column", "a", "--b-column", "b", "--json")
    assert code in (0, 2), err
    payload = json.loads(out)
    assert payload["difference"] == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)
    assert code == (2 if payload["significant"] else 0)


# ---------------------------------------------------------------------------- shard-orders


def orders_of(text):
    return [json.loads(line) for line in text.splitlines()]


def test_shard_orders_format_boundaries_and_permutations():
    n, r, p = 23, 4, 5
    code, out, err = run_cli("shard-orders", str(n), "--shards", str(r), "--permutations", str(p))
    assert code == 0, err
    rows = orders_of(out)
    assert len(rows) == r * (p + 1)
    start = 0
    for shard in range(r):
        mine = [row for row in rows if row["shard"] == shard]
        assert len(mine) == p + 1
        head, *shuffled = mine  # the published order comes first
        size = n // r + (shard < n % r)
        assert head == {
            "shard": shard,
            "permutation": None,
            "kind": "canonical",
            "canonical": True,
            "indices": list(range(start, start + size)),
        }
        assert [row["permutation"] for row in shuffled] == list(range(p))
        for row in shuffled:
            assert row["kind"] == "permuted" and row["canonical"] is False
            assert sorted(row["indices"]) == head["indices"]
        start += size
    assert start == n


def test_shard_orders_follow_the_documented_numpy_streams():
    # the recipe of shard_orders' docstring, rebuilt from NumPy alone
    n, r, p, seed = 30, 3, 4, 11
    _, out, _ = run_cli(
        "shard-orders", str(n), "--shards", str(r), "--permutations", str(p), "--seed", str(seed)
    )
    rows = orders_of(out)
    children = np.random.SeedSequence(seed).spawn(r)
    for shard, child in enumerate(children):
        generator = np.random.Generator(np.random.Philox(child))
        base = np.broadcast_to(np.arange(shard * 10, shard * 10 + 10), (p, 10))
        expected = generator.permuted(base, axis=1).tolist()
        got = [row["indices"] for row in rows if row["shard"] == shard and not row["canonical"]]
        assert got == expected


def test_shard_orders_to_a_file_equal_stdout_and_are_reproducible(tmp_path):
    argv = ["shard-orders", "100", "--shards", "5", "--permutations", "7", "--seed", "3"]
    code, stdout_text, _ = run_cli(*argv)
    assert code == 0
    assert run_cli(*argv, "-o", "-")[1] == stdout_text
    target = tmp_path / "orders.jsonl"
    code, out, err = run_cli(*argv, "-o", str(target))
    assert code == 0, err
    assert target.read_text() == stdout_text
    assert "100 examples in 5 shards" in out and "40 orders" in out
    code, out, err = run_cli(*argv, "-o", str(target), "--json")
    payload = json.loads(out)
    assert payload["orders"] == 40 and payload["seed"] == 3 and payload["n_shards"] == 5
    assert payload["offsets"] == [0, 20, 40, 60, 80, 100]
    assert [path.name for path in tmp_path.iterdir()] == ["orders.jsonl"]  # no temporary
    other = run_cli("shard-orders", "100", "--shards", "5", "--permutations", "7")[1]
    assert other != stdout_text  # seed 0, not 3


def test_shard_orders_refuse_a_huge_output_before_writing(tmp_path):
    target = tmp_path / "orders.jsonl"
    code, _, err = run_cli(
        "shard-orders", "1000000", "--shards", "50", "--permutations", "2000", "-o", str(target)
    )
    assert_one_line_error(code, err, "--max-bytes", "--permutations")
    assert not target.exists() and not list(tmp_path.iterdir())
    code, _, err = run_cli(
        "shard-orders", "1000", "--shards", "10", "--permutations", "10", "--max-bytes", "1000"
    )
    assert_one_line_error(code, err, "--max-bytes")


@pytest.mark.parametrize("n, r, p", [(1, 1, 1), (9, 3, 2), (1234, 7, 3), (10**4, 50, 2)])
def test_shard_orders_size_bound_holds(n, r, p):
    from truescore_fast.cli.shard_orders import estimated_bytes

    _, out, _ = run_cli("shard-orders", str(n), "--shards", str(r), "--permutations", str(p))
    actual = len(out.encode())
    assert actual <= estimated_bytes(n, r, p) <= 1.1 * actual + 200


@pytest.mark.parametrize(
    "argv, words",
    [
        (["0", "--shards", "1", "--permutations", "1"], ["N_EXAMPLES"]),
        (["10", "--shards", "11", "--permutations", "1"], ["--shards", "N_EXAMPLES"]),
        (["10", "--shards", "0", "--permutations", "1"], ["--shards"]),
        (["10", "--shards", "2", "--permutations", "0"], ["--permutations"]),
        (["10", "--shards", "2", "--permutations", "1", "--seed", "-1"], ["--seed"]),
        (["10", "--shards", "2", "--permutations", "1", "--json"], ["--json", "-o"]),
        (["10", "--permutations", "1"], ["--shards"]),
        (["ten", "--shards", "2", "--permutations", "1"], ["N_EXAMPLES"]),
    ],
)
def test_shard_orders_bad_input_is_one_line(argv, words):
    code, _, err = run_cli("shard-orders", *argv)
    assert_one_line_error(code, err, *words)


def test_shard_orders_to_an_unwritable_place_is_one_line(tmp_path):
    for target in (tmp_path, tmp_path / "missing" / "orders.jsonl"):
        code, _, err = run_cli(
            "shard-orders", "10", "--shards", "2", "--permutations", "1", "-o", str(target)
        )
        assert_one_line_error(code, err, "-o", str(target))


def test_an_interrupted_write_leaves_the_old_file(tmp_path):
    from truescore_fast.cli._common import write_output

    target = tmp_path / "orders.jsonl"
    target.write_text("kept\n")

    def chunks():
        yield "half"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_output(str(target), chunks())
    assert target.read_text() == "kept\n" and list(tmp_path.iterdir()) == [target]


def test_shard_orders_into_a_closed_pipe_exit_141_quietly():
    # a real process: stdout must be a pipe whose reader has gone, and main() then points
    # file descriptor 1 at devnull (os.dup2), which would silence this test process
    proc = subprocess.Popen(
        [sys.executable, "-m", "truescore_fast", "shard-orders", "20000"]
        + ["--shards", "10", "--permutations", "50"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()  # `| head -1`
    proc.stdout.close()
    _, err_bytes = proc.communicate(timeout=120)
    assert proc.returncode == 141, err_bytes
    assert err_bytes == b""


def test_orders_scored_by_a_memorising_model_are_a_finding(tmp_path):
    # shard-orders -> score every order -> contamination: the workflow of the help text.
    # The simulated model gains 3 nats for every adjacent pair of the published order it
    # sees (it memorised the sequence), plus order-independent noise.
    code, out, _ = run_cli("shard-orders", "200", "--shards", "10", "--permutations", "19")
    assert code == 0
    rng = np.random.default_rng(5)
    scores = tmp_path / "scores.csv"
    with scores.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["shard", "kind", "loglik"])
        for row in orders_of(out):
            order = np.asarray(row["indices"])
            memorised = 3.0 * np.count_nonzero(np.diff(order) == 1)
            writer.writerow([row["shard"], row["kind"], -500.0 + memorised + rng.normal()])
    for test in ("exact", "slct"):
        code, out, err = run_cli(
            "contamination", str(scores), "--shard-column", "shard", "--test", test, "--json"
        )
        assert code == 2, err
        assert json.loads(out)["n_shards"] == 10


# ---------------------------------------------------------------------------- contamination


def shards_of(path):
    canonical, shuffled = {}, {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["kind"] == "canonical":
                canonical[row["shard"]] = float(row["loglik"])
            else:
                shuffled.setdefault(row["shard"], []).append(float(row["loglik"]))
    names = sorted(canonical)
    return np.array([canonical[k] for k in names]), [np.array(shuffled[k]) for k in names]


@pytest.mark.parametrize("variant", ["corrected", "published"])
def test_slct_on_the_sharded_example_matches_a_scipy_t_test(variant):
    argv = ["contamination", SHARDED, "--shard-column", "shard", "--test", "slct"]
    code, out, err = run_cli(*argv, "--variant", variant, "--json")
    assert code == 2, err
    payload = json.loads(out)
    canonical, shuffled = shards_of(SHARDED)
    d = canonical - np.array([s.mean() for s in shuffled])
    r = len(d)
    ddof = 1 if variant == "corrected" else 0
    t = d.mean() / (d.std(ddof=ddof) / math.sqrt(r))
    p = stats.t.sf(t, r - 1) if variant == "corrected" else 1.0 - stats.t.cdf(t, r - 1)
    assert payload["test"] == "slct" and payload["variant"] == variant
    assert payload["n_shards"] == r == 8
    assert payload["statistic"] == pytest.approx(t, rel=1e-9)
    assert payload["p_value"] == pytest.approx(p, rel=1e-6)
    assert payload["contaminated"] is True
    assert [s["difference"] for s in payload["shards"]] == pytest.approx(d.tolist(), rel=1e-9)
    code, text, _ = run_cli(*argv, "--variant", variant)
    assert code == 2 and f"Sharded likelihood comparison test ({variant})" in text


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--test", "slct"], ["--test slct", "shard"]),
        (["--test", "slct", "--shard-column", "shard", "--method", "fisher"], ["--method"]),
        (["--variant", "published", "--shard-column", "shard"], ["--variant", "slct"]),
        (["--test", "rank"], ["--test"]),
    ],
)
def test_contamination_flag_combinations_that_do_not_fit(extra, words):
    code, _, err = run_cli("contamination", SHARDED, *extra)
    assert_one_line_error(code, err, *words)


def write_disagreeing_shards(path):
    # Two shards whose canonical order beats all 99 shuffles (p = 0.01) and six where 29
    # shuffles beat it (p = 0.3): Fisher, -2 sum log p = 32.9 on 16 df, p = 0.008; the
    # averaged p, min(1, 2 x mean) = 0.455. The two poolings disagree at 0.05.
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["shard", "kind", "loglik"])
        for shard in range(8):
            beaten_by = 0 if shard < 2 else 29
            writer.writerow([shard, "canonical", 0.0])
            for j in range(99):
                writer.writerow([shard, "permuted", 1.0 + j if j < beaten_by else -1.0 - j])
    fisher = stats.chi2.sf(-2 * (2 * math.log(0.01) + 6 * math.log(0.3)), 16)
    average = min(1.0, 2 * (2 * 0.01 + 6 * 0.3) / 8)
    assert fisher < 0.05 < average
    return fisher, average


def test_one_pooled_verdict_and_its_exit_code(tmp_path):
    path = tmp_path / "disagree.csv"
    fisher, average = write_disagreeing_shards(path)
    base = ["contamination", str(path), "--shard-column", "shard"]

    code, out, err = run_cli(*base, "--method", "average")
    assert code == 0, err
    assert "no pooled finding" in out and "finding: pooled" not in out
    assert "Fisher" not in out and out.count("pooled p") == 1

    code, out, _ = run_cli(*base, "--method", "fisher")
    assert code == 2 and "finding: pooled" in out and out.count("pooled p") == 1

    code, out, _ = run_cli(*base, "--method", "average", "--json")
    payload = json.loads(out)
    assert code == 0 and payload["method"] == "average" and payload["contaminated"] is False
    assert payload["p_value"] == pytest.approx(average, rel=1e-12)
    code, out, _ = run_cli(*base, "--json")
    assert code == 2 and json.loads(out)["p_value"] == pytest.approx(fisher, rel=1e-9)


@pytest.mark.parametrize("method", ["stouffer", "average"])
def test_the_shipped_example_prints_only_the_chosen_pooling(method):
    code, out, err = run_cli(
        "contamination", SHARDED, "--shard-column", "shard", "--method", method
    )
    assert code in (0, 2), err
    assert out.count("pooled p") == 1 and "(Fisher)" not in out
    verdicts = [line for line in out.splitlines() if "finding" in line]
    assert len(verdicts) == 1, out
    assert code == (0 if "no pooled finding" in verdicts[0] else 2)
    # Fisher pools the same shards to a finding; average does not: one verdict, the chosen
    fisher_code = run_cli("contamination", SHARDED, "--shard-column", "shard")[0]
    assert fisher_code == 2


# ---------------------------------------------------------------------------- audit


def exact_binary_p_greater(public, fresh):
    """P(T* >= T) for K = 2 binary labels from two binomials (SPEC section 4)."""
    public, fresh = np.asarray(public), np.asarray(fresh)
    sums = public + fresh.sum(axis=1)
    n1, n2 = int(np.sum(sums == 1)), int(np.sum(sums == 2))
    observed = float(np.sum(public - fresh.mean(axis=1)))
    pmf = np.convolve(
        stats.binom.pmf(np.arange(n1 + 1), n1, 1 / 3),
        stats.binom.pmf(np.arange(n2 + 1), n2, 2 / 3),
    )
    s = np.arange(len(pmf))
    return float(pmf[(3 * s - n1 - 2 * n2) / 2 >= observed - 1e-9].sum())


def test_audit_randomization_matches_the_binomial_convolution():
    path = EXAMPLES / "audit_example.csv"
    argv = ["audit", str(path), "--control", str(EXAMPLES / "audit_control.csv")]
    code_plain, out_plain, _ = run_cli(*argv, "--json")
    code, out, err = run_cli(*argv, "--randomization", "--json")
    assert code == code_plain == 2, err  # the exit code stays the claim rule's
    payload = json.loads(out)
    assert payload["models"] == json.loads(out_plain)["models"]
    table: dict[str, dict[str, dict[str, float]]] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            forms = table.setdefault(row["model"], {}).setdefault(row["parent"], {})
            forms[row["form"]] = float(row["correct"])
    assert set(payload["randomization"]) == set(table)
    for model, parents in table.items():
        public = [forms["public"] for forms in parents.values()]
        fresh = [[forms["fresh1"], forms["fresh2"]] for forms in parents.values()]
        test = payload["randomization"][model]
        assert test["method"] == "exact-binary" and test["alternative"] == "greater"
        assert test["p_value"] == pytest.approx(exact_binary_p_greater(public, fresh), rel=1e-9)
    code, text, _ = run_cli(*argv, "--randomization")
    assert code == 2 and text.count("Randomization test of no form effect") == len(table)


# ---------------------------------------------------------------------------- disclose


def leaves(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    else:
        yield path, value


def test_disclose_template_is_unknown_everywhere_and_validates(tmp_path):
    pytest.importorskip("jsonschema")
    code, out, err = run_cli("disclose", "template")
    assert code == 0, err
    record = json.loads(out)
    schema = json.loads((SCHEMA / "disclosure.schema.json").read_text())
    assert set(record) == set(schema["properties"])
    for path, value in leaves(record):
        assert value == ("1" if path == "schema_version" else "unknown"), path
    types = {"direct", "derivative", "temporal", "distributional", "acquired"}
    assert set(record["contamination"]) == types
    target = tmp_path / "record.json"
    code, _, err = run_cli("disclose", "template", "-o", str(target), "--json")
    assert code == 0, err
    assert json.loads(target.read_text()) == record
    code, out, err = run_cli("disclose", "validate", str(target))
    assert code == 0 and "valid disclosure record" in out, out + err


def test_disclose_schema_is_the_shipped_schema(tmp_path):
    shipped = json.loads((SCHEMA / "disclosure.schema.json").read_text())
    code, out, err = run_cli("disclose", "schema")
    assert code == 0, err
    assert json.loads(out) == shipped
    target = tmp_path / "schema.json"
    assert run_cli("disclose", "schema", "-o", str(target), "--json")[0] == 0
    assert json.loads(target.read_text()) == shipped


def test_disclose_template_to_an_unwritable_place_is_one_line(tmp_path):
    target = tmp_path / "missing" / "record.json"
    code, _, err = run_cli("disclose", "template", "-o", str(target))
    assert_one_line_error(code, err, "-o", str(target))


# ---------------------------------------------------------------------------- --help


@pytest.mark.parametrize(
    "argv, words",
    [
        (["contamination"], ["kind", "loglik", "shard", "--test", "default", "Exit codes"]),
        (["audit"], ["parent", "form", "correct", "model", "default", "Exit codes"]),
        (["compare"], ["--a-column", "--cluster-column", "Defaults", "Exit codes"]),
        (["shard-orders"], ["shard", "permutation", "canonical", "indices", "Defaults", "Exit"]),
        (["disclose", "validate"], ["unknown", "Exit codes"]),
        (["disclose", "template"], ["unknown", "Exit code"]),
        (["disclose", "schema"], ["Schema", "Exit code"]),
        (["calibrate"], ["default", "Exit"]),
    ],
)
def test_every_subcommand_help_states_columns_defaults_and_exit_codes(argv, words):
    code, out, err = run_cli(*argv, "--help")
    assert code == 0, err
    text = " ".join(out.split())  # argparse wraps lines
    for word in words:
        assert word in text, (word, out)


def test_top_level_help_lists_every_command_with_its_own_help_line():
    import argparse

    from truescore_fast import cli

    code, out, _ = run_cli("--help")
    assert code == 0 and "Exit codes" in out
    for name, line in cli._COMMANDS.items():
        assert name in out
        parser = cli._build_parser(name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        registered = {c.dest: c.help for c in sub._choices_actions}
        assert registered[name] == line  # the module's help line is the listed one


def test_the_compare_example_is_reproduced_by_its_seeded_script(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make", EXAMPLES / "make_compare_example.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = tmp_path
    module.main()
    name = "compare_example.csv"
    assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes()


# ---------------------------------------------------------------------------- library pieces


def test_disclosure_template_validates_and_is_a_fresh_copy():
    pytest.importorskip("jsonschema")
    from truescore_fast import disclosure_template, validate_disclosure

    record = disclosure_template()
    assert validate_disclosure(record).valid
    record["contamination"]["direct"] = "maybe"  # the caller's copy, not a shared one
    assert disclosure_template()["contamination"]["direct"] == "unknown"
    assert not validate_disclosure(record).valid


def test_batch_summary_reports_the_pooling_it_is_given(tmp_path):
    from truescore_fast import exchangeability_tests

    canonical, shuffled = shards_of(SHARDED)
    values = np.concatenate(shuffled)
    offsets = np.concatenate(([0], np.cumsum([len(s) for s in shuffled])))
    batch = exchangeability_tests(canonical, values, offsets=offsets)
    assert batch.summary() == batch.summary("fisher") == str(batch)
    for method in ("stouffer", "average"):
        text = batch.summary(method)
        assert batch.combine(method).summary() in text and "(Fisher)" not in text
    with pytest.raises(ValueError, match="method"):
        batch.summary("median")


def test_matched_form_audits_accepts_a_table_read_once():
    from truescore_fast import matched_form_audits, read_audit_table

    path = str(EXAMPLES / "audit_example.csv")
    data = read_audit_table(path)
    once = matched_form_audits(data, population_size=1000)
    again = matched_form_audits(path, population_size=1000)
    assert {m: r.to_dict() for m, r in once.items()} == {m: r.to_dict() for m, r in again.items()}

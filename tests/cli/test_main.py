"""The truescore-fast command line, every subcommand: findings, exit codes, JSON, bad
files, plots. (The truescore command line run on our core is tested in test_patch.py.)

Commands run in this process through :func:`run_cli` (``main(argv)`` with its streams
captured); the few properties only a real process has (``python -m``, Ctrl-C, a closed
pipe) run as subprocesses, each saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from commands import assert_one_line_error, run_cli
from truescore_fast.cli import ExitCode, main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ---------------------------------------------------------------------------- contamination


def test_shipped_sharded_example_is_a_finding(capsys):
    code = main(
        ["contamination", str(EXAMPLES / "contamination_sharded.csv"), "--shard-column", "shard"]
    )
    assert code == ExitCode.FINDING
    out = capsys.readouterr().out
    assert "8 shards" in out and "finding" in out
    assert "pooled p = 0.002748" in out  # the figure quoted in the README


def test_shipped_clean_example_is_no_finding(capsys):
    code = main(["contamination", str(EXAMPLES / "contamination_clean.csv")])
    assert code == ExitCode.OK
    assert "not evidence of a clean model" in capsys.readouterr().out


def test_findings_agree_with_truescore_cli(capsys):
    from truescore.cli import main as truescore_main

    for args in (
        ["contamination", str(EXAMPLES / "contamination_sharded.csv"), "--shard-column", "shard"],
        ["contamination", str(EXAMPLES / "contamination_clean.csv")],
    ):
        assert main(args) == truescore_main(args)
    capsys.readouterr()


def test_json_output(capsys):
    code = main(
        [
            "contamination",
            str(EXAMPLES / "contamination_sharded.csv"),
            "--shard-column",
            "shard",
            "--json",
            "--method",
            "average",
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert payload["method"] == "average" and payload["n_shards"] == 8
    assert code == (ExitCode.FINDING if payload["contaminated"] else ExitCode.OK)
    assert len(payload["shards"]) == 8


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "name, text",
    [
        ("bad.csv", "kind,loglik\ncanonical,1.0\npermuted,abc\n"),
        ("two.csv", "kind,loglik\ncanonical,1.0\ncanonical,2.0\npermuted,0.5\n"),
        ("none.csv", "kind,loglik\npermuted,1.0\n"),
        ("nan.csv", "kind,loglik\ncanonical,nan\npermuted,1.0\n"),
        ("empty.csv", "kind,loglik\n"),
        ("noperm.csv", "kind,loglik\ncanonical,1.0\n"),
        ("x.txt", "kind,loglik\n"),
        ("bad.jsonl", '{"kind": "canonical", "loglik": 1}\n{not json\n'),
    ],
)
def test_malformed_files_exit_1(tmp_path, capsys, name, text):
    assert main(["contamination", write(tmp_path, name, text)]) == ExitCode.ERROR
    assert "error:" in capsys.readouterr().err


def test_missing_file_and_bad_arguments_exit_1(capsys):
    assert main(["contamination", "/nonexistent/file.csv"]) == ExitCode.ERROR
    with pytest.raises(SystemExit) as info:
        main(["contamination"])
    assert info.value.code == ExitCode.ERROR  # argparse alone would exit 2, a "finding"
    capsys.readouterr()


def test_sharded_file_with_duplicate_canonical_exits_1(tmp_path, capsys):
    text = "shard,kind,loglik\na,canonical,1\na,canonical,2\na,permuted,0\n"
    assert (
        main(["contamination", write(tmp_path, "d.csv", text), "--shard-column", "shard"])
        == ExitCode.ERROR
    )
    capsys.readouterr()


# ---------------------------------------------------------------------------- audit


def test_audit_command_on_shipped_example(capsys):
    args = [
        "audit",
        str(EXAMPLES / "audit_example.csv"),
        "--control",
        str(EXAMPLES / "audit_control.csv"),
        "--population-size",
        "1000",
    ]
    assert main([*args, "--radius", "0.02"]) == ExitCode.FINDING
    assert main([*args, "--radius", "0.3"]) == ExitCode.OK
    assert main([*args[:2], "--radius", "-1"]) == ExitCode.ERROR
    assert main(["audit", "/nonexistent.csv"]) == ExitCode.ERROR
    capsys.readouterr()


def audit_cli(argv):
    """The audit subcommand without main()'s error handling, so a ValueError surfaces."""
    import argparse

    from truescore_fast.cli.audit import add_parser

    parser = argparse.ArgumentParser(prog="truescore-fast")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["audit", *argv])
    return args.func(args)


def test_cli_audit_on_the_shipped_example(capsys):
    base = [
        str(EXAMPLES / "audit_example.csv"),
        "--control",
        str(EXAMPLES / "audit_control.csv"),
        "--population-size",
        "1000",
    ]
    assert audit_cli([*base, "--radius", "0.02"]) == 2
    out = capsys.readouterr().out
    assert "Exposure claimed for: leaky" in out and "does not mean the score is clean" in out
    assert audit_cli([*base, "--radius", "0.02", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["claim"] is True
    assert [m for m, r in doc["models"].items() if r["claim"]] == ["leaky"]
    assert doc["models"]["mismatch"]["estimate"] > 0  # a form effect without a leak: no claim
    # a radius that covers the whole planted effect: nothing is claimed, exit 0
    assert audit_cli([*base, "--radius", "0.3"]) == 0


def test_cli_audit_bad_data_raises_value_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("parent,form,correct\na,fresh,1\n")
    with pytest.raises(ValueError, match="public form"):
        audit_cli([str(bad)])
    with pytest.raises(ValueError, match="cannot read"):
        audit_cli([str(tmp_path / "missing.csv")])


# ---------------------------------------------------------------------------- calibrate


def test_cli_calibrate_prints_tables_and_json(capsys):
    assert main(["calibrate", "stress", "--replications", "20", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "settings below" in out and "36 stress settings" in out
    assert main(["calibrate", "budget", "--replications", "20", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["study"] == "budget"
    assert payload["tables"][0]["meta"]["replications"] == 20


@pytest.mark.parametrize(
    "argv",
    [
        ["calibrate", "stress", "--replications", "1"],
        ["calibrate", "coverage", "--threads", "0", "--replications", "5"],
    ],
)
def test_cli_calibrate_bad_input_exits_1(argv, capsys):
    assert main(argv) == 1
    assert "error" in capsys.readouterr().err


def test_cli_calibrate_unknown_study_exits_1(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["calibrate", "nope"])
    assert caught.value.code == 1
    assert "invalid choice" in capsys.readouterr().err


def test_cli_plot_without_matplotlib_is_a_clear_error(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    code = main(["calibrate", "budget", "--replications", "10", "--plot", str(tmp_path / "b.png")])
    assert code == 1
    assert "needs matplotlib" in capsys.readouterr().err


def test_cli_plot_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "detection.png"
    assert main(["calibrate", "detection", "--replications", "10", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------- disclose


def test_cli_disclose_valid_invalid_and_unreadable(tmp_path, capsys):
    example = EXAMPLES / "disclosure" / "private_test_set.json"
    assert main(["disclose", "validate", str(example)]) == 0
    assert "valid" in capsys.readouterr().out
    bad = json.loads(example.read_text())
    bad["contamination"]["acquired"] = "perhaps"
    bad["audit_evidence"][0]["p_value"] = -0.1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["disclose", "validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert "contamination.acquired" in out and "audit_evidence[0].p_value" in out
    assert main(["disclose", "validate", str(path), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["valid"] is False and len(payload["problems"]) == 2
    assert main(["disclose", "validate", str(tmp_path / "nope.json")]) == 1


# ---------------------------------------------------------------------------- the examples


@pytest.mark.parametrize(
    "script, names",
    [
        ("make_contamination_example", ("contamination_sharded.csv", "contamination_clean.csv")),
        ("make_audit_example", ("audit_example.csv", "audit_control.csv")),
    ],
)
def test_shipped_examples_are_reproduced_by_their_seeded_scripts(tmp_path, script, names):
    import importlib.util

    spec = importlib.util.spec_from_file_location(script, EXAMPLES / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = tmp_path
    module.main()
    for name in names:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes()


# ------------------------------------------------------ as a process, and in this one


@pytest.mark.parametrize("module", ["truescore_fast", "truescore_fast.cli"])
def test_console_script_runs_as_a_process(module):
    # a real process: `python -m truescore_fast` (its __main__ and the exit code the shell
    # sees) is the property under test; `python -m truescore_fast.cli` ran too when the
    # command line was one module, and still does
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            module,
            "contamination",
            str(EXAMPLES / "contamination_clean.csv"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert json.loads(proc.stdout)["n_permutations"] == 99


# ------------------------------------------------------------ hostile input: one line, exit 1


def _deep(levels):
    return "[" * levels + "]" * levels


@pytest.mark.parametrize(
    "name, text, words",
    [
        # csv.field_size_limit: the reader refuses fields over 131,072 characters
        ("big.csv", "kind,loglik\ncanonical," + "1" * 140_000 + "\n", ["big.csv", "line 2"]),
        ("array.json", "[1, 2, 3]", ["array.json", "item 1", "JSON object"]),
        ("lines.jsonl", '{"kind": "canonical", "loglik": 1}\n[1]\n', ["line 2", "JSON object"]),
        ("deep.json", _deep(1500), ["deep.json", "nested too deeply"]),
        ("deep.jsonl", '{"a": ' + _deep(1500) + "}\n", ["deep.jsonl", "line 1", "too deeply"]),
        ("nokind.csv", "loglik\n1.0\n0.5\n", ["nokind.csv", "no column 'kind'"]),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 20 else "",
)
def test_hostile_files_give_one_line_and_exit_1(tmp_path, name, text, words):
    path = write(tmp_path, name, text)
    code, _, err = run_cli("contamination", path)
    assert_one_line_error(code, err, *words)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("kind,loglik\ncanonical,1\nperm\xe9,2\n".encode("latin-1"))
    code, _, err = run_cli("contamination", str(path))
    assert_one_line_error(code, err, "latin1.csv", "not UTF-8")


@pytest.mark.parametrize(
    "argv, words",
    [
        (["calibrate", "coverage", "--replications", str(2**63)], ["--replications", "range"]),
        (["calibrate", "coverage", "--threads", str(2**63)], ["--threads", "range"]),
        (["calibrate", "coverage", "--seed", "-1"], ["--seed", "non-negative"]),
    ],
)
def test_out_of_range_flags_give_one_line_and_exit_1(argv, words):
    code, _, err = run_cli(*argv)
    assert_one_line_error(code, err, *words)


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/null are POSIX")
def test_a_directory_fifo_or_device_is_named_as_such(tmp_path):

    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    for argv, what in (
        (["contamination", str(tmp_path)], "is a directory"),
        (["contamination", str(fifo)], "is a FIFO"),
        (["contamination", os.devnull], "is a device"),
        (["audit", str(tmp_path)], "is a directory"),
        (["disclose", "validate", str(tmp_path)], "is a directory"),
    ):
        code, _, err = run_cli(*argv)
        assert_one_line_error(code, err, what)


def test_disclose_validate_without_jsonschema_is_one_line(tmp_path, monkeypatch):
    record = write(tmp_path, "record.json", "{}")
    # jsonschema made unimportable, as when the extra is not installed
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    code, _, err = run_cli("disclose", "validate", record)
    assert_one_line_error(code, err, "jsonschema", "pip install")


# ---------------------------------------------------------------------------- BOM, kind column


def test_a_utf8_byte_order_mark_is_read_transparently(tmp_path):
    text = (EXAMPLES / "contamination_clean.csv").read_text(encoding="utf-8")
    bom = tmp_path / "excel.csv"
    bom.write_text(text, encoding="utf-8-sig")  # what Excel's "CSV UTF-8" writes
    assert bom.read_bytes().startswith(b"\xef\xbb\xbf")
    plain = run_cli("contamination", str(EXAMPLES / "contamination_clean.csv"), "--json")
    code, out, err = run_cli("contamination", str(bom), "--json")
    assert "Traceback" not in err
    assert (code, json.loads(out)) == (plain[0], json.loads(plain[1]))
    jsonl = tmp_path / "excel.jsonl"
    jsonl.write_text(
        '{"kind": "canonical", "loglik": 1}\n{"kind": "p", "loglik": 2}\n', "utf-8-sig"
    )
    code, _, err = run_cli("contamination", str(jsonl))
    assert code == ExitCode.OK and "Traceback" not in err, err


# ---------------------------------------------------------------------------- Ctrl-C, closed pipe


def test_ctrl_c_exits_130_with_one_line():
    # a real process: a SIGINT delivered to a running command, its exit status 130
    import time

    from interrupting import signal_and_wait

    proc = subprocess.Popen(
        [sys.executable, "-m", "truescore_fast", "calibrate", "coverage", "--progress"]
        + ["--replications", "1000000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        proc.stderr.read(1)  # the progress bar: the study is running
        time.sleep(0.5)
        _, err_bytes, cpu = signal_and_wait(proc, timeout=300)
    finally:
        proc.kill()
    err = err_bytes.decode()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].strip() == "interrupted", err
    # CPU seconds from the signal to the exit (tests/interrupting.py: not the wall clock,
    # which a busy machine stretches): 0.06-0.13 s measured in five runs on 2 cores beside
    # other work (load average 4.7; 0.27-0.45 s of wall clock there); bound 5 s, a margin
    # of 38x (the interpreter's exit is most of it; tools/sanitize.sh slows every step)
    assert cpu < 5.0, cpu


def test_a_closed_stdout_exits_141_quietly():
    # a real process: stdout must be a pipe whose reader has gone, and main() then points
    # file descriptor 1 at devnull (os.dup2), which would silence this test process
    proc = subprocess.Popen(
        [sys.executable, "-m", "truescore_fast", "contamination"]
        + [str(EXAMPLES / "contamination_sharded.csv"), "--shard-column", "shard", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before a byte is written (`| head -c 0`)
    _, err_bytes = proc.communicate(timeout=120)
    err = err_bytes.decode()
    assert proc.returncode == 141, err
    assert err == "", err  # no "Broken pipe", no "Exception ignored"


# ---------------------------------------------------------------------------- flags, long values


@pytest.mark.parametrize(
    "argv, start",
    [
        (["audit", str(EXAMPLES / "audit_example.csv"), "--radius", "-1"], "error: --radius "),
        (["audit", str(EXAMPLES / "audit_example.csv"), "--alpha", "2"], "error: --alpha "),
        (["calibrate", "coverage", "--replications", "1"], "error: --replications "),
        (["calibrate", "coverage", "--threads", "0"], "error: --threads "),
    ],
)
def test_errors_name_the_flag_the_user_typed(argv, start):
    code, _, err = run_cli(*argv)
    assert_one_line_error(code, err)
    assert err.startswith(start), err


def test_disclose_validate_shortens_an_offending_value(tmp_path):
    record = json.loads((EXAMPLES / "disclosure" / "private_test_set.json").read_text())
    record["score"]["model"] = ["x" * 100] * 20_000  # a 2 MB value where a string belongs
    path = tmp_path / "long.json"
    path.write_text(json.dumps(record))
    code, out, err = run_cli("disclose", "validate", str(path))
    assert code == 1 and "Traceback" not in err, err
    problem = next(line for line in out.splitlines() if "score.model" in line)
    assert len(problem) < 300 and "characters]" in problem, problem[:400]
    assert problem.endswith("is not of type 'string'"), problem[-100:]
    code, out, _ = run_cli("disclose", "validate", str(path), "--json")
    assert max(len(p) for p in json.loads(out)["problems"]) < 300


@pytest.mark.parametrize("argv", [["calibrate", "sequential"], ["audit", "x.csv"]])
def test_input_nested_too_deeply_is_one_line_for_every_command(argv, monkeypatch):
    # no reader lets a RecursionError out today; if one did, a command without a FILE
    # argument (calibrate) must still give one line, not an AttributeError
    def too_deep(args):
        raise RecursionError

    module = "calibrate" if argv[0] == "calibrate" else "audit"
    handler = "run_calibrate" if module == "calibrate" else "run_audit"
    monkeypatch.setattr(f"truescore_fast.cli.{module}.{handler}", too_deep)
    code, _, err = run_cli(*argv)
    where = "the input" if module == "calibrate" else "x.csv"
    assert_one_line_error(code, err, f"{where}: nested too deeply to read")


def test_main_returns_a_plain_int(capsys):
    # the exit code a script gets from main() is the number, not the ExitCode member
    code = main(["contamination", str(EXAMPLES / "contamination_clean.csv")])
    assert type(code) is int and code == ExitCode.OK


# ------------------------------------------------------- errors that name their file


def test_a_value_that_is_not_a_number_names_the_file(tmp_path):
    compare = tmp_path / "scores.csv"
    compare.write_text("system_a,system_b\n0.5,0.4\n0.7,abc\n")
    code, _, err = run_cli("compare", compare, "--a-column", "system_a", "--b-column", "system_b")
    assert_one_line_error(code, err, f"--b-column: {compare} row 2: system_b='abc' is not")
    orders = tmp_path / "orders.csv"
    orders.write_text("kind,loglik\ncanonical,-3\npermuted,abc\n")
    code, _, err = run_cli("contamination", orders)
    assert_one_line_error(code, err, f"{orders} row 2: loglik='abc' is not a number")


def test_a_suite_table_missing_a_column_names_the_flags(tmp_path):
    table = tmp_path / "suite.csv"
    table.write_text("model,bench,parent,form,correct\nm,b,p,public,1\n")
    code, _, err = run_cli("suite", table)
    assert_one_line_error(code, err, "['benchmark']", "--benchmark-column")
    assert "columns=" not in err


def test_the_match_key_hint_suggests_a_parent_field_not_doc_id(tmp_path):
    logs = Path(__file__).resolve().parents[1] / "io" / "harness_logs" / "inspect" / "mean"
    code, _, err = run_cli(
        "audit", "--public", logs / "arith-public.eval", "--fresh", logs / "arith-fresh1.eval"
    )
    assert_one_line_error(code, err, "--match-key is required", "doc.parent_id")
    assert "e.g. doc_id" not in err

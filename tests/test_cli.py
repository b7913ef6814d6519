"""The truescore-fast command line: findings, exit codes, JSON, bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from truescore_fast.cli import EXIT_ERROR, EXIT_FINDING, EXIT_OK, main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_shipped_sharded_example_is_a_finding(capsys):
    code = main(
        ["contamination", str(EXAMPLES / "contamination_sharded.csv"), "--shard-column", "shard"]
    )
    assert code == EXIT_FINDING
    out = capsys.readouterr().out
    assert "8 shards" in out and "finding" in out
    assert "pooled p = 0.002748" in out  # the figure quoted in the README


def test_shipped_clean_example_is_no_finding(capsys):
    code = main(["contamination", str(EXAMPLES / "contamination_clean.csv")])
    assert code == EXIT_OK
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
    assert code == (EXIT_FINDING if payload["contaminated"] else EXIT_OK)
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
    assert main(["contamination", write(tmp_path, name, text)]) == EXIT_ERROR
    assert "error:" in capsys.readouterr().err


def test_missing_file_and_bad_arguments_exit_1(capsys):
    assert main(["contamination", "/nonexistent/file.csv"]) == EXIT_ERROR
    with pytest.raises(SystemExit) as info:
        main(["contamination"])
    assert info.value.code == EXIT_ERROR  # argparse alone would exit 2, a "finding"
    capsys.readouterr()


def test_sharded_file_with_duplicate_canonical_exits_1(tmp_path, capsys):
    text = "shard,kind,loglik\na,canonical,1\na,canonical,2\na,permuted,0\n"
    assert (
        main(["contamination", write(tmp_path, "d.csv", text), "--shard-column", "shard"])
        == EXIT_ERROR
    )
    capsys.readouterr()


def test_console_script_runs_as_a_process():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "truescore_fast",
            "contamination",
            str(EXAMPLES / "contamination_clean.csv"),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == EXIT_OK, proc.stderr
    assert json.loads(proc.stdout)["n_permutations"] == 99


def test_audit_command_on_shipped_example(capsys):
    args = [
        "audit",
        str(EXAMPLES / "audit_example.csv"),
        "--control",
        str(EXAMPLES / "audit_control.csv"),
        "--population-size",
        "1000",
    ]
    assert main([*args, "--radius", "0.02"]) == EXIT_FINDING
    assert main([*args, "--radius", "0.3"]) == EXIT_OK
    assert main([*args[:2], "--radius", "-1"]) == EXIT_ERROR
    assert main(["audit", "/nonexistent.csv"]) == EXIT_ERROR
    capsys.readouterr()


def test_contamination_examples_are_reproduced_by_their_seeded_script(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_contamination_example", EXAMPLES / "make_contamination_example.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = tmp_path
    module.main()
    for name in ("contamination_sharded.csv", "contamination_clean.csv"):
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes()

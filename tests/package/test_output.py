"""Every file the command line writes goes through one path (truescore_fast/_output.py),
tested here on the same hostile paths for each flag: ``-o`` (``shard-orders``, and the
scorer's ``score -o``), ``suite --report``, ``suite --plot``, ``calibrate --plot``, and
``--checkpoint`` (``calibrate`` and ``score``). The scorer's rows run a 2-layer GPT-2 built
here from a config (the score extra: skipped without torch and transformers).

=================  ==============================  =================================
path               -o, --report, --plot            --checkpoint (appended in place)
=================  ==============================  =================================
own symlink        followed; file replaced whole   followed; appended
planted symlink    refused, exit 1, one line       refused, exit 1, one line
dangling symlink   refused, nothing created        refused, nothing created
hard link          new file; other name unchanged  refused (would write through)
unwritable folder  refused before any work         refused before any work
failed write       old file intact, no temporary   error; the next run resumes it
/dev/full          exit 1, one line                refused (a device), exit 1
a directory        refused before any work         refused before any work
wrong suffix       refused before any work         (no suffix rule)
=================  ==============================  =================================
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from commands import assert_one_line_error, child_env, run_cli

pytest.importorskip("matplotlib")  # the figures

ROOT = Path(__file__).resolve().parents[2]
SUITE = [
    "suite", str(ROOT / "examples/suite/suite_example.csv.gz"),
    "--tests", "matched_form", "randomization",
]  # fmt: skip
COVERAGE = ["calibrate", "coverage", "--replications", "4", "--no-progress", "--quiet"]
# the scorer on a tiny model: {model} and {bench} filled in by _scorer_model
SCORE = ["score", "{bench}", "--model", "{model}", "--shards", "2", "--permutations", "3",
         "--context-len", "16", "--stride", "8", "--no-progress"]  # fmt: skip
FLAGS = {  # name -> (the command line before the path, the flag, a suffix it accepts)
    "-o": (["shard-orders", "10", "--shards", "2", "--permutations", "2"], "-o", ".jsonl"),
    "--report": (SUITE, "--report", ".html"),
    "suite --plot": (SUITE, "--plot", ".png"),
    "calibrate --plot": (COVERAGE, "--plot", ".png"),
    "--checkpoint": (COVERAGE, "--checkpoint", ".jsonl"),
    "score -o": (SCORE, "-o", ".csv"),
    "score --checkpoint": (SCORE, "--checkpoint", ".ckpt"),
}
APPENDED = ("--checkpoint", "score --checkpoint")  # checkpoints: appended in place
REPLACED = [name for name in FLAGS if name not in APPENDED]
_SCORER: dict[str, str] = {}  # "model", "bench": the tiny model's folder and benchmark


@pytest.fixture(autouse=True)
def _scorer_model(request, tmp_path_factory):
    """For the scorer's rows: a 2-layer GPT-2 and a character tokenizer saved once (no
    download), and a 12-line benchmark; skipped without the score extra."""
    callspec = getattr(request.node, "callspec", None)
    name = callspec.params.get("name", "") if callspec is not None else ""
    if not str(name).startswith("score"):
        yield
        return
    pytest.importorskip("torch", reason="the score extra (torch) is not installed")
    pytest.importorskip("transformers", reason="the score extra (transformers) is not installed")

    if not _SCORER:
        _SCORER.update(_save_model(tmp_path_factory.mktemp("model")))
    yield


def _save_model(folder: Path) -> dict[str, str]:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(1)
    config = GPT2Config(vocab_size=60, n_positions=32, n_embd=16, n_layer=2, n_head=2)
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    vocab = {ch: i for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz .\n")}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="."))
    tokenizer.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token=".").save_pretrained(folder)
    bench = folder / "bench.txt"
    bench.write_text("".join(f"ab cde fg{' hij' * (i % 3)}.\n" for i in range(12)))
    return {"model": str(folder), "bench": str(bench)}


def command(name: str) -> list[str]:
    """The command line before the output flag (the scorer's paths filled in)."""
    return [word.format(**_SCORER) if word[:1] == "{" else word for word in FLAGS[name][0]]


def run(name: str, path: Path | str):
    return run_cli(*command(name), FLAGS[name][1], path)


def ran(code: int, err: str) -> None:
    assert code in (0, 2) and "Traceback" not in err, (code, err)


@pytest.mark.slow
@pytest.mark.parametrize("name", FLAGS)
def test_a_link_of_ones_own_to_a_file_is_followed(name, tmp_path):
    suffix = FLAGS[name][2]
    target = tmp_path / "real" / f"out{suffix}"
    target.parent.mkdir()
    target.write_bytes(b"" if name in APPENDED else b"old")
    before = target.stat().st_ino
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    ran(*run(name, link)[::2])
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() not in (b"", b"old")
    if name not in APPENDED:  # replaced whole: a new file renamed over the old
        assert target.stat().st_ino != before
        assert os.listdir(target.parent) == [target.name]  # no temporary left


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs lchown")
@pytest.mark.parametrize("name", FLAGS)
def test_a_link_planted_by_another_user_is_refused(name, tmp_path):
    suffix = FLAGS[name][2]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / f"out{suffix}"
    link.symlink_to(victim)
    os.lchown(link, 65534, 65534)  # nobody's: planted in a folder someone else can write
    code, _, err = run(name, link)
    assert_one_line_error(code, err, FLAGS[name][1], "owned by another user")
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("name", FLAGS)
def test_a_dangling_link_is_refused_and_nothing_is_created(name, tmp_path):
    suffix = FLAGS[name][2]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / f"out{suffix}"
    link.symlink_to(elsewhere / f"made{suffix}")
    code, _, err = run(name, link)
    assert_one_line_error(code, err, FLAGS[name][1], "symbolic link to nothing")
    assert os.listdir(elsewhere) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", FLAGS)
def test_a_hard_link_is_never_written_through(name, tmp_path):
    suffix = FLAGS[name][2]
    other = tmp_path / "other.txt"
    other.write_text("")  # empty: a checkpoint would accept it as new
    path = tmp_path / f"out{suffix}"
    os.link(other, path)
    code, _, err = run(name, path)
    if name in APPENDED:  # appended where it is: refused
        assert_one_line_error(code, err, "--checkpoint", "hard links")
        assert path.read_text() == ""
    else:  # a new file at the path; the other name keeps the old one
        ran(code, err)
        assert path.stat().st_size > 0 and not os.path.samefile(path, other)
    assert other.read_text() == ""


def _without_write_permission() -> list[str]:
    """The command prefix that runs a child unable to write where permissions say no:
    none for a user; for root, ``setpriv`` dropping the capabilities that let root
    write anywhere (skipped where there is no setpriv)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("root writes anywhere, and setpriv is not here to drop that")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


@pytest.mark.slow
@pytest.mark.parametrize("name", FLAGS)
def test_a_folder_without_write_permission_is_refused_before_any_work(name, tmp_path):
    argv, flag, suffix = command(name), FLAGS[name][1], FLAGS[name][2]
    if FLAGS[name][0] is SUITE:  # an input that does not exist: the output is checked first
        argv = ["suite", str(tmp_path / "missing.csv")]
    if FLAGS[name][0] is SCORE:
        argv[1] = str(tmp_path / "missing.txt")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        proc = subprocess.run(
            [*_without_write_permission(), sys.executable, "-m", "truescore_fast", *argv,
             flag, str(locked / f"out{suffix}")],
            capture_output=True, text=True, env=child_env(), timeout=300,
        )  # fmt: skip
    finally:
        locked.chmod(0o755)
    assert_one_line_error(proc.returncode, proc.stderr, flag, "no permission", str(locked))
    assert os.listdir(locked) == []


def _full_disk(descriptor):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.slow
@pytest.mark.parametrize("name", REPLACED)
def test_a_failed_write_leaves_the_previous_file(name, tmp_path, monkeypatch):
    path = tmp_path / f"out{FLAGS[name][2]}"
    ran(*run(name, path)[::2])  # a first, whole file
    previous = path.read_bytes()
    monkeypatch.setattr(os, "fsync", _full_disk)  # the disk fills as the file is committed
    code, _, err = run(name, path)
    assert_one_line_error(code, err, FLAGS[name][1], "No space left on device")
    assert path.read_bytes() == previous
    assert os.listdir(tmp_path) == [path.name]  # no partial, no temporary file


def test_a_failed_checkpoint_write_leaves_a_file_the_next_run_resumes(tmp_path, monkeypatch):
    path = tmp_path / "out.jsonl"
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", _full_disk)  # the disk is full from the first record
        code, _, err = run("--checkpoint", path)
    assert_one_line_error(code, err, "checkpoint", "No space left on device")
    code, resumed, err = run("--checkpoint", path)
    assert code == 0, err
    assert resumed == run_cli(*COVERAGE)[1]


@pytest.mark.parametrize("name", FLAGS)
def test_dev_full_is_an_error(name):
    code, _, err = run(name, "/dev/full")
    assert_one_line_error(code, err, FLAGS[name][1], "/dev/full")


@pytest.mark.parametrize("name", FLAGS)
def test_a_directory_or_a_wrong_suffix_is_refused_before_any_work(name, tmp_path):
    argv, flag, suffix = command(name), FLAGS[name][1], FLAGS[name][2]
    if FLAGS[name][0] is SUITE:  # an input that does not exist: the output is checked first
        argv = ["suite", str(tmp_path / "missing.csv")]
    if FLAGS[name][0] is SCORE:  # a benchmark that does not exist, likewise
        argv[1] = str(tmp_path / "missing.txt")
    folder = tmp_path / f"folder{suffix}"
    folder.mkdir()
    code, _, err = run_cli(*argv, flag, folder)
    assert_one_line_error(code, err, flag, "is a directory")
    if name in ("--report", "suite --plot", "calibrate --plot"):
        code, _, err = run_cli(*argv, flag, tmp_path / "out.txt")
        assert_one_line_error(code, err, flag, "must name a", "out.txt")
    assert os.listdir(tmp_path) == [folder.name]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["suite", "--help"]])
def test_version_and_help_into_a_full_disk_exit_1(argv):
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "truescore_fast", *argv],
            stdout=full, stderr=subprocess.PIPE, text=True, env=child_env(), timeout=120,
        )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip() == "error: cannot write standard output: No space left on device"

"""What the command line writes and where (cli/_common.py, issue 23): an output file is
replaced through a unique temporary file only when it is a regular file (or absent),
written directly when it is a FIFO or a device, followed through a symbolic link; a
planted temporary name cannot redirect the write; an error or Ctrl-C leaves no temporary
file. A closed standard output and a refused size are one line, never a traceback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from commands import assert_one_line_error, child_env, run_cli
from truescore_fast._output import output_file
from truescore_fast.cli._common import write_output

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ORDERS = ["shard-orders", "40", "--shards", "4", "--permutations", "3", "--seed", "1"]


def expected_orders():
    code, out, err = run_cli(*ORDERS)
    assert code == 0, err
    return out


def test_a_new_file_gets_the_umask_mode_and_no_temporary_file_stays(tmp_path):
    target = tmp_path / "orders.jsonl"
    old = os.umask(0o027)
    try:
        code, _, err = run_cli(*ORDERS, "-o", target)
    finally:
        os.umask(old)
    assert code == 0, err
    assert target.read_text() == expected_orders()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["orders.jsonl"]


def test_a_replaced_file_keeps_its_permissions(tmp_path):
    target = tmp_path / "orders.jsonl"
    target.write_text("old\n")
    target.chmod(0o604)
    write_output(str(target), ["new\n"])
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604


def test_a_planted_partial_link_cannot_redirect_the_write(tmp_path):
    # the old scheme wrote FILE.partial, following a link planted under that name
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    target = tmp_path / "out.jsonl"
    (tmp_path / "out.jsonl.partial").symlink_to(victim)
    code, _, err = run_cli(*ORDERS, "-o", target)
    assert code == 0, err
    assert victim.read_text() == "precious\n"
    assert target.read_text() == expected_orders() and not target.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl", "out.jsonl.partial", "victim.txt"]


def test_a_symlink_is_followed_and_its_target_replaced(tmp_path):
    real = tmp_path / "data" / "orders.jsonl"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "orders.jsonl"
    link.symlink_to(real)
    code, _, err = run_cli(*ORDERS, "-o", link)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == expected_orders()
    assert os.listdir(real.parent) == ["orders.jsonl"]  # the temporary file was beside it


def test_a_dangling_symlink_is_refused_and_creates_nothing(tmp_path):
    # (it created the file it names, as the shell's > does, until issue 36: a link planted
    # in a shared folder then chose where the output went)
    real = tmp_path / "elsewhere" / "made.jsonl"
    real.parent.mkdir()
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    with pytest.raises(ValueError, match=r"^-o: .*link.jsonl is a symbolic link to nothing"):
        write_output(str(link), ["x\n"])
    assert link.is_symlink() and not real.exists()
    assert os.listdir(real.parent) == []


def test_a_fifo_is_written_directly_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "orders.fifo"
    os.mkfifo(fifo)
    received = []

    def read():
        with open(fifo) as handle:
            received.append(handle.read())

    reader = threading.Thread(target=read)
    reader.start()
    code, _, err = run_cli(*ORDERS, "-o", fifo)
    reader.join(timeout=60)
    assert code == 0, err
    assert received == [expected_orders()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["orders.fifo"]


def test_devices_are_written_directly_never_replaced():
    write_output(os.devnull, ["nothing\n"])
    assert stat.S_ISCHR(os.lstat(os.devnull).st_mode)
    if os.path.exists("/dev/full"):  # a full device: one line, the device left as it is
        code, _, err = run_cli(*ORDERS, "-o", "/dev/full")
        assert_one_line_error(code, err, "-o", "/dev/full")
        assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="no /dev/stdout")
def test_dev_stdout_writes_to_the_shells_file_without_replacing_it(tmp_path):
    # `truescore-fast ... -o /dev/stdout > out` writes through the shell's descriptor: not
    # a file resolved and renamed over, nor a second truncating open that the summary
    # printed after it overwrites
    out = tmp_path / "out.jsonl"
    with open(out, "wb") as handle:
        before = os.fstat(handle.fileno()).st_ino
        proc = subprocess.run(
            [sys.executable, "-m", "truescore_fast", *ORDERS, "-o", "/dev/stdout"],
            stdout=handle,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=120,
            check=False,
        )
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_ino == before
    text = out.read_text()
    assert text.startswith(expected_orders())
    assert text[len(expected_orders()) :].endswith("wrote 16 orders to /dev/stdout\n")


def test_an_error_mid_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "orders.jsonl"
    target.write_text("kept\n")

    def chunks():
        yield "half"
        raise RuntimeError("the producer failed")

    with pytest.raises(RuntimeError):
        write_output(str(target), chunks())
    assert target.read_text() == "kept\n" and os.listdir(tmp_path) == ["orders.jsonl"]


def test_ctrl_c_in_a_real_process_leaves_no_temporary(tmp_path):
    # SIGINT while the output is being written: exit 130, the old file, nothing else
    target = tmp_path / "orders.jsonl"
    target.write_text("kept\n")
    code = (
        "import os, signal, sys\n"
        "from truescore_fast.cli import _common\n"
        "def chunks():\n"
        "    yield 'half'\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    yield 'never'\n"
        f"_common.write_output({str(target)!r}, chunks())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=child_env(), timeout=120
    )
    assert proc.returncode != 0 and b"KeyboardInterrupt" in proc.stderr
    assert target.read_text() == "kept\n" and os.listdir(tmp_path) == ["orders.jsonl"]


def test_a_directory_is_refused_in_one_line(tmp_path):
    code, _, err = run_cli(*ORDERS, "-o", tmp_path)
    assert_one_line_error(code, err, "-o", "directory")
    with pytest.raises(ValueError, match="--plot: .* is a directory"):
        with output_file(str(tmp_path), flag="--plot", binary=True):
            pass


def test_plot_is_written_through_a_temporary_file(tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "coverage.png"
    target.write_bytes(b"old")
    link = tmp_path / "link.png"
    link.symlink_to(target)
    code, _, err = run_cli(
        "calibrate", "coverage", "--replications", "4", "--no-progress", "--plot", link
    )
    assert code == 0, err
    assert target.read_bytes().startswith(b"\x89PNG") and link.is_symlink()
    assert sorted(os.listdir(tmp_path)) == ["coverage.png", "link.png"]


# ---------------------------------------------------------------------------- closed stdout

CLOSED = [
    ORDERS,
    ORDERS + ["-o", "{tmp}/orders.jsonl"],
    ["disclose", "schema"],
    ["disclose", "template"],
    ["contamination", str(EXAMPLES / "contamination_sharded.csv"), "--shard-column", "shard"],
    ["compare", str(EXAMPLES / "compare_example.csv"), "--a-column", "system_a"]
    + ["--b-column", "system_b"],
    *(
        ["calibrate", study, "--replications", "2"]
        for study in ("coverage", "stress", "detection", "budget", "sequential")
        + ("sequential-orders",)
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv", CLOSED, ids=lambda argv: " ".join(argv[:2]))
def test_a_closed_stdout_is_one_line_and_exit_141(argv, tmp_path):
    # descriptor 1 really closed in the child (the shell's >&-), not pointed at devnull
    words = [word.replace("{tmp}", str(tmp_path)) for word in argv]
    proc = subprocess.run(
        [sys.executable, "-m", "truescore_fast", *words],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(1),  # noqa: PLW1509 - no threads in this test
        env=child_env(),
        timeout=120,
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 141, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: standard output is closed"), err
    assert not (tmp_path / "orders.jsonl").exists()  # nothing ran


def test_the_shells_close_gives_the_same_line():
    proc = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m truescore_fast disclose schema >&-'],
        stderr=subprocess.PIPE,
        env=child_env(),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 141
    assert proc.stderr.decode().startswith("error: standard output is closed")


def test_a_huge_resample_count_is_one_line():
    # 10**13 resamples of the 200 examples: the size is refused before allocating
    code, _, err = run_cli(
        "compare",
        EXAMPLES / "compare_example.csv",
        "--a-column",
        "system_a",
        "--b-column",
        "system_b",
        "--resamples",
        str(10**13),
    )
    assert_one_line_error(code, err, "--resamples")
    assert "n_bootstrap" not in err and "use a smaller --resamples" in err, err


def test_argument_names_become_flags_through_the_parser_not_the_text():
    # main() asks the chosen command's parser which flag gives the error's argument
    # (flags marked with feeds(), else each dest); file names and quoted names stay
    from truescore_fast.cli import _build_parser, _message
    from truescore_fast.cli._common import argument_flags
    from truescore_fast.errors import ArgumentError, SizeError

    parser = _build_parser("compare")
    flags = argument_flags(parser)
    assert flags["n_bootstrap"] == flags["n_resamples"] == "--resamples"
    assert flags["clusters"] == "--cluster-column" and flags["alpha"] == "--alpha"
    assert argument_flags(_build_parser("shard-orders"))["n_examples"] == "N_EXAMPLES"
    size = SizeError(
        "n_bootstrap", template="{n_bootstrap} needs 80 GB; use a smaller {n_bootstrap}"
    )
    assert str(size) == "n_bootstrap needs 80 GB; use a smaller n_bootstrap"
    assert _message(size, parser) == "--resamples needs 80 GB; use a smaller --resamples"
    plain = ArgumentError("alpha", "alpha must lie in (0, 1); cannot read max_parents.csv")
    assert _message(plain, parser) == "--alpha must lie in (0, 1); cannot read max_parents.csv"
    # an argument no flag gives, and a name that only starts like the argument, stay
    assert _message(ArgumentError("match_key", "match_key is missing"), parser) == (
        "match_key is missing"
    )
    assert _message(ArgumentError("n", "nothing to compare"), parser) == "nothing to compare"
    assert _message(ValueError("column 'alpha' is missing"), parser) == (
        "column 'alpha' is missing"
    )

"""``truescore-fast calibrate`` end to end, as a user runs it: main(argv) in this process
(commands.run_calibrate), its exit code and output; a process only where the test needs one
(a terminal, Ctrl-C, a Dask cluster the command starts, Dask's logging), each saying
why. Your own population (--population), the budget plan's N and
integer counts, progress only on a terminal (--progress/--no-progress/--quiet), tables
within 100 columns (--wide), --json, --plot in three formats, --checkpoint (Ctrl-C and
resume) and Dask (--dask-scheduler, --executor dask)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from commands import assert_one_line_error as one_line_error
from commands import run_calibrate, run_calibrate_process
from interrupting import interrupt_after

ROOT = Path(__file__).resolve().parents[2]
POPULATION = ROOT / "examples" / "calibration_population.csv"
EXIT_OK, EXIT_ERROR = 0, 1
run_cli, run_cli_process = run_calibrate, run_calibrate_process


def example_gaps():
    with open(POPULATION, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return np.array([float(r["gap"]) for r in rows]), np.array([r["subject"] for r in rows])


# ---------------------------------------------------------------------------- --population


def test_coverage_on_your_own_population_matches_the_library():
    code, out, err = run_cli(
        "coverage", "--population", POPULATION, "--n", 30, 150, "--replications", 600,
        "--seed", 4, "--json",
    )  # fmt: skip
    assert code == EXIT_OK, err
    payload = json.loads(out)
    gaps, _ = example_gaps()
    assert payload["population"]["size"] == gaps.size == 600
    assert payload["population"]["mean_gap"] == pytest.approx(gaps.mean())
    (srs,) = payload["tables"][0]["meta"]["tables"]
    direct = tf.coverage_study(gaps, [30, 150], replications=600, seed=4, progress=False)
    assert srs["columns"]["coverage"] == direct["coverage"].tolist()
    assert srs["columns"]["half_width"] == pytest.approx(direct["half_width"].tolist(), rel=0)


def test_coverage_on_your_population_is_statistically_sound():
    """Hoeffding is valid at every n: its coverage is at least 95% within 3 Monte Carlo SE;
    on this sparse population (15% nonzero) a sample of n = 10 holds no nonzero gap with
    probability about 0.85**10 = 0.2, where Wald's interval has zero width and misses the
    mean: it undercovers, as the paper warns."""
    code, out, err = run_cli(
        "coverage", "--population", POPULATION, "--n", 10, 300, "--replications", 4000,
        "--intervals", "hoeffding", "wald", "--json",
    )  # fmt: skip
    assert code == EXIT_OK, err
    cols = json.loads(out)["tables"][0]["meta"]["tables"][0]["columns"]
    for n, m, cov, se in zip(
        cols["n"], cols["interval"], cols["coverage"], cols["coverage_se"], strict=True
    ):
        if m == "hoeffding":
            assert cov >= 0.95 - 3 * max(se, 1e-3), (n, cov)
        if m == "wald" and n == 10:
            assert cov < 0.95 - 3 * se, cov


def test_strata_column_adds_a_stratified_design():
    code, out, err = run_cli(
        "coverage", "--population", POPULATION, "--strata-column", "subject", "--n", 60,
        "--replications", 300, "--intervals", "wald", "betting",
    )  # fmt: skip
    assert code == EXIT_OK, err
    assert "srs" in out and "stratified" in out
    assert "calibration_population.csv" in out and "strata by subject" in out
    assert all(len(line) <= 100 for line in out.splitlines())


def test_population_from_json_lines(tmp_path):
    gaps, subjects = example_gaps()
    path = tmp_path / "gaps.jsonl"
    path.write_text(
        "".join(json.dumps({"d": g, "s": s}) + "\n" for g, s in zip(gaps, subjects, strict=True))
    )
    argv = ("coverage", "--n", 40, "--replications", 300, "--intervals", "wald", "--json")
    code, out, err = run_cli(*argv, "--population", path, "--value-column", "d")
    assert code == EXIT_OK, err
    _, csv_out, _ = run_cli(*argv, "--population", POPULATION)
    json_table = json.loads(out)["tables"][0]["columns"]
    assert json_table == json.loads(csv_out)["tables"][0]["columns"]


def test_alpha_sets_the_nominal_level():
    code, out, err = run_cli(
        "coverage", "--population", POPULATION, "--n", 100, "--replications", 2000,
        "--intervals", "hoeffding", "wald", "--alpha", 0.2, "--json",
    )  # fmt: skip
    assert code == EXIT_OK, err
    (srs,) = json.loads(out)["tables"][0]["meta"]["tables"]
    assert srs["meta"]["alpha"] == 0.2 and srs["title"].startswith("Coverage of 80% intervals")
    cover = dict(zip(srs["columns"]["interval"], srs["columns"]["coverage"], strict=True))
    se = max(srs["columns"]["coverage_se"])
    # Wald near its nominal 80% (within 4 SE + a normal-approximation margin), far below
    # the 95% it reaches at the default alpha
    assert abs(cover["wald"] - 0.8) < 4 * se + 0.03, cover
    code, _, err = run_cli("budget", "--alpha", 1.5)
    one_line_error(code, err, "--alpha")


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--value-column", "score"], ["--value-column", "'score'", "parent, subject, gap"]),
        (["--strata-column", "area"], ["--strata-column", "'area'"]),
        (["--n", "601"], ["--n 601", "600 items"]),
        (["--n", "1"], ["--n 1"]),
    ],
)
def test_population_errors_are_one_line(extra, words):
    code, _, err = run_cli("coverage", "--population", POPULATION, "--replications", 10, *extra)
    one_line_error(code, err, *words)


def test_a_bad_gap_is_named_by_row(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("gap\n0.5\n0\n1.5\n")
    code, _, err = run_cli("coverage", "--population", path, "--n", 2)
    one_line_error(code, err, "row 3", "[-1, 1]")
    path.write_text("gap\n0.5\nx\n1\n")
    code, _, err = run_cli("coverage", "--population", path, "--n", 2)
    one_line_error(code, err, "row 2", "not a number")


@pytest.mark.parametrize(
    "argv, words",
    [
        (["stress", "--population", POPULATION], ["--population applies to calibrate coverage"]),
        (["budget", "--n", "10"], ["--n applies"]),
        (["coverage", "--population-size", "10"], ["--population-size applies"]),
        (["coverage", "--strata-column", "s"], ["--strata-column needs --population"]),
        (["budget", "--plot", "b.jpg"], ["--plot", ".png, .svg or .pdf"]),
        (["budget", "--quiet", "--progress"], ["--quiet and --progress"]),
    ],
)
def test_flags_that_do_not_apply_are_one_line_errors(argv, words, tmp_path):
    code, _, err = run_cli(*argv, cwd=tmp_path)
    one_line_error(code, err, *words)
    assert not (tmp_path / "b.jpg").exists()


# ---------------------------------------------------------------------------- budget


def test_budget_plans_for_the_bank_it_describes_with_integer_counts():
    code, out, err = run_cli("budget", "--replications", 50, "--json")
    assert code == EXIT_OK, err
    curves, plan = json.loads(out)["tables"]
    assert "N = 200 parents" in curves["title"] and "N = 200 parents" in plan["title"]
    assert plan["meta"]["population_size"] == 200
    for name in ("n_normal", "n_guardrail", "n_planned"):
        for value in plan["columns"][name]:
            assert isinstance(value, int) or value == "inf", (name, value)
    # with the finite-population correction for N = 200, the normal plan never asks for
    # more than the whole bank (the planner used N = 1,000 before: 869 parents)
    assert all(v <= 200 for v in plan["columns"]["n_normal"])
    code, text, _ = run_cli("budget", "--replications", 50, "--population-size", 1000)
    assert code == EXIT_OK and "N = 1,000 parents" in text
    plan_rows = text.split("Parents to audit")[1].splitlines()[3:6]
    for row in plan_rows:  # delta, gap_sd as decimals; the three counts as integers
        assert [cell.isdigit() for cell in row.split()[2:]] == [True] * 3, row


# ---------------------------------------------------------------------------- output


def test_tables_fit_100_columns_unless_wide():
    code, out, err = run_cli("stress", "--replications", 20)
    assert code == EXIT_OK, err
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "standard errors left out" in out and "hoeffding_serfling" in out
    assert "with --wide to see" in " ".join(out.split()) and "summary(" not in out
    code, wide, _ = run_cli("stress", "--replications", 20, "--wide")
    assert code == EXIT_OK
    assert max(len(line) for line in wide.splitlines()) > 100
    header = next(line for line in wide.splitlines() if line.lstrip().startswith("N "))
    assert "hoeffding_se" in header and "betting_se" in header and "bernstein/hoeffding" in header


@pytest.mark.parametrize("study", ["coverage", "detection", "budget"])
def test_every_study_prints_json_and_narrow_text(study):
    code, out, err = run_cli(study, "--replications", 20, "--json")
    assert code == EXIT_OK, err
    payload = json.loads(out)
    assert payload["study"] == study and payload["tables"]
    code, text, _ = run_cli(study, "--replications", 20)
    assert code == EXIT_OK
    assert max(len(line) for line in text.splitlines()) <= 100


def _slow_enough():
    """A coverage run that lasts well over a second (the auto bar starts after 1 s)."""
    return ("coverage", "--population", POPULATION, "--n", 50, "--intervals", "betting",
            "--replications", 60000)  # fmt: skip


def run_on_a_terminal(*argv):
    """Run with stderr on a pseudo-terminal: (exit code, stdout, what the terminal got)."""
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    # a terminal 24 x 100 (a fresh pseudo-terminal is 0 x 0: tqdm would draw no bar)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "truescore_fast", "calibrate", *map(str, argv)],
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
        # the automatic bar at once, not after 1 s: a fast machine ends this run sooner
        env={**os.environ, "TRUESCORE_FAST_PROGRESS_AFTER": "0"},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out, _ = proc.communicate(timeout=300)
    os.close(leader)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_progress_only_on_a_terminal_unless_asked():
    code, _, err = run_cli(*_slow_enough())
    assert code == EXIT_OK and err == "", err  # stderr is not a terminal: no bar
    code, _, err = run_cli(*_slow_enough(), "--progress")
    assert code == EXIT_OK and "coverage" in err  # asked for: a bar even on a pipe
    # a real process for the terminal: its stderr must be a pseudo-terminal (isatty)
    code, _, terminal = run_on_a_terminal(*_slow_enough())
    assert code == EXIT_OK and "coverage" in terminal  # a terminal: the automatic bar
    code, _, terminal = run_on_a_terminal(*_slow_enough(), "--no-progress")
    assert code == EXIT_OK and terminal == ""


def test_quiet_prints_only_the_tables(tmp_path):
    pytest.importorskip("matplotlib")
    # a real process: --quiet is checked on a terminal (stderr a pseudo-terminal)
    plot = tmp_path / "budget.png"
    code, out, terminal = run_on_a_terminal(
        "budget", "--replications", 30000, "--plot", plot, "--quiet"
    )
    assert code == EXIT_OK and terminal == ""
    assert "figure saved" not in out and "Budgeted audits" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "suffix, magic",
    [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF"), (".PDF", b"%PDF")],
)
def test_plot_formats_by_suffix(tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"figure{suffix}"
    code, out, err = run_cli("budget", "--replications", 20, "--plot", path)
    assert code == EXIT_OK, err
    assert path.read_bytes().startswith(magic)
    assert f"figure saved to {path}" in out


@pytest.mark.parametrize("study", ["coverage", "stress", "detection"])
def test_every_study_plots(tmp_path, study):
    pytest.importorskip("matplotlib")
    path = tmp_path / f"{study}.svg"
    code, _, err = run_cli(study, "--replications", 20, "--plot", path)
    assert code == EXIT_OK, err
    svg = path.read_text()
    if study == "stress":  # the x axis names the settings, not an index
        assert "N = 1,000, n = 50" in svg and "gap shape" in svg
    if study == "detection":  # the null panel shows the interval rule's rate too
        assert svg.count("interval rule") >= 3 and "alpha = 0.05" in svg
    if study == "coverage":
        for m in ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting"):
            assert m in svg


# ---------------------------------------------------------------------------- --checkpoint


def test_checkpoint_resume_reruns_nothing_and_changes_nothing(tmp_path):
    path = tmp_path / "detection.jsonl"
    argv = ("detection", "--replications", 300, "--json")
    code, plain, err = run_cli(*argv)
    assert code == EXIT_OK, err
    code, first, err = run_cli(*argv, "--checkpoint", path)
    assert code == EXIT_OK, err
    assert first == plain
    runs = {json.loads(line)["run"] for line in path.read_text().splitlines()}
    assert runs == {"planted", "null", "mismatch"}
    size = path.stat().st_size
    code, again, err = run_cli(*argv, "--checkpoint", path)
    assert code == EXIT_OK, err
    assert again == plain
    assert path.stat().st_size == size  # every cell was read back: nothing ran, nothing saved
    code, _, err = run_cli(*argv, "--checkpoint", path, "--seed", 1)
    one_line_error(code, err, "different planted run", "delete it or name another file")


@pytest.mark.slow
def test_ctrl_c_then_resume_gives_the_uninterrupted_result(tmp_path):
    path = tmp_path / "coverage.jsonl"
    argv = ["coverage", "--population", str(POPULATION), "--n", "50", "100", "200",
            "--intervals", "betting", "--replications", "100000", "--threads", "1",
            "--json"]  # fmt: skip
    code, plain, err = run_cli(*argv)
    assert code == EXIT_OK, err
    script = (
        "import sys; from truescore_fast.cli import main; print('ready', flush=True); "
        "sys.exit(main(sys.argv[1:]))"
    )
    # Ctrl-C as soon as the first of the three cells is saved (two are still to run),
    # however fast the machine: a real process, for a real SIGINT and its exit status
    code, _, err, _ = interrupt_after(
        [sys.executable, "-c", script, "calibrate", *argv, "--checkpoint", str(path)], 0.0,
        timeout=120, when=lambda: path.exists() and '"tasks"' in path.read_text(),
    )  # fmt: skip
    assert code == 130 and err.strip() == "interrupted", err
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert any("tasks" in r for r in records), "the state at Ctrl-C was saved"
    code, resumed, err = run_cli(*argv, "--checkpoint", path)
    assert code == EXIT_OK, err
    assert resumed == plain


# ---------------------------------------------------------------------------- Dask


def test_dask_scheduler_gives_the_local_result():
    distributed = pytest.importorskip("distributed")
    argv = ("stress", "--replications", 300, "--seed", 5, "--json", "--threads", 1)
    code, local, err = run_cli(*argv)
    assert code == EXIT_OK, err
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp",
        host="127.0.0.1", dashboard_address="127.0.0.1:0",  # None serves on port 8787
    ) as cluster:  # fmt: skip
        with distributed.Client(cluster) as client:
            code, remote, err = run_cli(*argv, "--dask-scheduler", cluster.scheduler_address)
            assert code == EXIT_OK, err
            assert remote == local
            tasks = client.run_on_scheduler(
                lambda dask_scheduler: len(dask_scheduler.task_prefixes)
            )
    assert tasks > 0  # the work went through the scheduler


@pytest.mark.slow
def test_executor_dask_starts_a_local_cluster():
    pytest.importorskip("distributed")
    argv = ("budget", "--replications", 300, "--json")
    code, local, err = run_cli(*argv)
    assert code == EXIT_OK, err
    # a real process: the command starts its own cluster of worker processes, and Dask
    # reads its configuration (DASK_* variables, here removed) when first imported
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    code, remote, err = run_cli_process(*argv, "--executor", "dask", env=env)
    assert code == EXIT_OK, err
    assert remote == local


@pytest.mark.slow
def test_an_unreachable_scheduler_is_a_one_line_error():
    pytest.importorskip("distributed")
    # a real process: distributed's log handlers write to the stderr of the process that
    # imported it, so only a process shows whether the user sees one line and no more
    code, _, err = run_cli_process(
        "budget", "--replications", 20, "--dask-scheduler", "tcp://127.0.0.1:9", timeout=120
    )
    one_line_error(code, err, "--dask-scheduler", "tcp://127.0.0.1:9")

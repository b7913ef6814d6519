"""``truescore-fast calibrate sequential`` and ``calibrate sequential-orders`` end to end,
in this process (main(argv), test_cli_calibrate.run_cli; a process for Ctrl-C and for the
Dask cluster the command starts): the library's tables (same seed, same settings),
--json and narrow text, --checkpoint (read back, refused for other settings, Ctrl-C then
resume), a Dask cluster of worker processes (--executor dask) and one-line errors for
flags that do not apply."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
import truescore_fast as tf
from commands import assert_one_line_error as one_line_error
from commands import child_env
from commands import run_calibrate as run_cli
from commands import run_calibrate_process as run_cli_process
from interrupting import interrupt_after

EXIT_OK = 0

EXIT_INTERRUPTED = 130


def bank(seed):
    """The synthetic bank the command describes in its notes: 2,000 parents, public and
    two fresh forms, per-parent difficulty Beta(2, 2), no form effect."""
    from truescore_fast.studies._presets import _synthetic_bank

    public, fresh = _synthetic_bank(1, 2000, np.random.default_rng(seed))
    return public[0], fresh[0]


def same_columns(payload_table, table):
    """The printed table is the library's, in the JSON convention of ``to_dict`` (an
    infinite value, such as a same-power SE when every run claimed, as "inf")."""
    assert payload_table["title"] == table.title
    columns = table.to_dict()["columns"]
    for name in table.columns:
        assert payload_table["columns"][name] == columns[name], name


def test_sequential_prints_the_library_table():
    code, out, err = run_cli("sequential", "--replications", 300, "--seed", 3, "--json")
    assert code == EXIT_OK, err
    payload = json.loads(out)
    assert payload["study"] == "sequential"
    (table,) = payload["tables"]
    want = tf.sequential_study(
        *bank(3), deltas=(0.0, 0.05, 0.10), max_parents=1200, look_every=50,
        effect_size=0.05, replications=300, seed=3, progress=False,
    )  # fmt: skip
    same_columns(table, want)
    assert any("Synthetic bank: 2,000 parents" in note for note in table["notes"])


def test_sequential_orders_prints_the_library_table():
    code, out, err = run_cli("sequential-orders", "--replications", 300, "--alpha", 0.1, "--json")
    assert code == EXIT_OK, err
    (table,) = json.loads(out)["tables"]
    want = tf.sequential_order_study(
        n_shards=10, max_permutations=99, h=10, shifts=(0.0, 1.0, 2.0, 3.0),
        replications=300, alpha=0.1, seed=0, progress=False,
    )  # fmt: skip
    same_columns(table, want)


def test_text_fits_100_columns():
    for study in ("sequential", "sequential-orders"):
        code, text, err = run_cli(study, "--replications", 20)
        assert code == EXIT_OK, err
        assert max(len(line) for line in text.splitlines()) <= 100, study
        assert text.startswith("Sequential"), text


def test_checkpoint_is_read_back_and_refused_for_other_settings(tmp_path):
    path = tmp_path / "sequential.jsonl"
    argv = ("sequential-orders", "--replications", 600, "--json")
    code, plain, err = run_cli(*argv)
    assert code == EXIT_OK, err
    code, first, err = run_cli(*argv, "--checkpoint", path)
    assert code == EXIT_OK and first == plain, err
    assert {json.loads(line)["run"] for line in path.read_text().splitlines()} == {
        "sequential-orders"
    }
    size = path.stat().st_size
    code, again, err = run_cli(*argv, "--checkpoint", path, "--threads", 1)
    assert code == EXIT_OK and again == plain, err
    assert path.stat().st_size == size  # read back: nothing ran, nothing saved
    code, _, err = run_cli(*argv, "--checkpoint", path, "--seed", 1)
    one_line_error(code, err, "different sequential-orders run", "delete it or name another")
    # the other study keeps its own run in the same file
    code, _, err = run_cli("sequential", "--replications", 20, "--checkpoint", path)
    assert code == EXIT_OK, err


@pytest.mark.slow
def test_ctrl_c_then_resume_gives_the_uninterrupted_result(tmp_path):
    path = tmp_path / "sequential.jsonl"
    argv = ["sequential", "--replications", "1500", "--json"]
    code, plain, err = run_cli(*argv, "--threads", 2)
    assert code == EXIT_OK, err
    script = (
        "import sys; from truescore_fast.cli import main; print('ready', flush=True); "
        "sys.exit(main(sys.argv[1:]))"
    )
    # Ctrl-C as soon as the first of the three rows is saved (two are still to run): a
    # real process, for a real SIGINT and its exit status
    code, _, err, _ = interrupt_after(
        [sys.executable, "-c", script, "calibrate", *argv, "--threads", "1",
         "--checkpoint", str(path)], 0.0, env=child_env(), timeout=120,
        when=lambda: path.exists() and '"tasks"' in path.read_text(),
    )  # fmt: skip
    assert code == EXIT_INTERRUPTED and err.strip() == "interrupted", err
    records = [json.loads(line) for line in path.read_text().splitlines()]
    done = {r["cell"]: r["tasks"] for r in records if "tasks" in r}  # the latest per row
    assert done and sum(done.values()) < 3 * 6, "stopped mid-study (3 rows x 6 tasks)"
    code, resumed, err = run_cli(*argv, "--checkpoint", path)
    assert code == EXIT_OK, err
    assert resumed == plain


def test_flags_that_do_not_apply_are_one_line_errors(tmp_path):
    code, _, err = run_cli("sequential", "--plot", tmp_path / "s.png")
    one_line_error(code, err, "--plot applies to calibrate coverage, stress, detection and budget")
    assert not (tmp_path / "s.png").exists()
    code, _, err = run_cli("sequential-orders", "--intervals", "wald")
    one_line_error(code, err, "--intervals applies to calibrate coverage and stress")
    code, _, err = run_cli("sequential", "--n", 10)
    one_line_error(code, err, "--n applies to calibrate coverage, not sequential")
    code, _, err = run_cli("sequential-orders", "--replications", 0)
    one_line_error(code, err, "replications")
    code, _, err = run_cli("sequential", "--alpha", 1.5)
    one_line_error(code, err, "alpha")


@pytest.mark.slow
def test_executor_dask_gives_the_local_result():
    pytest.importorskip("distributed")
    argv = ("sequential-orders", "--replications", 600, "--seed", 2, "--json")
    code, local, err = run_cli(*argv, "--threads", 1)
    assert code == EXIT_OK, err
    # a real process: the command starts its own cluster of worker processes, and Dask
    # reads its configuration (DASK_* variables, here removed) when first imported
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    code, remote, err = run_cli_process(*argv, "--executor", "dask", env=env)
    assert code == EXIT_OK, err
    assert remote == local

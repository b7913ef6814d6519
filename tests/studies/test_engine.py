"""The study engine of ``studies/_engine.py``: results independent of thread count, chunking,
executor and progress bar; flat memory; the compiled row layouts; Ctrl-C on an executor; and
checkpointed sweeps (an interrupted sweep resumes bit for bit, finished cells are not
rerun, a file for other parameters or not a checkpoint is refused)."""

from __future__ import annotations

import json
import sys
import textwrap
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from common import lattice_population, same_table
from interrupting import interrupt_after
from recording import Recorder
from truescore_fast import studies as cal
from truescore_fast.studies import _checkpoint, _engine

ALL = ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting")


# ---------------------------------------------------------------------------- invariance


def test_thread_count_chunking_and_executor_never_change_results(monkeypatch):
    pop = lattice_population(400, [0.1, 0.15, 0.5, 0.15, 0.1], seed=6)
    kw = dict(intervals=ALL, replications=1100, seed=9, progress=False)
    one = tf.coverage_study(pop, [20, 60], n_threads=1, **kw)
    two = tf.coverage_study(pop, [20, 60], n_threads=2, **kw)
    assert same_table(one, two)
    monkeypatch.setattr(_engine, "_CHUNK_SECONDS", 1e-9)  # one task per call
    assert same_table(one, tf.coverage_study(pop, [20, 60], n_threads=2, **kw))
    with ThreadPoolExecutor(2) as pool:
        assert same_table(one, tf.coverage_study(pop, [20, 60], executor=pool, **kw))


def test_progress_bar_does_not_change_results(capsys):
    pop = lattice_population(300, [0.1, 0.1, 0.6, 0.1, 0.1])
    kw = dict(intervals=("wald",), replications=600, seed=3)
    assert same_table(
        tf.coverage_study(pop, 30, progress=True, **kw),
        tf.coverage_study(pop, 30, progress=False, **kw),
    )


def _peak_bytes(replications):
    pop = lattice_population(2000, [0.05, 0.1, 0.7, 0.1, 0.05])
    tracemalloc.start()
    tf.coverage_study(
        pop,
        100,
        intervals=("wald", "hoeffding", "bernstein"),
        replications=replications,
        seed=0,
        n_threads=1,
        progress=False,
    )
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_memory_is_flat_in_replications():
    _peak_bytes(1000)  # warm-up: imports and caches
    small, large = _peak_bytes(20_000), _peak_bytes(200_000)
    assert large < small + 64 * 1024, (small, large)


def test_stub_lists_the_calibration_kernels():
    stub = (Path(tf.__file__).with_name("_core.pyi")).read_text()
    for name in ("coverage_tasks", "detection_tasks", "budget_tasks", "sample_indices"):
        assert f"def {name}(" in stub


def test_row_layouts_are_checked_against_the_compiled_core():
    from truescore_fast import _core
    from truescore_fast.studies import _engine

    assert {m.name: int(m) for m in _engine.BudgetSums} == _core.BUDGET_SUMS
    with pytest.raises(ImportError, match="rebuild"):
        _engine._check_layout(_engine.CoverageSums, {"COVERED": 1, "HALF_WIDTH": 0})


BLOCK = cal.REPLICATIONS_PER_TASK


def population(seed=0, size=300):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.1, 0.15, 0.5, 0.15, 0.1], size=size)


KW = dict(intervals=("wald", "hoeffding", "betting"), replications=4 * BLOCK + 7, seed=11)


def study(path=None, **extra):
    return tf.coverage_study(
        population(), [20, 60, 90], n_threads=1, progress=False, checkpoint=path, **{**KW, **extra}
    )


@pytest.mark.usefixtures("one_task_per_call")
@pytest.mark.parametrize("stop_after", [1, 3, 5, 7, 12])
def test_an_interrupted_sweep_resumes_bit_identically_and_runs_each_task_once(
    tmp_path, monkeypatch, stop_after
):
    uninterrupted = study()
    path = tmp_path / "sweep.jsonl"
    first = Recorder(monkeypatch, stop_after=stop_after)
    with pytest.raises(KeyboardInterrupt):
        study(path)
    monkeypatch.undo()  # the real kernel again, default chunking
    monkeypatch.setattr(_engine, "_CHECKPOINT_SECONDS", 0.0)
    second = Recorder(monkeypatch)
    resumed = study(path)
    assert same_table(resumed, uninterrupted)
    n_tasks = -(-KW["replications"] // BLOCK)
    everything = sorted((c, t) for c in range(3) for t in range(n_tasks))
    # every task ran exactly once over the two runs: nothing saved was run again
    assert sorted(first.tasks() + second.tasks()) == everything
    assert len(first.tasks()) == stop_after


def test_finished_cells_are_not_rerun(tmp_path, monkeypatch):
    path = tmp_path / "sweep.jsonl"
    full = study(path)
    recorder = Recorder(monkeypatch, stop_after=0)  # any kernel call would raise
    again = study(path)
    assert recorder.calls == []
    assert same_table(full, again)


@pytest.mark.usefixtures("one_task_per_call")
def test_a_sweep_interrupted_on_an_executor_resumes_bit_identically(tmp_path, monkeypatch):
    uninterrupted = study()
    path = tmp_path / "sweep.jsonl"
    monkeypatch.setattr(_engine, "_SLICE_SECONDS", 0.0)  # a work item runs one task
    Recorder(monkeypatch, stop_after=4)
    with ThreadPoolExecutor(2) as pool, pytest.raises(KeyboardInterrupt):
        study(path, executor=pool)
    saved = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert saved, "the state at the interruption was saved"
    monkeypatch.undo()
    second = Recorder(monkeypatch)
    with ThreadPoolExecutor(2) as pool:
        resumed = study(path, executor=pool)
    assert same_table(resumed, uninterrupted)
    done_before = sum(
        max(r["tasks"] for r in saved if r["cell"] == c) for c in {r["cell"] for r in saved}
    )
    assert len(second.tasks()) == 3 * (-(-KW["replications"] // BLOCK)) - done_before


@pytest.mark.parametrize(
    "study_call",
    [
        lambda path: tf.stress_grid(
            cal.stress_settings()[:3], replications=300, seed=4, progress=False, checkpoint=path
        ),
        lambda path: tf.budget_study(
            np.random.default_rng(1).choice([-1.0, 0.0, 0.5, 1.0], size=(3, 80)),
            sizes=(10, 30),
            replications=300,
            progress=False,
            checkpoint=path,
        ),
        lambda path: tf.detection_study(
            np.random.default_rng(2).integers(0, 2, size=200),
            np.random.default_rng(3).integers(0, 2, size=(200, 2)),
            sizes=(20, 40),
            deltas=(0.05,),
            replications=300,
            progress=False,
            checkpoint=path,
        ),
    ],
    ids=["stress", "budget", "detection"],
)
def test_every_study_takes_a_checkpoint(tmp_path, monkeypatch, study_call):
    path = tmp_path / "sweep.jsonl"
    plain = study_call(None)
    assert same_table(study_call(path), plain)
    Recorder(monkeypatch, stop_after=0)
    assert same_table(study_call(path), plain)  # read back, nothing run


def test_a_checkpoint_for_other_parameters_is_refused(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(path)
    size_before = path.stat().st_size
    with pytest.raises(ValueError, match=r"different coverage run .*key") as caught:
        study(path, seed=12)
    assert str(caught.value).startswith(f"checkpoint {path}")
    with pytest.raises(ValueError, match="replications"):
        study(path, replications=KW["replications"] + 1)
    with pytest.raises(ValueError, match="populations, sizes or settings"):
        study(path, alpha=0.1)
    assert path.stat().st_size == size_before  # a refused run writes nothing


def test_a_line_cut_off_by_an_interruption_is_dropped(tmp_path, monkeypatch):
    path = tmp_path / "sweep.jsonl"
    full = study(path)
    lines = path.read_text().splitlines(keepends=True)
    # keep the header and the first record, then half a record (a write cut off)
    path.write_text(lines[0] + lines[1] + lines[2][: len(lines[2]) // 2])
    assert same_table(study(path), full)
    for line in path.read_text().splitlines():
        json.loads(line)  # every line is whole again


@pytest.mark.parametrize(
    "content, match",
    [
        ("parent,gap\na,0.5\n", "not JSON"),
        ('{"parent": "a"}\n', "not a truescore_fast calibration checkpoint"),
        ("[1, 2]\n", "not a JSON object"),
    ],
)
def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path, content, match):
    path = tmp_path / "other.jsonl"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        study(path)
    assert path.read_text() == content  # never overwritten


def test_a_damaged_record_is_refused_with_its_line(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(path)
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["sums"][0] = "not a number"
    path.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    with pytest.raises(ValueError, match="line 2: the record does not match its checksum"):
        study(path)
    record["cell"] = 99
    path.write_text("\n".join([lines[0], json.dumps(record)]) + "\n")
    with pytest.raises(ValueError, match="line 2: the record does not match its checksum"):
        study(path)  # what each field may hold: tests/studies/test_checkpoint.py


def test_the_file_holds_a_header_and_exact_sums(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(path)
    header, *records = (json.loads(line) for line in path.read_text().splitlines())
    assert header["format"] == "truescore_fast calibration checkpoint"
    assert header["cells"] == 3 and header["replications"] == [KW["replications"]]
    assert len(header["fingerprint"]) == 64
    finished = {r["cell"]: r for r in records if r["tasks"] == -(-KW["replications"] // BLOCK)}
    assert sorted(finished) == [0, 1, 2]
    # the sums of cell 0 give its coverage: covered count / replications
    sums = np.array([float.fromhex(x) for x in finished[0]["sums"]])
    table = study()
    wald = np.flatnonzero((table["n"] == 20) & (table["interval"] == "wald"))[0]
    assert sums[0] / KW["replications"] == table["coverage"][wald]


def test_two_runs_share_a_file_by_name(tmp_path):
    path = tmp_path / "sweep.jsonl"
    a = study(_checkpoint.CheckpointRun(path, "a"))
    b = study(_checkpoint.CheckpointRun(path, "b"), seed=3)
    assert same_table(study(_checkpoint.CheckpointRun(path, "a")), a)
    assert same_table(study(_checkpoint.CheckpointRun(path, "b"), seed=3), b)


def test_checkpoint_must_be_a_path():
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        study(3)


def test_a_checkpoint_that_cannot_be_written_is_an_os_error_naming_it(tmp_path):
    with pytest.raises(OSError, match="checkpoint .*cannot be written"):
        study(tmp_path / "missing-folder" / "sweep.jsonl")
    with pytest.raises(ValueError, match="is a directory"):
        study(tmp_path)


CHILD = textwrap.dedent(
    """
    import sys, threading, time
    from concurrent.futures import {pool}
    import numpy as np
    import truescore_fast as tf

    if __name__ == "__main__":
        population = np.linspace(-0.5, 0.5, 20_000)
        print("ready", flush=True)
        try:
            with {pool}(2) as executor:
                tf.coverage_study(
                    population, [200, 400, 800, 1600], replications=10**9,
                    n_threads=1, progress=False, executor=executor,
                )
        except KeyboardInterrupt:
            start = time.process_time()
            time.sleep(0.5)
            busy = time.process_time() - start
            print("interrupted", threading.active_count(), f"{{busy:.3f}}", flush=True)
            sys.exit(130)
        print("finished", flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("pool", ["ThreadPoolExecutor", "ProcessPoolExecutor"])
def test_ctrl_c_stops_an_executor_run_within_a_cell(pool, tmp_path):
    script = tmp_path / "child.py"  # a file, so a spawned process pool can import __main__
    script.write_text(CHILD.format(pool=pool))
    code, out, err, cpu = interrupt_after([sys.executable, str(script)], 1.5, timeout=300)
    assert code == 130, (out, err)  # 1.5 s: the cells are running on the workers
    word, threads, busy = out.split()
    assert word == "interrupted"
    # CPU seconds from the signal to the exit, the pool's workers included
    # (tests/interrupting.py: the machine's load does not change them): the cell each worker
    # is running, and the pool's shutdown. Measured idle on 2 cores: 0.6 s (threads),
    # 1.7 s (processes); bound 5 s
    assert cpu < 5.0, cpu
    if pool == "ThreadPoolExecutor":
        assert threads == "1"  # every worker thread has ended
        assert float(busy) < 0.1  # and the cores are idle: no cell still running


# --- executor slices of no length: still bit-identical -----------------------------------


def test_executor_slices_of_zero_seconds_give_identical_results(monkeypatch) -> None:
    import json
    from concurrent.futures import ThreadPoolExecutor

    from truescore_fast.studies import _engine

    population = np.repeat([-1.0, -0.5, 0.0, 0.5, 1.0], [40, 60, 200, 60, 40])
    kw = dict(intervals=("wald", "betting"), replications=700, seed=9, progress=False)
    local = ts.coverage_study(population, [20, 60], n_threads=1, **kw)
    slices = []
    real = _engine._run_slice

    def counted(cell, begin, chunk, n_threads):
        out = real(cell, begin, chunk, n_threads)
        slices.append((begin, out[1]))
        return out

    monkeypatch.setattr(_engine, "_SLICE_SECONDS", 0.0)  # every slice ends after one chunk
    monkeypatch.setattr(_engine, "_CHUNK_SECONDS", 1e-9)  # of the smallest size
    monkeypatch.setattr(_engine, "_run_slice", counted)
    with ThreadPoolExecutor(2) as pool:
        sliced = ts.coverage_study(population, [20, 60], executor=pool, **kw)
    assert len(slices) > 2  # the two cells were cut into several slices each
    assert {begin for begin, _ in slices} != {0}
    assert json.dumps(sliced.to_dict(), sort_keys=True) == json.dumps(
        local.to_dict(), sort_keys=True
    )

"""Checkpointed calibration sweeps: an interrupted sweep resumed from its checkpoint gives
the table of an uninterrupted run bit for bit, finished cells are not rerun, and a file
written for other parameters (or not a checkpoint at all) is refused with a clear error."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import truescore_fast as tf
from truescore_fast import studies as cal
from truescore_fast.studies import _engine

BLOCK = cal.REPLICATIONS_PER_TASK


def population(seed=0, size=300):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.1, 0.15, 0.5, 0.15, 0.1], size=size)


def same_table(a, b):
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


KW = dict(intervals=("wald", "hoeffding", "betting"), replications=4 * BLOCK + 7, seed=11)


def study(path=None, **extra):
    return tf.coverage_study(
        population(), [20, 60, 90], n_threads=1, progress=False, checkpoint=path, **{**KW, **extra}
    )


class Recorder:
    """Wraps _Cell.run: records the tasks run per cell, raises KeyboardInterrupt (as Ctrl-C
    would) once ``stop_after`` calls have returned."""

    def __init__(self, monkeypatch, stop_after=None):
        self.calls: list[tuple[int, int, int]] = []
        self.stop_after = stop_after
        original = _engine._Cell.run
        recorder = self

        def run(cell, begin, end, n_threads):
            if recorder.stop_after is not None and len(recorder.calls) >= recorder.stop_after:
                raise KeyboardInterrupt
            recorder.calls.append((cell.task_offset, begin, end))
            return original(cell, begin, end, n_threads)

        monkeypatch.setattr(_engine._Cell, "run", run)

    def tasks(self):
        """(cell, task) of every task run: a calibration cell c's tasks are streams
        c x 2**32 + t; the sequential studies number their tasks' streams from 0."""
        return sorted(
            (offset // 2**32, offset % 2**32 + t)
            for offset, begin, end in self.calls
            for t in range(begin, end)
        )


@pytest.fixture
def one_task_per_call(monkeypatch):
    monkeypatch.setattr(_engine, "_CHUNK_SECONDS", 1e-9)  # every call runs one task
    monkeypatch.setattr(_engine, "_CHECKPOINT_SECONDS", 0.0)  # save after every call


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
    with pytest.raises(ValueError, match="line 2: sums must be hexadecimal floats"):
        study(path)
    record["cell"] = 99
    path.write_text("\n".join([lines[0], json.dumps(record)]) + "\n")
    with pytest.raises(ValueError, match="line 2: no cell 99"):
        study(path)


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
    a = study(_engine.CheckpointRun(path, "a"))
    b = study(_engine.CheckpointRun(path, "b"), seed=3)
    assert same_table(study(_engine.CheckpointRun(path, "a")), a)
    assert same_table(study(_engine.CheckpointRun(path, "b"), seed=3), b)


def test_checkpoint_must_be_a_path():
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        study(3)


def test_a_checkpoint_that_cannot_be_written_is_an_os_error_naming_it(tmp_path):
    with pytest.raises(OSError, match="checkpoint .*cannot be written"):
        study(tmp_path / "missing-folder" / "sweep.jsonl")
    with pytest.raises(ValueError, match="is a directory"):
        study(tmp_path)

"""The sequential studies on the calibration engine: the same tables as before they moved
there (same tasks, same Philox streams), for any thread count or executor, and
checkpoints that resume an interrupted study bit for bit and refuse a file written for
other arguments."""

from __future__ import annotations

import json
import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import truescore_fast as tf
from test_checkpoint import Recorder, one_task_per_call  # noqa: F401 (a fixture)
from truescore_fast._random import philox_key
from truescore_fast.studies import _engine
from truescore_fast.studies import sequential as seq
from truescore_fast.studies._common import _rate

TASK = 250  # replications per task of the sequential studies
REPS = 2 * TASK + 17  # three tasks per row, the last one short


def bank(size=300, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(size) < 0.6).astype(float), (rng.random((size, 2)) < 0.6).astype(float)


AUDIT = dict(deltas=(0.0, 0.1), max_parents=200, look_every=20, replications=REPS, seed=7)
ORDERS = dict(n_shards=3, max_permutations=19, h=3, shifts=(0.0, 1.5), replications=REPS, seed=7)


LOOKS = np.arange(20, 201, 20)  # every look_every parents up to max_parents


def audit(**extra):
    return tf.sequential_study(*bank(), **{"progress": False, **AUDIT, **extra})


def orders(**extra):
    return tf.sequential_order_study(**{"progress": False, **ORDERS, **extra})


def same_table(a, b):
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


# --------------------------------------------------------------------- same as before


# sequential_order_study(**ORDERS) as computed by the code before the move to the engine
# (commit d94fe92, which ran the tasks through sequential._run_tasks and concatenated every
# replication's outcome before reading the table with NumPy).
ORDERS_BEFORE = {
    "shift": [0.0, 1.5],
    "rejection_rate": ["0x1.fb0c610d5e939p-7", "0x1.fd076d6e6bf22p-2"],
    "rejection_se": ["0x1.63c0a5fbe757ep-8", "0x1.6847163111eb6p-6"],
    "fixed_rate": ["0x1.3ce7bca85b1c4p-6", "0x1.007ec3184357ap-1"],
    "mean_orders": ["0x1.6ba2e8ba2e8bap+3", "0x1.27e44552b144dp+5"],
    "median_orders": [9.0, 45.0],
    "orders_fixed": [57, 57],
    "saving": ["0x1.99ed37efab133p-1", "0x1.678a9eb695da4p-2"],
}


def test_the_order_study_is_bit_identical_to_the_table_before_the_engine():
    table = orders()
    for name, values in ORDERS_BEFORE.items():
        want = [float.fromhex(v) if isinstance(v, str) else float(v) for v in values]
        assert table[name].tolist() == want, name
    # the rates are counts out of REPS, as they were
    assert table["rejection_rate"][0] * REPS == 8


def test_the_audit_study_reads_the_same_replications_as_before(monkeypatch):
    """The engine adds each task's counts; before, every replication's outcome was
    concatenated in task order and the table read with NumPy (the code below is that
    reading, from commit d94fe92). Each task's replications are recorded as the study runs,
    with the Philox stream they drew from: task t of row i must use stream i x 3 + t (as
    before), and the old reading of the recorded replications must give the study's table:
    every column bit for bit, except true_delta, a mean of floats that the engine now sums
    per task (math.fsum) and adds in task order where NumPy summed pairwise over all
    replications: equal within a few units in the last place."""
    recorded = {}
    original = seq._audit_replications

    def record(*args, rng, **kwargs):
        stream = int(rng.bit_generator.state["state"]["counter"][2])
        assert rng.bit_generator.state["state"]["key"].tolist() == list(philox_key(7))
        out = original(*args, rng=rng, **kwargs)
        recorded[stream] = out
        return out

    monkeypatch.setattr(seq, "_audit_replications", record)
    table = audit(n_threads=1)
    assert sorted(recorded) == list(range(6))  # 2 rows x 3 tasks, one stream each
    assert [recorded[s]["stop"].size for s in range(3)] == [TASK, TASK, 17]
    for row in range(2):
        parts = [recorded[3 * row + t] for t in range(3)]
        sim = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        stop = sim["stop"]
        claim_rate, claim_se = _rate(float(sim["claim"].sum()), REPS)
        curve = sim["fixed_claims"].mean(axis=0)  # the fixed audit's claim rate per look
        same = seq._same_power_parents(claim_rate, claim_se, LOOKS, curve)
        before = {  # main's reading, column by column
            "claim_rate": claim_rate,
            "claim_se": claim_se,
            "false_claim_rate": float(np.mean(sim["claim"] & (sim["truth"] <= 0.0))),
            "bounded_rate": float(np.mean(sim["bounded"])),
            "coverage_at_stop": float(np.mean(sim["covered"])),
            "mean_parents": float(stop.mean()),
            "median_parents": float(np.median(stop)),
            "p90_parents": float(np.quantile(stop, 0.9)),
            "fixed_claim_rate": float(curve[-1]),
            "fixed_same_power_parents": same[0],
            "fixed_same_power_se": same[1],
            "horizon_free_claim_rate": float(np.mean(sim["free_claim"])),
            "horizon_free_mean_parents": float(np.mean(sim["free_stop"])),
            "wald_peek_claim_rate": float(np.mean(sim["wald_claim"])),
            "wald_peek_false_claim_rate": float(np.mean(sim["wald_claim"] & (sim["truth"] <= 0))),
        }
        for name, value in before.items():
            assert table[name][row] == value, (row, name)
        truth = float(sim["truth"].mean())
        assert abs(table["true_delta"][row] - truth) <= 4 * math.ulp(max(abs(truth), 1e-3))
    # the stops spread over several looks, so median and quantile are a real check
    assert len(set(np.concatenate([r["stop"] for r in recorded.values()]).tolist())) > 3


# ------------------------------------------------------------- threads and executors


@pytest.fixture(scope="module")
def plain():
    return audit(n_threads=1), orders(n_threads=1)


def test_any_thread_count_or_executor_gives_the_same_tables(plain):
    for kwargs in ({"n_threads": 2}, {"n_threads": 3}):
        assert same_table(audit(**kwargs), plain[0]), kwargs
        assert same_table(orders(**kwargs), plain[1]), kwargs
    with ThreadPoolExecutor(2) as pool:
        assert same_table(audit(executor=pool), plain[0])
        assert same_table(orders(executor=pool, n_threads=2), plain[1])
    with ProcessPoolExecutor(2) as pool:  # the cells (Python task functions) pickle
        assert same_table(audit(executor=pool, n_threads=1), plain[0])
        assert same_table(orders(executor=pool), plain[1])


# --------------------------------------------------------------------- checkpoints


@pytest.mark.usefixtures("one_task_per_call")
@pytest.mark.parametrize("study", ["audit", "orders"])
@pytest.mark.parametrize("stop_after", [1, 2, 4])
def test_an_interrupted_study_resumes_bit_identically_running_each_task_once(
    tmp_path, monkeypatch, plain, study, stop_after
):
    run = audit if study == "audit" else orders
    path = tmp_path / "study.jsonl"
    first = Recorder(monkeypatch, stop_after=stop_after)
    with pytest.raises(KeyboardInterrupt):
        run(checkpoint=path, n_threads=1)
    assert len(first.tasks()) == stop_after
    monkeypatch.undo()  # the real tasks again, default chunking
    second = Recorder(monkeypatch)
    resumed = run(checkpoint=path, n_threads=2)
    assert same_table(resumed, plain[0 if study == "audit" else 1])
    # every task (streams 0..5) ran exactly once over the two runs
    assert sorted(first.tasks() + second.tasks()) == [(0, stream) for stream in range(6)]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0]["study"] == ("sequential audit" if study == "audit" else
                                   "sequential order test")  # fmt: skip
    assert {r["cell"] for r in records[1:]} == {0, 1}


@pytest.mark.usefixtures("one_task_per_call")
def test_a_study_interrupted_on_an_executor_resumes_bit_identically(tmp_path, monkeypatch, plain):
    path = tmp_path / "study.jsonl"
    monkeypatch.setattr(_engine, "_SLICE_SECONDS", 0.0)  # a work item runs one task
    Recorder(monkeypatch, stop_after=3)
    with ThreadPoolExecutor(2) as pool, pytest.raises(KeyboardInterrupt):
        audit(checkpoint=path, executor=pool)
    saved = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert saved, "the state at the interruption was saved"
    monkeypatch.undo()
    second = Recorder(monkeypatch)
    assert same_table(audit(checkpoint=path, n_threads=1), plain[0])
    done_before = sum(max(r["tasks"] for r in saved if r["cell"] == c) for c in (0, 1))
    assert len(second.tasks()) == 6 - done_before


def test_a_finished_study_is_read_back_without_running(tmp_path, monkeypatch, plain):
    path = tmp_path / "study.jsonl"
    assert same_table(orders(checkpoint=path), plain[1])
    assert same_table(audit(checkpoint=path), plain[0])  # a second run in the same file
    size = path.stat().st_size
    recorder = Recorder(monkeypatch, stop_after=0)  # any task would raise
    assert same_table(orders(checkpoint=path), plain[1])
    assert same_table(audit(checkpoint=path), plain[0])
    assert recorder.calls == [] and path.stat().st_size == size


@pytest.mark.parametrize(
    ("study", "change", "words"),
    [
        ("audit", {"seed": 8}, ["key"]),
        ("audit", {"replications": REPS + 1}, ["replications"]),
        ("audit", {"deltas": (0.0, 0.2)}, ["populations, sizes or settings"]),
        ("audit", {"look_every": 10}, ["populations, sizes or settings"]),
        ("orders", {"h": 4}, ["populations, sizes or settings"]),
        ("orders", {"shifts": (0.0,)}, ["cells"]),
        ("orders", {"seed": 8}, ["key"]),
    ],
)
def test_a_checkpoint_from_other_arguments_is_refused(tmp_path, study, change, words):
    run = audit if study == "audit" else orders
    path = tmp_path / "study.jsonl"
    run(checkpoint=path)
    before = path.read_bytes()
    with pytest.raises(ValueError) as caught:
        run(checkpoint=path, **change)
    message = str(caught.value)
    name = "sequential audit" if study == "audit" else "sequential order test"
    assert message.startswith(f"checkpoint {path} was written for a different {name} run")
    assert "delete it or name another file" in message
    for word in words:
        assert word in message, message
    assert path.read_bytes() == before  # nothing appended


def test_checkpoint_must_be_a_path():
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        orders(checkpoint=3)
    with pytest.raises(TypeError, match="checkpoint must be a file path"):
        audit(checkpoint=3)

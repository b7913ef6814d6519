"""Checkpoints that cannot lie (studies/_checkpoint.py, issue 23): every record carries a
checksum and is checked on resume (its cell, task count, number of sums, finite sums,
counts in range, a histogram that counts the replications), so an edited or damaged file
is refused in one line naming the file and the line; only what a checkpoint can hold is
read (a device, a FIFO, an oversized file or an endless line is refused before it is
read); and a study killed by SIGKILL in the middle of writing a record resumes to the
same table as a run never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc

import numpy as np
import pytest
import truescore_fast as tf
from commands import child_env
from common import same_table
from truescore_fast.studies import _checkpoint, _engine

BLOCK = _engine.REPLICATIONS_PER_TASK
SPEC = dict(intervals=("wald", "hoeffding"), replications=3 * BLOCK + 5, seed=5)


def population(seed=0, size=300):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=[0.1, 0.15, 0.5, 0.15, 0.1], size=size)


def study(path=None, **extra):
    return tf.coverage_study(
        population(), [20, 60], n_threads=1, progress=False, checkpoint=path, **SPEC, **extra
    )


def orders(path=None):
    return tf.sequential_order_study(
        n_shards=2, max_permutations=9, h=2, shifts=(0.0, 1.0), replications=600, seed=3,
        progress=False, checkpoint=path,
    )  # fmt: skip


@pytest.fixture(scope="module")
def plain():
    return study()


def lines_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path, lines):
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def signed(line, fingerprint):
    """``line`` with a checksum made as the writer makes it: a forged record."""
    body = {name: value for name, value in line.items() if name != "check"}
    return {**body, "check": _checkpoint._digest(fingerprint, body)}


def with_record(path, change, *, sign):
    """The checkpoint at ``path`` with its first record changed by ``change`` (re-signed
    or not); returns the changed lines."""
    header, record, *rest = lines_of(path)
    change(record)
    if sign:
        record = signed(record, header["fingerprint"])
    write_lines(path, [header, record, *rest])


def scaled(record, factor=2.0):
    record["sums"] = [float.hex(float.fromhex(x) * factor) for x in record["sums"]]


def set_sum(value):
    def change(record):
        record["sums"][0] = value

    return change


def set_field(name, value):
    def change(record):
        record[name] = value

    return change


EDITS = {
    "sums scaled": scaled,
    "a sum nan": set_sum("nan"),
    "a sum inf": set_sum("inf"),
    "a sum negative": set_sum(float.hex(-3.0)),
    "a sum not a float": set_sum("many"),
    "a sum overflowing": set_sum("0x1p99999"),
    "tasks true": set_field("tasks", True),
    "tasks one more": lambda record: record.update(tasks=record["tasks"] + 1),
    "tasks zero": set_field("tasks", 0),
    "no such cell": set_field("cell", 7),
    "a sum dropped": lambda record: record["sums"].pop(),
    "an extra field": set_field("note", "hello"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edited_record_fails_its_checksum(tmp_path, edit):
    path = tmp_path / "sweep.jsonl"
    study(path)
    with_record(path, EDITS[edit], sign=False)
    with pytest.raises(ValueError) as caught:
        study(path)
    message = str(caught.value)
    assert message == (
        f"checkpoint {path}, line 2: the record does not match its checksum (damaged or "
        "edited): delete the file or name another"
    )


# what an edit with a recomputed checksum (a forgery, or a bug of the writer) is refused
# for; "tasks one more" is absent: a coverage count after one more task is still in range
FORGED = {
    "sums scaled": "a count is not a whole number from 0 to",
    "a sum nan": "a sum is not finite",
    "a sum inf": "a sum is not finite",
    "a sum negative": "a count is not a whole number from 0 to",
    "a sum not a float": "sums must be hexadecimal floats",
    "a sum overflowing": "sums must be hexadecimal floats",
    "tasks true": "True tasks done is out of range",
    "tasks zero": "0 tasks done is out of range",
    "no such cell": "no cell 7 in this run",
    "a sum dropped": "5 sums, where this cell's rows have 6",
    "an extra field": "does not match its checksum",
}


@pytest.mark.parametrize("edit", FORGED)
def test_a_forged_record_is_refused_for_what_it_holds(tmp_path, edit):
    path = tmp_path / "sweep.jsonl"
    study(path)
    with_record(path, EDITS[edit], sign=True)
    before = path.read_bytes()
    with pytest.raises(ValueError) as caught:
        study(path)
    message = str(caught.value)
    assert message.startswith(f"checkpoint {path}, line 2: "), message
    assert FORGED[edit] in message and "\n" not in message, message
    assert path.read_bytes() == before  # a refused file is left as it was


def test_a_forged_record_in_range_is_resumed_as_the_docs_say(tmp_path):
    # The threat model the docs state: the checksum finds damage and careless edits, not a
    # deliberate one. A count changed by one and re-signed (the checksum needs no secret:
    # anyone can recompute it) is still a possible count, so the resume accepts it and
    # the table differs from the uninterrupted one; whoever can write the file decides
    # what a resume reads, as they could decide what the study's output file says.
    path = tmp_path / "sweep.jsonl"
    want = study(path)

    def one_fewer_covered(record):
        count = float.fromhex(record["sums"][0])
        assert count >= 1
        record["sums"][0] = float.hex(count - 1)

    with_record(path, one_fewer_covered, sign=True)
    got = study(path)
    assert not same_table(got, want)


def test_a_forged_half_width_or_task_count_is_refused(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(path)

    def negative_width(record):
        record["sums"][1] = float.hex(-0.5)  # wald's sum of half-widths

    with_record(path, negative_width, sign=True)
    with pytest.raises(ValueError, match="line 2: a sum of half-widths or of squares"):
        study(path)
    # the sequential studies count each replication once in a histogram: a task count
    # that does not match it is refused
    path = tmp_path / "orders.jsonl"
    plain_orders = orders(path)
    header, *records = lines_of(path)
    last = max(range(len(records)), key=lambda i: records[i]["tasks"])
    records[last]["tasks"] -= 1
    records[last] = signed(records[last], header["fingerprint"])
    write_lines(path, [header, *records])
    with pytest.raises(ValueError, match=rf"line {last + 2}: the histogram .* does not count"):
        orders(path)
    records[last]["tasks"] += 1
    write_lines(path, [header, *[signed(r, header["fingerprint"]) for r in records]])
    assert same_table(orders(path), plain_orders)  # re-signed and unchanged: accepted


def test_a_damaged_header_and_an_old_version_are_refused(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(path)
    header, *records = lines_of(path)
    write_lines(path, [{**header, "study": "other"}, *records])
    with pytest.raises(ValueError, match="line 1: the header does not match its checksum"):
        study(path)
    old = {name: value for name, value in header.items() if name not in ("check", "width")}
    write_lines(path, [{**old, "version": 1}, *[{**r, "check": None} for r in records]])
    with pytest.raises(ValueError) as caught:
        study(path)
    assert str(caught.value) == (
        f"checkpoint {path}, line 1: checkpoint format version 1 (written before records "
        "had checksums: they cannot be verified); this truescore_fast reads version 2: "
        "delete the file or name another"
    )


@pytest.mark.parametrize("text", ["my precious notes", "parent,gap", '{"study": 1}'])
def test_a_file_of_one_unfinished_line_that_is_no_header_is_left_alone(tmp_path, text):
    # a crash can cut the header itself, which is dropped and rewritten; any other file
    # without a whole line is somebody's, and resuming must not overwrite it
    path = tmp_path / "notes.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match="line 1 is not a checkpoint's header"):
        study(path)
    assert path.read_text() == text


def test_a_header_cut_off_by_a_crash_is_rewritten(tmp_path, plain):
    path = tmp_path / "sweep.jsonl"
    study(path)
    header = path.read_text().splitlines()[0]
    path.write_text(header[: len(header) // 2])
    assert same_table(study(path), plain)
    assert lines_of(path)[0]["format"] == "truescore_fast calibration checkpoint"


def test_a_record_of_another_run_is_checked_too(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(_checkpoint.CheckpointRun(path, "a"))
    study(_checkpoint.CheckpointRun(path, "b"), alpha=0.1)
    lines = lines_of(path)
    first_b = next(i for i, line in enumerate(lines) if line.get("run") == "b" and "cell" in line)
    lines[first_b]["tasks"] = 1
    write_lines(path, lines)
    with pytest.raises(ValueError, match=f"line {first_b + 1}: the record does not match"):
        study(_checkpoint.CheckpointRun(path, "a"))


# ---------------------------------------------------------------------------- bounded reading


def test_a_device_or_a_fifo_is_refused_unread(tmp_path):
    with pytest.raises(ValueError, match="checkpoint /dev/zero is a device, not a file"):
        study("/dev/zero")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = []

    def call():  # opening a FIFO to read would block until a writer came
        try:
            study(fifo)
        except ValueError as error:
            outcome.append(str(error))

    caller = threading.Thread(target=call, daemon=True)
    caller.start()
    caller.join(timeout=60)
    assert outcome == [f"checkpoint {fifo} is a FIFO (named pipe), not a file: name a regular "
                       "file (or a new one)"]  # fmt: skip


def test_an_oversized_file_is_refused_by_its_size(tmp_path):
    path = tmp_path / "huge.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(6 * 2**30)  # 6 GiB, sparse: nothing is on disk
    with pytest.raises(ValueError, match=r"holds 6,442,450,944 bytes, more than a checkpoint"):
        study(path)
    assert path.stat().st_size == 6 * 2**30


def test_an_endless_line_is_refused_after_a_bounded_read(tmp_path):
    path = tmp_path / "zeros.jsonl"
    with open(path, "wb") as handle:
        handle.truncate(512 * 2**20)  # 512 MiB of zero bytes, no newline
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="line 1 is longer than a line of this checkpoint"):
            study(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, peak  # read one line's worth, not the file


def test_a_record_line_is_bounded_by_the_runs_widest_row(tmp_path):
    path = tmp_path / "sweep.jsonl"
    study(path)
    header, *_ = lines_of(path)
    assert header["width"] == 2 * 3  # two intervals, three sums each
    with open(path, "ab") as handle:
        handle.write(b'{"run": "coverage", "sums": ["' + b"0" * 2**17 + b'"]}\n')
    with pytest.raises(ValueError, match=f"line {len(lines_of(path))} is longer"):
        study(path)


# ---------------------------------------------------------------------------- kill -9

KILLED_MID_RECORD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path[:0] = [{tests!r}, {tests!r} + "/.."]
    from truescore_fast.studies import _checkpoint, _engine
    import test_checkpoint as t

    _engine._CHECKPOINT_SECONDS = 0.0  # save after every chunk
    _engine._CHUNK_SECONDS = 1e-9  # of one task
    writes = []
    real = _checkpoint.Checkpoint._write

    def write(self, line, *, sync):
        writes.append(line)
        if len(writes) == {kill_at}:  # half of this record reaches the file, then SIGKILL
            text = real.__globals__["json"].dumps(line)
            self.file.write(text[: len(text) // 2])
            self.file.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        real(self, line, sync=sync)

    _checkpoint.Checkpoint._write = write
    t.study({path!r})
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [2, 4, 7])
def test_sigkill_in_the_middle_of_a_record_resumes_to_the_same_table(tmp_path, plain, kill_at):
    path = tmp_path / "sweep.jsonl"
    script = KILLED_MID_RECORD.format(
        tests=os.path.dirname(__file__), path=str(path), kill_at=kill_at
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, env=child_env(), timeout=300
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    text = path.read_text()
    assert not text.endswith("\n")  # the killed write left half a line
    whole = text.count("\n")
    assert whole == kill_at - 1  # the header and the records written before it
    assert same_table(study(path), plain)
    assert all(json.loads(line) for line in path.read_text().splitlines())  # whole again


@pytest.mark.slow
def test_sigkill_at_any_moment_never_changes_the_table(tmp_path, plain):
    # the parent kills the child while it saves after every task, three times, then resumes
    path = tmp_path / "sweep.jsonl"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path[:0] = [{os.path.dirname(__file__)!r}, {os.path.dirname(__file__)!r} + "/.."]
        from truescore_fast.studies import _engine
        import test_checkpoint as t

        _engine._CHECKPOINT_SECONDS = 0.0
        _engine._CHUNK_SECONDS = 1e-9
        print("ready", flush=True)
        t.study({str(path)!r})
        """
    )
    kills = 0
    for target in (3, 6, 9):  # records in the file when the signal is sent
        with subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, env=child_env()
        ) as proc:
            try:
                assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
                deadline = time.monotonic() + 120
                while proc.poll() is None and time.monotonic() < deadline:
                    if path.exists() and path.read_bytes().count(b"\n") >= target:
                        proc.send_signal(signal.SIGKILL)
                        break
                proc.wait(timeout=60)
            finally:
                proc.kill()
        kills += proc.returncode == -signal.SIGKILL
    assert kills >= 1  # at least one run was killed before it finished
    assert same_table(study(path), plain)

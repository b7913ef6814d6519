"""Benchmarks of ``SequentialAudit.update`` fed one parent at a time (issue 22).

Group "sequential audit: ten single-parent updates": ten updates of one parent each,
timed on an audit of N = 2,000 parents (horizon-free bets, no control bank) that has
already taken 1,190 parents one at a time ("ours": the 1,191st to the 1,200th update),
against the same ten updates at the start of the stream (the 1st to the 10th; speed-up
about 1 means an update costs what its parent costs, whatever came before), and against
what an update cost before issue 22: the two sequences (alpha and alpha/2) recomputed from
all 1,200 parents, ten times (by the NumPy definition, numpy_sequence_bounds, as then; the
updates themselves are compiled since issue 37). Every benchmark checks its result; no
time is asserted.
"""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as tf
from sequence_reference import numpy_sequence_bounds

N_POP = 2000
LATE = 1190
STEPS = 10


@pytest.fixture(scope="module")
def parents():
    rng = np.random.default_rng(22)
    public = (rng.random(N_POP) < 0.7).astype(float)
    fresh = (rng.random((N_POP, 2)) < 0.62).astype(float)
    return public, fresh


def _fed(parents, count):
    public, fresh = parents
    audit = tf.SequentialAudit(N_POP, horizon=None)
    for i in range(count):
        audit.update(public[i : i + 1], fresh[i : i + 1])
    return audit


def _ten_updates(parents, start):
    public, fresh = parents

    def run(audit):
        for i in range(start, start + STEPS):
            state = audit.update(public[i : i + 1], fresh[i : i + 1])
        return state

    return run


@pytest.mark.benchmark(group="sequential audit: ten single-parent updates")
def test_updates_after_1190_parents(benchmark, parents, record_role):
    record_role("ours", "updates 1,191 to 1,200")
    state = benchmark.pedantic(
        _ten_updates(parents, LATE),
        setup=lambda: ((_fed(parents, LATE),), {}),
        rounds=5,
    )
    assert state.n_parents == LATE + STEPS and not state.delta.empty


@pytest.mark.benchmark(group="sequential audit: ten single-parent updates")
def test_updates_at_the_start(benchmark, parents, record_role):
    record_role("baseline", "updates 1 to 10 of the same stream")
    state = benchmark.pedantic(
        _ten_updates(parents, 0), setup=lambda: ((_fed(parents, 0),), {}), rounds=20
    )
    assert state.n_parents == STEPS


@pytest.mark.benchmark(group="sequential audit: ten single-parent updates")
def test_recomputing_from_scratch(benchmark, parents, record_role):
    record_role("baseline", "both sequences recomputed from 1,200 parents (before issue 22)")
    public, fresh = parents
    x = (public[: LATE + STEPS] - fresh[: LATE + STEPS].mean(axis=1) + 1.0) / 2.0

    def run():
        for _ in range(STEPS):
            out = [numpy_sequence_bounds(x, N_POP, a, None) for a in (0.05, 0.025)]
        return out

    out = benchmark.pedantic(run, rounds=5)
    assert not out[0][2]


# --- the sequential study (issue 37: its first hits compiled) ------------------------------
# One task of sequential_study (250 replications of the README's bank, N = 2,000, budget
# 1,200, looks every 50, the tuned and the horizon-free audit), on one thread: ours (the
# first hits in the core) against the same study with the first hits in NumPy
# (numpy_first_hits of tests/sequence_reference.py, as before issue 37). The tables must
# be the same.


def _readme_study():
    rng = np.random.default_rng(0)
    public = (rng.random(2000) < 0.6).astype(float)
    fresh = (rng.random((2000, 2)) < 0.6).astype(float)
    return lambda: tf.sequential_study(
        public, fresh, deltas=(0.05,), max_parents=1200, replications=250, seed=7, n_threads=1
    )


def _numpy_hits(x, m, population_size, alpha, horizon, halves=(True, True)):
    from sequence_reference import numpy_first_hits
    from truescore_fast.audit._betting import log_bets

    return numpy_first_hits(x, m, population_size, alpha, log_bets(x, alpha, horizon), halves)


@pytest.mark.parametrize("role", ["ours", "baseline"])
def test_sequential_study_task(benchmark, role, record_role, monkeypatch):
    from truescore_fast.studies import sequential as seq

    benchmark.group = "sequential study: one task of 250 replications, N = 2,000, budget 1,200"
    run = _readme_study()
    if role == "ours":
        record_role("ours", "sequential_study, first hits compiled")
        table = benchmark.pedantic(run, rounds=3)
        monkeypatch.setattr(seq, "_first_hits", _numpy_hits)
        other = run()
    else:
        record_role("baseline", "the same study, first hits in NumPy (before issue 37)")
        monkeypatch.setattr(seq, "_first_hits", _numpy_hits)
        table = benchmark.pedantic(run, rounds=3)
        monkeypatch.undo()
        other = run()
    for name in table.columns:
        assert np.array_equal(table[name], other[name]), name

"""Property tests for the modules whose own test files have none: any input gives a
finite result or a ValueError (never a NaN, a crash or a hang)."""

from __future__ import annotations

import math

import numpy as np
import truescore_fast as tf
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


LATTICE = [-1.0, -0.5, 0.0, 0.5, 1.0]


# Mostly valid gaps (so most examples reach a result), sometimes any float or NaN.
gap = st.one_of(
    st.sampled_from(LATTICE * 60 + [1.5, math.nan, math.inf]),
    st.floats(-1.0, 1.0),
)


alpha_ = st.one_of(st.floats(0.001, 0.5), st.sampled_from([0.0, 1.0, -0.1, math.nan]))


def finite_table(table) -> None:
    for name, column in table.columns.items():
        values = np.asarray(column)
        if values.dtype.kind == "f":
            assert not np.isnan(values).any(), name


@FAST
@given(
    hnp.arrays(np.float64, st.integers(1, 40), elements=gap),
    st.integers(-1, 45),
    st.sampled_from(["srs", "srs", "stratified", "bogus"]),
    alpha_,
    st.integers(0, 300),
)
def test_coverage_study_finite_or_value_error(population, n, design, alpha, reps):
    n = min(n, population.size)
    strata = np.arange(population.size) % 2 if design == "stratified" else None
    try:
        table = tf.coverage_study(
            population,
            n,
            design=design,
            strata=strata,
            replications=reps,
            alpha=alpha,
            intervals=("hoeffding", "wald", "betting"),
            seed=1,
            progress=False,
        )
    except ValueError as error:
        event(f"ValueError: {str(error)[:40]}")
        return
    event("result")
    finite_table(table)
    assert ((table["coverage"] >= 0) & (table["coverage"] <= 1)).all()


binary = st.sampled_from([0.0, 1.0])


@FAST
@given(
    st.integers(2, 30),
    st.integers(1, 3),
    st.integers(-1, 35),
    st.one_of(st.floats(0.0, 0.3), st.sampled_from([-0.1, 1.2, math.nan])),
    st.booleans(),
    st.data(),
)
def test_detection_study_finite_or_value_error(n, k, size, delta, relabel, data):
    size = min(size, n)
    public = data.draw(hnp.arrays(np.float64, n, elements=binary))
    fresh = data.draw(hnp.arrays(np.float64, (n, k), elements=binary))
    try:
        table = tf.detection_study(
            public,
            fresh,
            sizes=size,
            deltas=delta,
            relabel=relabel,
            replications=50,
            seed=2,
            progress=False,
        )
    except ValueError as error:
        event(f"ValueError: {str(error)[:40]}")
        return
    event("result")
    finite_table(table)


@FAST
@given(
    hnp.arrays(np.float64, st.tuples(st.integers(2, 4), st.integers(2, 30)), elements=gap),
    st.integers(-1, 35),
)
def test_budget_study_finite_or_value_error(gaps, size):
    size = min(size, gaps.shape[1])
    try:
        table = tf.budget_study(gaps, sizes=size, replications=50, seed=3, progress=False)
    except ValueError as error:
        event(f"ValueError: {str(error)[:40]}")
        return
    event("result")
    finite_table(table)


text = st.text(max_size=40)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(text, text, text), min_size=4, max_size=30),
    st.sampled_from([-1, 2, 2, 3, 5]),
)
def test_leakage_audit_finite_or_value_error(rows, n_splits):
    questions = [r[0] for r in rows]
    correct = [r[1] for r in rows]
    incorrect = [r[2] for r in rows]
    try:
        audit = tf.leakage_audit(questions, correct, incorrect, n_splits=n_splits)
    except ValueError as error:
        event(f"ValueError: {str(error)[:40]}")
        return
    event("result")
    assert math.isfinite(audit.estimate)
    assert all(math.isfinite(x) for x in (audit.low, audit.high))

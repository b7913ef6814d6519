"""The small calls build their results without the dataclasses' __init__
(truescore_fast._result.built, issue 37): every such object must be the one the
constructor makes from the same fields (the same fields, values and types, nothing more),
so equality, repr, to_dict and pickling cannot tell them apart."""

from __future__ import annotations

import dataclasses
import math
import pickle

import numpy as np
import pytest
import truescore_fast as tf
from truescore_fast.audit.intervals import Interval, interval


def _same_as_constructed(obj):
    cls = type(obj)
    names = [f.name for f in dataclasses.fields(cls)]
    assert sorted(vars(obj)) == sorted(names), cls.__name__
    again = cls(**{name: getattr(obj, name) for name in names})
    for name in names:
        mine, theirs = getattr(obj, name), getattr(again, name)
        assert type(mine) is type(theirs), (cls.__name__, name)
        if isinstance(mine, np.ndarray):
            assert np.array_equal(mine, theirs), name
        elif isinstance(mine, float) and math.isnan(mine):
            assert math.isnan(theirs), name
        else:
            assert mine == theirs, (cls.__name__, name)
        for value in mine.values() if isinstance(mine, dict) else [mine]:
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                _same_as_constructed(value)
    assert repr(obj) == repr(again)
    restored = pickle.loads(pickle.dumps(obj))
    assert repr(restored) == repr(obj)


@pytest.mark.parametrize(
    ("low", "high", "empty"), [(0.1, 0.2, False), (0.3, 0.2, False), (0.1, 0.2, True)]
)
def test_interval_is_the_constructors(low, high, empty):
    made = interval(low, high, 0.15, "wald", 0.05, 0.05, empty=empty)
    assert made == Interval(low, high, 0.15, "wald", 0.05, 0.05, empty=empty)
    _same_as_constructed(made)
    assert made.empty is (True if low > high else empty)


@pytest.mark.parametrize("population_size", [None, 1000])
@pytest.mark.parametrize("control", [False, True])
def test_matched_form_audit_is_the_constructors(population_size, control):
    rng = np.random.default_rng(3703)
    public = (rng.random(200) < 0.7).astype(float)
    fresh = (rng.random((200, 2)) < 0.62).astype(float)
    bank = ((rng.random(80) < 0.6).astype(float), (rng.random((80, 2)) < 0.6).astype(float))
    res = tf.matched_form_audit(
        public, fresh, population_size=population_size, control=bank if control else None
    )
    _same_as_constructed(res)
    sparse = tf.matched_form_audit(public[:20], public[:20, None] * 0 + public[:20, None])
    _same_as_constructed(sparse)  # no nonzero gap: the fallback is primary


def test_audit_states_are_the_constructors():
    rng = np.random.default_rng(3704)
    public = (rng.random(60) < 0.7).astype(float)
    fresh = (rng.random((60, 2)) < 0.6).astype(float)
    audit = tf.SequentialAudit(300, horizon=None, effect_size=0.05)
    for i in range(30):  # float64 scores: the core's fast path
        _same_as_constructed(audit.update(public[i], fresh[i]))
    for i in range(30, 60):  # lists: validated first
        _same_as_constructed(audit.update([float(public[i])], [fresh[i].tolist()]))


def test_the_audits_one_core_call_gives_the_intervals_of_two():
    """_single_and_half (every interval at alpha and the primary at alpha / 2 in one core
    call) gives exactly _single's intervals at alpha and at alpha / 2, on the fast path
    and on the validating one (a gap vector that is not C-contiguous)."""
    from truescore_fast.audit._methods import methods_for
    from truescore_fast.audit.intervals import _single, _single_and_half

    rng = np.random.default_rng(5)
    for n, pop in ((40, None), (200, 1000), (31, 31)):
        d = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=n)
        for gaps in (d, np.repeat(d, 2)[::2]):
            for primary in ("wald", "betting"):
                for alpha in (0.05, 0.3, 1e-6):
                    methods = methods_for(pop)
                    both, half = _single_and_half(methods, primary, gaps, pop, alpha)
                    assert both == _single(methods, gaps, pop, alpha)
                    assert half == _single((primary,), gaps, pop, alpha / 2)[primary]

"""The budget study and ``plan_audit_size`` of ``studies/budget.py``: equal to the reference,
the ordering recovered from every parent, the closed form, the power by simulation, and
the plan at its edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
import truescore_fast as ts
from reference import (
    ref_budget_sums,
    ref_wald_interval,
)
from truescore_fast import studies as cal
from truescore_fast._random import philox_key

BLOCK = cal.REPLICATIONS_PER_TASK


# ---------------------------------------------------------------------------- budget


def test_budget_equals_reference():
    rng = np.random.default_rng(4)
    gaps = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.05, 0.1, 0.6, 0.15, 0.1], size=(4, 150))
    gaps[1] = np.clip(gaps[1] + 0.5 * (rng.random(150) < 0.1), -1, 1)
    reps = 260
    t = tf.budget_study(gaps, sizes=(10, 40), replications=reps, seed=12)
    for c, n in enumerate((10, 40)):
        want = ref_budget_sums(gaps, n, "wald", 0.05, philox_key(12), c, reps, BLOCK)
        assert t["half_width"][c] == pytest.approx(want[0] / reps, rel=1e-12)
        assert round(t["exact_order"][c] * reps) == want[2]
        assert t["pairs_correct"][c] == pytest.approx(want[3] / reps, rel=1e-12)
    assert (np.diff(t["half_width"]) < 0).all()


def test_budget_with_all_parents_recovers_the_ordering():
    rng = np.random.default_rng(1)
    gaps = {f"m{i}": rng.choice([-0.5, 0, 0.5], size=80) for i in range(3)}
    t = tf.budget_study(gaps, sizes=80, replications=20, seed=0)
    assert t["exact_order"][0] == 1.0 and t["pairs_correct"][0] == 1.0
    assert t.meta["models"] == ["m0", "m1", "m2"]


def test_plan_audit_size_follows_its_closed_form():
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    gaps = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.05, 0.1, 0.7, 0.1, 0.05], size=(2, 400))
    plan = tf.plan_audit_size(
        gaps, [0.02, 0.1], power=0.9, alpha=0.1, population_size=3000, guardrail=30
    )
    s2 = (gaps[0].var(ddof=1) + gaps[1].var(ddof=1)) / 2  # averaged over models
    share = np.count_nonzero(gaps) / gaps.size
    z = norm.ppf(0.95) + norm.ppf(0.9)
    for k, delta in enumerate((0.02, 0.1)):
        n0 = z**2 * s2 / delta**2
        assert plan["n_normal"][k] == math.ceil(n0 * 3000 / (n0 + 3000))
        assert plan["n_guardrail"][k] == math.ceil(30 / share)
        assert plan["n_planned"][k] == max(plan["n_normal"][k], plan["n_guardrail"][k])
    assert plan["gap_sd"][0] == pytest.approx(math.sqrt(s2), rel=1e-12)
    # without population_size there is no finite-population shrinkage
    bare = tf.plan_audit_size(gaps[0], 0.02, guardrail=0)
    assert bare["n_normal"][0] == math.ceil(
        (norm.ppf(0.975) + norm.ppf(0.8)) ** 2 * gaps[0].var(ddof=1) / 0.02**2
    )
    assert bare["n_guardrail"][0] == 0
    # no nonzero gap in the pilot: the guardrail can never be met
    assert tf.plan_audit_size(np.zeros(50), 0.1)["n_planned"][0] == math.inf


def test_plan_audit_size_reaches_the_power_by_simulation():
    # A population with true mean gap delta = 0.1; the plan for delta = 0.1 should detect
    # it with the Wald rule about 80% of the time (normal approximation).
    rng = np.random.default_rng(0)
    pop = rng.choice([-1, -0.5, 0, 0.5, 1], p=[0.1, 0.15, 0.4, 0.2, 0.15], size=5000)
    delta = float(pop.mean())
    plan = tf.plan_audit_size(pop, [delta], population_size=5000)
    n = int(plan["n_planned"][0])
    assert plan["n_planned"][0] >= plan["n_guardrail"][0]
    claims = 0
    sims = 2000
    for _ in range(sims):
        d = rng.choice(pop, size=n, replace=False)
        low = ref_wald_interval(d, 5000, 0.05)[0]
        claims += low > 0
    assert abs(claims / sims - 0.8) < 0.04


# --- argument errors that used to escape as OverflowError, ZeroDivisionError, IndexError ---


def test_plan_audit_size_at_the_edges():
    gaps = np.array([0.1, -0.1, 0.2])
    tiny = ts.plan_audit_size(gaps, deltas=1e-300)  # delta**2 underflows to 0
    assert math.isinf(tiny["n_normal"][0]) and math.isinf(tiny["n_planned"][0])
    capped = ts.plan_audit_size(gaps, deltas=1e-300, population_size=1000)
    assert capped["n_normal"][0] == 1000  # no finite plan: the whole population
    with pytest.raises(ValueError, match="gaps"):
        ts.plan_audit_size(np.array(0.1))

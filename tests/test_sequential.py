"""Sequential audits: the betting confidence sequence, SequentialAudit, Besag-Clifford.

Validity under optional stopping is checked by simulation from known truth (rates within
3 Monte Carlo standard errors of their bound), the sequence's ends against the loop
reference in tests/reference.py, and the Besag-Clifford p-value exactly on small cases.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
from reference import ref_besag_clifford_null, ref_betting_sequence_rejects
from truescore_fast.audit._betting import log_bets, log_capital_max

# --------------------------------------------------------------------------------------
# The betting confidence sequence
# --------------------------------------------------------------------------------------


def _gaps(rng, n, p_public=0.7, p_fresh=0.62, k=2):
    public = (rng.random(n) < p_public).astype(float)
    fresh = (rng.random((n, k)) < p_fresh).astype(float)
    return public, fresh


@pytest.mark.parametrize("horizon", [None, 30, 120, 5000])
@pytest.mark.parametrize("population", [None, 150])
def test_capital_matches_the_loop_reference(population, horizon):
    rng = np.random.default_rng(11)
    d = np.round(rng.uniform(-1, 1, 120) * 4) / 4
    x = (d + 1) / 2
    candidates = np.linspace(-1, 1, 41)
    values = log_capital_max(x, (candidates + 1) / 2, population, log_bets(x, 0.05, horizon))
    for m, v in zip(candidates, values, strict=True):
        rejected = bool(v >= -math.log(0.05))
        assert rejected == ref_betting_sequence_rejects(d, m, population, 0.05, horizon), m


@pytest.mark.parametrize("horizon", [None, 200, 3000])
@pytest.mark.parametrize("population", [None, 400])
@pytest.mark.parametrize("seed", range(3))
def test_ends_are_rounded_outward_and_the_inside_is_kept(population, seed, horizon):
    if population is not None and horizon is not None:
        horizon = min(horizon, population)  # a horizon beyond N is refused
    rng = np.random.default_rng(seed)
    pub, fr = _gaps(rng, 200)
    d = pub - fr.mean(axis=1)
    iv = tf.betting_confidence_sequence(d, population_size=population, horizon=horizon)
    assert not iv.empty and iv.low <= iv.estimate <= iv.high
    # Each end is a rejected candidate (or the edge of [-1, 1]); just inside is kept.
    for end, inward in ((iv.low, 1e-6), (iv.high, -1e-6)):
        if abs(end) < 1.0:
            assert ref_betting_sequence_rejects(d, end, population, 0.05, horizon)
            assert not ref_betting_sequence_rejects(d, end + inward, population, 0.05, horizon)
    for m in np.linspace(iv.low + 1e-6, iv.high - 1e-6, 7):
        assert not ref_betting_sequence_rejects(d, m, population, 0.05, horizon)


def test_a_census_is_the_exact_mean():
    rng = np.random.default_rng(3)
    d = np.round(rng.uniform(-1, 1, 60) * 2) / 2
    iv = tf.betting_confidence_sequence(d, population_size=60)
    assert iv.low == iv.high == pytest.approx(d.mean(), abs=1e-15)


def test_the_sequence_is_wider_than_the_fixed_time_interval():
    # The price of looking at every n: at one fixed n the fixed-time interval is narrower.
    rng = np.random.default_rng(5)
    pub, fr = _gaps(rng, 800)
    d = pub - fr.mean(axis=1)
    seq = tf.betting_confidence_sequence(d)
    fixed = tf.betting_interval(d)
    assert seq.high - seq.low > fixed.high - fixed.low


@pytest.mark.parametrize("population", [None, 900])
@pytest.mark.parametrize("seed", range(3))
def test_read_at_its_horizon_the_sequence_is_the_fixed_time_interval(population, seed):
    # Tuned to n and read at n: the same bets and the same capital as betting_interval
    # (the C++ fixed-time interval), so the same interval up to the ends' refinement:
    # the C++ ends are the rejected points of a 2^-30 grid on x = (d + 1)/2 (at most
    # 2 x 2^-30 < 1.9e-9 outward in d), the sequence's 1e-12 outward of a 1e-14 bracket.
    rng = np.random.default_rng(40 + seed)
    pub, fr = _gaps(rng, 300)
    d = pub - fr.mean(axis=1)
    seq = tf.betting_confidence_sequence(d, population_size=population, horizon=300)
    fixed = tf.betting_interval(d, population_size=population)
    assert 0.0 <= seq.low - fixed.low + 1e-11 < 1.9e-9 + 1e-11
    assert 0.0 <= fixed.high - seq.high + 1e-11 < 1.9e-9 + 1e-11


def test_the_horizon_moves_width_from_early_to_the_horizon():
    # What the horizon changes: tuned to n = 1,000, the sequence is narrower than the
    # horizon-free one at 1,000 and wider at 50, on each of 5 seeded samples.
    for seed in range(5):
        rng = np.random.default_rng(60 + seed)
        pub, fr = _gaps(rng, 1000)
        d = pub - fr.mean(axis=1)
        for n, tuned_is_narrower in ((1000, True), (50, False)):
            tuned = tf.betting_confidence_sequence(d[:n], horizon=1000).half_width
            free = tf.betting_confidence_sequence(d[:n]).half_width
            assert (tuned < free) == tuned_is_narrower, (seed, n, tuned, free)


def _ever_rejects_truth(d, truth, population):
    x = (d + 1) / 2
    value = log_capital_max(x, np.array([(truth + 1) / 2]), population, log_bets(x, 0.1))[0]
    return value >= -math.log(0.1)


def test_time_uniform_coverage_with_replacement():
    # Known truth: gaps in {-1, -1/2, 0, 1/2, 1} with mean 0.1. The sequence must exclude
    # the truth at ANY of the first 300 steps in at most alpha = 0.1 of the runs.
    rng = np.random.default_rng(2024)
    values = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    probs = np.array([0.1, 0.15, 0.4, 0.2, 0.15])
    truth = float(values @ probs)
    runs = 600
    misses = sum(
        _ever_rejects_truth(rng.choice(values, size=300, p=probs), truth, None)
        for _ in range(runs)
    )
    bound = 0.1 + 3 * math.sqrt(0.1 * 0.9 / runs)
    assert misses / runs <= bound, misses


def test_time_uniform_coverage_without_replacement():
    # A fixed population of N = 400 gaps, scored in random orders to the end: the
    # population mean must be excluded at some step in at most alpha of the orders.
    rng = np.random.default_rng(7)
    population = np.round(rng.uniform(-1, 1, 400) * 2) / 2 * (rng.random(400) < 0.4)
    truth = float(population.mean())
    runs = 500
    misses = sum(
        _ever_rejects_truth(rng.permutation(population)[:399], truth, 400) for _ in range(runs)
    )
    bound = 0.1 + 3 * math.sqrt(0.1 * 0.9 / runs)
    assert misses / runs <= bound, misses


@pytest.mark.parametrize(
    ("population", "horizon"),
    [(None, 30), (None, 300), (None, 5000), (400, 40), (400, 300), (400, 400)],
)
def test_horizon_tuned_sequences_are_valid_under_monitoring(population, horizon):
    # Validity does not depend on the horizon, even one far from where the scoring stops
    # (30 and 40: long before; 5000: long after; the runs are 300 parents). The truth is
    # known: gaps drawn with mean 0.3 (with replacement) or random orders of a fixed
    # population of 400 with mean near 0.25 (without). The loop reference of
    # tests/reference.py decides (1) whether the sequence ever excludes the truth in the
    # first 300 parents (time-uniform miscoverage) and (2) whether it excludes it by a
    # data-dependent stop: the first look (every 25) at which the library's sequence
    # excludes 0. Both must be at most alpha = 0.1 within 3 Monte Carlo SEs (300 runs:
    # SE <= 0.018); the library must agree with the reference on every run.
    from truescore_fast.audit._betting import log_bets
    from truescore_fast.studies.sequential import _first_hits

    alpha, runs, n = 0.1, 300, 300
    rng = np.random.default_rng(1000 + (population or 0) + horizon)
    if population is None:
        values = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
        probs = np.array([0.05, 0.1, 0.35, 0.25, 0.25])
        truth = float(values @ probs)
        d = rng.choice(values, size=(runs, n), p=probs)
    else:
        pop = np.round(rng.uniform(-1, 1, population) * 2) / 2 * (rng.random(population) < 0.5)
        pop[: population // 2] = 0.5  # a population mean near 0.25
        truth = float(pop.mean())
        d = np.stack([rng.permutation(pop)[:n] for _ in range(runs)])
    x = (d + 1) / 2
    size = population if population is not None else 10**9
    bets = log_bets(x, alpha, horizon)
    up, down = _first_hits(x, np.full(runs, (truth + 1) / 2), size, alpha, bets)
    zero_up, zero_down = _first_hits(x, np.full(runs, 0.5), size, alpha, bets)
    looks = np.arange(25, n + 1, 25)
    first_zero = np.minimum(zero_up, zero_down)
    stop = np.array([looks[looks >= t][0] if t <= n else n for t in first_zero])
    ever = at_stop = 0
    pop_arg = population
    for r in range(runs):
        missed = ref_betting_sequence_rejects(d[r], truth, pop_arg, alpha, horizon)
        assert missed == (min(up[r], down[r]) <= n), r
        missed_by_stop = ref_betting_sequence_rejects(
            d[r, : stop[r]], truth, pop_arg, alpha, horizon
        )
        assert missed_by_stop == (min(up[r], down[r]) <= stop[r]), r
        ever += missed
        at_stop += missed_by_stop
    bound = alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs)
    assert ever / runs <= bound, ever
    assert at_stop / runs <= bound, at_stop
    # the stop is data-dependent: most runs stop before the end, at varying looks
    assert np.mean(stop < n) > 0.5 and np.unique(stop).shape[0] >= 3, np.unique(stop)


def test_peeking_at_the_wald_interval_is_not_valid_but_the_sequence_is():
    # The contrast the sequential audit exists for: under Delta = 0, looking at the 95%
    # Wald interval after every 10 parents up to 500 and stopping at the first exclusion
    # of 0 errs far more than 5%; the betting sequence read at the same looks does not.
    rng = np.random.default_rng(99)
    runs, n = 400, 500
    d = rng.choice([-1.0, 0.0, 1.0], size=(runs, n), p=[0.2, 0.6, 0.2])
    looks = np.arange(10, n + 1, 10)
    t = np.arange(1, n + 1)
    mean = np.cumsum(d, axis=1) / t
    var = (np.cumsum(d**2, axis=1) - t * mean**2) / np.maximum(t - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):  # zero variance early on
        z = np.nan_to_num(np.abs(mean) / np.sqrt(var / t), nan=0.0)
    wald_errs = float(np.mean((z[:, looks - 1] > 1.959964).any(axis=1)))
    seq_errs = float(np.mean([_ever_rejects_truth(row, 0.0, None) for row in d[:200]]))
    assert wald_errs > 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), wald_errs
    assert seq_errs <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 200), seq_errs
    # the README quotes these two runs: "37% of runs at nominal 5%; the sequence, 3.5%"
    assert (round(wald_errs, 2), round(seq_errs, 3)) == (0.37, 0.035)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d": [0.1, 2.0]}, "d must"),
        ({"d": [[0.1, 0.2]]}, "d must"),
        ({"d": []}, "d must"),
        ({"d": [0.1, np.nan]}, "d must"),
        ({"d": [0.1, 0.2], "population_size": 1}, "population_size"),
        ({"d": [0.1, 0.2], "population_size": 2.5}, "population_size"),
        ({"d": [0.1, 0.2], "alpha": 1.5}, "alpha"),
        ({"d": [0.1, 0.2], "horizon": 0}, "horizon"),
        ({"d": [0.1, 0.2], "horizon": "auto"}, "horizon"),
        ({"d": [0.1, 0.2], "population_size": 10, "horizon": 11}, "horizon must be at most"),
    ],
)
def test_sequence_refuses_bad_input(kwargs, match):
    d = kwargs.pop("d")
    with pytest.raises((ValueError, TypeError), match=match):
        tf.betting_confidence_sequence(d, **kwargs)


# --------------------------------------------------------------------------------------
# audit_order and SequentialAudit
# --------------------------------------------------------------------------------------


def test_audit_order_is_numpys_permutation_from_the_seed():
    order = tf.audit_order(50, seed=8)
    assert np.array_equal(order, np.random.default_rng(8).permutation(50))
    assert order.dtype == np.int64
    with pytest.raises(ValueError, match="population_size"):
        tf.audit_order(0)


def _run(audit, pub, fr, batch):
    state = None
    for start in range(0, pub.shape[0], batch):
        state = audit.update(pub[start : start + batch], fr[start : start + batch])
        if state.decision != "continue":
            break
    return state


def test_a_large_gap_is_found_early():
    rng = np.random.default_rng(1)
    pub, fr = _gaps(rng, 3000, p_public=0.85, p_fresh=0.6)
    state = _run(tf.SequentialAudit(3000), pub, fr, 25)
    assert state.decision == "finding" and state.claim
    assert state.n_parents < 600
    assert state.delta.low > 0 and state.tau.low > 0


def test_no_gap_is_bounded_below_an_effect_size():
    rng = np.random.default_rng(2)
    pub, fr = _gaps(rng, 5000, p_public=0.6, p_fresh=0.6)
    state = _run(tf.SequentialAudit(effect_size=0.1), pub, fr, 50)
    assert state.decision == "bounded" and not state.claim
    assert state.delta.high < 0.1 and state.n_parents < 5000


def test_a_target_half_width_bounds_the_audit():
    rng = np.random.default_rng(3)
    pub, fr = _gaps(rng, 4000, p_public=0.6, p_fresh=0.6)
    state = _run(tf.SequentialAudit(target_half_width=0.08), pub, fr, 50)
    assert state.decision == "bounded"
    assert state.delta.half_width <= 0.08


def test_max_parents_exhausts_and_the_projection_is_given_while_continuing():
    rng = np.random.default_rng(4)
    pub, fr = _gaps(rng, 400, p_public=0.66, p_fresh=0.6)
    audit = tf.SequentialAudit(1000, max_parents=100, target_half_width=0.05)
    first = audit.update(pub[:50], fr[:50])
    assert first.decision == "continue"
    assert first.more_parents is None or first.more_parents > 0
    last = audit.update(pub[50:100], fr[50:100])
    assert last.decision in ("exhausted", "finding", "bounded")
    assert audit.n_parents == 100 and len(audit.history) == 2


def test_the_intervals_never_widen_and_hold_the_census_value():
    rng = np.random.default_rng(5)
    pub, fr = _gaps(rng, 300)
    audit = tf.SequentialAudit(300)
    widths = []
    for start in range(0, 300, 30):
        state = audit.update(pub[start : start + 30], fr[start : start + 30])
        widths.append(state.delta.high - state.delta.low)
    assert all(b <= a + 1e-15 for a, b in zip(widths, widths[1:], strict=False))
    exact = float(np.mean(pub - fr.mean(axis=1)))
    assert state.delta.low == state.delta.high == pytest.approx(exact)


@pytest.mark.parametrize(
    ("horizon", "match"),
    [
        ("AUTO", "integer >= 1, 'auto' or None"),
        (101, "horizon must be at most population_size"),
        (0, "horizon"),
        (True, "horizon"),
    ],
)
def test_the_audit_refuses_a_bad_horizon(horizon, match):
    with pytest.raises(ValueError, match=match):
        tf.SequentialAudit(100, horizon=horizon)


def test_the_order_study_takes_shifts_as_the_other_studies_take_their_lists():
    kwargs = {"n_shards": 4, "max_permutations": 19, "h": 5, "replications": 20}
    one = tf.sequential_order_study(shifts=np.array(1.0), progress=False, **kwargs)
    listed = tf.sequential_order_study(shifts=[1.0], progress=False, **kwargs)
    assert one.columns.keys() == listed.columns.keys()
    for name, column in one.columns.items():
        np.testing.assert_array_equal(column, listed.columns[name])
    for bad in ("abc", [], [np.nan], [[1.0]]):
        with pytest.raises((ValueError, TypeError), match="shifts"):
            tf.sequential_order_study(shifts=bad, **kwargs)


def test_the_horizon_defaults_to_the_budget():
    assert tf.SequentialAudit(3000).horizon is None
    assert tf.SequentialAudit(3000, max_parents=1200).horizon == 1200
    assert tf.SequentialAudit(500, max_parents=1200).horizon == 500  # the most scorable
    assert tf.SequentialAudit(max_parents=700).horizon == 700
    assert tf.SequentialAudit(3000, max_parents=1200, horizon=None).horizon is None
    assert tf.SequentialAudit(3000, horizon=800).horizon == 800
    state = tf.SequentialAudit(3000, max_parents=1200).update([1.0, 0.0], [0.0, 0.0])
    assert state.horizon == 1200 and "bets tuned to 1200 parents" in state.summary()
    state = tf.SequentialAudit(3000).update([1.0, 0.0], [0.0, 0.0])
    assert state.horizon is None and "horizon-free bets" in state.summary()


@pytest.mark.parametrize("population", [None, 2000])
def test_an_audit_tuned_to_its_budget_ends_at_the_fixed_time_interval(population):
    # Read at max_parents, Delta's sequence is the fixed audit's betting interval there
    # (to the C++ ends' 2^-30 grid), after every batch read on the way.
    rng = np.random.default_rng(31)
    pub, fr = _gaps(rng, 300, p_public=0.62, p_fresh=0.6)
    audit = tf.SequentialAudit(population, max_parents=300)
    for start in range(0, 300, 60):
        state = audit.update(pub[start : start + 60], fr[start : start + 60])
    fixed = tf.betting_interval(pub - fr.mean(axis=1), population_size=population)
    assert 0.0 <= state.delta.low - fixed.low + 1e-11 < 1.9e-9 + 1e-11
    assert 0.0 <= fixed.high - state.delta.high + 1e-11 < 1.9e-9 + 1e-11


def test_the_control_bank_and_radius_shift_tau():
    rng = np.random.default_rng(6)
    pub, fr = _gaps(rng, 400, p_public=0.8, p_fresh=0.6)
    control = _gaps(rng, 200, p_public=0.62, p_fresh=0.6)
    plain = tf.SequentialAudit().update(pub, fr)
    banked = tf.SequentialAudit(control=control, transport_radius=0.02).update(pub, fr)
    bank = tf.matched_form_audit(pub, fr, control=control).control
    assert banked.delta == plain.delta
    reading = bank.readings["wald"]
    assert banked.tau.low == pytest.approx(plain.tau.low - (reading.high + 0.02))
    assert banked.tau.estimate == pytest.approx(plain.estimate - bank.estimate)


def test_sequential_audit_type_i_error_under_monitoring():
    # Delta = 0 (public and fresh forms equally hard): claims made at any of the looks,
    # over 100 audits of up to 200 parents read every 40, stay within alpha = 0.1. (The
    # sequence's own time-uniform coverage is checked above with more runs; this checks
    # the audit's wiring of it into the claim rule.)
    rng = np.random.default_rng(12)
    runs, claims = 100, 0
    for _ in range(runs):
        pub, fr = _gaps(rng, 200, p_public=0.6, p_fresh=0.6, k=1)
        state = _run(tf.SequentialAudit(alpha=0.1), pub, fr, 40)
        claims += state.claim
    assert claims / runs <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / runs), claims


@pytest.mark.parametrize(
    ("kwargs", "update", "match"),
    [
        ({"alpha": 0.0}, None, "alpha"),
        ({"population_size": 1}, None, "population_size"),
        ({"transport_radius": -1.0}, None, "transport_radius"),
        ({"transport_radius": float("inf")}, None, "transport_radius"),
        ({"target_half_width": float("nan")}, None, "target_half_width"),
        ({"effect_size": "0.1"}, None, "effect_size"),
        ({"max_parents": 0}, None, "max_parents"),
        ({"control_reading": "bayes"}, None, "control_reading"),
        ({"horizon": 0}, None, "horizon"),
        ({"horizon": 2.5}, None, "horizon"),
        ({"horizon": "soon"}, None, "horizon"),
        ({}, ([1.5], [0.0]), "public"),
        ({}, ([1.0, 0.0], [0.0]), "fresh"),
        ({}, ([], []), "public"),
        ({"population_size": 3}, ([1.0] * 4, [0.0] * 4), "population_size"),
    ],
)
def test_sequential_audit_refuses_bad_input(kwargs, update, match):
    with pytest.raises((ValueError, TypeError), match=match):
        audit = tf.SequentialAudit(**kwargs)
        audit.update(*update)


def test_fresh_form_count_cannot_change():
    audit = tf.SequentialAudit()
    audit.update([1.0, 0.0], [[0.0, 1.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="2 fresh forms"):
        audit.update([1.0], [[0.0, 1.0, 1.0]])


# --------------------------------------------------------------------------------------
# Besag-Clifford and the sequential exchangeability test
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("m", "h"), [(19, 3), (99, 10), (39, 1), (10, 11)])
def test_besag_clifford_is_valid_exactly(m, h):
    law = ref_besag_clifford_null(m, h)
    assert sum(law.values()) == pytest.approx(1.0, abs=1e-12)
    for u in law:
        assert sum(q for p, q in law.items() if p <= u) <= u + 1e-12
    # Every support point is one the function returns for some stopped state.
    for p in law:
        if p * (m + 1) == round(p * (m + 1)) and round(p * (m + 1)) <= h:
            g = round(p * (m + 1)) - 1
            if g < h:
                assert tf.besag_clifford_p_value(g, m, h=h, max_draws=m) == pytest.approx(p)


def test_besag_clifford_with_h_above_m_is_the_fixed_test():
    for g in range(6):
        assert tf.besag_clifford_p_value(g, 5, h=7, max_draws=5) == (g + 1) / 6
    assert tf.besag_clifford_p_value(3, 12, h=3, max_draws=99) == 3 / 12


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((3, 10), "exceedances cannot pass|not stopped"),
        ((4, 10), "exceedances cannot pass"),
        ((1, 5), "not stopped"),
        ((5, 3), "draws"),
        ((1, 200), "draws"),
    ],
)
def test_besag_clifford_refuses_states_that_are_not_stopped(args, match):
    g, n = args
    with pytest.raises(ValueError, match=match):
        tf.besag_clifford_p_value(g, n, h=3 if g != 3 else 2, max_draws=99)


def _shard_scores(rng, orders, contaminated):
    """Log-likelihoods of each shard's published order and its shuffled orders."""
    canon, shuffled = [], []
    for perms in orders.permutations:
        base = rng.normal(-100.0, 3.0, size=perms.shape[0] + 1)
        if contaminated:
            base[0] += 25.0  # the published order is far likelier than any shuffle
        canon.append(base[0])
        shuffled.append(base[1:])
    return canon, shuffled


def _drive(test, canon, shuffled, batch=1):
    given = [False] * len(canon)
    while True:
        todo = test.next_orders(batch)
        if not todo:
            return test.verdict()
        for shard, j, _order in todo:
            kwargs = {} if given[shard] else {"canonical_loglik": canon[shard]}
            given[shard] = True
            test.update(shard, [shuffled[shard][j]], **kwargs)


def test_orders_handed_out_are_shard_orders_rows():
    test = tf.SequentialExchangeabilityTest(40, 4, max_permutations=9, seed=5)
    fixed = tf.shard_orders(40, 4, 9, seed=5)
    for shard, j, order in test.next_orders(3):
        assert np.array_equal(order, fixed.permutations[shard][j])


def test_scoring_everything_is_the_fixed_test():
    rng = np.random.default_rng(8)
    test = tf.SequentialExchangeabilityTest(60, 5, max_permutations=19, h=20, seed=1)
    canon, shuffled = _shard_scores(rng, test.orders, contaminated=False)
    verdict = _drive(test, canon, shuffled, batch=19)
    if verdict.decision != "continue" and not all(s.stopped for s in verdict.shards):
        # decided early: finish the shards to compare with the fixed test
        for i in range(5):
            test.update(i, shuffled[i][test.shard_state(i).draws :])
        verdict = test.verdict()
    fixed = [tf.exchangeability_test(c, s).p_value for c, s in zip(canon, shuffled, strict=True)]
    assert [s.p_value for s in verdict.shards] == pytest.approx(fixed)
    assert verdict.p_value == pytest.approx(tf.combine_shards(fixed).p_value)


def test_a_clean_model_scores_far_fewer_orders_and_the_early_verdict_is_the_final_one():
    rng = np.random.default_rng(9)
    scored, runs = [], 30
    for r in range(runs):
        test = tf.SequentialExchangeabilityTest(500, 10, max_permutations=99, h=5, seed=r)
        canon, shuffled = _shard_scores(rng, test.orders, contaminated=False)
        early = _drive(test, canon, shuffled, batch=2)
        scored.append(early.orders_scored)
        assert early.decision in ("finding", "no finding")
        for i in range(10):  # score the rest of every shard's rule: same decision
            test.update(i, shuffled[i][test.shard_state(i).draws :])
        final = test.verdict()
        assert final.decision == early.decision
        assert early.p_low <= final.p_value <= early.p_high
    assert np.mean(scored) < 0.3 * 10 * 99, np.mean(scored)


def test_a_contaminated_model_is_found_with_the_fixed_tests_p_value():
    rng = np.random.default_rng(10)
    test = tf.SequentialExchangeabilityTest(200, 4, max_permutations=39, h=5, seed=2)
    canon, shuffled = _shard_scores(rng, test.orders, contaminated=True)
    verdict = _drive(test, canon, shuffled, batch=5)
    assert verdict.decision == "finding"
    # p_high already below alpha: the fixed test's p (every shard at 1/40) is below it.
    fixed = tf.combine_shards([1 / 40] * 4).p_value
    assert verdict.p_low <= fixed <= verdict.p_high < 0.05


def test_values_after_a_shard_stops_are_not_used():
    test = tf.SequentialExchangeabilityTest(20, 1, max_permutations=50, h=2)
    state = test.update(0, [1.0, -5.0, 2.0, 3.0, 4.0], canonical_loglik=0.0)
    assert state.stopped and state.draws == 3 and state.exceedances == 2
    assert state.p_value == 2 / 3


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda t: t.update(0, [1.0]), "canonical_loglik"),
        (lambda t: t.update(5, [1.0], canonical_loglik=0.0), "shard"),
        (lambda t: t.update(0, [np.nan], canonical_loglik=0.0), "permuted_logliks"),
        (lambda t: t.update(0, [1.0], canonical_loglik=np.inf), "canonical_loglik"),
        (lambda t: t.next_orders(0), "count"),
    ],
)
def test_sequential_test_refuses_bad_input(call, match):
    test = tf.SequentialExchangeabilityTest(20, 2, max_permutations=9)
    with pytest.raises((ValueError, TypeError), match=match):
        call(test)


def test_canonical_cannot_change():
    test = tf.SequentialExchangeabilityTest(20, 2, max_permutations=9)
    test.update(0, [1.0], canonical_loglik=0.0)
    with pytest.raises(ValueError, match="already given"):
        test.update(0, [1.0], canonical_loglik=1.0)


# --------------------------------------------------------------------------------------
# The studies
# --------------------------------------------------------------------------------------


def test_first_hits_match_the_loop_reference():
    from truescore_fast.audit._betting import log_bets
    from truescore_fast.studies.sequential import _first_hits

    rng = np.random.default_rng(21)
    d = np.round(rng.uniform(-1, 1, (30, 80)) * 2) / 2
    for m in (-0.2, 0.0, 0.15):
        for horizon in (None, 80):
            x = (d + 1) / 2
            up, down = _first_hits(
                x, np.full(30, (m + 1) / 2), 200, 0.1, log_bets(x, 0.1, horizon)
            )
            for row in range(30):
                first = min(up[row], down[row])
                ref = (m, 200, 0.1, horizon)
                assert ref_betting_sequence_rejects(d[row], *ref) == (first <= 80)
                if first <= 80:  # rejected by then, not before
                    assert ref_betting_sequence_rejects(d[row, :first], *ref)
                    assert not ref_betting_sequence_rejects(d[row, : first - 1], *ref)


@pytest.fixture(scope="module")
def audit_study():
    rng = np.random.default_rng(0)
    public = (rng.random(800) < 0.6).astype(float)
    fresh = (rng.random((800, 2)) < 0.6).astype(float)
    table = tf.sequential_study(
        public, fresh, deltas=(0.0, 0.15), max_parents=400, look_every=25, replications=500,
        seed=4,
    )  # fmt: skip
    return public, fresh, table


def test_sequential_study_keeps_its_guarantees(audit_study):
    _, _, table = audit_study
    reps, alpha = 500, 0.05
    for row in range(2):
        assert table["coverage_at_stop"][row] >= 1 - alpha - 3 * math.sqrt(alpha * 0.95 / reps)
        assert table["false_claim_rate"][row] <= alpha / 2 + 3 * math.sqrt(0.025 * 0.975 / reps)
    # no form effect: the sequence rarely claims; peeking at Wald every 25 parents does
    assert table["claim_rate"][0] < table["wald_peek_claim_rate"][0]
    assert table["wald_peek_claim_rate"][0] > alpha / 2 + 3 * math.sqrt(0.025 * 0.975 / reps)
    # a large planted effect: found, and before max_parents on average
    assert table["claim_rate"][1] > 0.8 and table["mean_parents"][1] < 400
    # the fixed design with the same power is read off the fixed audit's curve
    assert 0 < table["fixed_same_power_parents"][1] <= 400


def _readme_bank_study(delta, replications):
    """sequential_study on the README's bank (N = 2,000), budget 1,200, seed 7."""
    rng = np.random.default_rng(0)
    public = (rng.random(2000) < 0.6).astype(float)
    fresh = (rng.random((2000, 2)) < 0.6).astype(float)
    return tf.sequential_study(
        public, fresh, deltas=(delta,), max_parents=1200, replications=replications, seed=7
    )


def test_tuning_to_the_budget_raises_power_and_lowers_parents():
    # The README's bank, a small planted effect: the audit tuned to max_parents claims as
    # often as the fixed audit at max_parents and far more often than the horizon-free
    # one, on the same 400 replications (paired: the SE of the difference of the two
    # rates is at most sqrt((p1 q1 + p2 q2) / 400) < 0.035), and scores fewer parents
    # than the fixed design with the same power.
    table = _readme_bank_study(0.05, 400)
    tuned, free = table["claim_rate"][0], table["horizon_free_claim_rate"][0]
    se = math.sqrt((tuned * (1 - tuned) + free * (1 - free)) / 400)
    assert tuned - free > 3 * se, (tuned, free)
    assert tuned >= table["fixed_claim_rate"][0] - 3 * se
    assert table["mean_parents"][0] < table["horizon_free_mean_parents"][0]
    same = table["fixed_same_power_parents"][0]
    assert table["mean_parents"][0] + 3 * table["fixed_same_power_se"][0] < same <= 1200
    assert table.meta["horizon"] == 1200


def test_tuning_to_the_budget_finds_a_very_large_effect_later():
    # The price of the horizon, as the README and SequentialAudit state it: with a planted
    # delta = 0.3 the horizon-free bets stop sooner ("107 parents on average instead of
    # 55", on the same 250 replications read every 50 parents).
    table = _readme_bank_study(0.3, 250)
    assert table["claim_rate"][0] == table["horizon_free_claim_rate"][0] == 1.0
    tuned, free = table["mean_parents"][0], table["horizon_free_mean_parents"][0]
    assert (round(tuned), round(free)) == (107, 55)


def test_same_power_parents_reads_the_curve():
    from truescore_fast.studies.sequential import _same_power_parents

    looks = np.array([100, 200, 300])
    curve = np.array([0.2, 0.5, 0.9])
    # 0.7 lies between 0.5 (n = 200) and 0.9 (n = 300): n = 250, slope 0.004 per parent
    n, se = _same_power_parents(0.7, 0.01, looks, curve)
    assert n == pytest.approx(250.0)
    assert se == pytest.approx(math.sqrt(2) * 0.01 / 0.004)
    assert _same_power_parents(0.1, 0.01, looks, curve)[0] == pytest.approx(50.0)  # from 0
    assert _same_power_parents(0.0, 0.0, looks, curve) == (0.0, 0.0)
    assert _same_power_parents(0.9, 0.0, looks, curve) == (300.0, math.inf)  # all claimed
    assert _same_power_parents(0.95, 0.01, looks, curve) == (math.inf, math.inf)


def test_sequential_study_is_reproducible(audit_study):
    public, fresh, table = audit_study
    again = tf.sequential_study(
        public, fresh, deltas=(0.0, 0.15), max_parents=400, look_every=25, replications=500,
        seed=4,
    )  # fmt: skip
    for name in table.columns:
        assert np.array_equal(table[name], again[name]), name
    other = tf.sequential_study(
        public, fresh, deltas=(0.0,), max_parents=400, look_every=25, replications=500, seed=5
    )
    assert other["mean_parents"][0] != table["mean_parents"][0]


def test_order_study_size_and_saving():
    table = tf.sequential_order_study(shifts=(0.0, 2.5), replications=1000, seed=3)
    reps, alpha = 1000, 0.05
    assert table["rejection_rate"][0] <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps)
    assert table["saving"][0] > 0.6  # a clean model: most orders are never scored
    assert table["rejection_rate"][1] > 0.95
    assert table["orders_fixed"][0] == 990


def test_order_study_with_h_above_m_decides_as_the_fixed_test():
    table = tf.sequential_order_study(
        n_shards=4, max_permutations=19, h=20, shifts=(0.0, 1.0), replications=500, seed=2
    )
    assert np.array_equal(table["rejection_rate"], table["fixed_rate"])


def test_order_study_replications_match_the_class():
    from truescore_fast.studies.sequential import _order_replications

    rng = np.random.default_rng(5)
    canonical = rng.standard_normal((40, 3, 1)) + 1.0
    shuffled = rng.standard_normal((40, 3, 19))
    verdict, _, scored = _order_replications(shuffled >= canonical, 4, 0.05)
    for r in range(40):
        test = tf.SequentialExchangeabilityTest(30, 3, max_permutations=19, h=4)
        started = [False] * 3
        while test.next_orders():
            for shard, j, _ in test.next_orders():
                kwargs = {} if started[shard] else {"canonical_loglik": canonical[r, shard, 0]}
                started[shard] = True
                test.update(shard, [shuffled[r, shard, j]], **kwargs)
        result = test.verdict()
        assert (result.decision == "finding") == verdict[r]
        assert result.orders_scored == scored[r]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"deltas": (0.9,)}, "deltas"),
        ({"max_parents": 10_000}, "max_parents"),
        ({"look_every": 0}, "look_every"),
        ({"relabel": "yes"}, "relabel"),
        ({"effect_size": float("nan")}, "effect_size"),
        ({"replications": 0}, "replications"),
        ({"horizon": 0}, "horizon"),
        ({"horizon": "budget"}, "horizon"),
    ],
)
def test_sequential_study_refuses_bad_input(kwargs, match):
    public = np.array([1.0, 0.0, 1.0, 1.0] * 10)
    fresh = np.array([[1.0], [0.0], [0.0], [1.0]] * 10)
    options = {"max_parents": 20, "replications": 10} | kwargs
    with pytest.raises((ValueError, TypeError), match=match):
        tf.sequential_study(public, fresh, **options)


def test_order_study_refuses_bad_input():
    with pytest.raises(ValueError, match="shifts"):
        tf.sequential_order_study(shifts=(float("inf"),), replications=10)
    with pytest.raises(ValueError, match="h"):
        tf.sequential_order_study(h=0, replications=10)


def test_an_all_zero_remainder_does_not_rule_out_the_true_mean():
    # Rounding in (N m - sum) / (N - t + 1) must not make the true mean impossible.
    d = np.array([0.1, -0.3, 0.7] + [0.0] * 37)
    for n in (10, 30, 39):
        iv = tf.betting_confidence_sequence(d[:n], population_size=40)
        assert iv.contains(float(d.mean())), n


def test_order_verdict_from_scores_matches_the_class():
    rng = np.random.default_rng(13)
    test = tf.SequentialExchangeabilityTest(80, 4, max_permutations=29, h=3, seed=1)
    canon, shuffled = _shard_scores(rng, test.orders, contaminated=False)
    scored = [[], [], [], []]
    for rounds in range(6):
        for shard, j, _ in test.next_orders(2):
            kwargs = {"canonical_loglik": canon[shard]} if j == 0 else {}
            test.update(shard, [shuffled[shard][j]], **kwargs)
            scored[shard].append(shuffled[shard][j])
        from_scores = tf.sequential_order_verdict(canon, scored, max_permutations=29, h=3)
        assert from_scores.to_dict() == test.verdict().to_dict(), rounds
    # extra scores past a shard's stop are ignored, as by the class
    padded = [s + [1e9] * 3 if test.shard_state(i).stopped else s for i, s in enumerate(scored)]
    padded = [p[:29] for p in padded]
    again = tf.sequential_order_verdict(canon, padded, max_permutations=29, h=3)
    assert again.decision == test.verdict().decision


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([0.0, 1.0], [[1.0]]), "one array per shard"),
        (([np.nan], [[1.0]]), "canonical_logliks"),
        (([0.0], [[np.inf]]), "permuted_logliks"),
        (([0.0], [[1.0] * 100]), "more than max_permutations"),
    ],
)
def test_order_verdict_refuses_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        tf.sequential_order_verdict(*args)


def test_studies_are_the_same_for_any_thread_count_and_executor(audit_study):
    from concurrent.futures import ThreadPoolExecutor

    public, fresh, table = audit_study
    options = {"deltas": (0.0, 0.15), "max_parents": 400, "look_every": 25}
    options |= {"replications": 500, "seed": 4}
    for kwargs in ({"n_threads": 1}, {"n_threads": 2}):
        again = tf.sequential_study(public, fresh, **options, **kwargs)
        for name in table.columns:
            assert np.array_equal(table[name], again[name]), (kwargs, name)
    orders = tf.sequential_order_study(shifts=(0.0, 1.5), replications=600, seed=3, n_threads=1)
    with ThreadPoolExecutor(3) as pool:
        for kwargs in ({"n_threads": 2}, {"executor": pool}):
            again = tf.sequential_order_study(
                shifts=(0.0, 1.5), replications=600, seed=3, **kwargs
            )
            for name in orders.columns:
                assert np.array_equal(orders[name], again[name]), (kwargs, name)
        again = tf.sequential_study(public, fresh, **options, executor=pool)
        for name in table.columns:
            assert np.array_equal(table[name], again[name]), name


def test_study_progress_counts_replications(capsys):
    tf.sequential_order_study(shifts=(0.0,), replications=600, seed=1, progress=True)
    err = capsys.readouterr().err
    assert "sequential order test" in err and "600" in err
    with pytest.raises(ValueError, match="progress"):
        tf.sequential_order_study(replications=10, progress="yes")
    with pytest.raises(ValueError, match="executor"):
        tf.sequential_order_study(replications=10, executor=object())
    with pytest.raises(ValueError, match="n_threads"):
        tf.sequential_order_study(replications=10, n_threads=0)


def test_ctrl_c_stops_a_threaded_study_within_a_second():
    import sys
    import textwrap

    from interrupting import interrupt_after

    code = textwrap.dedent(
        """
        import sys, threading, numpy as np, truescore_fast as tf
        rng = np.random.default_rng(0)
        pub = (rng.random(2000) < 0.6).astype(float)
        fr = (rng.random((2000, 2)) < 0.6).astype(float)
        print("ready", flush=True)
        try:
            tf.sequential_study(pub, fr, max_parents=1200, replications=20000, n_threads=2)
        except KeyboardInterrupt:
            print("interrupted", threading.active_count(), flush=True)
            sys.exit(130)
        print("finished", flush=True)
        """
    )
    status, out, err, elapsed = interrupt_after([sys.executable, "-c", code], 1.0, timeout=120)
    assert status == 130, (out, err)
    assert out.split() == ["interrupted", "1"]  # no worker thread left behind
    assert elapsed < 2.0, elapsed

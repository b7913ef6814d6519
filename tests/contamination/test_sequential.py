"""The sequential order test of ``contamination/sequential.py``: the Besag-Clifford p-value
exactly on small cases, ``SequentialExchangeabilityTest`` handing out ``shard_orders`` rows
and stopping early with the fixed test's verdict, and ``sequential_order_verdict``."""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as tf
from reference import ref_besag_clifford_null

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

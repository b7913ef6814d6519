"""``suite/audit.py`` (``suite_audit``, ``SuiteAudit``): each row is its test run on the
pair's data (the order test against the rank-test and Fisher references, the adjustment
against the procedures of tests/reference.py); the matched-form p-value inverts the claim
rule and is valid under the null (by simulation); the result protocol; the same result
for any thread count; bad arguments refused naming them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import truescore_fast as tf
from common import write_suite_table
from reference import ref_adjusted_by_procedure, ref_fisher, ref_rank_test
from truescore_fast.suite._tests import claim_p_value
from truescore_fast.suite.audit import SUITE_TESTS
from truescore_fast.suite.data import OrderData, SuiteData, SuitePair

FAST = ("matched_form", "randomization")


@pytest.fixture(scope="module")
def suite():
    return tf.simulate_suite(models=4, benchmarks=2, parents=80, leaks=((1, 0, 0.5),), seed=3)


def test_rows_are_each_test_on_each_pair_and_adjusted_together(suite):
    result = tf.suite_audit(suite, tests=FAST, q=0.1)
    assert result.n_tests == len(result.p_value) == 4 * 2 * 2
    for i in range(result.n_tests):
        pair = suite.pair(result.model[i], result.benchmark[i])
        gap = float(np.mean(pair.matched_public - pair.fresh.mean(axis=1)))
        assert result.estimate[i] == pytest.approx(gap, abs=1e-12)
        if result.test[i] == "randomization":
            test = tf.randomization_test(pair.matched_public, pair.fresh)
            assert result.p_value[i] == test.p_value
            assert (result.low[i], result.high[i]) == (-math.inf, math.inf)
        else:
            audit = tf.matched_form_audit(pair.matched_public, pair.fresh)
            assert (result.low[i], result.high[i]) == (audit.primary.low, audit.primary.high)
    np.testing.assert_allclose(
        result.adjusted_p_value, ref_adjusted_by_procedure(result.p_value, "bh"), rtol=1e-12
    )
    assert np.array_equal(result.flagged, result.adjusted_p_value <= 0.1)
    flagged = {(m, b) for m, b, f in zip(result.model, result.benchmark, result.flagged,
                                          strict=True) if f}  # fmt: skip
    assert ("model-02", "bench-1") in flagged  # the planted leak is found


@pytest.mark.parametrize("fdr", ["by", "holm"])
def test_the_chosen_adjustment_is_applied(suite, fdr):
    result = tf.suite_audit(suite, tests=("randomization",), fdr=fdr)
    want = ref_adjusted_by_procedure(result.p_value, fdr)
    np.testing.assert_allclose(result.adjusted_p_value, want, rtol=1e-12)
    assert result.fdr == fdr and result.q == 0.05


def test_the_matched_form_p_value_is_where_the_claim_rule_starts_to_claim():
    rng = np.random.default_rng(5)
    pub = (rng.random(150) < 0.85).astype(float)
    fresh = (rng.random((150, 2)) < 0.55).astype(float)
    p = claim_p_value(pub, fresh, 0)
    assert 1e-16 < p < 0.05
    assert tf.matched_form_audit(pub, fresh, alpha=p).claim
    assert not tf.matched_form_audit(pub, fresh, alpha=p / 1.01).claim
    assert claim_p_value(fresh[:, 0], fresh[:, :1], 0) == 1.0  # no gap: never a claim


def test_the_matched_form_p_value_in_closed_form_where_the_wald_interval_is_primary():
    """With the Wald interval primary the p-value is 4 Phi(-mean / se) (raised by 1e-9
    relative): the audit claims there and not 1e-6 below it, and it is within the
    bisection's bracket (never above it, within 1e-4 relative of it)."""
    from scipy.special import ndtr

    rng = np.random.default_rng(11)
    for n, lift in ((150, 0.2), (400, 0.1), (1000, 0.05), (60, 0.4)):
        pub = (rng.random(n) < 0.5 + lift).astype(float)
        fresh = (rng.random((n, 2)) < 0.5).astype(float)
        audit = tf.matched_form_audit(pub, fresh, alpha=0.05)
        assert audit.primary.method == "wald"
        gaps = pub - fresh.mean(axis=1)
        se = gaps.std(ddof=1) / math.sqrt(n)
        p = claim_p_value(pub, fresh, 0)
        assert p == pytest.approx(4 * ndtr(-gaps.mean() / se), rel=1e-8)
        assert tf.matched_form_audit(pub, fresh, alpha=p).claim
        assert not tf.matched_form_audit(pub, fresh, alpha=p * (1 - 1e-6)).claim
        bisected = claim_p_value(pub, fresh, 0, closed_form=False)
        assert p <= bisected <= p * (1 + 1e-4)
        # the suite passes its own audit at 0.05 as the probe: the same p, bit for bit
        assert claim_p_value(pub, fresh, 0, probe=audit) == p


def test_the_matched_form_p_value_passes_over_an_empty_interval_near_alpha_1():
    # 17 nonzero gaps (below the guardrail: the betting interval is primary), 12 of +1 and
    # 5 of -1: the audit claims at 0.05, but at alpha near 1 the betting interval is empty
    # (no claim). The p-value is still where the claims begin, not 1.
    pub, fresh = np.zeros(40), np.zeros((40, 1))
    pub[:12], fresh[12:17, 0] = 1.0, 1.0
    assert tf.matched_form_audit(pub, fresh, alpha=0.05).claim
    top = tf.matched_form_audit(pub, fresh, alpha=1 - 1e-9)
    assert top.primary.empty and not top.claim
    p = claim_p_value(pub, fresh, 0)
    assert p < 0.05
    assert tf.matched_form_audit(pub, fresh, alpha=p).claim
    assert not tf.matched_form_audit(pub, fresh, alpha=p / 1.01).claim


def test_the_matched_form_p_value_is_valid_under_the_null():
    # exchangeable forms: P(p <= a) <= a, checked at a = 0.1 within 3 Monte Carlo SE
    rng = np.random.default_rng(9)
    reps, a = 400, 0.1
    hits = 0
    for _ in range(reps):
        p_item = rng.uniform(0.2, 0.9, size=60)
        forms = (rng.random((60, 2)) < p_item[:, None]).astype(float)
        hits += claim_p_value(forms[:, 0], forms[:, 1:], 0) <= a
    rate = hits / reps
    assert rate <= a + 3 * math.sqrt(a * (1 - a) / reps)


def test_the_order_test_pools_shards_by_fisher():
    rng = np.random.default_rng(2)
    shuffled = (rng.normal(size=19), rng.normal(size=39))
    canonical = np.array([2.5, 0.3])
    one = OrderData(("all",), canonical[:1], shuffled[:1])
    two = OrderData(("s1", "s2"), canonical, shuffled)
    pairs = tuple(
        SuitePair(model=m, benchmark="b", parents=(), public=np.zeros(0), order=order)
        for m, order in (("one", one), ("two", two))
    )
    result = tf.suite_audit(SuiteData(pairs), tests=("order",))
    shard_p = [ref_rank_test(c, s)["p_value"] for c, s in zip(canonical, shuffled, strict=True)]
    assert result.test == ("order", "order")
    assert result.p_value[0] == pytest.approx(shard_p[0], rel=1e-15)
    assert result.p_value[1] == pytest.approx(ref_fisher(shard_p)[1], rel=1e-12)
    z = [ref_rank_test(c, s)["z_score"] for c, s in zip(canonical, shuffled, strict=True)]
    assert result.estimate[1] == pytest.approx(np.mean(z), rel=1e-12)
    assert result.n.tolist() == [1, 2]


def test_constat_rows_are_constat_tests_on_the_benchmark_matrix():
    data = tf.simulate_suite(models=7, benchmarks=1, parents=60, leaks=((2, 0, 0.5),), seed=4)
    result = tf.suite_audit(data, tests=("constat",), n_bootstrap=200, seed=8)
    scores = np.array([p.public for p in data.pairs])
    reference = np.array([p.fresh.mean(axis=1) for p in data.pairs])
    from truescore_fast._random import seed_int

    want = tf.constat_tests(scores, reference, n_bootstrap=200, seed=seed_int([8, 0]))
    assert result.model == tuple(p.model for p in data.pairs)
    # ConStat's p-value, at least 1 / B (a p of 0 is below the bootstrap's resolution)
    assert np.array_equal(result.p_value, np.maximum(want.p_value, 1 / 200))
    assert np.array_equal(result.estimate, want.estimate)
    assert np.array_equal(result.low, want.low) and np.array_equal(result.high, want.high)
    small = tf.simulate_suite(models=5, benchmarks=1, parents=30, leaks=(), seed=4)
    with pytest.raises(ValueError, match="ConStat needs 6"):
        tf.suite_audit(small, tests=("constat",))


def test_a_constat_p_value_of_0_enters_the_adjustment_as_1_over_b():
    # a leak of 0.9: every replicate is within ConStat's bound, its p-value 0, below the
    # resolution of 50 replicates
    data = tf.simulate_suite(models=7, benchmarks=1, parents=300, leaks=((0, 0, 0.9),), seed=4)
    scores = np.array([p.public for p in data.pairs])
    reference = np.array([p.fresh.mean(axis=1) for p in data.pairs])
    from truescore_fast._random import seed_int

    want = tf.constat_tests(scores, reference, n_bootstrap=50, seed=seed_int([0, 0]))
    assert want.p_value[0] == 0.0
    result = tf.suite_audit(data, tests=("constat",), n_bootstrap=50)
    assert result.p_value[0] == 1 / 50 and result.adjusted_p_value[0] == 7 / 50


def test_constat_takes_the_fresh_forms_when_few_models_have_reference_rows():
    data = tf.simulate_suite(models=7, benchmarks=1, parents=60, leaks=(), seed=4)
    # two models also have reference rows: too few for ConStat on them
    pairs = tuple(
        SuitePair(**{**p.__dict__, "reference_parents": ("r1", "r2", "r3"),
                     "reference": np.array([1.0, 0.0, 1.0])})
        if p.model in ("model-01", "model-02") else p
        for p in data.pairs
    )  # fmt: skip
    result = tf.suite_audit(SuiteData(pairs), tests=("constat",), n_bootstrap=60, seed=2)
    plain = tf.suite_audit(data, tests=("constat",), n_bootstrap=60, seed=2)
    assert len(result.test) == 7 and result.skipped == ()
    assert np.array_equal(result.p_value, plain.p_value)
    # six with reference rows (six distinct reference scores): ConStat uses those, the
    # model without them left out
    six = tuple(
        SuitePair(**{**p.__dict__, "reference_parents": tuple(f"r{j}" for j in range(6)),
                     "reference": (np.arange(6) <= k).astype(float)})
        if k < 6 else p
        for k, p in enumerate(data.pairs)
    )  # fmt: skip
    result = tf.suite_audit(SuiteData(six), tests=("constat",), n_bootstrap=60, seed=2)
    assert result.model == tuple(p.model for p in data.pairs[:6])
    assert result.n.tolist() == [60] * 6


def test_the_result_protocol(suite):
    result = tf.suite_audit(suite, tests=FAST)
    frame = result.to_frame()
    for column in ("model", "benchmark", "test", "p_value", "adjusted_p_value", "flagged",
                   "estimate", "low", "high"):  # fmt: skip
        assert column in frame.columns
    json.dumps(result.to_dict(), allow_nan=False)
    assert str(result) == result.summary()
    text = result.summary()
    assert "FLAG model-02 on bench-1" in text and "does not mean" in text
    assert repr(result).startswith("SuiteAudit(n_tests=16")
    assert not np.isnan(result.p_value).any()
    assert "<table>" in result._repr_html_()


def test_any_thread_count_gives_the_same_result(suite):
    one = tf.suite_audit(suite, tests=FAST, threads=1)
    two = tf.suite_audit(suite, tests=FAST, threads=2)
    for name in ("p_value", "adjusted_p_value", "estimate", "low", "high"):
        assert np.array_equal(getattr(one, name), getattr(two, name), equal_nan=True)


def test_a_table_path_is_read(tmp_path, suite):
    from truescore_fast.suite.data import read_suite

    path = write_suite_table(tmp_path / "s.csv", suite)
    from_path = tf.suite_audit(path, tests=FAST)
    assert np.array_equal(from_path.p_value, tf.suite_audit(read_suite(path), tests=FAST).p_value)
    assert np.array_equal(from_path.p_value, tf.suite_audit(suite, tests=FAST).p_value)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"q": 0.0}, "q"), ({"q": math.nan}, "q"), ({"fdr": "bonferroni"}, "fdr"),
        ({"tests": ()}, "tests"), ({"tests": ("bogus",)}, "tests"),
        ({"tests": ("order", "order")}, "tests"), ({"n_bootstrap": 0}, "n_bootstrap"),
        ({"n_bootstrap": 2**63}, "n_bootstrap"), ({"alpha": 1.5}, "alpha"),
        ({"reference_models": ["a", "b"]}, "reference_models"),
        ({"reference_models": "model-01"}, "reference_models"), ({"threads": 0}, "n_threads"),
        ({"columns": {"model": "m"}}, "columns"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused(suite, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tf.suite_audit(suite, **kwargs)


def test_a_suite_where_no_test_applies_is_refused(suite):
    with pytest.raises(ValueError, match="no test could run"):
        tf.suite_audit(suite, tests=("order",))
    assert set(SUITE_TESTS) == {"matched_form", "randomization", "order", "constat"}


def test_named_reference_models_are_constat_tests_rows():
    data = tf.simulate_suite(models=7, benchmarks=1, parents=40, leaks=((2, 0, 0.5),), seed=6)
    names = ["model-01", "model-03", "model-04", "model-05", "model-06", "model-07"]
    result = tf.suite_audit(data, tests=("constat",), n_bootstrap=100, reference_models=names)
    scores = np.array([p.public for p in data.pairs])
    reference = np.array([p.fresh.mean(axis=1) for p in data.pairs])
    from truescore_fast._random import seed_int

    want = tf.constat_tests(
        scores,
        reference,
        n_bootstrap=100,
        seed=seed_int([0, 0]),
        reference_models=[0, 2, 3, 4, 5, 6],
    )
    assert np.array_equal(result.p_value, np.maximum(want.p_value, 1 / 100))
    with pytest.raises(ValueError, match=r"reference_models names .*\['nobody'\]"):
        tf.suite_audit(data, tests=("constat",), reference_models=[*names[:5], "nobody"])
    # a reference model without data on one benchmark: ConStat skips that benchmark only
    two = tf.simulate_suite(models=7, benchmarks=2, parents=40, leaks=(), seed=6)
    gap = SuiteData(
        tuple(p for p in two.pairs if (p.model, p.benchmark) != ("model-07", "bench-2"))
    )
    result = tf.suite_audit(gap, tests=("constat",), n_bootstrap=50, reference_models=names)
    assert set(result.benchmark) == {"bench-1"} and len(result.test) == 7
    assert result.skipped == ("constat on bench-2: reference models without data ['model-07']",)


# ------------------------------------------------------------ progress, executors, Ctrl-C


def _same_audit(a, b):
    assert (a.model, a.benchmark, a.test, a.skipped) == (b.model, b.benchmark, b.test, b.skipped)
    for name in ("p_value", "adjusted_p_value", "flagged", "estimate", "low", "high", "n"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.slow
def test_an_executor_gives_the_serial_result_thread_pool_and_dask():
    """Each benchmark is one task: a thread pool and a real Dask cluster of two worker
    processes (arguments and results pickled) give the serial run's rows exactly."""
    from concurrent.futures import ThreadPoolExecutor

    data = tf.simulate_suite(models=7, benchmarks=3, parents=60, leaks=((1, 0, 0.5),), seed=3)
    serial = tf.suite_audit(data, n_bootstrap=100, seed=4, progress=False)
    assert set(serial.test) == {"matched_form", "randomization", "constat"}
    with ThreadPoolExecutor(2) as pool:
        _same_audit(serial, tf.suite_audit(data, n_bootstrap=100, seed=4, executor=pool))
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        remote = tf.suite_audit(data, n_bootstrap=100, seed=4, executor=client.get_executor(),
                                threads=1)  # fmt: skip
    _same_audit(serial, remote)


def test_ctrl_c_cancels_the_benchmarks_not_started():
    """A KeyboardInterrupt while the first benchmark's result is awaited cancels every
    task not yet started, and reaches the caller."""
    from concurrent.futures import Executor, Future

    class Held(Executor):
        def __init__(self):
            self.futures = []

        def submit(self, fn, /, *args, **kwargs):
            future = Future()
            if not self.futures:
                future.set_exception(KeyboardInterrupt())
            self.futures.append(future)
            return future

    data = tf.simulate_suite(models=4, benchmarks=3, parents=40, seed=1)
    held = Held()
    with pytest.raises(KeyboardInterrupt):
        tf.suite_audit(data, tests=FAST, executor=held)
    assert len(held.futures) == 3 and all(f.cancelled() for f in held.futures[1:])


def test_progress_is_counted_in_pairs_on_stderr(capsys, monkeypatch):
    data = tf.simulate_suite(models=4, benchmarks=2, parents=40, leaks=(), seed=1)
    tf.suite_audit(data, tests=FAST, progress=False)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TRUESCORE_FAST_PROGRESS_AFTER", "0")
    tf.suite_audit(data, tests=FAST, progress=True)
    err = capsys.readouterr().err
    assert "suite audit" in err and "8/8" in err


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"progress": "yes"}, "progress"), ({"executor": object()}, "executor")],
)
def test_progress_and_executor_are_checked(kwargs, match):
    data = tf.simulate_suite(models=4, benchmarks=1, parents=40, leaks=(), seed=1)
    with pytest.raises(ValueError, match=match):
        tf.suite_audit(data, tests=FAST, **kwargs)


def test_the_closed_forms_normal_quantile_is_scipys():
    from scipy.special import ndtri
    from truescore_fast.suite._tests import _Z_975

    assert _Z_975 == float(ndtri(0.975))


def test_the_claim_rule_is_the_audits_claim_bit_for_bit():
    """ClaimRule decides a level from the primary interval alone: at every level the same
    claim, and the same emptiness of the primary or tau interval, as the whole audit, for
    betting-primary and Wald-primary data, float arrays and plain lists, two seeds."""
    from truescore_fast.audit.matched_form import ClaimRule

    rng = np.random.default_rng(21)
    levels = (1 - 1e-9, 0.9, 0.5, 0.2, 0.05, 0.01, 1e-3, 1e-6, 1e-12)
    methods = set()
    for n, lift, k in ((17, 0.4, 1), (25, 0.2, 2), (60, 0.1, 1), (300, 0.05, 3), (12, 0.6, 1)):
        pub = (rng.random(n) < 0.4 + lift).astype(float)
        fresh = (rng.random((n, k)) < 0.4).astype(float)
        for seed, (p_in, f_in) in ((0, (pub, fresh)), (7, (pub.tolist(), fresh.tolist()))):
            rule = ClaimRule(p_in, f_in, seed=seed)
            methods.add(rule.audit.primary.method)
            for a in levels:
                audit = tf.matched_form_audit(p_in, f_in, alpha=a, seed=seed)
                assert rule.outcome(a) == (audit.claim, audit.primary.empty or audit.tau.empty)
    assert methods == {"betting", "wald"}


def test_the_closed_forms_erfc_is_scipys_ndtr_within_1e_13():
    """The closed form's 4 Phi(-x) by erfc, without scipy.special: within 1e-13 relative
    of SciPy's ndtr over the p-values a suite reports (x from 0 to 8, 20,001 points)."""
    from scipy.special import ndtr

    x = np.linspace(0.0, 8.0, 20001)
    ours = np.array([2.0 * math.erfc(v / math.sqrt(2.0)) for v in x])
    np.testing.assert_allclose(ours, 4.0 * ndtr(-x), rtol=1e-13, atol=0)

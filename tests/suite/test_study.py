"""``studies/suite.py`` (``simulate_suite``, ``suite_study``): the simulated suites hold
what they say (exchangeable forms, leaks of the planted size), the suite audit's false
discovery rate stays at most q within 3 Monte Carlo SE, power grows with the leak, and
the table is the same for any thread count, executor (threads, processes, Dask) or
resumed checkpoint."""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import truescore_fast as tf
from common import same_table

# Randomization only: fast, and exact, so the FDR check is of the adjustment itself.
SMALL = dict(
    models=6, benchmarks=2, parents=60, leaks=((0, 0, 0.4), (3, 1, 0.15)),
    tests=("randomization",), progress=False,
)  # fmt: skip


def row(table, quantity, test=None, model=None):
    for i in range(len(table)):
        if (
            table["quantity"][i] == quantity
            and (test is None or table["test"][i] == test)
            and (model is None or table["model"][i] == model)
        ):
            return float(table["rate"][i]), float(table["se"][i])
    raise AssertionError((quantity, test, model))


def test_simulated_suites_plant_the_leaks_they_say():
    clean = tf.simulate_suite(models=3, benchmarks=1, parents=20000, leaks=(), seed=1)
    leaky = tf.simulate_suite(models=3, benchmarks=1, parents=20000, leaks=((1, 0, 0.5),), seed=1)
    for c, leak in zip(clean.pairs, leaky.pairs, strict=True):
        assert np.array_equal(c.fresh, leak.fresh)  # the leak moves the public form only
        wrong = c.public == 0
        if leak.model == "model-02":
            share = float(np.mean(leak.public[wrong]))  # incorrect answers turned correct
            assert abs(share - 0.5) < 4 * math.sqrt(0.25 / wrong.sum())
        else:
            assert np.array_equal(c.public, leak.public)
        # without a leak the public form scores as the fresh one, within 4 SE
        gap = c.public - c.fresh[:, 0]
        assert abs(gap.mean()) < 4 * gap.std() / math.sqrt(gap.size)
    assert clean.models == ("model-01", "model-02", "model-03")
    assert [p.model for p in clean.pairs][:2] == ["model-01", "model-02"]


def test_the_false_discovery_rate_stays_below_q():
    q = 0.2  # a large q makes false flags common enough to measure
    table = tf.suite_study(**SMALL, alpha=q, replications=300, seed=2)
    fdr, se = row(table, "fdr")
    assert fdr <= q + 3 * se
    assert fdr > 0  # the check can fail: false flags do happen
    strong, _ = row(table, "power", "randomization", "model-01")
    weak, _ = row(table, "power", "randomization", "model-04")
    assert strong > weak  # the larger leak is found more often
    assert table.meta["q"] == q and table.meta["tests"] == ["randomization"]


def test_the_false_discovery_rate_with_every_test_stays_below_q():
    # the matched-form p-value, the randomization test and ConStat (approximate: a
    # bootstrap) in one family, the leaks shifting ConStat's fits for the other models too
    q = 0.2
    table = tf.suite_study(
        **{**SMALL, "tests": ("matched_form", "randomization", "constat")},
        n_bootstrap=100, alpha=q, replications=100, seed=4, n_threads=1,
    )  # fmt: skip
    fdr, se = row(table, "fdr")
    assert fdr <= q + 3 * se
    assert fdr > 0  # the check can fail: false flags do happen
    assert table.meta["tests"] == ["matched_form", "randomization", "constat"]


@pytest.fixture(scope="module")
def plain():
    options = {**SMALL, "tests": ("matched_form", "randomization"), "replications": 12}
    return options, tf.suite_study(**options, seed=5, n_threads=1)


def test_any_thread_count_or_executor_gives_the_same_table(plain):
    options, table = plain
    assert same_table(tf.suite_study(**options, seed=5, n_threads=2), table)
    with ThreadPoolExecutor(2) as pool:
        assert same_table(tf.suite_study(**options, seed=5, executor=pool), table)
    with ProcessPoolExecutor(2) as pool:
        assert same_table(tf.suite_study(**options, seed=5, executor=pool, n_threads=1), table)


def test_a_dask_cluster_gives_the_same_table(plain):
    distributed = pytest.importorskip("distributed")
    options, table = plain
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        again = tf.suite_study(**options, seed=5, executor=client.get_executor())
    assert same_table(again, table)


def test_a_checkpoint_resumes_to_the_same_table(tmp_path, plain):
    options, table = plain
    path = tmp_path / "suite.ckpt"
    first = tf.suite_study(**options, seed=5, checkpoint=path)
    again = tf.suite_study(**options, seed=5, checkpoint=path)  # read back, nothing rerun
    assert same_table(first, table) and same_table(again, table)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"models": 0}, "models"), ({"parents": 1}, "parents"),
        ({"leaks": ((9, 0, 0.1),)}, "leaks"), ({"leaks": ((0, 0, 1.5),)}, "leaks"),
        ({"leaks": ((0, 0, 0.1), (0, 0, 0.2))}, "leaks"), ({"leaks": "x"}, "leaks"),
        ({"tests": ("order",)}, "tests"), ({"tests": ()}, "tests"), ({"fdr": "x"}, "fdr"),
        ({"replications": 1}, "replications"), ({"alpha": 0}, "alpha"),
        ({"spread": math.inf}, "spread"), ({"n_threads": 0}, "n_threads"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tf.suite_study(**{**SMALL, "replications": 2, **kwargs})


def test_the_study_is_registered_for_calibrate():
    from truescore_fast.studies.registry import STUDIES

    assert STUDIES["suite"].replications == 200


def test_the_study_prints_no_progress_bar_of_its_audits(capsys, monkeypatch):
    # each replication runs a suite audit; only the study's own bar may print
    monkeypatch.setenv("TRUESCORE_FAST_PROGRESS_AFTER", "0")
    tf.suite_study(models=6, benchmarks=1, parents=30, leaks=(), tests=("randomization",),
                   replications=3, seed=1, progress=False)  # fmt: skip
    assert capsys.readouterr().err == ""

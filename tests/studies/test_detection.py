"""The detection study of ``studies/detection.py``: equal to the reference (also with the
betting fallback), the exact test's level under relabelling, planting, form mismatch,
pooling of models, and the kernel's refusal of non-binary labels."""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as tf
from common import bank
from reference import (
    ref_detection_sums,
)
from truescore_fast import studies as cal
from truescore_fast._random import philox_key

BLOCK = cal.REPLICATIONS_PER_TASK


# ---------------------------------------------------------------------------- detection


@pytest.mark.parametrize("relabel, fallback", [(False, "hoeffding"), (True, "bernstein")])
def test_detection_equals_reference(relabel, fallback):
    pub, fr = bank()
    reps = 270
    t = tf.detection_study(
        pub,
        fr,
        sizes=(15, 40),
        deltas=(0.0, 0.1),
        form_gaps=(0.0, 0.05),
        relabel=relabel,
        replications=reps,
        guardrail=20,
        fallback=fallback,
        seed=4,
    )
    key = philox_key(4)
    labels = (pub.sum() + fr.sum()) / (pub.size + fr.size)
    p_pub = labels if relabel else pub.mean()
    p_fr = labels if relabel else fr.mean()
    row = 0
    for n in (15, 40):
        for delta in (0.0, 0.1):
            for gap in (0.0, 0.05):
                q = delta / (1 - p_pub)
                h = gap / p_fr
                want = ref_detection_sums(
                    pub, fr, n, relabel, q, h, 20, fallback, 0.05, key, row, reps, BLOCK
                )
                assert (t["n"][row], t["delta"][row], t["form_gap"][row]) == (n, delta, gap)
                assert round(t["interval_rate"][row] * reps) == want[0]
                assert round(t["test_rate"][row] * reps) == want[1]
                assert t["mean_delta_hat"][row] == pytest.approx(want[2] / reps, abs=1e-14)
                row += 1


def test_detection_with_betting_fallback_equals_reference():
    pub, fr = bank(60, seed=3)
    t = tf.detection_study(pub, fr, sizes=12, deltas=0.2, replications=30, seed=1)
    q = 0.2 / (1 - pub.mean())
    want = ref_detection_sums(
        pub, fr, 12, False, q, 0.0, 30, "betting", 0.05, philox_key(1), 0, 30, BLOCK
    )
    assert round(t["interval_rate"][0] * 30) == want[0]
    assert round(t["test_rate"][0] * 30) == want[1]


def test_exact_test_holds_its_level_under_relabelling():
    # Fig. 10: relabelled real labels, the null holds by construction.
    pub, fr = bank(1000, seed=7)
    t = tf.detection_study(
        pub, fr, sizes=(50, 200, 800), deltas=0.0, relabel=True, replications=3000, seed=21
    )
    assert (t["test_rate"] <= 0.05 + 3 * t["test_se"]).all(), t["test_rate"]
    assert (np.abs(t["mean_delta_hat"]) < 0.01).all()
    # detection_study's docstring: under this super-population null the interval rule's
    # rate exceeds alpha at large sampling fractions, about 0.19 at n = 800 of N = 1,000
    rate, se = t["interval_rate"][2], t["interval_se"][2]
    assert rate > 0.05 + 4 * se
    assert abs(rate - 0.19) < 4 * se, (rate, se)


def test_planting_raises_the_gap_by_delta_in_expectation():
    pub, fr = bank(1000, seed=8)
    base = float(np.mean(pub - fr.mean(axis=1)))
    t = tf.detection_study(
        pub, fr, sizes=200, deltas=(0.0, 0.1), form_gaps=(0.0, 0.05), replications=4000, seed=2
    )
    # sd of Delta-hat at n = 200 is at most ~0.05; over 4000 audits the SE is < 0.001
    want = base + t["delta"] + t["form_gap"]  # fresh harder by g raises the gap by g
    np.testing.assert_allclose(t["mean_delta_hat"], want, atol=0.004)
    # more advantage, more detection, by both rules
    assert t["interval_rate"][2] > t["interval_rate"][0] + 0.1
    assert t["test_rate"][2] > t["test_rate"][0] + 0.1


def test_form_mismatch_makes_the_test_reject():
    # Table 13: no contamination, fresh forms harder: the exact test rejects more often.
    pub, fr = bank(1000, seed=9)
    t = tf.detection_study(
        pub,
        fr,
        sizes=400,
        deltas=0.0,
        form_gaps=(0.0, 0.05, 0.088),
        relabel=True,
        replications=1500,
        seed=3,
    )
    assert t["test_rate"][0] <= 0.05 + 3 * t["test_se"][0]
    assert t["test_rate"][1] > 0.15 and t["test_rate"][2] > t["test_rate"][1]


def test_detection_pools_models_with_equal_weight():
    (p1, f1), (p2, f2) = bank(100, seed=1), bank(100, seed=2)
    both = tf.detection_study(
        np.stack([p1, p2]), np.stack([f1, f2]), sizes=30, deltas=0.1, replications=300, seed=6
    )
    # each model is its own cell (cells 0 and 1 of the same key)
    one = tf.detection_study(p1, f1, sizes=30, deltas=0.1, replications=300, seed=6)
    assert both.meta["models"] == 2
    q2 = 0.1 / (1 - p2.mean())
    want2 = ref_detection_sums(
        p2, f2, 30, False, q2, 0.0, 30, "betting", 0.05, philox_key(6), 1, 300, BLOCK
    )
    rate = (one["interval_rate"][0] + want2[0] / 300) / 2
    assert both["interval_rate"][0] == pytest.approx(rate, abs=1e-15)


@pytest.mark.parametrize("which", ["public", "fresh"])
def test_detection_kernel_rejects_non_binary_labels(which):
    pub, fr = bank(20, seed=1)
    if which == "public":
        pub[3] = 2.0
    else:
        fr[5, 1] = 0.5
    with pytest.raises(ValueError, match=f"{which} must hold binary"):
        tf._core.detection_tasks(
            pub, fr, 5, False, 0.0, 0.0, 30, 0, 0.05, 1, 2, 0, 10, BLOCK, 0, 1
        )

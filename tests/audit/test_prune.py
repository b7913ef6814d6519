"""Audit-Prune: surface features, the cross-validated leakage audit, and pruning."""

from __future__ import annotations

import csv
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from prune_example import load_example
from reference import ref_clopper_pearson, ref_pair_classifier_accuracy
from truescore_fast.audit.prune import (
    FEATURE_NAMES,
    MissingExtraError,
    audit_prune,
    feature_differences,
    leakage_audit,
    surface_features,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def null_benchmark(n, seed):
    rng = np.random.default_rng(seed)
    words = "alpha beta gamma delta may perhaps 42 river stone, lamp. sky".split()

    def answer():
        return " ".join(rng.choice(words, int(rng.integers(2, 10))))

    questions = [f"Is the {rng.choice(words)} {rng.choice(words)} blue?" for _ in range(n)]
    return questions, [answer() for _ in range(n)], [answer() for _ in range(n)]


# --- features --------------------------------------------------------------------------


def test_surface_features_by_hand():
    question = "Why do cats purr at night?"
    answers = [
        "Cats purr, perhaps, because they may be content.",
        "In 2019 (approx.) 3 studies said: no!",
        "",
    ]
    got = surface_features(answers, [question] * 3)
    # 1: 48 chars, 8 words, 3 punctuation (",", ",", "."), 0 digits, hedges perhaps+may,
    #    distinct words {cats,purr,perhaps,because,they,may,be,content}: cats, purr in Q.
    # 2: 37 chars, 7 words, "(", ".", ")", ":", "!" = 5, digits 2019+3 = 5, no hedges
    #    (approx is not approximately), distinct {in,2019,approx,3,studies,said,no}: 0 in Q.
    # 3: empty.
    expected = [
        [48, 8, 3, 0, 2, 2 / 8],
        [37, 7, 5, 5, 0, 0.0],
        [0, 0, 0, 0, 0, 0.0],
    ]
    np.testing.assert_allclose(got, expected)
    assert got.shape == (3, len(FEATURE_NAMES))


def test_feature_differences_are_correct_minus_incorrect():
    q, c, i, _ = load_example()
    d = feature_differences(q[:50], c[:50], i[:50])
    np.testing.assert_array_equal(
        d, surface_features(c[:50], q[:50]) - surface_features(i[:50], q[:50])
    )


# --- the audit -------------------------------------------------------------------------


@pytest.mark.parametrize("n_splits", [2, 5])
def test_audit_matches_direct_implementation(n_splits):
    q, c, i, _ = load_example()
    audit = leakage_audit(q, c, i, n_splits=n_splits, alpha=0.1, seed=3)
    d = feature_differences(q, c, i)
    k = ref_pair_classifier_accuracy(d, n_splits, 3)
    assert audit.n_solved == k and audit.estimate == k / len(q)
    assert (audit.low, audit.high) == pytest.approx(ref_clopper_pearson(k, len(q), 0.9), rel=1e-9)
    # two-sided exact binomial p against 0.5, summed by hand (symmetric case)
    n = len(q)
    tail = sum(math.comb(n, j) for j in range(max(k, n - k), n + 1)) / 2**n
    assert audit.p_value == pytest.approx(min(1.0, 2 * tail), rel=1e-9)


def test_planted_leakage_is_detected_and_attributed_to_length():
    q, c, i, _ = load_example()
    audit = leakage_audit(q, c, i)
    assert audit.leakage_detected and audit.low > 0.5
    top = max(audit.coefficients, key=lambda k: abs(audit.coefficients[k]))
    assert top in ("length_chars", "length_words")
    assert "leakage" in audit.summary()


def test_prune_removes_the_leak_and_mostly_planted_pairs():
    q, c, i, planted = load_example()
    result = audit_prune(q, c, i)
    assert result.before.leakage_detected
    assert result.reached_chance and not result.after.leakage_detected
    assert result.after.low <= 0.5 <= result.after.high
    removed = np.array(result.removed)
    assert planted[removed].mean() > 0.8  # 35% of all pairs are planted
    assert sorted(result.kept + result.removed) == list(range(len(q)))
    assert len(set(result.removed)) == len(result.removed)
    assert result.steps[0].estimate == result.before.estimate
    assert result.steps[-1].removed == () and result.steps[-1].n_remaining == len(result.kept)
    # the final audit is the audit of the kept pairs
    kept = list(result.kept)
    again = leakage_audit([q[k] for k in kept], [c[k] for k in kept], [i[k] for k in kept])
    assert again == result.after


def test_prune_respects_max_fraction():
    q, c, i, _ = load_example()
    result = audit_prune(q, c, i, max_fraction=0.05)
    assert len(result.removed) == 20 and not result.reached_chance
    assert "max_fraction" in result.summary()


def test_clean_benchmark_is_left_alone():
    q, c, i = null_benchmark(200, 5)
    result = audit_prune(q, c, i)
    if not result.before.leakage_detected:
        assert result.removed == () and result.reached_chance


@pytest.mark.parametrize("seed", [2**32, 2**40, 2**70, np.uint64(2**63)])
def test_any_seed_philox_key_accepts_works_here_too(seed):
    # scikit-learn's random_state stops at 2**32 - 1; larger seeds are hashed down for the
    # folds, reproducibly, and recorded as given.
    q, c, i = null_benchmark(60, 2)
    first, again = leakage_audit(q, c, i, seed=seed), leakage_audit(q, c, i, seed=seed)
    assert first.to_dict() == again.to_dict()


def test_example_file_is_reproducible():
    spec = importlib.util.spec_from_file_location("make_prune", EXAMPLES / "make_prune_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = module.make_rows()
    with (EXAMPLES / "prune_example.csv").open(newline="", encoding="utf-8") as handle:
        assert list(csv.DictReader(handle)) == rows


def test_false_detection_rate_on_clean_benchmarks():
    reps = 40
    detected = sum(
        leakage_audit(*null_benchmark(120, 100 + r), seed=r).leakage_detected for r in range(reps)
    )
    assert detected / reps <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / reps)


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((["q"], ["a"], ["b", "c"]), {}, "same length"),
        ((["q", "q"], ["a", 3], ["b", "c"]), {}, r"correct\[1\]"),
        (("q", ["a"], ["b"]), {}, "questions must be a sequence"),
        (([], [], []), {}, "questions must be non-empty"),
        ((["q"] * 4, ["a"] * 4, ["b"] * 4), {"n_splits": 5}, "n_splits"),
        ((["q"] * 4, ["a"] * 4, ["b"] * 4), {"n_splits": 1}, "n_splits"),
        ((["q"] * 4, ["a"] * 4, ["b"] * 4), {"n_splits": 2, "alpha": 0}, "alpha"),
        ((["q"] * 4, ["a"] * 4, ["b"] * 4), {"n_splits": 2, "seed": -1}, "seed"),
    ],
)
def test_audit_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        leakage_audit(*args, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"step": 0.0}, "step"), ({"max_fraction": 1.0}, "max_fraction")]
)
def test_prune_errors(kwargs, match):
    q, c, i = null_benchmark(20, 1)
    with pytest.raises(ValueError, match=match):
        audit_prune(q, c, i, **kwargs)


def test_missing_scikit_learn_gives_a_clear_import_error(monkeypatch):
    for name in list(sys.modules):
        if name == "sklearn" or name.startswith("sklearn."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "sklearn", None)
    q, c, i = null_benchmark(20, 1)
    with pytest.raises(ImportError, match=r"truescore-fast\[prune\]") as info:
        leakage_audit(q, c, i)
    assert isinstance(info.value, MissingExtraError)

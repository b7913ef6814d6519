"""Audit-Prune: surface-feature leakage in binary-choice benchmarks, and its removal.

A binary-choice benchmark asks a model to pick the correct of two answers. If correct
answers differ systematically from incorrect ones in surface form -- longer, more hedged,
echoing the question -- a model can beat chance without the intended reasoning. The audit
measures how well six surface features alone pick the correct answer; pruning removes the
pairs that most reinforce that signal until it is indistinguishable from chance.

The six features of an answer (:data:`FEATURE_NAMES`):

* ``length_chars``: number of characters.
* ``length_words``: number of whitespace-separated words.
* ``punctuation``: number of ASCII punctuation characters (``string.punctuation``).
* ``digits``: number of decimal digit characters.
* ``hedges``: number of hedging words (:data:`HEDGE_WORDS`, case-insensitive,
  whole words).
* ``question_overlap``: share of the answer's distinct words (lower-cased ``[a-z0-9']+``
  tokens) that also occur in the question; 0 for an answer with none.

Each pair contributes ``d = features(correct) - features(incorrect)``. The classifier is a
logistic regression without intercept on the pairs presented both ways round (``d``
labelled "first is correct", ``-d`` labelled "second is correct"), features scaled by their
root mean square, fitted by scikit-learn's Newton-Cholesky solver (L2 penalty, C = 1). A
held-out pair counts as solved when ``w . d > 0`` (exact ties are settled by a seeded
coin). Accuracy is cross-validated over pairs (``n_splits`` folds); the interval is the
Clopper-Pearson interval for the number of solved pairs, compared with chance, 0.5.

Requires scikit-learn: ``pip install 'truescore-fast[prune]'``.

What a result does not mean: accuracy near chance says these six features do not pick the
correct answer -- other surface cues (vocabulary, syntax, formatting) may still do so.
Accuracy above chance says the benchmark can be partly solved from form alone; it does not
say any particular model does so. The binomial interval treats cross-validated
predictions as independent trials, which is approximately, not exactly, true.

Reference:
    F. Namjoo, R. Ogasawara, A. Abdullah et al. (University of Utah, Thoughtworks,
    University of Massachusetts Amherst): surface-feature leakage in binary-choice truth
    benchmarks such as TruthfulQA, and Audit-Prune. Implemented from the paper's abstract;
    its title and venue are not recorded here.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._random import SeedLike, seed_int
from truescore_fast._result import Result, TabularResult
from truescore_fast._validation import (
    MissingExtraError,
    check_alpha,
    check_open_unit,
    check_positive_int,
    optional_module,
)
from truescore_fast.errors import ArgumentError, ArgumentTypeError

__all__ = [
    "FEATURE_NAMES",
    "HEDGE_WORDS",
    "LeakageAudit",
    "MissingExtraError",
    "PruneResult",
    "PruneStep",
    "audit_prune",
    "feature_differences",
    "leakage_audit",
    "surface_features",
]

#: The six surface features of an answer, in column order (the module docstring defines them).
FEATURE_NAMES = (
    "length_chars",
    "length_words",
    "punctuation",
    "digits",
    "hedges",
    "question_overlap",
)

#: The hedging words counted by the ``hedges`` feature (whole words, case-insensitive).
HEDGE_WORDS = frozenset(
    """
    may might could can perhaps possibly probably likely unlikely maybe often sometimes
    usually generally typically mostly some many most several depends depending suggest
    suggests suggested appear appears seem seems apparently uncertain unclear
    approximately roughly about around arguably believed thought reportedly
    """.split()
)

_WORD = re.compile(r"[a-z0-9']+")
_PUNCT = frozenset(string.punctuation)


def _sklearn() -> Any:
    need = {"requirement": "scikit-learn>=1.3", "extra": "prune", "purpose": "Audit-Prune"}
    linear_model = optional_module("sklearn.linear_model", **need)
    model_selection = optional_module("sklearn.model_selection", **need)
    return linear_model.LogisticRegression, model_selection.KFold


def _texts(name: str, values: Sequence[str]) -> list[str]:
    if isinstance(values, str):
        raise ArgumentError(name, f"{name} must be a sequence of strings, not a single string")
    if not isinstance(values, Iterable):
        raise ArgumentTypeError(
            name, f"{name} must be a sequence of strings; got {type(values).__name__}"
        )
    out = list(values)
    for i, v in enumerate(out):
        if not isinstance(v, str):
            raise ArgumentError(name, f"{name}[{i}] must be a string; got {type(v).__name__}")
    if not out:
        raise ArgumentError(name, f"{name} must be non-empty")
    return out


def _features_one(answer: str, question: str) -> list[float]:
    words = _WORD.findall(answer.lower())
    distinct = set(words)
    q_words = set(_WORD.findall(question.lower()))
    overlap = len(distinct & q_words) / len(distinct) if distinct else 0.0
    return [
        float(len(answer)),
        float(len(answer.split())),
        float(sum(ch in _PUNCT for ch in answer)),
        float(sum(ch.isdecimal() for ch in answer)),
        float(sum(w in HEDGE_WORDS for w in words)),
        overlap,
    ]


def surface_features(answers: Sequence[str], questions: Sequence[str]) -> npt.NDArray[np.float64]:
    """The six surface features of each answer, shape ``(n, 6)`` in :data:`FEATURE_NAMES` order.

    Raises:
        ValueError: naming the argument, for empty input, non-string entries or unequal
            lengths.
    """
    a = _texts("answers", answers)
    q = _texts("questions", questions)
    if len(a) != len(q):
        raise ArgumentError(
            "answers",
            f"answers and questions must have the same length; got {len(a)} and {len(q)}",
        )
    return np.array([_features_one(x, y) for x, y in zip(a, q, strict=True)], dtype=np.float64)


def feature_differences(
    questions: Sequence[str], correct: Sequence[str], incorrect: Sequence[str]
) -> npt.NDArray[np.float64]:
    """``surface_features(correct) - surface_features(incorrect)`` per pair, shape ``(n, 6)``."""
    q = _texts("questions", questions)
    c = _texts("correct", correct)
    i = _texts("incorrect", incorrect)
    if not len(q) == len(c) == len(i):
        raise ArgumentError(
            "questions",
            "questions, correct and incorrect must have the same length (one pair per "
            f"question); got {len(q)}, {len(c)} and {len(i)}",
        )
    return surface_features(c, q) - surface_features(i, q)


@dataclass(frozen=True, repr=False)
class LeakageAudit(Result):
    """Cross-validated accuracy of the six-feature classifier at picking the correct answer.

    Attributes:
        estimate: cross-validated accuracy, the share of held-out pairs whose correct
            answer the classifier picks.
        n_pairs: pairs audited; n_solved: of them, picked correctly.
        low, high: Clopper-Pearson interval for the accuracy at level 1 - alpha.
        p_value: two-sided exact binomial p-value against chance (0.5).
        alpha: the interval has level 1 - alpha.
        coefficients: the classifier fitted on all pairs, per feature, in RMS-scaled
            units (positive: the correct answer tends to have more of the feature).

    ``leakage_detected`` is True when the interval excludes 0.5. Accuracy at chance
    clears these six features only (see the module docstring).
    """

    estimate: float
    n_pairs: int
    n_solved: int
    low: float
    high: float
    p_value: float
    alpha: float
    coefficients: dict[str, float]

    _repr_fields = ("estimate", "low", "high", "p_value", "n_pairs")

    @property
    def leakage_detected(self) -> bool:
        """True when the accuracy's interval excludes chance (0.5)."""
        return not self.low <= 0.5 <= self.high

    def summary(self) -> str:
        lo, hi = self.low, self.high
        strongest = max(self.coefficients, key=lambda k: abs(self.coefficients[k]))
        verdict = (
            "leakage: surface features alone pick the correct answer more often than chance"
            if self.leakage_detected
            else "no leakage detected from these six features (others may still leak)"
        )
        return "\n".join(
            [
                f"Surface-feature leakage audit, {self.n_pairs} pairs",
                f"  cross-validated accuracy  {self.estimate:.3f}  "
                f"({1.0 - self.alpha:.0%} interval [{lo:.3f}, {hi:.3f}], "
                f"p {self.p_value:.3g} vs 0.5)",
                f"  strongest feature         {strongest} ({self.coefficients[strongest]:+.3f})",
                f"  {verdict}",
            ]
        )


def _scale(d: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    rms = np.sqrt(np.mean(d * d, axis=0))
    return d / np.where(rms > 0.0, rms, 1.0)


def _fit(model_cls: Any, d: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    x = np.vstack([d, -d])
    y = np.concatenate([np.ones(len(d)), np.zeros(len(d))])
    model = model_cls(fit_intercept=False, C=1.0, solver="newton-cholesky", max_iter=200)
    model.fit(x, y)
    coef: npt.NDArray[np.float64] = model.coef_.ravel().astype(np.float64)
    return coef


def _audit_scaled(
    d: npt.NDArray[np.float64], n_splits: int, alpha: float, seed: int
) -> tuple[LeakageAudit, npt.NDArray[np.float64]]:
    model_cls, kfold = _sklearn()
    n = len(d)
    ds = _scale(d)
    solved = np.zeros(n, dtype=bool)
    coin = np.random.default_rng(seed).random(n) < 0.5
    # scikit-learn takes a random_state below 2**32 only: a larger seed is hashed down.
    folds_seed = seed if seed < 2**32 else int(np.random.SeedSequence(seed).generate_state(1)[0])
    for train, test in kfold(n_splits=n_splits, shuffle=True, random_state=folds_seed).split(ds):
        margin = ds[test] @ _fit(model_cls, ds[train])
        solved[test] = np.where(margin == 0.0, coin[test], margin > 0.0)
    k = int(solved.sum())
    from scipy import stats  # here, not at import: scipy.stats costs ~0.5 s

    test = stats.binomtest(k, n, 0.5)
    ci = test.proportion_ci(confidence_level=1.0 - alpha, method="exact")
    coef = _fit(model_cls, ds)
    audit = LeakageAudit(
        estimate=k / n,
        n_pairs=n,
        n_solved=k,
        low=float(ci.low),
        high=float(ci.high),
        p_value=float(test.pvalue),
        alpha=alpha,
        coefficients={name: float(w) for name, w in zip(FEATURE_NAMES, coef, strict=True)},
    )
    return audit, ds @ coef


def _check_options(n_pairs: int, n_splits: int, alpha: float, seed: SeedLike) -> int:
    """Validate the options; return the seed as the int that seeds the folds and the coin."""
    check_positive_int("n_splits", n_splits, minimum=2)
    if n_splits > n_pairs:
        raise ArgumentError(
            "n_splits", f"n_splits must not exceed the number of pairs ({n_pairs}); got {n_splits}"
        )
    check_alpha(alpha)
    return seed_int(seed)


def leakage_audit(
    questions: Sequence[str],
    correct: Sequence[str],
    incorrect: Sequence[str],
    *,
    n_splits: int = 5,
    alpha: float = 0.05,
    seed: SeedLike = 0,
) -> LeakageAudit:
    """How well do six surface features pick the correct answer of each pair?

    Args:
        questions: the question of each pair.
        correct: the correct answer of each pair.
        incorrect: the incorrect answer of each pair.
        n_splits: cross-validation folds over pairs (at least 2).
        alpha: the accuracy's interval has level 1 - alpha.
        seed: seed of the fold assignment and of tie-breaking: any seed ``philox_key``
            accepts (default 0), used as the int ``seed_int(seed)``.

    Raises:
        MissingExtraError: (an ImportError) scikit-learn is not installed.
        ValueError: naming the argument, for unequal lengths, non-strings, fewer pairs
            than folds, or a bad ``n_splits``, ``alpha`` or ``seed``.
    """
    d = feature_differences(questions, correct, incorrect)
    s = _check_options(len(d), n_splits, alpha, seed)
    return _audit_scaled(d, n_splits, alpha, s)[0]


@dataclass(frozen=True, repr=False)
class PruneStep(Result):
    """One round of pruning: pairs left, their audit's accuracy (``estimate``) and
    interval (``low``, ``high``), and the pairs removed after it."""

    n_remaining: int
    estimate: float
    low: float
    high: float
    removed: tuple[int, ...]

    _repr_fields = ("n_remaining", "estimate", "low", "high")

    def summary(self) -> str:
        return (
            f"{self.n_remaining} pairs: accuracy {self.estimate:.3f} "
            f"[{self.low:.3f}, {self.high:.3f}], then {len(self.removed)} removed"
        )


@dataclass(frozen=True, repr=False)
class PruneResult(TabularResult):
    """The outcome of Audit-Prune.

    Attributes:
        before: the audit of the full benchmark.
        after: the audit of the pairs kept.
        kept: indices of the pairs kept (ascending).
        removed: indices of the pairs removed, in the order they were removed.
        steps: every round: pairs remaining, accuracy, interval, pairs then removed.
        reached_chance: True when ``after``'s interval covers 0.5; False when pruning
            stopped at ``max_fraction`` first.

    Pruning removes the pairs that most reinforce the classifier, so the kept set is
    *selected*: it is balanced on these six features by construction, and its accuracy
    near chance is not independent evidence of a clean benchmark.
    """

    before: LeakageAudit
    after: LeakageAudit
    kept: tuple[int, ...]
    removed: tuple[int, ...]
    steps: tuple[PruneStep, ...]
    reached_chance: bool

    def __repr__(self) -> str:
        return (
            f"PruneResult(before={self.before.estimate:.4g}, after={self.after.estimate:.4g}, "
            f"removed={len(self.removed)}, kept={len(self.kept)}, "
            f"reached_chance={self.reached_chance})"
        )

    def _columns(self) -> dict[str, list[Any]]:
        return {
            "n_remaining": [s.n_remaining for s in self.steps],
            "estimate": [s.estimate for s in self.steps],
            "low": [s.low for s in self.steps],
            "high": [s.high for s in self.steps],
            "removed": [len(s.removed) for s in self.steps],
        }

    def summary(self) -> str:
        n = self.before.n_pairs
        status = (
            "the kept pairs are at chance on these six features"
            if self.reached_chance
            else "stopped at max_fraction before reaching chance"
        )
        return "\n".join(
            [
                f"Audit-Prune: removed {len(self.removed)} of {n} pairs "
                f"({len(self.removed) / n:.1%}) in {len(self.steps) - 1} rounds",
                f"  before  accuracy {self.before.estimate:.3f} "
                f"[{self.before.low:.3f}, {self.before.high:.3f}]",
                f"  after   accuracy {self.after.estimate:.3f} "
                f"[{self.after.low:.3f}, {self.after.high:.3f}]",
                f"  {status}",
            ]
        )


def audit_prune(
    questions: Sequence[str],
    correct: Sequence[str],
    incorrect: Sequence[str],
    *,
    n_splits: int = 5,
    alpha: float = 0.05,
    step: float = 0.02,
    max_fraction: float = 0.5,
    seed: SeedLike = 0,
) -> PruneResult:
    """Remove the most leakage-reinforcing pairs until the audit's interval covers chance.

    Each round audits the remaining pairs; if the accuracy's interval excludes 0.5, the
    classifier is refitted on them and the ``step`` share of remaining pairs (at least one)
    on which it is most confidently right (largest ``w . d``; most confidently wrong when
    accuracy is *below* chance) is removed.

    Args:
        questions, correct, incorrect: the benchmark's pairs, as for :func:`leakage_audit`.
        n_splits, alpha, seed: as for :func:`leakage_audit`.
        step: share of the remaining pairs removed per round, in (0, 1).
        max_fraction: never remove more than this share of all pairs, in (0, 1).

    Raises:
        MissingExtraError: (an ImportError) scikit-learn is not installed.
        ValueError: naming the argument, as for :func:`leakage_audit`, or a ``step`` or
            ``max_fraction`` outside (0, 1).
    """
    d = feature_differences(questions, correct, incorrect)
    s = _check_options(len(d), n_splits, alpha, seed)
    check_open_unit("step", step)
    check_open_unit("max_fraction", max_fraction)
    n = len(d)
    budget = int(np.floor(max_fraction * n))
    alive = np.arange(n)
    removed: list[int] = []
    steps: list[PruneStep] = []
    audit, margin = _audit_scaled(d, n_splits, alpha, s)
    before = audit
    while True:
        room = budget - len(removed)
        if not audit.leakage_detected or room <= 0 or len(alive) - 1 < n_splits:
            steps.append(PruneStep(len(alive), audit.estimate, audit.low, audit.high, ()))
            break
        take = min(room, max(1, int(np.floor(step * len(alive)))))
        direction = 1.0 if audit.estimate > 0.5 else -1.0
        order = np.argsort(-direction * margin, kind="stable")[:take]
        drop = tuple(int(i) for i in alive[order])
        steps.append(PruneStep(len(alive), audit.estimate, audit.low, audit.high, drop))
        removed.extend(drop)
        alive = np.delete(alive, order)
        audit, margin = _audit_scaled(d[alive], n_splits, alpha, s)
    return PruneResult(
        before=before,
        after=audit,
        kept=tuple(int(i) for i in alive),
        removed=tuple(removed),
        steps=tuple(steps),
        reached_chance=not audit.leakage_detected,
    )

"""ConStat's performance-based contamination test.

A model whose score on a benchmark is higher than models of the same skill score there
is suspect. ConStat measures "the same skill" by a reference benchmark (rephrased or
synthetic items of the same task, or a separate benchmark of that skill): across
reference models it fits the relation between the score on the reference benchmark and
the score on the benchmark with a smoothing spline, and compares the model's actual
benchmark score with the fit's prediction at its reference score. The inflation
``actual - predicted`` gets a bootstrap interval and a p-value; items of both benchmarks
and the reference models are resampled.

:func:`constat_test` tests one model against reference models; :func:`constat_tests`
tests every model of a suite against the others in one bootstrap pass (each resample's
item indices shared by every model). Both compute what ConStat's own code computes
(eth-sri/ConStat, ``ConStat.return_functions_test`` with its defaults: sorted scores, the
random-guess point, lambda by GCV on the model points, anchors of weight 1e-8, ties
dropped, short resamples drawn again, its p-value rule): the same law with Philox draws,
checked against an independent reimplementation in ``tests/reference.py``.

Reference:
    J. Dekoninck, M. N. Müller and M. Vechev, "ConStat: Performance-Based Contamination
    Detection in Large Language Models", NeurIPS 2024.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._random import SeedLike, philox_key, seed_int
from truescore_fast._result import Result, TabularResult
from truescore_fast._validation import (
    check_alpha,
    check_index,
    check_n_threads,
    check_positive_int,
    check_sequence,
    check_size,
    check_unit_interval,
    one_line,
    real_scalar,
)

__all__ = ["ConStatTest", "ConStatTests", "MIN_REFERENCE_MODELS", "constat_test", "constat_tests"]

#: The fewest reference models a tested model needs (ConStat's floor: a spline through
#: fewer says little about the relation); each resample keeps at least this many distinct.
MIN_REFERENCE_MODELS: int = _core.CONSTAT_MIN_REFERENCE_MODELS

_CAVEATS = (
    "  Inflation is measured against the reference models: it is not proof of "
    "contamination (a model may simply be better at the benchmark's format than at the "
    "reference's), it assumes the reference models are not contaminated themselves, and it "
    "means something only when the reference benchmark measures the same skill as the "
    "benchmark. A large p does not mean the score is clean."
)


_EXTRAPOLATED = (
    "  The model's reference score lies outside the reference models': the prediction "
    "extrapolates the fit and is less reliable there."
)


@dataclass(frozen=True, repr=False)
class ConStatTest(Result):
    """ConStat's test of one model: its benchmark score against the reference models' fit.

    Attributes:
        estimate: The inflation, the mean of the bootstrap replicates delta*_b (actual
            minus predicted benchmark score, each on its resample).
        low, high: The basic bootstrap interval at level 1 - alpha:
            ``[2 estimate - q(1 - alpha/2), 2 estimate - q(alpha/2)]``.
        p_value: For the null "inflation <= delta" (see :func:`constat_test`).
        actual: The model's benchmark score (the mean of ``scores``).
        predicted: The fit on the full data (every reference model once) at the model's
            reference score, clipped to [0, 1].
        delta: The null's bound on the inflation.
        extrapolated: Whether the model's reference score lies outside the reference
            models' (the fit then extrapolates: the prediction is less reliable, and the
            best or worst model of a suite is often flagged for that reason alone).
        random_guess: The random-guess point's (benchmark, reference) accuracies, or
            ``None`` when there is none.
        sort: Whether the points were sorted coordinate by coordinate (ConStat's default).
        replicates: The n_bootstrap replicates delta*_b (left out of ``to_dict``).

    What it does not mean: a small p says the model scores higher on the benchmark than
    reference models of the same reference score do. That is not proof of contamination:
    the reference models are assumed clean, and the reference benchmark must measure the
    same skill as the benchmark. A large p does not mean the score is clean.
    """

    estimate: float
    low: float
    high: float
    p_value: float
    actual: float
    predicted: float
    delta: float
    alpha: float
    n_bootstrap: int
    n_models: int
    n_items: int
    n_reference_items: int
    random_guess: tuple[float, float] | None
    smoothing: float | None
    sort: bool
    seed: int
    extrapolated: bool
    replicates: npt.NDArray[np.float64]

    _repr_fields = ("estimate", "low", "high", "p_value", "n_models")
    _dict_exclude = ("replicates",)

    def summary(self) -> str:
        level = 100.0 * (1.0 - self.alpha)
        lines = [
            f"ConStat performance-based test: {self.n_models} reference models, "
            f"{self.n_items} benchmark items, {self.n_reference_items} reference items, "
            f"{self.n_bootstrap} bootstraps",
            f"  actual {self.actual:.4f}, predicted from the reference models "
            f"{self.predicted:.4f}",
            f"  inflation {self.estimate:+.4f}, {level:g}% interval "
            f"[{self.low:+.4f}, {self.high:+.4f}], p = {self.p_value:.4g} "
            f"(null: inflation <= {self.delta:g})",
        ]
        if self.p_value == 0.0:
            lines.append(
                f"  p = 0: the lower end of every interval is above the bound, below the "
                f"resolution of {self.n_bootstrap} replicates (1/{self.n_bootstrap}), not a "
                "certainty."
            )
        if self.extrapolated:
            lines.append(_EXTRAPOLATED)
        lines.append(_CAVEATS)
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class ConStatTests(TabularResult):
    """ConStat's test of every model of a suite on one benchmark (one row per model).

    The fields are arrays with one entry per model (row of ``scores``), with the meaning
    :class:`ConStatTest` gives them (``extrapolated`` too); ``replicates`` is (models,
    n_bootstrap) and left out of ``to_dict``. ``reference_models`` is the rows used as
    references (``None``: every other model). :meth:`test` gives one model's :class:`ConStatTest`.
    ``testable`` is False for a model whose reference models leave fewer than 5 distinct
    reference scores (with the random-guess point, after ties are dropped), as when every
    model scores alike: no spline can be fitted, so there is no evidence; such a row has
    p-value 1, estimate 0 with the interval [-1, 1] (every value an inflation can take),
    its own score as prediction and replicates of 0, and ``reason`` says why (``""`` for a
    testable row). Read ``testable`` before the numbers of a row.

    What it does not mean: as :class:`ConStatTest`; and p-values of many models are not
    adjusted for multiplicity here (the suite audit does that).
    """

    estimate: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    p_value: npt.NDArray[np.float64]
    actual: npt.NDArray[np.float64]
    predicted: npt.NDArray[np.float64]
    n_references: npt.NDArray[np.int64]
    extrapolated: npt.NDArray[np.bool_]
    testable: npt.NDArray[np.bool_]
    reason: tuple[str, ...]
    delta: float
    alpha: float
    n_bootstrap: int
    n_items: int
    n_reference_items: int
    reference_models: tuple[int, ...] | None
    random_guess: tuple[float, float] | None
    smoothing: float | None
    sort: bool
    seed: int
    replicates: npt.NDArray[np.float64]

    _repr_fields = ("n_models", "n_bootstrap", "alpha")
    _dict_exclude = ("replicates",)

    @property
    def n_models(self) -> int:
        """Number of models tested (rows)."""
        return int(self.estimate.shape[0])

    def __len__(self) -> int:
        return self.n_models

    def _columns(self) -> dict[str, Any]:
        return {
            "model": np.arange(self.n_models),
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "p_value": self.p_value,
            "actual": self.actual,
            "predicted": self.predicted,
            "n_references": self.n_references,
            "extrapolated": self.extrapolated,
            "testable": self.testable,
        }

    def test(self, index: int) -> ConStatTest:
        """Model ``index``'s result, as :func:`constat_test` gives it (a row that is not
        testable has none: ``ValueError`` with the reason)."""
        i = check_index("index", index, self.n_models, "the number of models")
        if not self.testable[i]:
            raise ValueError(f"index: model {i} is not testable: {self.reason[i]}")
        return ConStatTest(
            estimate=float(self.estimate[i]),
            low=float(self.low[i]),
            high=float(self.high[i]),
            p_value=float(self.p_value[i]),
            actual=float(self.actual[i]),
            predicted=float(self.predicted[i]),
            delta=self.delta,
            alpha=self.alpha,
            n_bootstrap=self.n_bootstrap,
            n_models=int(self.n_references[i]),
            n_items=self.n_items,
            n_reference_items=self.n_reference_items,
            random_guess=self.random_guess,
            smoothing=self.smoothing,
            sort=self.sort,
            seed=self.seed,
            extrapolated=bool(self.extrapolated[i]),
            replicates=self.replicates[i],
        )

    def summary(self) -> str:
        level = 100.0 * (1.0 - self.alpha)
        lines = [
            f"ConStat performance-based tests of {self.n_models} models: {self.n_items} "
            f"benchmark items, {self.n_reference_items} reference items, "
            f"{self.n_bootstrap} bootstraps, null: inflation <= {self.delta:g}",
            f"  model  actual  predicted  inflation  {level:g}% interval  p",
        ]
        for i in range(self.n_models):
            if not self.testable[i]:
                lines.append(
                    f"  {i:5d}  {self.actual[i]:.4f}  not testable, p = 1: {self.reason[i]}"
                )
                continue
            mark = "  (extrapolated)" if self.extrapolated[i] else ""
            lines.append(
                f"  {i:5d}  {self.actual[i]:.4f}  {self.predicted[i]:.4f}  "
                f"{self.estimate[i]:+.4f}  [{self.low[i]:+.4f}, {self.high[i]:+.4f}]  "
                f"{self.p_value[i]:.4g}{mark}"
            )
        if self.extrapolated.any():
            lines.append(
                "  (extrapolated): the model's reference score lies outside its reference "
                "models'; the prediction extrapolates the fit and is less reliable there."
            )
        lines.append(_CAVEATS)
        lines.append("  The p-values are not adjusted for testing several models.")
        return "\n".join(lines)


# ---- Validation ----------------------------------------------------------------------


def _scores(name: str, values: npt.ArrayLike, ndim: int) -> npt.NDArray[np.float64]:
    arr = np.ascontiguousarray(check_unit_interval(name, values))
    if arr.ndim != ndim:
        what = "1-D (one score per item)" if ndim == 1 else "2-D (models x items)"
        raise ValueError(f"{name} must be {what}; got shape {arr.shape}")
    if arr.shape[-1] < 2:
        raise ValueError(
            f"{name} must hold at least 2 items (a bootstrap of one item has no spread); "
            f"got {arr.shape[-1]}"
        )
    return arr


@dataclass(frozen=True)
class _Options:
    delta: float
    alpha: float
    n_bootstrap: int
    random_guess: tuple[float, float] | None
    smoothing: float | None
    sort: bool


def _random_guess(value: Any) -> tuple[float, float] | None:
    """``random_guess`` as (benchmark, reference) accuracies, or None."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(
                "random_guess must be one accuracy or a pair (benchmark, reference); got "
                f"{len(value)} values"
            )
        pair = tuple(real_scalar("random_guess", v, low=0.0, high=1.0) for v in value)
        return pair[0], pair[1]
    g = real_scalar("random_guess", value, low=0.0, high=1.0)
    return g, g


def _options(
    delta: Any, alpha: Any, n_bootstrap: Any, random_guess: Any, smoothing: Any, sort: Any
) -> _Options:
    d = real_scalar("delta", delta, low=-1.0, high=1.0, what=" (a difference of scores)")
    a = float(check_alpha(alpha))
    b = check_positive_int("n_bootstrap", n_bootstrap, minimum=2)
    guess = _random_guess(random_guess)
    lam = None
    if smoothing is not None:
        lam = real_scalar("smoothing", smoothing, low=0.0)
    if not isinstance(sort, (bool, np.bool_)):
        raise TypeError(f"sort must be True or False; got {one_line(sort)}")
    return _Options(d, a, b, guess, lam, bool(sort))


def _reference_rows(reference_models: Any, m: int) -> npt.NDArray[np.int64] | None:
    if reference_models is None:
        if m - 1 < MIN_REFERENCE_MODELS:
            raise ValueError(
                f"scores needs at least {MIN_REFERENCE_MODELS + 1} models (each is tested "
                f"against the {MIN_REFERENCE_MODELS} or more others); got {m}"
            )
        return None
    rows = check_sequence("reference_models", reference_models, "row indices")
    out = []
    for row in rows:
        if isinstance(row, (bool, np.bool_)) or not isinstance(row, (int, np.integer)):
            raise TypeError(f"reference_models must hold row indices (ints); got {row!r}")
        if not 0 <= row < m:
            raise ValueError(f"reference_models holds {row}, not a row of scores (0 to {m - 1})")
        out.append(int(row))
    if len(set(out)) != len(out):
        raise ValueError("reference_models holds a row more than once")
    # Every model is tested, the referenced ones against the others of the set.
    if len(out) - 1 < MIN_REFERENCE_MODELS:
        raise ValueError(
            f"reference_models needs at least {MIN_REFERENCE_MODELS + 1} rows (a referenced "
            f"model is tested against the {MIN_REFERENCE_MODELS} or more others); "
            f"got {len(out)}"
        )
    return np.asarray(sorted(out), dtype=np.int64)


# ---- The engine ----------------------------------------------------------------------


def _summaries(
    replicates: npt.NDArray[np.float64], delta: float, alpha: float
) -> tuple[npt.NDArray[np.float64], ...]:
    """Per row of replicates (finite): estimate, low, high, p-value (see constat_test).

    The quantiles are NumPy's default ("linear") quantiles, computed from each row sorted
    once (:func:`_sorted_quantiles`) instead of one ``np.quantile`` call per row and
    probability: the p-value reads B of them per row."""
    rows, b = replicates.shape
    estimate = np.array([float(row.mean()) for row in replicates])
    ordered = np.sort(replicates, axis=1)
    bounds = _sorted_quantiles(ordered, np.array([1.0 - alpha / 2.0, alpha / 2.0]))
    low = 2.0 * estimate - bounds[:, 0]
    high = 2.0 * estimate - bounds[:, 1]
    # ConStat's p-value: k / B for the smallest k in 0 .. B - 1 with
    # 2 mean - quantile(1 - k / B) > delta, 1 when there is none. ConStat writes >=: a
    # lower end that only touches delta is no evidence against "inflation <= delta" here
    # (with every replicate equal to delta, p is 1, not 0).
    holds = 2.0 * estimate[:, None] - _sorted_quantiles(ordered, 1.0 - np.arange(b) / b) > delta
    p = np.where(holds.any(axis=1), np.argmax(holds, axis=1) / b, 1.0)
    return estimate, low, high, p.astype(np.float64)


def _sorted_quantiles(
    ordered: npt.NDArray[np.float64], q: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """``np.quantile(row, q)`` (method "linear") of every row of ``ordered``, each row
    sorted and finite, bit for bit: NumPy's virtual index (n - 1) q, its neighbours
    clipped to the row, and its two-sided lerp (a + (b - a) t, or b - (b - a)(1 - t) from
    t = 1/2 on). Tested against ``np.quantile`` itself."""
    n = ordered.shape[1]
    virtual = (n - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = -1
    following[above] = -1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    t = virtual - previous
    a = ordered[:, previous.astype(np.intp)]
    diff = ordered[:, following.astype(np.intp)] - a
    out = a + diff * t
    upper = np.broadcast_to(t >= 0.5, out.shape)
    out[upper] = (ordered[:, following.astype(np.intp)] - diff * (1 - t))[upper]
    return out


def _extrapolated(
    means: npt.NDArray[np.float64], references: npt.NDArray[np.int64], tested: int
) -> bool:
    """Whether row ``tested``'s mean reference score (``means``, one per row) lies outside
    the means of its references (the rows of ``references`` but itself)."""
    others = means[references[references != tested]]
    return bool(means[tested] < others.min() or means[tested] > others.max())


_REASONS = {
    1: (
        f"fewer than {MIN_REFERENCE_MODELS} distinct reference scores among its reference "
        "models and the random-guess point (ties dropped): no spline can be fitted, no "
        "evidence (p = 1)"
    ),
    2: (
        f"a bootstrap resample kept fewer than {MIN_REFERENCE_MODELS} distinct reference "
        f"scores in {_core.CONSTAT_MAX_ATTEMPTS} successive draws (reference scores that "
        "almost all tie): no evidence either way (p = 1)"
    ),
}


def _tests(
    scores: npt.NDArray[np.float64],
    reference: npt.NDArray[np.float64],
    references: npt.NDArray[np.int64] | None,
    tested: npt.NDArray[np.int64],
    options: _Options,
    seed: SeedLike,
    n_threads: int | None,
) -> ConStatTests:
    """The engine on checked arguments: the rows ``tested``, each against ``references``
    (``None``: every row) less itself."""
    m = scores.shape[0]
    refs = np.arange(m, dtype=np.int64) if references is None else references
    check_size("n_bootstrap", float(tested.shape[0]) * options.n_bootstrap, 8.0)
    used = seed_int(seed)
    key = philox_key(used)
    guess = (-1.0, -1.0) if options.random_guess is None else options.random_guess
    reps, actual, predicted, status = _core.constat_bootstrap(
        scores,
        reference,
        refs,
        tested,
        options.n_bootstrap,
        guess[0],
        guess[1],
        -1.0 if options.smoothing is None else options.smoothing,
        options.sort,
        key[0],
        key[1],
        n_threads=n_threads,
    )
    # A row that is not testable holds no evidence: inflation 0 in [-1, 1] (every value a
    # difference of scores can take), p = 1, its prediction its own score; never NaN.
    lost = status != 0
    reps[lost] = 0.0
    predicted[lost] = actual[lost]
    estimate, low, high, p = _summaries(reps, options.delta, options.alpha)
    estimate[lost], low[lost], high[lost], p[lost] = 0.0, -1.0, 1.0, 1.0
    members = set(refs.tolist())
    means = reference.mean(axis=1)
    return ConStatTests(
        estimate=estimate,
        low=low,
        high=high,
        p_value=p,
        actual=actual,
        predicted=predicted,
        n_references=np.array([len(members - {int(i)}) for i in tested], dtype=np.int64),
        extrapolated=np.array([_extrapolated(means, refs, int(i)) for i in tested]),
        testable=status == 0,
        reason=tuple(_REASONS.get(int(v), "") for v in status),
        delta=options.delta,
        alpha=options.alpha,
        n_bootstrap=options.n_bootstrap,
        n_items=scores.shape[1],
        n_reference_items=reference.shape[1],
        reference_models=None if references is None else tuple(int(v) for v in refs),
        random_guess=options.random_guess,
        smoothing=options.smoothing,
        sort=options.sort,
        seed=used,
        replicates=reps,
    )


def constat_tests(
    scores: npt.ArrayLike,
    reference_scores: npt.ArrayLike,
    *,
    delta: float = 0.0,
    alpha: float = 0.05,
    n_bootstrap: int = 1000,
    random_guess: float | tuple[float, float] | None = 0.0,
    smoothing: float | None = None,
    sort: bool = True,
    reference_models: Sequence[int] | None = None,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> ConStatTests:
    """ConStat's test of every model of a suite on one benchmark, in one bootstrap pass.

    Args:
        scores: (models, items): each model's per-item scores on the benchmark, in
            [0, 1]; columns are the same items for every model.
        reference_scores: (models, reference items): the same models on the reference
            benchmark.
        reference_models: Rows used as reference models for every model; ``None``: each
            model against all the others. A model is never its own reference: a model of
            the set is tested against the others of it, so the set needs at least 6 rows
            (every model gets at least 5 references).
        delta, alpha, n_bootstrap, random_guess, smoothing, sort, seed, n_threads: As
            :func:`constat_test`.

    Each resample's item indices (benchmark and reference benchmark) are shared by every
    model; a model's reference models are resampled as :func:`constat_test` resamples
    them. With fewer than 30 references per model, row i equals
    ``constat_test(scores[i], reference_scores[i], scores[refs], reference_scores[refs],
    ...)`` with the same options and seed, bit for bit, where ``refs`` is model i's
    references in increasing row order. From 30 references on (a leaderboard, with
    ``smoothing`` None), two things are shared between the models. The reference draws:
    each resample draws candidate draws of ``reference_models`` (all the rows by default)
    as a model outside them draws its references, and each model takes the first
    candidate that holds at least 5 distinct models and (for a model of the set) not
    itself; by rejection, each model's draws have exactly the law ConStat gives them, and
    the models taking one candidate share one fit (200 models take 9 to 19 candidates,
    12.75 on average). And the GCV search, most of the cost of a fit: each resample's
    lambda is chosen once, on the first candidate's points, and every model is fitted at
    it. Leaving one model of 30 or more out moves that lambda by little: the rows equal
    :func:`constat_test` within bootstrap error, not bit for bit (tested against the
    reference's per-row GCV on its own draws). The rows' bootstrap noise is correlated by
    this (as by the shared items): each row's p-value keeps its meaning; an FDR step valid
    under any dependence is ``fdr="by"`` of :func:`suite_audit`. With ``smoothing`` given
    there is no search and no sharing of draws: the rows are :func:`constat_test`'s.

    Raises:
        ValueError, TypeError: as :func:`constat_test` (but a model that is not testable
            is a row with ``testable`` False, not an error); fewer than 6 models without
            ``reference_models``; a ``reference_models`` row out of range or repeated.
    """
    options = _options(delta, alpha, n_bootstrap, random_guess, smoothing, sort)
    threads = check_n_threads(n_threads)
    s = _scores("scores", scores, 2)
    r = _scores("reference_scores", reference_scores, 2)
    if r.shape[0] != s.shape[0]:
        raise ValueError(
            f"reference_scores must have one row per model (as scores: {s.shape[0]}); "
            f"got {r.shape[0]}"
        )
    refs = _reference_rows(reference_models, s.shape[0])
    tested = np.arange(s.shape[0], dtype=np.int64)
    return _tests(s, r, refs, tested, options, seed, threads)


def constat_test(
    scores: npt.ArrayLike,
    reference_scores: npt.ArrayLike,
    models_scores: npt.ArrayLike,
    models_reference_scores: npt.ArrayLike,
    *,
    delta: float = 0.0,
    alpha: float = 0.05,
    n_bootstrap: int = 1000,
    random_guess: float | tuple[float, float] | None = 0.0,
    smoothing: float | None = None,
    sort: bool = True,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> ConStatTest:
    """ConStat's performance-based test: is the model's benchmark score inflated?

    Args:
        scores: The tested model's per-item scores on the benchmark, in [0, 1] (0/1
            correctness or partial credit).
        reference_scores: Its per-item scores on the reference benchmark (rephrased or
            synthetic items of the same task, or a separate benchmark of the same skill).
        models_scores: (k, items), k >= 5: the reference models on the benchmark, the same
            items in the same columns.
        models_reference_scores: (k, reference items): the reference models on the
            reference benchmark.
        delta: The null is "inflation <= delta" (default 0).
        alpha: The interval has level 1 - alpha.
        n_bootstrap: Bootstrap resamples B (at least 2).
        random_guess: The accuracy of a model that guesses at random: one number for
            both benchmarks, or a pair (benchmark, reference benchmark); ``None``: no such
            point. Default 0, ConStat's default (``random_performance=(0, 0)``): the point
            (0, 0). For k-way multiple choice pass 1/k (ConStat's scripts use 0.25 for
            four options). The point joins every fit with the weight of one model, drawn
            in each resample with its sampling noise (normal, the binomial standard error
            at the benchmark's and the reference's numbers of items), as ConStat adds it.
        smoothing: The spline's lambda, as ``scipy.interpolate.make_smoothing_spline``'s
            ``lam`` (it minimises sum w_i (y_i - f(x_i))^2 + lambda integral f''^2);
            ``None`` (default): chosen per fit by generalized cross-validation on the
            points with unit weights, as ConStat does.
        sort: True (default, ConStat's ``sort=True``): the reference scores and the
            benchmark scores of the points are sorted each on its own, a monotone quantile
            map. False keeps each model's (reference, benchmark) pair: ConStat's ablation,
            which its authors showed to fail when the reference scores carry noise. Measured
            here (docs/guide/suite-audit.md, "Three nulls"): on the errors-in-variables
            null the best model of a clean suite is flagged at alpha = 0.05 about twice as
            often with ``sort=False`` as with the default. Use it only to reproduce that.
        seed: Any seed :func:`~truescore_fast._random.philox_key` accepts (default 0);
            the result records the int it used.
        n_threads: Threads (``None``: every usable CPU); the result is the same for any.

    The algorithm is that of ConStat's reference code (eth-sri/ConStat,
    ``ConStat.return_functions_test``), with Philox draws (the same law, not the same
    draws). Per resample b = 0 .. B - 1:

    1. the benchmark's items are resampled with replacement (one index vector for the
       tested model and every reference model), then the reference benchmark's items
       likewise; the random-guess point gets its noise (two normal draws); then the k
       reference models are resampled with replacement, drawn again until at least 5 are
       distinct (with exactly 5 reference models, as in ConStat, they are all kept);
    2. the points are the random-guess point and each drawn reference model's (x, y) =
       (its resampled reference score, its resampled benchmark score). x and y are sorted
       (each on its own with ``sort``), and a point whose x equals the next one's is
       dropped (ConStat's tie rule: a model drawn twice counts once). With fewer than 5
       points left the whole resample is drawn again (at most 1000 times; see
       ``testable``);
    3. lambda is ``smoothing`` or chosen by generalized cross-validation on those points
       with unit weights (SciPy's bounded Brent search over (0, number of points), xatol
       1e-5, as ``make_smoothing_spline``); then the anchors (0, 0) and (1, 1) of weight
       1e-8 are added where the points do not reach 0 or 1, and the natural cubic
       smoothing spline is refitted at that lambda (Reinsch's algorithm);
    4. the fit's value at the tested model's resampled reference score, clipped to
       [0, 1], is subtracted from its resampled benchmark score: delta*_b.

    The estimate is the mean of the delta*_b; the interval is the basic bootstrap one,
    ``[2 mean - q(1 - alpha/2), 2 mean - q(alpha/2)]``, where q(u) is NumPy's default
    (linear) quantile of the B replicates. The p-value for the null "inflation <= delta"
    is ConStat's: k / B for the smallest k in 0 .. B - 1 with
    ``2 mean - q(1 - k / B) > delta``, and 1 when there is none. ConStat writes ``>=``;
    the two differ only where the lower end ties the bound, and there a lower end that
    merely touches delta is no evidence against the null: when every replicate is delta,
    p is 1 here where ConStat's rule gives 0. A ``smoothing`` above 1e200 is taken as
    1e200: the fit is its limit, the least-squares line, long before. ``predicted`` is the
    same fit on the full data (every reference model once, the random-guess point without
    noise).

    Not testable: when the reference models' full-data reference scores, with the
    random-guess point, have fewer than 5 distinct values (every model alike, or almost),
    no spline can be fitted; ConStat's code then loops for ever. Here :func:`constat_test`
    raises ``ValueError`` naming ``models_reference_scores``, and :func:`constat_tests`
    marks the row not testable (``testable`` False, ``reason``; p = 1, estimate 0, interval
    [-1, 1]). Never a flag.

    What it does not mean: a small p says the model scores higher on the benchmark than
    the reference models' fit predicts from its reference score. That is not proof of
    contamination: the reference models are assumed not contaminated, the reference
    benchmark must measure the same skill as the benchmark, and the fit extrapolates
    poorly to a model better (or worse) than every reference model. A large p does not
    mean the score is clean.

    Raises:
        ValueError: shapes that do not match, fewer than 5 reference models, fewer than 2
            items, reference models with fewer than 5 distinct reference scores (above),
            scores outside [0, 1] or not finite, alpha not in (0, 1), delta outside [-1, 1],
            n_bootstrap below 2 or beyond 2**63 - 1, a negative or non-finite smoothing.
        TypeError: non-numeric scores, options of the wrong type, an unusable seed.
    """
    options = _options(delta, alpha, n_bootstrap, random_guess, smoothing, sort)
    threads = check_n_threads(n_threads)
    s = _scores("scores", scores, 1)
    r = _scores("reference_scores", reference_scores, 1)
    ms = _scores("models_scores", models_scores, 2)
    mr = _scores("models_reference_scores", models_reference_scores, 2)
    if ms.shape[1] != s.shape[0]:
        raise ValueError(
            f"models_scores must have one column per item of scores ({s.shape[0]}); "
            f"got {ms.shape[1]}"
        )
    if mr.shape[1] != r.shape[0]:
        raise ValueError(
            f"models_reference_scores must have one column per item of reference_scores "
            f"({r.shape[0]}); got {mr.shape[1]}"
        )
    if mr.shape[0] != ms.shape[0]:
        raise ValueError(
            f"models_reference_scores must have one row per reference model (as "
            f"models_scores: {ms.shape[0]}); got {mr.shape[0]}"
        )
    k = ms.shape[0]
    if k < MIN_REFERENCE_MODELS:
        raise ValueError(
            f"models_scores needs at least {MIN_REFERENCE_MODELS} reference models; got {k}"
        )
    all_scores = np.ascontiguousarray(np.vstack([s[None, :], ms]))
    all_reference = np.ascontiguousarray(np.vstack([r[None, :], mr]))
    refs = np.arange(1, k + 1, dtype=np.int64)
    tested = np.zeros(1, dtype=np.int64)
    result = _tests(all_scores, all_reference, refs, tested, options, seed, threads)
    if not result.testable[0]:
        raise ValueError(f"models_reference_scores: the model is not testable: {result.reason[0]}")
    return result.test(0)

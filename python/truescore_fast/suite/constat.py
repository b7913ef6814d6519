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
item indices shared by every model).

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
    random_guess: float | None
    smoothing: float | None
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
                f"  p = 0: every replicate is within the bound, below the resolution of "
                f"{self.n_bootstrap} replicates (1/{self.n_bootstrap - 1}), not a certainty."
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
    delta: float
    alpha: float
    n_bootstrap: int
    n_items: int
    n_reference_items: int
    reference_models: tuple[int, ...] | None
    random_guess: float | None
    smoothing: float | None
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
        }

    def test(self, index: int) -> ConStatTest:
        """Model ``index``'s result, as :func:`constat_test` gives it."""
        i = check_index("index", index, self.n_models, "the number of models")
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
    if arr.shape[-1] < 1:
        raise ValueError(f"{name} must hold at least one item")
    return arr


def _options(
    delta: Any, alpha: Any, n_bootstrap: Any, random_guess: Any, smoothing: Any
) -> tuple[float, float, int, float | None, float | None]:
    d = real_scalar("delta", delta, low=-1.0, high=1.0, what=" (a difference of scores)")
    a = float(check_alpha(alpha))
    b = check_positive_int("n_bootstrap", n_bootstrap, minimum=2)
    guess = None
    if random_guess is not None:
        guess = real_scalar("random_guess", random_guess, low=0.0, high=1.0)
    lam = None
    if smoothing is not None:
        lam = real_scalar("smoothing", smoothing, low=0.0)
    return d, a, b, guess, lam


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
    """Per row of replicates: estimate, low, high, p-value (see constat_test)."""
    estimate = replicates.mean(axis=1)
    q = np.quantile(replicates, [1.0 - alpha / 2.0, alpha / 2.0], axis=1)
    low, high = 2.0 * estimate - q[0], 2.0 * estimate - q[1]
    p = np.array(
        [_p_value(row, 2.0 * e - delta) for row, e in zip(replicates, estimate, strict=True)]
    )
    return estimate, low, high, p


def _p_value(row: npt.NDArray[np.float64], bound: float) -> float:
    """The smallest p with quantile_{1-p}(row) < bound (NumPy's linear quantile): a lower
    end that only touches delta is no evidence against "inflation <= delta" (with every
    replicate equal to delta, as when all models score the same, p is 1, not 0)."""
    s = np.sort(row)
    b = s.shape[0]
    j = int(np.searchsorted(s, bound, side="left")) - 1  # last position with s[j] < bound
    if j < 0:
        return 1.0
    if j == b - 1:
        return 0.0
    position = j + (bound - s[j]) / (s[j + 1] - s[j])
    return float(min(1.0, max(0.0, 1.0 - position / (b - 1))))


def _extrapolated(
    reference: npt.NDArray[np.float64], references: npt.NDArray[np.int64], tested: int
) -> bool:
    """Whether row ``tested``'s mean lies outside the means of its references (the rows of
    ``references`` but itself)."""
    means = reference.mean(axis=1)
    others = means[references[references != tested]]
    return bool(means[tested] < others.min() or means[tested] > others.max())


def _tests(
    scores: npt.NDArray[np.float64],
    reference: npt.NDArray[np.float64],
    references: npt.NDArray[np.int64] | None,
    tested: npt.NDArray[np.int64],
    options: tuple[float, float, int, float | None, float | None],
    seed: SeedLike,
    n_threads: int | None,
) -> ConStatTests:
    """The engine on checked arguments: the rows ``tested``, each against ``references``
    (``None``: every row) less itself; ``options`` as :func:`_options` returns them."""
    delta, alpha, n_bootstrap, random_guess, smoothing = options
    m = scores.shape[0]
    refs = np.arange(m, dtype=np.int64) if references is None else references
    check_size("n_bootstrap", float(tested.shape[0]) * n_bootstrap, 8.0)
    used = seed_int(seed)
    key = philox_key(used)
    reps, actual, predicted = _core.constat_bootstrap(
        scores,
        reference,
        refs,
        tested,
        n_bootstrap,
        -1.0 if random_guess is None else random_guess,
        -1.0 if smoothing is None else smoothing,
        key[0],
        key[1],
        n_threads=n_threads,
    )
    estimate, low, high, p = _summaries(reps, delta, alpha)
    members = set(refs.tolist())
    return ConStatTests(
        estimate=estimate,
        low=low,
        high=high,
        p_value=p,
        actual=actual,
        predicted=predicted,
        n_references=np.array([len(members - {int(i)}) for i in tested], dtype=np.int64),
        extrapolated=np.array([_extrapolated(reference, refs, int(i)) for i in tested]),
        delta=delta,
        alpha=alpha,
        n_bootstrap=n_bootstrap,
        n_items=scores.shape[1],
        n_reference_items=reference.shape[1],
        reference_models=None if references is None else tuple(int(v) for v in refs),
        random_guess=random_guess,
        smoothing=smoothing,
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
    random_guess: float | None = None,
    smoothing: float | None = None,
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
        delta, alpha, n_bootstrap, random_guess, smoothing, seed, n_threads: As
            :func:`constat_test`.

    Each resample's item indices (benchmark and reference benchmark) are shared by every
    model; a model's reference models are resampled as :func:`constat_test` resamples
    them. Row i equals ``constat_test(scores[i], reference_scores[i], scores[refs],
    reference_scores[refs], ...)`` with the same options and seed, bit for bit, where
    ``refs`` is model i's references in increasing row order.

    Raises:
        ValueError, TypeError: as :func:`constat_test`; fewer than 6 models without
            ``reference_models``; a ``reference_models`` row out of range or repeated.
    """
    options = _options(delta, alpha, n_bootstrap, random_guess, smoothing)
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
    random_guess: float | None = None,
    smoothing: float | None = None,
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
        random_guess: The score of random guessing on both benchmarks, if any: the point
            (random_guess, random_guess) joins the fit with the weight of one model.
        smoothing: The spline's lambda, as ``scipy.interpolate.make_smoothing_spline``'s
            ``lam`` (it minimises sum w_i (y_i - f(x_i))^2 + lambda integral f''^2);
            ``None``: chosen per fit by generalized cross-validation, as that function does
            with ``lam=None``.
        seed: Any seed :func:`~truescore_fast._random.philox_key` accepts (default 0);
            the result records the int it used.
        n_threads: Threads (``None``: every usable CPU); the result is the same for any.

    The algorithm, per resample b = 0 .. B - 1 (Philox stream b of the seed's key):

    1. the benchmark's items are resampled with replacement (one index vector for the
       tested model and every reference model), then the reference benchmark's items
       likewise; then the k reference models are resampled with replacement, drawn
       again (from the same stream, continuing) until at least 5 are distinct;
    2. each drawn reference model gives a point (x, y) = (its resampled reference
       score, its resampled benchmark score), a model drawn twice being a point of
       weight 2; with the anchors (0, 0) and (1, 1) of weight 1e-3 (negligible, so the
       fit spans [0, 1]) and the random-guess point if given. Points of equal x are
       merged into one: the weighted mean of their y with the sum of their weights (the
       fit's loss is the same; a smoothing spline needs distinct abscissas, and
       generalized cross-validation then sees the merged points);
    3. a natural cubic smoothing spline is fitted through the sorted points (Reinsch's
       algorithm; lambda as ``smoothing``, or by generalized cross-validation over
       (0, number of points) with SciPy's bounded Brent search, xatol 1e-5, as
       ``make_smoothing_spline`` does). With fewer than 5 distinct abscissas (ties) the
       fit is the weighted least-squares line (the spline's limit as lambda grows);
    4. the prediction at the tested model's resampled reference score, clipped to
       [0, 1], is subtracted from its resampled benchmark score: delta*_b.

    The estimate is the mean of the delta*_b; the interval is the basic bootstrap one,
    ``[2 mean - q(1 - alpha/2), 2 mean - q(alpha/2)]``, where q(u) is NumPy's default
    (linear) quantile of the B replicates: with s_0 <= ... <= s_{B-1} sorted,
    ``q(u) = s_j + f (s_{j+1} - s_j)`` at position ``u (B - 1) = j + f``. The p-value for
    the null "inflation <= delta" inverts that interval's lower end: it is the smallest p
    in [0, 1] with ``2 mean - q(1 - p) > delta``, found exactly on the piecewise-linear
    q (1 when even q(0) = s_0 is at least ``2 mean - delta``; 0 when s_{B-1} is below it,
    below the resolution of B replicates). So p < alpha exactly when the lower end of the
    1 - 2 alpha interval is above ``delta``. (ConStat writes ``>=``; the two differ only
    where replicates tie at the bound, and there a lower end that merely touches delta is
    not evidence against the null: when every replicate is delta, as when all models
    score alike, p is 1, not 0.) A ``smoothing`` above 1e200 is taken as 1e200: the fit is
    its limit, the least-squares line, long before.

    What it does not mean: a small p says the model scores higher on the benchmark than
    the reference models' fit predicts from its reference score. That is not proof of
    contamination: the reference models are assumed not contaminated, the reference
    benchmark must measure the same skill as the benchmark, and the fit extrapolates
    poorly to a model better (or worse) than every reference model. A large p does not
    mean the score is clean.

    Raises:
        ValueError: shapes that do not match, fewer than 5 reference models, scores
            outside [0, 1] or not finite, alpha not in (0, 1), delta outside [-1, 1],
            n_bootstrap below 2 or beyond 2**63 - 1, a negative or non-finite smoothing.
        TypeError: non-numeric scores, options of the wrong type, an unusable seed.
    """
    options = _options(delta, alpha, n_bootstrap, random_guess, smoothing)
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
    return _tests(all_scores, all_reference, refs, tested, options, seed, threads).test(0)

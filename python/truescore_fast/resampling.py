"""Resampling for audits and positive controls: permutation nulls, finite-population
bootstraps, difference in differences, seed-paired contrasts.

* :func:`pattern_permutation_test` -- on how many parents do at least k of M models
  show a pattern (the CleanScore paper's Table 8), against a null that permutes the
  parents independently for every model.
* :func:`finite_population_bootstrap` -- the Rao-Wu rescaling bootstrap (default) and
  the Booth-Butler-Hall pseudo-population bootstrap of a (stratified) mean from a sample
  drawn without replacement.
* :func:`did_estimate` -- difference in differences over parents (exposed/unexposed x
  before/after x public/fresh) with percentile and BCa bootstrap intervals, per model
  and pooled (Tables 14-16, 21).
* :func:`seed_contrast` -- a seed-paired contrast: mean, t-interval, seeds positive and
  the exact two-sided sign-flip p (Table 1).

Randomness: every random function takes ``seed`` (an int, a ``SeedSequence`` or a
``Generator``), turned into one Philox4x64-10 key by :func:`truescore_fast._random.philox_key`.
Replicate (or permutation) b draws from its own stream, counter ``[0, 0, b, 0]``, so a
result is bit-identical for any ``n_threads`` and can be reproduced draw for draw with
``numpy.random.Philox`` (the order of draws is documented in
``src/cpp/truescore/resampling.hpp``). The compiled kernels release the GIL and keep
O(n) memory per thread: B replicates cost B numbers, never a B x n matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import stats

from truescore_fast import _core
from truescore_fast._intervals import bca_interval, percentile_interval
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_gaps,
    check_n_threads,
    check_positive_int,
    check_unit_interval,
    finite_1d,
    float_array,
)

__all__ = [
    "DID_COLUMNS",
    "BootstrapResult",
    "DiDResult",
    "PatternTest",
    "SeedContrast",
    "did_estimate",
    "finite_population_bootstrap",
    "pattern_permutation_test",
    "seed_contrast",
]

Pattern = str | Callable[[npt.NDArray[np.float64]], Any] | npt.ArrayLike


# ---------------------------------------------------------------------------------------
# Pattern permutation test
# ---------------------------------------------------------------------------------------

_NAMED_PATTERNS = {
    "harder": "fresh forms harder: public correct more often than fresh (gap > 0)",
    "easier": "fresh forms easier: fresh correct more often than public (gap < 0)",
    "nonzero": "any form difference (gap != 0)",
}


@dataclass(frozen=True)
class PatternTest:
    """Parents on which at least ``min_models`` of the models show a pattern, against a
    permutation null.

    Attributes:
        observed: Number of parents where at least ``min_models`` models show the pattern.
        null_mean, null_sd: Mean and standard deviation of the statistic over the draws.
        p_value: (1 + #{draws with statistic >= observed}) / (draws + 1): one-sided, large
            observed values are evidence of a shared pattern.
        null_histogram: ``null_histogram[t]`` draws had statistic t (t = 0..n_parents).
        parents: Indices of the parents counted in ``observed``.
        per_model: How many parents show the pattern, per model (the permutation keeps
            these fixed).

    What it does not mean: a small p says the models' patterns pile up on the same parents
    more than chance placement would; that is what shared exposure would do, but so would
    parents whose fresh forms are simply worse written than their public one. A large p
    says nothing about any single model.
    """

    observed: int
    null_mean: float
    null_sd: float
    p_value: float
    pattern: str
    min_models: int
    n_models: int
    n_parents: int
    draws: int
    null_histogram: npt.NDArray[np.int64]
    parents: npt.NDArray[np.int64]
    per_model: npt.NDArray[np.int64]

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for key in ("null_histogram", "parents", "per_model"):
            out[key] = out[key].tolist()
        return out

    def summary(self) -> str:
        return "\n".join(
            [
                f"Pattern permutation test ({self.pattern}): parents where >= {self.min_models} "
                f"of {self.n_models} models show it, {self.n_parents} parents",
                f"  observed {self.observed}, null mean {self.null_mean:.2f} "
                f"(sd {self.null_sd:.2f}), p = {self.p_value:.4g} ({self.draws:,} draws, "
                "parents permuted independently per model)",
                "  A small p means the pattern clusters on shared parents; it does not say why "
                "(exposure or badly matched forms).",
            ]
        )


def _pattern_indicator(gaps: npt.NDArray[np.float64], pattern: Pattern) -> tuple[np.ndarray, str]:
    if isinstance(pattern, str):
        if pattern == "harder":
            return gaps > 0, pattern
        if pattern == "easier":
            return gaps < 0, pattern
        if pattern == "nonzero":
            return gaps != 0, pattern
        raise ValueError(
            f"pattern must be 'harder', 'easier', 'nonzero', a callable or a boolean (M, N) "
            f"array; got {pattern!r}"
        )
    if callable(pattern):
        name = getattr(pattern, "__name__", "custom")
        mask = np.asarray(pattern(gaps.copy()))
    else:
        name = "given mask"
        mask = np.asarray(pattern)
    if mask.dtype != np.bool_:
        raise ValueError(f"pattern must give a boolean array; got dtype {mask.dtype}")
    if mask.shape != gaps.shape:
        raise ValueError(f"pattern must give an array of shape {gaps.shape}; got {mask.shape}")
    return mask, name


def pattern_permutation_test(
    gaps: npt.ArrayLike,
    *,
    pattern: Pattern = "harder",
    min_models: int = 2,
    draws: int = 20_000,
    seed: SeedLike,
    n_threads: int | None = None,
) -> PatternTest:
    """Do M models show a pattern on the same parents more often than by chance?

    Args:
        gaps: (M models, N parents) array of gaps, public minus mean fresh correctness,
            each in [-1, 1].
        pattern: Which (model, parent) cells show the pattern:
            ``"harder"`` -- gap > 0: the public form is answered correctly more often than
            the fresh forms (the paper's "rewrites harder"); ``"easier"`` -- gap < 0;
            ``"nonzero"`` -- gap != 0; a callable taking the (M, N) float array and
            returning a boolean (M, N) array (e.g. ``lambda g: g >= 0.5``); or a boolean
            (M, N) array itself.
        min_models: k: a parent counts when at least k models show the pattern on it.
        draws: Permutations of the null (the paper: 20,000).
        seed: int, ``SeedSequence`` or ``Generator``; draw b uses Philox task stream b.
        n_threads: Threads (None: every core); the result never depends on it.

    Statistic: T = #{parents j : sum_m indicator[m, j] >= k}. Null: each model's row is
    permuted over parents independently of the others (every model keeps its own number
    of pattern parents; only their alignment across models is randomised). p =
    (1 + #{T* >= T}) / (draws + 1).

    Raises:
        ValueError: gaps not 2-D, outside [-1, 1] or non-finite, fewer than 2 parents, an
            unknown pattern or a mask of the wrong shape/dtype, min_models outside
            1..M, draws < 1, a bad seed or n_threads.
    """
    g = check_gaps("gaps", gaps, ndim=2)
    if g.shape[0] < 1:
        raise ValueError("gaps needs at least one model (row)")
    mask, name = _pattern_indicator(g, pattern)
    k = check_positive_int("min_models", min_models)
    if k > g.shape[0]:
        raise ValueError(f"min_models must not exceed the number of models {g.shape[0]}; got {k}")
    d = check_positive_int("draws", draws)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    indicator = np.ascontiguousarray(mask, dtype=np.uint8)
    observed, hist = _core.pattern_test(indicator, k, d, key[0], key[1], n_threads=threads)
    values = np.arange(hist.size, dtype=np.float64)
    null_mean = float(np.dot(hist, values) / d)
    null_var = float(np.dot(hist, (values - null_mean) ** 2) / max(d - 1, 1))
    exceed = int(hist[observed:].sum())
    return PatternTest(
        observed=int(observed),
        null_mean=null_mean,
        null_sd=math.sqrt(null_var),
        p_value=(1.0 + exceed) / (d + 1.0),
        pattern=name,
        min_models=k,
        n_models=int(g.shape[0]),
        n_parents=int(g.shape[1]),
        draws=d,
        null_histogram=hist,
        parents=np.flatnonzero(mask.sum(axis=0) >= k).astype(np.int64),
        per_model=mask.sum(axis=1).astype(np.int64),
    )


# ---------------------------------------------------------------------------------------
# Finite-population bootstraps
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapResult:
    """A finite-population bootstrap of a (stratified) mean or of a statistic of weights.

    Attributes:
        method: ``"rao_wu"`` or ``"bbh"``.
        estimate: The statistic on the sample (the stratified mean sum_h W_h ybar_h).
        se: Standard deviation of the replicates (ddof = 1).
        low, high: Percentile interval at level 1 - alpha (linear interpolation of the
            replicates' alpha/2 and 1 - alpha/2 quantiles).
        replicates: The B replicate values.
        variance_estimate: For the mean, the design-unbiased variance estimate
            sum_h W_h^2 (1 - f_h) s_h^2 / n_h the bootstrap variance should reproduce
            (exactly in expectation for Rao-Wu); None for a user statistic.
        resample_size: Rao-Wu's m_h per stratum (None for BBH).

    What it does not mean: the interval describes sampling error from drawing these
    parents out of the benchmark, nothing else. It does not cover form mismatch, model
    nondeterminism, or anything that would be the same in every sample.
    """

    method: str
    estimate: float
    se: float
    low: float
    high: float
    alpha: float
    n: int
    n_strata: int
    population_size: int | None
    replicates: npt.NDArray[np.float64]
    variance_estimate: float | None
    resample_size: tuple[int, ...] | None

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["replicates"] = self.replicates.tolist()
        return out

    def summary(self) -> str:
        pop = (
            "infinite population"
            if self.population_size is None
            else f"N = {self.population_size:,}"
        )
        lines = [
            f"Finite-population bootstrap ({self.method}, {len(self.replicates):,} replicates): "
            f"n = {self.n}, {self.n_strata} strata, {pop}",
            f"  estimate {self.estimate:+.4f}, bootstrap SE {self.se:.4f}, "
            f"{100 * (1 - self.alpha):g}% percentile interval [{self.low:+.4f}, {self.high:+.4f}]",
        ]
        if self.variance_estimate is not None:
            lines.append(
                f"  design-unbiased SE {math.sqrt(self.variance_estimate):.4f} "
                "(what the bootstrap "
                "SE estimates)"
            )
        return "\n".join(lines)


def _strata_layout(
    n: int, strata: npt.ArrayLike | None, population_size: Any, method: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(order, offsets, N_h or None) with values[order] grouped by sorted stratum label."""
    if strata is None:
        order = np.arange(n)
        offsets = np.array([0, n], dtype=np.int64)
        if population_size is None:
            if method == "bbh":
                raise ValueError("population_size is required for the bbh bootstrap")
            return order, offsets, None
        sizes = [population_size]
        labels: list[Any] = [None]
    else:
        lab = np.asarray(strata)
        if lab.ndim != 1 or lab.size != n:
            raise ValueError(
                f"strata must be 1-D with one label per value ({n}); got shape {lab.shape}"
            )
        try:
            uniq, codes = np.unique(lab, return_inverse=True)
        except TypeError as error:
            raise ValueError(f"strata labels must be sortable: {error}") from error
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=uniq.size)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        labels = list(uniq)
        if population_size is None:
            raise ValueError(
                "population_size is required with strata: a mapping {label: N_h} or one size "
                "per stratum in sorted label order"
            )
        if isinstance(population_size, Mapping):
            missing = [u for u in labels if u not in population_size]
            if missing:
                raise ValueError(f"population_size has no size for strata {missing[:5]}")
            sizes = [population_size[u] for u in labels]
        else:
            sizes = list(np.atleast_1d(np.asarray(population_size)))
            if len(sizes) != len(labels):
                raise ValueError(
                    f"population_size must give one size per stratum ({len(labels)} strata, in "
                    f"sorted label order); got {len(sizes)}"
                )
    big = np.empty(len(sizes), dtype=np.int64)
    for h, size in enumerate(sizes):
        if isinstance(size, (float, np.floating)) and float(size).is_integer():
            size = int(size)
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
            raise ValueError(f"population_size must hold integers; got {size!r}")
        n_h = int(offsets[h + 1] - offsets[h])
        if size < n_h:
            where = "" if labels[h] is None else f" for stratum {labels[h]!r}"
            raise ValueError(
                f"population_size{where} must be at least the sample size {n_h}; got {size}"
            )
        big[h] = int(size)
    return order, offsets, big


def finite_population_bootstrap(
    values: npt.ArrayLike,
    *,
    population_size: int | Mapping[Any, int] | Sequence[int] | None,
    strata: npt.ArrayLike | None = None,
    method: Literal["rao_wu", "bbh"] = "rao_wu",
    replicates: int = 2000,
    resample_size: int | None = None,
    alpha: float = 0.05,
    statistic: Callable[[npt.NDArray[np.float64]], float] | None = None,
    seed: SeedLike,
    n_threads: int | None = None,
) -> BootstrapResult:
    """Bootstrap a mean estimated from a sample drawn without replacement.

    Args:
        values: One value per sampled unit (e.g. per-parent gaps).
        population_size: N for an unstratified sample (None: an infinite population,
            f = 0, Rao-Wu only); with ``strata`` a mapping ``{label: N_h}`` or one N_h per
            stratum in sorted label order.
        strata: Optional stratum label per value; the estimate is then the stratified
            mean sum_h (N_h / N) ybar_h.
        method: ``"rao_wu"`` (default) or ``"bbh"``.
        replicates: B.
        resample_size: Rao-Wu's m_h, the same in every stratum (default n_h - 1 each).
        alpha: The percentile interval has level 1 - alpha.
        statistic: Rao-Wu only: a function of one replicate's unit weights (a length-n
            array in the order of ``values``; the sample's own weights are W_h / n_h and
            ``weights @ values`` is the replicate mean), returning a float. Called once per
            replicate from Python (weights are generated 256 replicates at a time).
        seed: int, ``SeedSequence`` or ``Generator``; replicate b uses Philox task stream b.
        n_threads: Threads (None: every core); the result never depends on it.

    Rao-Wu rescaling (Rao & Wu 1988): per stratum draw m_h units with replacement and
    rescale, ybar*_h = ybar_h + lambda_h (ybar'_h - ybar_h), lambda_h = sqrt(m_h (1 - f_h)
    / (n_h - 1)), f_h = n_h / N_h. Then E*[ybar*] = ybar and Var*[ybar*] equals the
    without-replacement unbiased estimate (1 - f_h) s_h^2 / n_h exactly (m_h = n_h - 1
    gives lambda_h = sqrt(1 - f_h) and non-negative weights). Needs n_h >= 2.

    Booth-Butler-Hall (1994): per stratum write N_h = k n_h + r; the pseudo-population is
    k copies of every sampled unit plus r of them drawn at random afresh for each
    replicate; draw n_h units from it without replacement. Each replicate is recentred on
    its own pseudo-population mean, ybar*_h = ybar_h + (mean of draw - pseudo mean), so
    E*[ybar*] = ybar exactly. Its variance is (1 - f_h) S_pp^2 / n_h for the pseudo-
    population's S_pp^2 = k (n_h - 1) s_h^2 / (N_h - 1) when r = 0: slightly below the
    unbiased estimate (the factor N_h (n_h - 1) / (n_h (N_h - 1))).

    Raises:
        ValueError: non-finite or empty values, bad strata or population sizes, a
            stratum with fewer than 2 units (Rao-Wu), an unknown method, resample_size or
            statistic with BBH, replicates < 2, alpha outside (0, 1), a statistic that
            returns a non-finite value, a bad seed or n_threads.
    """
    y = finite_1d("values", values)
    check_choice("method", method, ("rao_wu", "bbh"))
    b = check_positive_int("replicates", replicates, minimum=2)
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    order, offsets, big = _strata_layout(y.size, strata, population_size, method)
    counts = np.diff(offsets)
    ys = np.ascontiguousarray(y[order])
    if big is None:
        weight = np.ones(1)
        frac = np.zeros(1)
        total_pop: int | None = None
    else:
        total_pop = int(big.sum())
        weight = big / total_pop
        frac = counts / big
    key = philox_key(seed)
    s2 = np.array(
        [
            np.var(ys[offsets[h] : offsets[h + 1]], ddof=1) if counts[h] > 1 else 0.0
            for h in range(counts.size)
        ]
    )
    variance = float(np.sum(weight**2 * (1 - frac) * s2 / counts))
    means = np.array([np.mean(ys[offsets[h] : offsets[h + 1]]) for h in range(counts.size)])
    estimate = float(np.sum(weight * means))
    sizes: tuple[int, ...] | None = None
    if method == "rao_wu":
        if counts.min() < 2:
            raise ValueError(
                "the Rao-Wu bootstrap needs at least 2 sampled units in every stratum"
            )
        if resample_size is None:
            m = counts - 1
        else:
            m = np.full(
                counts.size, check_positive_int("resample_size", resample_size), dtype=np.int64
            )
        m = m.astype(np.int64)
        lam = np.sqrt(m * (1 - frac) / (counts - 1))
        sizes = tuple(int(v) for v in m)
        if statistic is None:
            reps = _core.rao_wu_bootstrap(
                ys, offsets, m, lam, weight, b, key[0], key[1], n_threads=threads
            )
        else:
            if not callable(statistic):
                raise ValueError(f"statistic must be callable; got {statistic!r}")
            reps, estimate = _weights_statistic(statistic, offsets, m, lam, weight, order, b, key)
    else:
        if resample_size is not None:
            raise ValueError("resample_size applies to the rao_wu method only")
        if statistic is not None:
            raise ValueError("statistic applies to the rao_wu method only")
        assert big is not None
        reps = _core.bbh_bootstrap(ys, offsets, big, weight, b, key[0], key[1], n_threads=threads)
    low, high = percentile_interval(reps, alpha)
    return BootstrapResult(
        method=method,
        estimate=estimate,
        se=float(np.std(reps, ddof=1)),
        low=float(low),
        high=float(high),
        alpha=alpha,
        n=int(y.size),
        n_strata=int(counts.size),
        population_size=total_pop,
        replicates=reps,
        variance_estimate=None if statistic is not None else variance,
        resample_size=sizes,
    )


def _weights_statistic(statistic, offsets, m, lam, weight, order, b, key):
    n = int(offsets[-1])
    base = np.empty(n)
    counts = np.diff(offsets)
    for h in range(counts.size):
        base[order[offsets[h] : offsets[h + 1]]] = weight[h] / counts[h]

    def call(w: np.ndarray) -> float:
        value = float(statistic(w))
        if not math.isfinite(value):
            raise ValueError(f"statistic returned a non-finite value ({value})")
        return value

    estimate = call(base.copy())
    reps = np.empty(b)
    unsort = np.empty(n)
    for first in range(0, b, 256):
        count = min(256, b - first)
        chunk = _core.rao_wu_weights(offsets, m, lam, weight, first, count, key[0], key[1])
        for r in range(count):
            unsort[order] = chunk[r]
            reps[first + r] = call(unsort.copy())
    return reps, estimate


# ---------------------------------------------------------------------------------------
# Difference in differences
# ---------------------------------------------------------------------------------------

DID_COLUMNS = ("public_before", "public_after", "fresh_before", "fresh_after")
_QUANTITIES = ("public", "fresh", "visible_gap")


@dataclass(frozen=True)
class DiDResult:
    """Difference in differences per model and pooled, with bootstrap intervals.

    Rows (axis 0) are ``models`` followed by ``"pooled"`` (the mean over models); columns
    (axis 1) are ``quantities``: ``public`` (effect on the trained wording), ``fresh``
    (effect on forms never trained on), ``visible_gap`` (public minus fresh: the part a
    paraphrase audit can see).

    Attributes:
        exposed_change, unexposed_change: Mean after minus mean before, per group.
        estimate: exposed_change - unexposed_change.
        se: Bootstrap standard deviation.
        percentile: (..., 2) percentile interval; bca: (..., 2) BCa interval.
        bias_correction, acceleration: BCa's z0 and a (z0 from the share of replicates
            below the estimate, replicates within 1e-12 (1 + |estimate|) of it counted
            half, the share clipped to [1/(2B), 1 - 1/(2B)]; a from the jackknife).
        spread: Max minus min of the per-model estimates, per quantity (Table 21's
            "Spread" when the models are reruns).

    What it does not mean: the intervals are over parents only; they treat the trained
    model as fixed, so rerunning training (another seed) varies more than they show
    (Table 21). A visible gap near zero with large public and fresh effects means the
    leak carried over to the paraphrases, not that there was no leak.
    """

    models: tuple[str, ...]
    quantities: tuple[str, ...]
    exposed_change: npt.NDArray[np.float64]
    unexposed_change: npt.NDArray[np.float64]
    estimate: npt.NDArray[np.float64]
    se: npt.NDArray[np.float64]
    percentile: npt.NDArray[np.float64]
    bca: npt.NDArray[np.float64]
    bias_correction: npt.NDArray[np.float64]
    acceleration: npt.NDArray[np.float64]
    spread: npt.NDArray[np.float64]
    n_exposed: tuple[int, ...]
    n_unexposed: tuple[int, ...]
    replicates: int
    alpha: float
    shared_parents: bool

    def table(self) -> StudyTable:
        rows = [(i, q) for i in range(len(self.models)) for q in range(3)]
        col = lambda a: np.array([a[i, q] for i, q in rows])  # noqa: E731
        return StudyTable(
            title="Difference in differences (exposed minus unexposed parents, "
            "after minus before)",
            columns={
                "model": np.array([self.models[i] for i, _ in rows]),
                "quantity": np.array([self.quantities[q] for _, q in rows]),
                "exposed change": col(self.exposed_change),
                "unexposed change": col(self.unexposed_change),
                "DiD": col(self.estimate),
                "SE": col(self.se),
                "pct low": col(self.percentile[..., 0]),
                "pct high": col(self.percentile[..., 1]),
                "BCa low": col(self.bca[..., 0]),
                "BCa high": col(self.bca[..., 1]),
            },
            notes=(
                f"{self.replicates:,} bootstrap replicates over parents (exposed and unexposed "
                f"resampled separately{', shared across models' if self.shared_parents else ''}); "
                f"{100 * (1 - self.alpha):g}% intervals.",
                "Intervals are over parents only: a training rerun varies more.",
            ),
            meta={"replicates": self.replicates, "alpha": self.alpha},
        )

    def to_dict(self) -> dict[str, Any]:
        return self.table().to_dict()

    def summary(self) -> str:
        return str(self.table())


def _did_groups(name: str, data: Any) -> list[np.ndarray]:
    try:
        arr = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None  # ragged: a list of per-model arrays
    if arr is not None and arr.ndim in (2, 3):
        groups = [arr] if arr.ndim == 2 else list(arr)
    elif arr is None and isinstance(data, Sequence) and len(data) > 0:
        groups = [float_array(f"{name}[{m}]", g) for m, g in enumerate(data)]
    else:
        shape = None if arr is None else arr.shape
        raise ValueError(
            f"{name} must be (n, 4), (models, n, 4) or a list of (n_m, 4) arrays; "
            f"got shape {shape}"
        )
    out = []
    for m, g in enumerate(groups):
        if g.ndim != 2 or g.shape[1] != 4:
            raise ValueError(
                f"{name}[{m}] must have shape (n, 4) with columns {', '.join(DID_COLUMNS)}; "
                f"got {g.shape}"
            )
        if g.shape[0] < 2:
            raise ValueError(f"{name}[{m}] needs at least 2 parents; got {g.shape[0]}")
        out.append(np.ascontiguousarray(check_unit_interval(f"{name}[{m}]", g)))
    return out


def _loo_means(d: np.ndarray) -> np.ndarray:
    return (d.sum() - d) / (d.size - 1)


def did_estimate(
    exposed: Any,
    unexposed: Any,
    *,
    models: Sequence[str] | None = None,
    shared_parents: bool = False,
    replicates: int = 2000,
    alpha: float = 0.05,
    seed: SeedLike,
    n_threads: int | None = None,
) -> DiDResult:
    """Difference in differences of correctness over parents, per model and pooled.

    Args:
        exposed, unexposed: Per-parent correctness with columns ``DID_COLUMNS`` =
            (public_before, public_after, fresh_before, fresh_after), each in [0, 1]
            (fresh averaged over the fresh forms). For one model an (n, 4) array; for
            several an (M, n, 4) array or a list of (n_m, 4) arrays (counts may differ).
        models: Names for the models (default "model 1", ...).
        shared_parents: True when every model was scored on the same parents in the same
            row order: a replicate then resamples parents once for all models, keeping
            the models' dependence in the pooled interval. Default False: each model's
            parents are resampled independently.
        replicates: Bootstrap replicates B.
        alpha: Intervals have level 1 - alpha.
        seed: int, ``SeedSequence`` or ``Generator``; replicate b uses Philox task stream b.
        n_threads: Threads (None: every core); the result never depends on it.

    For each model: DiD_public = (mean after - mean before of public correctness on the
    exposed parents) - (the same on the unexposed parents); DiD_fresh likewise; the
    visible gap is DiD_public - DiD_fresh. Pooled = mean over models. The bootstrap
    resamples exposed and unexposed parents separately (with replacement, their own
    sizes); intervals are percentile and BCa (bias correction z0 from the replicates,
    acceleration from the jackknife over parents of both groups, combined as
    ``scipy.stats.bootstrap`` does for several samples). Other form families (a deep
    paraphrase bank) are a second call with those columns in the fresh slots.

    Raises:
        ValueError: wrong shapes, values outside [0, 1] or non-finite, fewer than 2
            parents in a group, different numbers of models in the two groups,
            ``shared_parents`` with unequal parent counts, replicates < 2, bad alpha,
            seed or n_threads.
    """
    ex = _did_groups("exposed", exposed)
    un = _did_groups("unexposed", unexposed)
    if len(ex) != len(un):
        raise ValueError(
            "exposed and unexposed must hold the same number of models; "
            f"got {len(ex)} and {len(un)}"
        )
    n_models = len(ex)
    if models is None:
        names = tuple(f"model {i + 1}" for i in range(n_models))
    else:
        names = tuple(str(v) for v in models)
        if len(names) != n_models:
            raise ValueError(f"models must name {n_models} models; got {len(names)}")
    if shared_parents and (len({g.shape[0] for g in ex}) > 1 or len({g.shape[0] for g in un}) > 1):
        raise ValueError("shared_parents needs the same number of parents for every model")
    b = check_positive_int("replicates", replicates, minimum=2)
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)

    dpe = [np.ascontiguousarray(g[:, 1] - g[:, 0]) for g in ex]
    dfe = [np.ascontiguousarray(g[:, 3] - g[:, 2]) for g in ex]
    dpu = [np.ascontiguousarray(g[:, 1] - g[:, 0]) for g in un]
    dfu = [np.ascontiguousarray(g[:, 3] - g[:, 2]) for g in un]
    e_off = np.concatenate([[0], np.cumsum([d.size for d in dpe])]).astype(np.int64)
    u_off = np.concatenate([[0], np.cumsum([d.size for d in dpu])]).astype(np.int64)
    reps = _core.did_bootstrap(
        np.concatenate(dpe),
        np.concatenate(dfe),
        e_off,
        np.concatenate(dpu),
        np.concatenate(dfu),
        u_off,
        bool(shared_parents),
        b,
        key[0],
        key[1],
        n_threads=threads,
    )

    rows = n_models + 1
    exposed_change = np.empty((rows, 3))
    unexposed_change = np.empty((rows, 3))
    for m in range(n_models):
        ep, ef = np.mean(dpe[m]), np.mean(dfe[m])
        up, uf = np.mean(dpu[m]), np.mean(dfu[m])
        exposed_change[m] = (ep, ef, ep - ef)
        unexposed_change[m] = (up, uf, up - uf)
    estimate = np.empty((rows, 3))
    estimate[:n_models] = exposed_change[:n_models] - unexposed_change[:n_models]
    estimate[:n_models, 2] = estimate[:n_models, 0] - estimate[:n_models, 1]
    for arr in (exposed_change, unexposed_change, estimate):
        acc = np.zeros(3)
        for m in range(n_models):
            acc = acc + arr[m]
        arr[n_models] = acc / n_models

    # Jackknife (leave one parent out) estimates per independently resampled group.
    def loo(m: int, q: int) -> list[np.ndarray]:
        if q < 2:
            e, u = (dpe[m], dpu[m]) if q == 0 else (dfe[m], dfu[m])
            return [_loo_means(e) - np.mean(u), np.mean(e) - _loo_means(u)]
        ge = _loo_means(dpe[m]) - _loo_means(dfe[m]) - (np.mean(dpu[m]) - np.mean(dfu[m]))
        gu = (np.mean(dpe[m]) - np.mean(dfe[m])) - (_loo_means(dpu[m]) - _loo_means(dfu[m]))
        return [ge, gu]

    se = np.std(reps, axis=0, ddof=1)
    percentile = np.empty((rows, 3, 2))
    bca = np.empty((rows, 3, 2))
    z0 = np.empty((rows, 3))
    acc_ = np.empty((rows, 3))
    for q in range(3):
        per_model = [loo(m, q) for m in range(n_models)]
        for m in range(rows):
            if m < n_models:
                groups = per_model[m]
            elif shared_parents:
                groups = [
                    np.mean([per_model[k][g] for k in range(n_models)], axis=0) for g in range(2)
                ]
            else:
                groups = [
                    estimate[n_models, q] + (per_model[k][g] - estimate[k, q]) / n_models
                    for k in range(n_models)
                    for g in range(2)
                ]
            r = reps[:, m, q]
            percentile[m, q] = percentile_interval(r, alpha)
            bca[m, q], z0[m, q], acc_[m, q] = bca_interval(r, estimate[m, q], groups, alpha)
    return DiDResult(
        models=names + ("pooled",),
        quantities=_QUANTITIES,
        exposed_change=exposed_change,
        unexposed_change=unexposed_change,
        estimate=estimate,
        se=se,
        percentile=percentile,
        bca=bca,
        bias_correction=z0,
        acceleration=acc_,
        spread=estimate[:n_models].max(axis=0) - estimate[:n_models].min(axis=0),
        n_exposed=tuple(g.shape[0] for g in ex),
        n_unexposed=tuple(g.shape[0] for g in un),
        replicates=b,
        alpha=alpha,
        shared_parents=bool(shared_parents),
    )


# ---------------------------------------------------------------------------------------
# Seed-paired contrasts
# ---------------------------------------------------------------------------------------

MAX_EXACT_SEEDS = 40


@dataclass(frozen=True)
class SeedContrast:
    """A contrast measured once per training seed.

    Attributes:
        mean, sd: Mean and standard deviation (ddof = 1) of the per-seed contrasts.
        low, high: Student-t interval mean +- t_{n-1, 1-alpha/2} sd / sqrt(n).
        n_positive, n_negative: Seeds with contrast > 0 and < 0 ("seeds positive").
        p_value: Two-sided sign-flip p: the share of sign vectors s with
            |sum s_i x_i| >= |sum x_i| (exact over all 2^n vectors, or Monte Carlo with the
            +1 correction).
        method: ``"exact"`` or ``"monte-carlo"``; n_sign_vectors: 2^n or the draws.

    What it does not mean: the p is about seeds of this training recipe; it says nothing
    about other data, models or recipes, and with 10 seeds the smallest possible exact p
    is 2/1024.
    """

    n: int
    mean: float
    sd: float
    low: float
    high: float
    alpha: float
    n_positive: int
    n_negative: int
    p_value: float
    method: str
    n_sign_vectors: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def summary(self) -> str:
        return "\n".join(
            [
                f"Seed-paired contrast over {self.n} seeds: mean {self.mean:+.3f}, "
                f"{100 * (1 - self.alpha):g}% t-interval [{self.low:+.3f}, {self.high:+.3f}], "
                f"seeds positive {self.n_positive}/{self.n}",
                f"  two-sided sign-flip p = {self.p_value:.3g} ({self.method}, "
                f"{self.n_sign_vectors:,} sign vectors)",
            ]
        )


def seed_contrast(
    values: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    method: Literal["auto", "exact", "monte_carlo"] = "auto",
    draws: int = 100_000,
    seed: SeedLike | None = None,
    n_threads: int | None = None,
) -> SeedContrast:
    """Mean, t-interval, seeds positive and the sign-flip p of per-seed contrasts.

    Args:
        values: One contrast per seed (e.g. exact-exposure minus related-task advantage).
        alpha: The t-interval has level 1 - alpha.
        method: ``"exact"`` counts all 2^n sign vectors (n <= 40, by meet in the middle:
            2^(n/2) sums of each half, one sorted; 10 seeds are 1,024 vectors);
            ``"monte_carlo"`` draws ``draws`` random sign vectors (p = (1 + hits) /
            (draws + 1)); ``"auto"`` is exact up to 40 seeds, Monte Carlo above.
        draws, seed: For Monte Carlo only; ``seed`` is then required.
        n_threads: Threads for Monte Carlo (None: every core); never changes the result.

    Null: each seed's contrast is symmetric about 0, so its sign is a fair coin. The
    statistic is |sum x_i|; sign vectors whose |sum| is within 16 m eps sum |x_i| (m the
    nonzero values, eps the float64 epsilon: a bound on the rounding of any signed sum) of
    the observed one count as ties (at least as extreme). Monte Carlo draws random sign
    vectors in blocks of 256 per Philox stream, as every sign-flip test of the package.

    Raises:
        ValueError: fewer than 2 values, non-finite values, bad alpha, an unknown method,
            ``"exact"`` with more than 40 values, Monte Carlo without a seed, draws < 1.
    """
    x = finite_1d("values", values)
    if x.size < 2:
        raise ValueError(f"values needs at least 2 seeds; got {x.size}")
    check_alpha(alpha)
    check_choice("method", method, ("auto", "exact", "monte_carlo"))
    threads = check_n_threads(n_threads)
    n = x.size
    mean = float(np.mean(x))
    sd = float(np.std(x, ddof=1))
    half = float(stats.t.ppf(1 - alpha / 2, n - 1)) * sd / math.sqrt(n)
    exact = method == "exact" or (method == "auto" and n <= MAX_EXACT_SEEDS)
    if exact:
        if n > MAX_EXACT_SEEDS:
            raise ValueError(
                f"values: exact enumeration handles at most {MAX_EXACT_SEEDS} seeds; got {n} "
                "(use method='monte_carlo' with a seed)"
            )
        count = _core.sign_flip_count(x)
        vectors = 2**n
        p = count / vectors
        used = "exact"
    else:
        if seed is None:
            raise ValueError(
                "seed is required for the Monte Carlo sign-flip test "
                f"({n} seeds > {MAX_EXACT_SEEDS} "
                "or method='monte_carlo')"
            )
        d = check_positive_int("draws", draws)
        key = philox_key(seed)
        hits = _core.sign_flip_counts(
            x, exact=False, n_resamples=d, key0=key[0], key1=key[1], n_threads=threads
        )["count_two_sided"]
        p = (1.0 + hits) / (d + 1.0)
        vectors = d
        used = "monte-carlo"
    return SeedContrast(
        n=n,
        mean=mean,
        sd=sd,
        low=mean - half,
        high=mean + half,
        alpha=alpha,
        n_positive=int(np.count_nonzero(x > 0)),
        n_negative=int(np.count_nonzero(x < 0)),
        p_value=float(min(p, 1.0)),
        method=used,
        n_sign_vectors=int(vectors),
    )

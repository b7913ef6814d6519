"""PaCoST: is a model more confident on the published form of a question than on a rephrasing?

PaCoST (Paired Confidence Significance Testing; Zhang et al., 2024) pairs each benchmark
question with a rephrasing that has the same answer and compares the model's confidence
on the two. A model that saw the published wording in training tends to be more
confident on it, so the test is one-sided: the differences

    d_i = confidence_original_i - confidence_rephrased_i

are tested for a positive centre. Three tests are offered:

``"t"`` (default, as in the paper)
    Paired Student t-test of mean(d) = 0; the interval is the t interval for the mean.
``"wilcoxon"``
    Wilcoxon signed-rank test (SciPy); the interval is the Hodges-Lehmann interval for the
    pseudo-median of d (Walsh averages, normal-approximation critical rank).
``"sign_flip"``
    The paired randomization test on sum(d), computed in the compiled core: exact over
    all 2^n sign patterns for n <= 20 pairs, otherwise Monte Carlo over ``n_resamples``
    random patterns with p = (1 + count) / (n_resamples + 1), reproducible from ``seed``.
    Valid whenever each d_i is symmetric about 0 under the null, with no normality
    assumption. The interval inverts the same test (exact coverage under symmetry).

What a flag does and does not establish: it establishes that the model's confidence
depends on the *form* of the question -- like the exact randomization test of a
matched-form audit, it flags any form effect. Memorisation of the published wording is
one cause; a rephrasing that is simply harder, longer or less natural is another, and
the test cannot tell them apart. It does not measure how much of an accuracy score is
inflated (confidence can move without accuracy moving, and vice versa), and no flag is
not evidence that the model never saw the data.

Reference:
    Zhang, Liu, Zhang, Xu, Li, Luo (2024), "PaCoST: Paired Confidence Significance Testing
    for Benchmark Contamination Detection in Large Language Models", arXiv:2406.18326.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._numeric import (
    scale_exponent,
    student_t_quantile,
    unscale,
    upper_quantile,
)
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._result import Result
from truescore_fast._validation import (
    ALTERNATIVES,
    Alternative,
    check_alpha,
    check_bool,
    check_choice,
    check_n_threads,
    check_positive_int,
    paired_1d,
)
from truescore_fast.errors import ArgumentError

__all__ = ["PairedConfidenceResult", "paired_confidence_test"]

Method = Literal["t", "wilcoxon", "sign_flip"]

_MAX_EXACT = 20

_WHAT_A_FLAG_MEANS = (
    "a flag establishes that confidence depends on the question's form (any form effect, "
    "as with the exact randomization test); it does not establish memorisation -- a harder "
    "or less natural rephrasing produces the same signal -- nor how much a score is inflated"
)
_WHAT_NO_FLAG_MEANS = (
    "no flag is not evidence of a clean model: confidence may not move even when the data "
    "was seen, and small samples have little power"
)

_INTERVAL_TARGET = {
    "t": "mean difference, Student t interval",
    "wilcoxon": "pseudo-median of the differences, Hodges-Lehmann interval",
    "sign_flip": "centre of symmetry of the differences, inverted sign-flip test",
}


@dataclass(frozen=True, repr=False)
class PairedConfidenceResult(Result):
    """One paired confidence test (original minus rephrased).

    Attributes:
        estimate: mean of ``confidence_original - confidence_rephrased`` (for every
            method; the interval's target may differ: see ``interval_target``).
        low, high: confidence interval at level 1 - alpha; one-sided (an infinite end)
            for a one-sided alternative. What it is an interval *for* depends on the
            method: see ``interval_target``.
        interval_target: the quantity the interval covers.
        p_value: p-value of the test of no form effect against ``alternative``.
        statistic: t for ``"t"``, the signed-rank W for ``"wilcoxon"``, ``sum(d)`` for
            ``"sign_flip"``.
        method: ``"t"``, ``"wilcoxon"`` or ``"sign_flip"``.
        alternative: ``"greater"`` (original more confident), ``"less"`` or ``"two-sided"``.
        n_pairs: number of question pairs.
        alpha: the interval has level 1 - alpha; the test flags at p < alpha.
        exact: sign-flip only: True when every sign pattern was enumerated.
        n_resamples: sign-flip only: patterns used (``2**n`` when exact); 0 otherwise.

    A flag says confidence depends on the question's form. It does not say the model
    memorised the benchmark, and no flag does not clear it (see the module docstring).
    """

    estimate: float
    low: float
    high: float
    interval_target: str
    p_value: float
    statistic: float
    method: str
    alternative: str
    n_pairs: int
    alpha: float
    exact: bool
    n_resamples: int

    _repr_fields = ("method", "estimate", "low", "high", "p_value", "n_pairs")

    @property
    def flagged(self) -> bool:
        """True when the p-value is below ``alpha``."""
        return self.p_value < self.alpha

    def summary(self) -> str:
        """The numbers, the verdict, and what the verdict does and does not establish."""
        alpha = self.alpha
        name = {
            "t": "paired t-test",
            "wilcoxon": "Wilcoxon signed-rank test",
            "sign_flip": (
                "exact sign-flip test"
                if self.exact
                else f"Monte Carlo sign-flip test ({self.n_resamples} patterns)"
            ),
        }[self.method]
        lo, hi = self.low, self.high
        verdict = (
            f"flag at alpha = {alpha:.3g}: {_WHAT_A_FLAG_MEANS}"
            if self.flagged
            else f"no flag at alpha = {alpha:.3g}: {_WHAT_NO_FLAG_MEANS}"
        )
        return "\n".join(
            [
                f"PaCoST {name}, {self.n_pairs} pairs, alternative {self.alternative}",
                f"  mean difference (original - rephrased)  {self.estimate:+.6g}",
                f"  {1.0 - self.alpha:.0%} interval  [{lo:+.6g}, {hi:+.6g}]  "
                f"({self.interval_target})",
                f"  statistic {self.statistic:.6g}, p-value {self.p_value:.4g}",
                f"  {verdict}",
            ]
        )


def _t_interval(d: npt.NDArray[np.float64], alpha: float, alternative: str) -> tuple[float, float]:
    n = d.size
    se = float(d.std(ddof=1)) / math.sqrt(n)
    mean = float(d.mean())
    tail = alpha / 2.0 if alternative == "two-sided" else alpha
    q = upper_quantile(lambda p: student_t_quantile(p, n - 1), tail)
    if alternative == "two-sided":
        return mean - q * se, mean + q * se
    if alternative == "greater":
        return mean - q * se, math.inf
    return -math.inf, mean + q * se


def _hodges_lehmann_interval(
    d: npt.NDArray[np.float64], alpha: float, alternative: str
) -> tuple[float, float]:
    # The signed-rank test of centre mu rejects when too few (or too many) Walsh
    # averages (d_i + d_j) / 2, i <= j, lie below mu; inverting it gives order statistics.
    n = d.size
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    m = walsh.size
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    tail = alpha / 2.0 if alternative == "two-sided" else alpha
    # c is 1-based: the c-th smallest and c-th largest Walsh averages bound the interval.
    from scipy import stats  # here, not at import: scipy.stats costs ~0.5 s

    c = int(math.floor(m / 2.0 - upper_quantile(stats.norm.ppf, tail) * sd))
    # A one-sided level below 1/2 (alpha > 0.5) puts c past the middle, and for a small n
    # past the last Walsh average: the bound is then the largest (smallest) one.
    c = min(c, m)
    lower = float(walsh[c - 1]) if c >= 1 else -math.inf
    upper = float(walsh[m - c]) if c >= 1 else math.inf
    if alternative == "greater":
        return lower, math.inf
    if alternative == "less":
        return -math.inf, upper
    return lower, upper


def paired_confidence_test(
    confidence_original: npt.ArrayLike,
    confidence_rephrased: npt.ArrayLike,
    *,
    alternative: Alternative = "greater",
    method: Method = "t",
    alpha: float = 0.05,
    n_resamples: int = 10_000,
    exact: bool | None = None,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> PairedConfidenceResult:
    """Test whether a model is more confident on original questions than on rephrasings.

    Args:
        confidence_original: the model's confidence on each original question (for
            example the log-probability of its answer), one per pair.
        confidence_rephrased: its confidence on the rephrasing of the same question,
            with the same answer, in the same order.
        alternative: ``"greater"`` (PaCoST's direction: original more confident),
            ``"less"`` or ``"two-sided"``.
        method: ``"t"`` (paired t-test), ``"wilcoxon"`` (signed-rank) or ``"sign_flip"``
            (the assumption-free paired randomization test).
        alpha: the interval has level 1 - alpha; the test flags at p < alpha.
        n_resamples: sign-flip Monte Carlo patterns (used when not exact).
        exact: sign-flip only: enumerate all ``2**n`` patterns. ``None`` (default) does so
            for n <= 20; True with n > 20 is refused.
        seed: seed of the Monte Carlo sign-flip patterns (recorded for reproducibility).
        n_threads: threads for the sign-flip kernel (None: every usable CPU). Results do not
            depend on it.

    Returns:
        A :class:`PairedConfidenceResult`; ``.flagged`` and ``.summary()`` give the verdict
        and what it does not establish.

    Raises:
        ValueError: naming the argument, for unequal lengths, non-finite or empty input,
            an unknown ``method``/``alternative``, ``alpha`` outside (0, 1), fewer than two
            pairs or zero variance for ``"t"``, all-zero differences for ``"wilcoxon"``.
    """
    original, rephrased = paired_1d(
        "confidence_original", confidence_original, "confidence_rephrased", confidence_rephrased
    )
    check_choice("method", method, ("t", "wilcoxon", "sign_flip"))
    check_choice("alternative", alternative, ALTERNATIVES)
    check_alpha(alpha)
    check_bool("exact", exact, optional=True)
    rate = alpha
    with np.errstate(over="ignore"):  # checked on the next line
        raw = original - rephrased
    if not np.isfinite(raw).all():
        raise ArgumentError(
            "confidence_original",
            "confidence_original - confidence_rephrased overflows float64; rescale the inputs",
        )
    # Every statistic here is scale-free; work in units of a power of two (exact) so that
    # squares and sums of very large differences cannot overflow, nor squares of tiny
    # ones underflow to a false zero variance, and scale results back.
    largest = float(np.max(np.abs(raw)))
    exponent = scale_exponent(largest, 2.0**400)
    d = np.ldexp(raw, exponent)
    n = d.size
    mean = unscale(float(d.mean()), exponent)
    is_exact = False
    used = 0

    from scipy import stats  # here, not at import: scipy.stats costs ~0.5 s

    if method == "t":
        if n < 2:
            raise ArgumentError(
                "confidence_original",
                "confidence_original must hold at least 2 pairs for method='t'",
            )
        if float(d.std(ddof=1)) == 0.0:
            raise ArgumentError(
                "confidence_original",
                "confidence_original - confidence_rephrased has zero variance: the t-test is "
                "undefined; use method='sign_flip'",
            )
        res = stats.ttest_1samp(d, 0.0, alternative=alternative)
        statistic, p_value = float(res.statistic), float(res.pvalue)
        interval = _t_interval(d, rate, alternative)
    elif method == "wilcoxon":
        if not np.any(d != 0.0):
            raise ArgumentError(
                "confidence_original",
                "confidence_original - confidence_rephrased is zero for every pair: the "
                "signed-rank test is undefined",
            )
        res = stats.wilcoxon(d, alternative=alternative)
        statistic, p_value = float(res.statistic), float(res.pvalue)
        interval = _hodges_lehmann_interval(d, rate, alternative)
    else:
        check_positive_int("n_resamples", n_resamples)
        if exact is None:
            is_exact = n <= _MAX_EXACT
        elif exact:
            if n > _MAX_EXACT:
                raise ArgumentError(
                    "exact",
                    f"exact=True enumerates 2**n sign patterns and needs n <= {_MAX_EXACT} "
                    f"pairs; got {n} (use exact=None or False for Monte Carlo)",
                )
            is_exact = True
        key0, key1 = philox_key(seed)
        tail = rate / 2.0 if alternative == "two-sided" else rate
        out = _core.sign_flip_test(
            d,
            exact=is_exact,
            n_resamples=int(n_resamples),
            key0=key0,
            key1=key1,
            alpha_tail=tail,
            n_threads=check_n_threads(n_threads),
        )
        used = int(out["n_patterns"])
        column = {"greater": "count_greater", "less": "count_less"}.get(
            alternative, "count_two_sided"
        )
        count = int(out[column])
        p_value = count / used if is_exact else (1 + count) / (used + 1)
        statistic = float(d.sum())
        lower, upper = float(out["lower"]), float(out["upper"])
        interval = {
            "greater": (lower, math.inf),
            "less": (-math.inf, upper),
            "two-sided": (lower, upper),
        }[alternative]

    if method == "sign_flip":
        statistic = unscale(statistic, exponent)  # a sum beyond the largest double: inf
    return PairedConfidenceResult(
        estimate=mean,
        low=unscale(interval[0], exponent),
        high=unscale(interval[1], exponent),
        interval_target=_INTERVAL_TARGET[method],
        p_value=min(1.0, float(p_value)),
        statistic=statistic,
        method=method,
        alternative=alternative,
        n_pairs=n,
        alpha=alpha,
        exact=is_exact,
        n_resamples=used,
    )

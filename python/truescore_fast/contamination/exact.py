"""Did the model see the benchmark in its published order?

Under the null that a model never saw a dataset, the log-likelihood it gives the
examples concatenated in their published (canonical) order is exchangeable with the
log-likelihood of any shuffled order. The rank of the canonical value among m shuffled
values is therefore uniform, and

    p = (1 + #{j : l_j >= l_canonical}) / (m + 1)

is an exact p-value: no asymptotics, no model of how log-likelihoods are distributed.

This module is a drop-in for ``truescore.contamination`` (``exchangeability_test``,
``combine_shards`` and their result types: same signatures, fields and errors, and the
same numbers bit for bit); :mod:`~truescore_fast.contamination.batch` runs thousands of
shards at once.

What a result does not mean: the test detects memorisation of the *published order*. A
model trained on the same items shuffled, on paraphrases or on a derived dataset can be
contaminated and still pass. A non-significant result is absence of evidence.

References:
    Oren, Meister, Chatterji, Ladhak, Hashimoto (2023), "Proving Test Set Contamination in
    Black-Box Language Models", arXiv:2310.17623.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._result import Result
from truescore_fast._validation import (
    check_array_size,
    dropin_1d,
    dropin_alpha,
)
from truescore_fast.errors import ArgumentError

__all__ = [
    "CombinedContamination",
    "ContaminationResult",
    "PooledContamination",
    "combine_shards",
    "exchangeability_test",
]

_NOT_EVIDENCE_OF_ABSENCE = (
    "a clean result is not evidence of a clean model: training on shuffled, paraphrased "
    "or derived copies of the data leaves the published order unremarkable"
)


@dataclass(frozen=True)
class ContaminationResult:
    """One exact exchangeability test.

    Attributes:
        p_value: Exact permutation p-value, ``(1 + #{shuffled >= canonical}) / (m + 1)``.
        canonical_loglik: Log-likelihood of the examples in published order.
        permutation_mean: Mean log-likelihood of the shuffled orders.
        permutation_std: Their standard deviation (ddof=1; 0 for a single permutation).
        z_score: ``(canonical - mean) / std``, 0 when the std is 0. An effect size for
            reading, not the basis of the p-value.
        n_permutations: Number of shuffled orders, m.
        level: One minus the significance level of the verdict.

    A small p-value says the published order scores higher than chance allows. It does
    not say how much of a benchmark score is inflated, and a large p-value does not
    clear the model (see :func:`exchangeability_test`).
    """

    p_value: float
    canonical_loglik: float
    permutation_mean: float
    permutation_std: float
    z_score: float
    n_permutations: int
    level: float

    @property
    def contaminated(self) -> bool:
        """True when the p-value is below the significance level ``1 - level``."""
        return self.p_value < (1.0 - self.level)

    @property
    def resolution(self) -> float:
        """The smallest p-value m permutations can give: ``1 / (m + 1)``.

        A p-value at this floor reflects the permutation budget, not the model: 19
        permutations can never reach 0.05, however contaminated the model is.
        """
        return 1.0 / (self.n_permutations + 1)

    def summary(self) -> str:
        """truescore's report, word for word (the drop-in contract); see :meth:`explain`."""
        verdict = (
            "canonical order scores higher than chance allows: evidence of contamination"
            if self.contaminated
            else "no evidence that the canonical order is special"
        )
        return "\n".join(
            [
                f"contamination test on {self.n_permutations} permutations",
                f"  canonical log-likelihood: {self.canonical_loglik:.4f}",
                f"  shuffled orders: mean {self.permutation_mean:.4f}, "
                f"sd {self.permutation_std:.4f} (z = {self.z_score:+.2f})",
                f"  p = {self.p_value:.4g} (finest resolution possible here: "
                f"{self.resolution:.4g})",
                f"  {verdict}",
            ]
        )

    def explain(self) -> str:
        """truescore_fast's longer report: the numbers, the resolution floor, and what a
        finding or its absence does and does not say."""
        alpha = 1.0 - self.level
        if self.contaminated:
            verdict = (
                f"finding: the published order ranks above chance at alpha = {alpha:.3g}, "
                "evidence that the model saw this data in this order"
            )
        else:
            verdict = f"no finding at alpha = {alpha:.3g}; {_NOT_EVIDENCE_OF_ABSENCE}"
        floor_note = (
            " (at the floor: more permutations could give a smaller p)"
            if self.p_value <= self.resolution
            else ""
        )
        return "\n".join(
            [
                f"Exchangeability test, {self.n_permutations} shuffled orders",
                f"  published-order log-likelihood  {self.canonical_loglik:.6g}",
                f"  shuffled orders                 mean {self.permutation_mean:.6g}, "
                f"sd {self.permutation_std:.6g}, z = {self.z_score:+.3f}",
                f"  p-value                         {self.p_value:.4g}{floor_note}",
                f"  smallest p-value possible       {self.resolution:.4g}",
                f"  {verdict}",
            ]
        )


def exchangeability_test(
    canonical_loglik: float,
    permuted_logliks: npt.ArrayLike,
    *,
    alpha: float = 0.05,
) -> ContaminationResult:
    """Exact permutation-rank test that a model memorised a dataset's published order.

    Args:
        canonical_loglik: Log-likelihood of the examples concatenated in published order.
        permuted_logliks: Log-likelihoods of independently shuffled orders (m of them).
            99 or more are needed for the test to be able to reach p = 0.01.
        alpha: Significance level of the verdict.

    Returns:
        A :class:`ContaminationResult`; numbers identical to truescore 0.7.4's, except
        that the mean, sd and z stay finite where NumPy's squared deviations overflow
        (``|log-likelihoods|`` above about 1e154, where truescore reports sd = inf, z = 0).

    Raises:
        ValueError: alpha outside (0, 1); canonical_loglik not finite; permuted_logliks
            empty, not 1-D, not numeric or holding a non-finite value.

    The p-value is exact under exchangeability; the z-score is descriptive. The test
    detects memorisation of the published order only: a model trained on shuffled or
    paraphrased copies passes it, so a large p-value is absence of evidence.
    """
    dropin_alpha(alpha)
    check_array_size("canonical_loglik", canonical_loglik)
    check_array_size("permuted_logliks", permuted_logliks)
    if not np.isfinite(canonical_loglik):
        raise ArgumentError("canonical_loglik", "canonical_loglik must be finite")
    permuted = np.asarray(permuted_logliks, dtype=float)  # truescore's conversion and errors
    if permuted.ndim != 1:
        raise ArgumentError(
            "permuted_logliks", f"permuted_logliks must be 1-D; got shape {permuted.shape}"
        )
    if permuted.size == 0:
        raise ArgumentError("permuted_logliks", "permuted_logliks must be non-empty")
    if not isinstance(canonical_loglik, _FAST_CANONICAL):
        return _exchangeability_test_as_given(canonical_loglik, permuted, alpha)
    canonical = float(canonical_loglik)
    p, mean, sd, z = _core.rank_test(canonical, permuted)
    if isinstance(canonical_loglik, np.floating) and canonical_loglik.dtype.itemsize < 8:
        # truescore forms z from the caller's scalar, and NumPy keeps a float32 (or
        # float16) scalar minus a Python float in that precision. Reproduced on purpose:
        # a drop-in must give the same z, and z is descriptive only.
        if 0.0 < sd < math.inf:
            z = float((canonical_loglik - mean) / sd)
    return ContaminationResult(
        p_value=p,
        canonical_loglik=canonical,
        permutation_mean=mean,
        permutation_std=sd,
        z_score=z,
        n_permutations=int(permuted.shape[0]),
        level=1.0 - alpha,
    )


# Canonical values the compiled kernel compares exactly as truescore does (as float64).
# Anything else -- a long double, a 0-d or one-element array, a list -- takes
# _exchangeability_test_as_given, which keeps the value's own type as truescore does.
_FAST_CANONICAL = (float, int, np.float64, np.float32, np.float16, np.integer)


def _exchangeability_test_as_given(
    canonical: Any, permuted: npt.NDArray[np.float64], alpha: float
) -> ContaminationResult:
    """The test with the canonical value used as given, in NumPy arithmetic.

    A ``np.longdouble`` is compared with the float64 permutations at long-double precision
    (``-4.1 + 1e-18`` is not ``-4.1`` there); a 0-d float32 array keeps z in float32; an
    argument NumPy cannot subtract raises NumPy's error. All of that is what truescore
    does, so a drop-in must too. Same formulas as the compiled path.
    """
    if not np.isfinite(permuted).all():
        raise ArgumentError("permuted_logliks", "permuted_logliks contains non-finite values")
    m = int(permuted.shape[0])
    count = int(np.count_nonzero(permuted >= canonical))
    mean = float(permuted.mean())
    sd = float(permuted.std(ddof=1)) if m > 1 else 0.0
    z = (canonical - mean) / sd if sd > 0.0 else 0.0
    return ContaminationResult(
        p_value=(1.0 + count) / (m + 1.0),
        canonical_loglik=float(canonical),
        permutation_mean=mean,
        permutation_std=sd,
        z_score=float(z),
        n_permutations=m,
        level=1.0 - alpha,
    )


CombineMethod = Literal["fisher", "stouffer", "average"]


@dataclass(frozen=True)
class CombinedContamination:
    """Contamination evidence pooled over independent shards by Fisher's method.

    Attributes:
        p_value: Pooled p-value.
        statistic: Fisher's ``-2 sum log p``.
        n_shards: Number of shards pooled.
        shard_p_values: The shard p-values, kept so one driving shard can be seen.
        level: One minus the significance level of the verdict.

    The fields, ``repr``, equality and ``summary()`` are truescore's (a drop-in);
    :class:`PooledContamination` is the same evidence with the pooling method named,
    returned by :meth:`ExchangeabilityTests.combine`.

    Pooling assumes the shards are independent under the null (disjoint data, separate
    permutations). A pooled finding says some shards rank above chance; it does not say
    which, nor how much of a score they inflate.
    """

    p_value: float
    statistic: float
    n_shards: int
    shard_p_values: npt.NDArray[Any]
    level: float

    @property
    def contaminated(self) -> bool:
        """True when the pooled p-value is below the significance level."""
        return self.p_value < (1.0 - self.level)

    @property
    def pooling(self) -> str:
        """How the shards were pooled: ``"fisher"`` here."""
        return "fisher"

    @property
    def log_p_value(self) -> float:
        """Natural log of the pooled p-value, finite even where ``p_value`` underflows to 0.

        For Fisher it is exact (the chi-squared tail on even degrees of freedom is a
        finite Poisson sum); for Stouffer it is ``log Phi(-Z)``.
        """
        if self.pooling == "fisher":
            return float(_core.fisher_log_sf(self.statistic, self.n_shards))
        if self.pooling == "stouffer":
            from scipy import special  # here: importing scipy.special costs ~0.2 s

            return float(special.log_ndtr(-self.statistic))
        return math.log(self.p_value)

    def summary(self) -> str:
        """truescore's report, word for word (the drop-in contract); see :meth:`explain`."""
        smallest = float(np.min(self.shard_p_values))
        return "\n".join(
            [
                f"pooled contamination evidence over {self.n_shards} shards",
                f"  Fisher statistic {self.statistic:.4f}, combined p = {self.p_value:.4g}",
                f"  smallest shard p-value: {smallest:.4g}",
                (
                    "  pooled evidence of contamination"
                    if self.contaminated
                    else "  no pooled evidence of contamination"
                ),
            ]
        )

    def explain(self) -> str:
        """truescore_fast's report of the pooled test: method, log p, and what it means."""
        alpha = 1.0 - self.level
        smallest = float(np.min(self.shard_p_values))
        name = {"fisher": "Fisher", "stouffer": "Stouffer (mid-p)", "average": "2 x mean p"}
        finding = (
            f"finding: pooled evidence of contamination at alpha = {alpha:.3g}"
            if self.contaminated
            else f"no pooled finding at alpha = {alpha:.3g}; {_NOT_EVIDENCE_OF_ABSENCE}"
        )
        return "\n".join(
            [
                f"Pooled exchangeability tests over {self.n_shards} shards "
                f"({name.get(self.pooling, self.pooling)})",
                f"  statistic {self.statistic:.6g}, pooled p = {self.p_value:.4g}"
                f" (log p = {self.log_p_value:.6g})",
                f"  smallest shard p-value {smallest:.4g}",
                f"  {finding}",
            ]
        )


@dataclass(frozen=True, repr=False)
class PooledContamination(CombinedContamination, Result):
    """Shard p-values pooled by a named method (truescore_fast's own result type).

    Attributes:
        method: ``"fisher"``, ``"stouffer"`` (statistic: Stouffer's Z on mid-p values)
            or ``"average"`` (statistic: the mean shard p-value; p = min(1, 2 x mean)).

    The other fields are :class:`CombinedContamination`'s (``level`` included, so code that
    reads a pooled result either way works; ``alpha`` is ``1 - level``). It follows the
    library's result protocol: ``summary()`` (= ``str()``) is the longer report
    (:meth:`CombinedContamination.explain`), a short ``repr``, ``to_dict()``.
    ``combine_shards`` never returns this type, so truescore code sees truescore's fields
    and text.
    """

    method: str = "fisher"

    _repr_fields = ("method", "p_value", "statistic", "n_shards", "alpha")
    # The short repr of the result protocol, not the drop-in base's dataclass repr.
    __repr__ = Result.__repr__

    @property
    def pooling(self) -> str:
        """The ``method`` field."""
        return self.method

    @property
    def alpha(self) -> float:
        """The significance level, ``1 - level``."""
        return 1.0 - self.level

    def summary(self) -> str:
        """The longer report: method, statistic, p and log p, and the verdict."""
        return self.explain()


def _fisher_from_log_sum(
    log_sum: float, values: npt.NDArray[np.float64], alpha: float
) -> CombinedContamination:
    # -2.0 * np.sum(np.log(p)), exactly as truescore forms it.
    statistic = float(-2.0 * log_sum)
    # chi2(2k).sf is scipy's chdtrc; calling it directly skips the distribution
    # object's argument handling and gives the same number.
    from scipy import special  # here: importing scipy.special costs ~0.2 s

    p_value = float(special.chdtrc(2 * values.shape[0], statistic))
    return CombinedContamination(
        p_value=p_value,
        statistic=statistic,
        n_shards=int(values.shape[0]),
        shard_p_values=values,
        level=1.0 - alpha,
    )


def combine_shards(p_values: npt.ArrayLike, *, alpha: float = 0.05) -> CombinedContamination:
    """Pool independent shard p-values with Fisher's method.

    Under the null the shard p-values are independent and (super-)uniform, so
    ``-2 sum log p_k`` is at most chi-squared on 2K degrees of freedom.

    Args:
        p_values: One p-value per shard, each in (0, 1].
        alpha: Significance level of the verdict.

    Returns:
        A :class:`CombinedContamination`, identical to truescore 0.7.4's.

    Raises:
        ValueError: alpha outside (0, 1); p_values empty, not 1-D, non-finite, or
            outside (0, 1] (a permutation test never returns 0, so 0 means a bug
            upstream).
    """
    dropin_alpha(alpha)
    check_array_size("p_values", p_values, 9.0)  # the logs (a float64 each), then a mask
    values = np.asarray(p_values, dtype=float)  # truescore's conversion and errors
    if values.ndim != 1 or values.size == 0:
        dropin_1d("p_values", values)  # raises the shape error
    # Validate through the logs the statistic needs anyway: every p is in (0, 1] exactly
    # when every log p is finite and <= 0, i.e. when their sum is finite and the largest
    # is <= 0. This saves two passes over the input on the valid path.
    with np.errstate(all="ignore"):  # invalid input surfaces as the ValueError below
        logs = np.log(values)
        total = np.sum(logs)
    if not (np.isfinite(total) and logs.max() <= 0.0):
        dropin_1d("p_values", values)  # raises for NaN or infinity
        raise ArgumentError(
            "p_values",  # truescore's words
            "p_values must lie in (0, 1]; a permutation test cannot return exactly 0, so "
            "such a value indicates an upstream error",
        )
    return _fisher_from_log_sum(total, values, alpha)

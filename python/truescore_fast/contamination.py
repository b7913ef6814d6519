"""Did the model see the benchmark in its published order?

Under the null that a model never saw a dataset, the log-likelihood it gives the
examples concatenated in their published (canonical) order is exchangeable with the
log-likelihood of any shuffled order. The rank of the canonical value among m shuffled
values is therefore uniform, and

    p = (1 + #{j : l_j >= l_canonical}) / (m + 1)

is an exact p-value: no asymptotics, no model of how log-likelihoods are distributed.

This module is a drop-in for ``truescore.contamination`` (``exchangeability_test``,
``combine_shards`` and their result types: same signatures, fields and errors, and the
same numbers bit for bit), plus a batched form for thousands of shards at once.

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
from scipy import special

from truescore_fast import _core
from truescore_fast._numeric import scale_exponent, unscale
from truescore_fast._result import Result, TabularResult
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    dropin_1d,
    dropin_alpha,
    finite_1d,
    float_array,
)

__all__ = [
    "CombinedContamination",
    "ContaminationResult",
    "ExchangeabilityTests",
    "PooledContamination",
    "combine_shards",
    "exchangeability_test",
    "exchangeability_tests",
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
    if not np.isfinite(canonical_loglik):
        raise ValueError("canonical_loglik must be finite")
    permuted = np.asarray(permuted_logliks, dtype=float)  # truescore's conversion and errors
    if permuted.ndim != 1:
        raise ValueError(f"permuted_logliks must be 1-D; got shape {permuted.shape}")
    if permuted.size == 0:
        raise ValueError("permuted_logliks must be non-empty")
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
        raise ValueError("permuted_logliks contains non-finite values")
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
        raise ValueError(  # truescore's words
            "p_values must lie in (0, 1]; a permutation test cannot return exactly 0, so "
            "such a value indicates an upstream error"
        )
    return _fisher_from_log_sum(total, values, alpha)


@dataclass(frozen=True, repr=False)
class ExchangeabilityTests(TabularResult):
    """Exact exchangeability tests for many shards, as arrays (one entry per shard).

    Attributes:
        p_values: Exact p-values ``(1 + counts) / (n_permutations + 1)``.
        counts: Number of shuffled orders scoring at least the canonical one.
        z_scores: ``(canonical - mean) / sd``, 0 where sd is 0 (descriptive only).
        means: Mean shuffled-order log-likelihood.
        sds: Standard deviation of the shuffled orders (ddof=1; 0 when m = 1).
        n_permutations: Shuffled orders per shard.
        canonical: Published-order log-likelihoods.
        alpha: Significance level of the per-shard and pooled verdicts.

    A table (``to_frame()``: one row per shard). A shard's verdict is exactly what
    :func:`exchangeability_test` gives it alone, truescore's arithmetic included: the
    threshold is ``1 - level`` with ``level = 1 - alpha``, so at alpha = 0.05 a p-value of
    exactly 0.05 (m = 19, no shuffled order above the canonical one) counts as a finding.
    """

    _repr_fields = ("n_shards", "smallest_p_value", "alpha")

    p_values: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    z_scores: npt.NDArray[np.float64]
    means: npt.NDArray[np.float64]
    sds: npt.NDArray[np.float64]
    n_permutations: npt.NDArray[np.int64]
    canonical: npt.NDArray[np.float64]
    alpha: float

    def __len__(self) -> int:
        return int(self.p_values.shape[0])

    @property
    def n_shards(self) -> int:
        """Number of shards."""
        return len(self)

    @property
    def smallest_p_value(self) -> float:
        """The smallest shard p-value."""
        return float(self.p_values.min())

    @property
    def level(self) -> float:
        """``1 - alpha``, as the per-shard (truescore) results record it."""
        return 1.0 - self.alpha

    def _columns(self) -> dict[str, Any]:
        return {
            "shard": np.arange(len(self)),
            "canonical": self.canonical,
            "mean": self.means,
            "sd": self.sds,
            "z_score": self.z_scores,
            "count": self.counts,
            "n_permutations": self.n_permutations,
            "p_value": self.p_values,
        }

    @property
    def resolutions(self) -> npt.NDArray[np.float64]:
        """Per shard, the smallest p-value its permutations can give, ``1 / (m + 1)``."""
        return np.asarray(1.0 / (self.n_permutations + 1.0), dtype=np.float64)

    @property
    def contaminated(self) -> npt.NDArray[np.bool_]:
        """Per shard, whether its own test rejects (no correction for multiplicity)."""
        return self.p_values < (1.0 - self.level)

    def shard(self, index: int) -> ContaminationResult:
        """The result for one shard, as :func:`exchangeability_test` would give it."""
        return ContaminationResult(
            p_value=float(self.p_values[index]),
            canonical_loglik=float(self.canonical[index]),
            permutation_mean=float(self.means[index]),
            permutation_std=float(self.sds[index]),
            z_score=float(self.z_scores[index]),
            n_permutations=int(self.n_permutations[index]),
            level=self.level,
        )

    def combine(self, method: CombineMethod = "fisher") -> PooledContamination:
        """Pool the shards into one test.

        Args:
            method: ``"fisher"`` (default): ``-2 sum log p`` against chi-squared(2K).
                ``"stouffer"``: ``Z = sum Phi^-1(1 - p_mid) / sqrt(K)`` on mid-p values
                ``(0.5 + count) / (m + 1)``, every shard weighted equally whatever its
                number of permutations m, and the one-sided ``p = Phi(-Z)``: small when
                the published orders rank high (few shuffles at or above them), near 1
                when they rank low (that is no finding, in either direction). The raw
                p = 1 that a permutation test gives with probability 1/(m+1) would
                otherwise send Z to minus infinity. The
                mid-p scores have mean 0 and variance below 1 under the null, which makes
                the normal reference conservative when several shards are pooled
                (measured with 19 permutations per shard: size 0.045 at level 0.05 and
                0.021 at 0.025 for 2 to 100 shards). It is *not* a valid p-value in
                general: a mid-p is not, and with one shard the pooled p is that
                shard's mid-p, for which P(p <= t) reaches 2t at the permutation grid
                (one shard, 19 permutations: P(p <= 0.025) = 0.05). Use Fisher or
                ``"average"`` where validity at every K matters; Stouffer's Z is
                reported for comparison with the literature. ``"average"``: Oren et
                al.'s averaged shard p-value, made valid as ``min(1, 2 * mean p)`` (the
                mean of dependent or independent p-values, doubled, is always a valid
                p-value).

        Raises:
            ValueError: an unknown method.
        """
        check_choice("method", method, ("fisher", "stouffer", "average"))
        alpha = self.alpha
        if method == "fisher":
            fisher = _fisher_from_log_sum(np.sum(np.log(self.p_values)), self.p_values, alpha)
            return PooledContamination(
                p_value=fisher.p_value,
                statistic=fisher.statistic,
                n_shards=fisher.n_shards,
                shard_p_values=fisher.shard_p_values,
                level=fisher.level,
                method="fisher",
            )
        if method == "stouffer":
            mid = (0.5 + self.counts) / (self.n_permutations + 1.0)
            z = float(-np.sum(special.ndtri(mid)) / math.sqrt(len(self)))
            return PooledContamination(
                p_value=float(special.ndtr(-z)),
                statistic=z,
                n_shards=len(self),
                shard_p_values=self.p_values,
                level=self.level,
                method="stouffer",
            )
        mean_p = float(np.mean(self.p_values))  # method == "average"
        return PooledContamination(
            p_value=min(1.0, 2.0 * mean_p),
            statistic=mean_p,
            n_shards=len(self),
            shard_p_values=self.p_values,
            level=self.level,
            method="average",
        )

    def summary(self, method: CombineMethod = "fisher") -> str:
        """Per-batch overview: shard count, how many reject alone, and one pooled verdict,
        by ``method`` (see :meth:`combine`; Fisher's by default)."""
        alpha = self.alpha
        pooled = self.combine(method)
        return "\n".join(
            [
                f"Exchangeability tests on {len(self)} shards "
                f"({int(self.n_permutations.min())} to {int(self.n_permutations.max())} "
                "shuffled orders each)",
                f"  shards with p < {alpha:.3g} on their own: {int(self.contaminated.sum())} "
                f"(about {alpha * len(self):.3g} expected by chance alone)",
                f"  smallest shard p-value {float(self.p_values.min()):.4g}, "
                f"finest resolution {float(self.resolutions.min()):.4g}",
                *pooled.summary().splitlines(),
            ]
        )


def exchangeability_tests(
    canonical: npt.ArrayLike,
    permuted: npt.ArrayLike,
    *,
    offsets: npt.ArrayLike | None = None,
    alpha: float = 0.05,
    n_threads: int | None = None,
) -> ExchangeabilityTests:
    """Exact exchangeability tests for S shards in one call.

    Args:
        canonical: Shape (S,): each shard's published-order log-likelihood.
        permuted: Either a dense (S, m) array, row i holding shard i's shuffled-order
            log-likelihoods, or (with ``offsets``) a 1-D array of all shards' values
            laid end to end.
        offsets: For ragged shards, S + 1 increasing integers starting at 0 and ending
            at ``len(permuted)``; shard i is ``permuted[offsets[i]:offsets[i + 1]]``.
        alpha: Significance level for the per-shard and pooled verdicts.
        n_threads: Threads to use (default: every core). Results are identical for any
            thread count: shards are split into fixed blocks and never share sums.

    Returns:
        An :class:`ExchangeabilityTests`; each shard's numbers are those
        :func:`exchangeability_test` gives it alone. ``.combine()`` pools them.

    Raises:
        ValueError: naming the argument, for non-finite values, shapes that do not
            match, a shard without permutations, or malformed offsets.
        MemoryError: naming ``permuted`` when a copy it needs would not fit in memory.

    C-contiguous float64 input is read in place, and so are dense rows that are each
    contiguous at any row stride (a slice of rows, a zero-stride ``np.broadcast_to``);
    other dtypes and layouts are converted once. Ctrl-C stops the call within about a
    second. The same caveat as for one shard applies: no finding is not a clean bill.
    """
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    canon = finite_1d("canonical", canonical)
    # Dense rows are read in place at any row stride (a zero-stride np.broadcast_to too);
    # the ragged layout needs a C-contiguous copy, checked to fit in memory first.
    values = float_array("permuted", permuted, keep_strides=True)
    if offsets is None:
        if values.ndim != 2:
            raise ValueError(
                f"permuted must be 2-D (shards x permutations), or 1-D with offsets; got "
                f"shape {values.shape}"
            )
        if values.shape[1] == 0:
            raise ValueError("permuted must hold at least one permutation per shard")
        out = _core.rank_tests_dense(canon, values, n_threads=threads)
        bounds = None
        m = np.full(canon.shape[0], values.shape[1], dtype=np.int64)
    else:
        if values.ndim != 1:
            raise ValueError(f"permuted must be 1-D when offsets are given; got {values.shape}")
        values = float_array("permuted", values)
        bounds = _offsets(offsets)
        out = _core.rank_tests_ragged(canon, values, bounds, n_threads=threads)
        m = np.diff(bounds)
    z_scores, sds = out["z_score"], out["sd"]
    # The direct formula overflows for huge values, and squared deviations underflow for
    # tiny ones (a spread of 1e-300 reads as sd = 0, z = 0): those shards are redone on
    # values scaled by a power of two (exact).
    for i in map(int, np.flatnonzero(~np.isfinite(z_scores) | (sds < _TINY_SD))):
        z_scores[i], sds[i] = _scaled_z(i, canon[i], _shard(values, bounds, i))
    return ExchangeabilityTests(
        p_values=out["p_value"],
        counts=out["count"],
        z_scores=z_scores,
        means=out["mean"],
        sds=out["sd"],
        n_permutations=m,
        canonical=canon,
        alpha=alpha,
    )


_TINY_SD = 2.0**-400  # below it, squared deviations may have lost digits to underflow


def _shard(
    values: npt.NDArray[np.float64], bounds: npt.NDArray[np.int64] | None, i: int
) -> npt.NDArray[np.float64]:
    """Shard i's permuted values: row i of a dense array (``bounds`` None), or the slice
    between the validated offsets ``bounds[i]`` and ``bounds[i + 1]`` of a ragged one."""
    if bounds is None:
        return values[i]
    return values[bounds[i] : bounds[i + 1]]


def _scaled_z(i: int, canonical: float, permuted: npt.NDArray[np.float64]) -> tuple[float, float]:
    """Shard i's z = (canonical - mean) / sd, and sd, where the direct formula overflowed
    or underflowed: mean and sd on permutations scaled by a power of two, canonical -
    mean scaled by another, and the quotient's exponents added (each step exact or
    correctly rounded). A z beyond the largest double is an error, never an infinity."""
    if permuted.shape[0] < 2:
        return 0.0, 0.0  # one permutation has no spread (the core's convention)
    down = scale_exponent(float(np.max(np.abs(permuted))), 2.0**400)
    x = np.ldexp(permuted, down)
    sd = float(np.std(x, ddof=1))
    if not sd > 0.0:
        return 0.0, 0.0
    largest = max(abs(canonical), math.ldexp(float(np.max(np.abs(x))), -down))
    shift = scale_exponent(largest, 2.0**1000)  # |mean| <= largest
    gap = math.ldexp(canonical, shift) - math.ldexp(float(np.mean(x)), shift - down)
    (gap_m, gap_e), (sd_m, sd_e) = math.frexp(gap), math.frexp(sd)
    try:
        return math.ldexp(gap_m / sd_m, gap_e - sd_e + down - shift), unscale(sd, down)
    except OverflowError:
        raise ValueError(
            f"canonical[{i}] lies more than the largest double of standard deviations from "
            f"its permutations' mean (sd {math.ldexp(sd, -down):.3g}): z overflows; the "
            "shard's permuted log-likelihoods are all but constant"
        ) from None


def _offsets(offsets: npt.ArrayLike) -> npt.NDArray[np.int64]:
    arr = np.asarray(offsets)
    if arr.ndim != 1:
        raise ValueError(f"offsets must be 1-D; got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"offsets must hold integers; got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)

"""The exact exchangeability test for many datasets or shards at once.

:func:`exchangeability_tests` runs :func:`~truescore_fast.exchangeability_test` on every
row of a (shards, permutations) table in one core call and returns
:class:`ExchangeabilityTests`, whose :meth:`~ExchangeabilityTests.combine` pools the
shards (Fisher, Stouffer or the average) into a
:class:`~truescore_fast.PooledContamination`. The p-values are those of the one-at-a-time
test, bit for bit.

What a result does not mean: as for the single test, a pooled non-finding is absence of
evidence, not evidence of a clean model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._numeric import scale_exponent, unscale
from truescore_fast._result import TabularResult
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_index,
    check_n_threads,
    finite_1d,
    float_array,
)
from truescore_fast.contamination.exact import (
    CombineMethod,
    ContaminationResult,
    PooledContamination,
    _fisher_from_log_sum,
)
from truescore_fast.errors import ArgumentError

__all__ = [
    "ExchangeabilityTests",
    "exchangeability_tests",
]


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
        index = check_index("index", index, self.p_values.shape[0], "the number of shards")
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
            from scipy import special  # here: importing scipy.special costs ~0.2 s

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
        n_threads: Threads to use (default: every usable CPU). Results are identical for any
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
            raise ArgumentError(
                "permuted",
                f"permuted must be 2-D (shards x permutations), or 1-D with offsets; got "
                f"shape {values.shape}",
            )
        if values.shape[1] == 0:
            raise ArgumentError(
                "permuted", "permuted must hold at least one permutation per shard"
            )
        out = _core.rank_tests_dense(canon, values, n_threads=threads)
        bounds = None
        m = np.full(canon.shape[0], values.shape[1], dtype=np.int64)
    else:
        if values.ndim != 1:
            raise ArgumentError(
                "permuted", f"permuted must be 1-D when offsets are given; got {values.shape}"
            )
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
        raise ArgumentError(
            "canonical",
            f"canonical[{i}] lies more than the largest double of standard deviations from "
            f"its permutations' mean (sd {math.ldexp(sd, -down):.3g}): z overflows; the "
            "shard's permuted log-likelihoods are all but constant",
        ) from None


def _offsets(offsets: npt.ArrayLike) -> npt.NDArray[np.int64]:
    arr = np.asarray(offsets)
    if arr.ndim != 1:
        raise ArgumentError("offsets", f"offsets must be 1-D; got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ArgumentError("offsets", f"offsets must hold integers; got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)

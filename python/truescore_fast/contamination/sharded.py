"""Oren et al. (2023) at scale: the sharded likelihood comparison test and shard orders.

Scoring many permutations of a whole benchmark is expensive. Oren et al. split the
benchmark into r contiguous shards, score each shard in its published order and in P
shuffled orders, and test whether the published order is systematically favoured:

    d_i = canonical_i - mean_j shuffled_ij,    t = mean(d) / (sd(d) / sqrt(r)),

one-sided against Student's t on r - 1 degrees of freedom (the SLCT). This module
provides that test, in the released form and in a corrected form, and the reproducible
shard boundaries and permutations a user must score to run it.

What a result does not mean: like the exact rank test, the SLCT detects memorisation of
the published order; a model trained on shuffled or paraphrased copies can pass it. It
also leans on a t approximation across shards, which the exact rank test does not need.

Reference:
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
from truescore_fast._numeric import scale_exponent, unscale
from truescore_fast._random import SeedLike, seed_int
from truescore_fast._result import Result
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_index,
    check_memory,
    check_n_threads,
    check_positive_int,
    finite_1d,
    float_array,
)
from truescore_fast.errors import ArgumentError

__all__ = [
    "ShardOrders",
    "ShardedLikelihoodResult",
    "shard_orders",
    "sharded_likelihood_test",
]

Variant = Literal["corrected", "published"]


@dataclass(frozen=True, repr=False)
class ShardedLikelihoodResult(Result):
    """Oren et al.'s sharded likelihood comparison test (SLCT).

    Attributes:
        statistic: The t statistic ``mean(d) / (sd(d) / sqrt(r))``.
        p_value: One-sided p-value for "the published order is favoured". The
            "published" variant computes it as ``1 - cdf`` and so reports exactly 0 once
            it drops below about 1e-16; the "corrected" variant uses the survival function.
        log_p_value: Natural log of the p-value. For "corrected" it stays finite where
            ``p_value`` underflows; for "published" it is ``log(p_value)`` (-inf at 0).
        df: Degrees of freedom, r - 1.
        n_shards: r.
        estimate: mean(d), in log-likelihood units.
        sd_difference: sd(d): ddof=1 for "corrected", ddof=0 for "published".
        differences: d_i for every shard.
        variant: "corrected" or "published".
        alpha: Significance level of the verdict (``contaminated``).
    """

    statistic: float
    p_value: float
    log_p_value: float
    df: int
    n_shards: int
    estimate: float
    sd_difference: float
    differences: npt.NDArray[np.float64]
    variant: str
    alpha: float

    _repr_fields = ("statistic", "p_value", "estimate", "n_shards", "variant")

    @property
    def contaminated(self) -> bool:
        """True when the one-sided p-value is below ``alpha``."""
        return self.log_p_value < math.log(self.alpha)

    def summary(self) -> str:
        """A short report of the test and its verdict."""
        alpha = self.alpha
        if self.contaminated:
            verdict = f"finding: published orders score above shuffled ones at alpha = {alpha:.3g}"
        else:
            verdict = (
                f"no finding at alpha = {alpha:.3g}; this does not clear the model: training "
                "on shuffled or paraphrased copies leaves the published order unremarkable"
            )
        p_text = (
            f"{self.p_value:.4g}"
            if self.p_value > 0.0
            else f"0 in floating point (log p = {self.log_p_value:.6g})"
        )
        return "\n".join(
            [
                f"Sharded likelihood comparison test ({self.variant}), {self.n_shards} shards",
                f"  mean published-minus-shuffled difference {self.estimate:.6g} "
                f"(sd {self.sd_difference:.6g})",
                f"  t = {self.statistic:.4f} on {self.df} df, one-sided p = {p_text}",
                f"  {verdict}",
            ]
        )


def _t_log_sf(t: float, df: int) -> float:
    """log P(T_df >= t), accurate far beyond the point where the sf underflows."""
    from scipy import special  # here: importing scipy.special costs ~0.2 s

    p = float(special.stdtr(df, -t))
    if p > 1e-280:
        return math.log(p)
    # P(T >= t) = I_x(df/2, 1/2) / 2 with x = df / (df + t^2), and for small x
    # I_x(a, b) = x^a (1-x)^b / (a B(a, b)) * 2F1(a + b, 1; a + 1; x).
    a, b = df / 2.0, 0.5
    log_x = math.log(df) - (
        2.0 * math.log(t) + math.log1p(df / (t * t)) if t > 1e150 else math.log(df + t * t)
    )
    x = math.exp(log_x)
    return (
        math.log(0.5)
        + a * log_x
        + b * math.log1p(-x)
        - math.log(a)
        - float(special.betaln(a, b))
        + math.log(float(special.hyp2f1(a + b, 1.0, a + 1.0, x)))
    )


def sharded_likelihood_test(
    canonical: npt.ArrayLike,
    shuffled: npt.ArrayLike | list[npt.ArrayLike],
    *,
    variant: Variant = "corrected",
    alpha: float = 0.05,
    n_threads: int | None = None,
) -> ShardedLikelihoodResult:
    """The sharded likelihood comparison test of Oren et al. (2023).

    Args:
        canonical: Shape (r,): each shard's log-likelihood in published order.
        shuffled: Shape (r, P): each shard's log-likelihoods under P shuffled orders; or
            a list of r 1-D arrays when shards have different numbers of shuffles.
        variant: ``"corrected"`` (default): sd with ddof=1, p from the survival function
            and a log p-value that stays finite when p is far below 1e-16.
            ``"published"``: exactly the released code, ``z = mean(d) / std(d) * sqrt(r)``
            with ddof=0 and ``p = 1 - cdf(z)``, to reproduce published numbers; it
            overstates t by sqrt(r / (r - 1)) and reports p = 0 once p < ~1e-16.
        alpha: Significance level of the verdict.
        n_threads: Threads for the shuffled means (results do not depend on it).

    Returns:
        A :class:`ShardedLikelihoodResult`.

    Raises:
        ValueError: fewer than 2 shards; differences with zero variance (the t statistic
            is undefined); shapes that do not match; non-finite values; unknown variant.

    The t reference distribution is an approximation across shards (it assumes the
    differences are roughly normal); the exact rank test per shard pooled with Fisher
    (:func:`exchangeability_tests`) needs no such assumption.
    """
    check_alpha(alpha)
    check_choice("variant", variant, ("corrected", "published"))
    threads = check_n_threads(n_threads)
    canon = finite_1d("canonical", canonical)
    r = int(canon.shape[0])
    if r < 2:
        raise ValueError(f"the SLCT needs at least 2 shards; canonical has {r}")
    values, offsets = _shuffled_rows(shuffled, r)
    means = _core.row_means_ragged(values, offsets, n_threads=threads)
    # t is scale-free: log-likelihoods large enough for a row sum or a squared difference
    # to overflow, or small enough for a squared difference to underflow (a spread of
    # 1e-300 would read as zero variance), are scaled by a power of two first (exact), and
    # mean and sd scaled back.
    exponent = 0
    if not (
        np.isfinite(means).all()
        and 1.0 / _HEADROOM <= max(_largest(canon), _largest(means)) <= _HEADROOM
    ):
        exponent = scale_exponent(max(_largest(canon), _largest(values)), _HEADROOM)
        canon = np.ldexp(canon, exponent)
        means = _core.row_means_ragged(np.ldexp(values, exponent), offsets, n_threads=threads)
    d = canon - means
    with np.errstate(over="ignore"):  # checked on the next line
        differences = np.ldexp(d, -exponent)
    if not np.isfinite(differences).all():
        raise ArgumentError(
            "canonical",
            "canonical minus the shuffled means overflows float64: the differences "
            "cannot be reported; rescale the log-likelihoods",
        )
    df = r - 1
    if variant == "published":
        mean_d = float(np.mean(d))
        sd_d = float(np.std(d))
        if not sd_d > 0.0:
            raise ValueError("the shard differences have zero variance: t is undefined")
        t = float(mean_d / sd_d * np.sqrt(len(d)))
        from scipy import stats  # here, not at import: scipy.stats costs ~0.5 s

        p = float(1 - stats.t.cdf(t, df=df))
        log_p = math.log(p) if p > 0.0 else -math.inf
    else:
        mean_d = float(np.mean(d))
        sd_d = float(np.std(d, ddof=1))
        if not sd_d > 0.0:
            raise ValueError("the shard differences have zero variance: t is undefined")
        t = mean_d / (sd_d / math.sqrt(r))
        if not math.isfinite(t):
            raise ValueError("the t statistic overflows: the shard differences are degenerate")
        from scipy import special  # here: importing scipy.special costs ~0.2 s

        p = float(special.stdtr(df, -t))
        log_p = _t_log_sf(t, df)
    return ShardedLikelihoodResult(
        statistic=t,
        p_value=p,
        log_p_value=log_p,
        df=df,
        n_shards=r,
        estimate=unscale(mean_d, exponent),
        sd_difference=unscale(sd_d, exponent),
        differences=differences if exponent else d,
        variant=variant,
        alpha=alpha,
    )


_HEADROOM = 2.0**400  # values this large have sums and squares far from overflow


def _largest(values: npt.NDArray[np.float64]) -> float:
    return float(np.max(np.abs(values)))


def _shuffled_rows(shuffled: Any, r: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Shuffled log-likelihoods as (values laid end to end, row offsets)."""
    if isinstance(shuffled, (list, tuple)) and any(np.ndim(row) != 0 for row in shuffled):
        rows = [float_array("shuffled", row) for row in shuffled]
        if len(rows) != r:
            raise ArgumentError(
                "shuffled",
                f"shuffled must have one row per shard of canonical ({r}); got {len(rows)}",
            )
        for i, row in enumerate(rows):
            if row.ndim != 1 or row.size == 0:
                raise ArgumentError("shuffled", f"shuffled row {i} must be a non-empty 1-D array")
        lengths = np.array([row.size for row in rows], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        return np.concatenate(rows), offsets
    arr = float_array("shuffled", shuffled)
    if arr.ndim != 2:
        raise ArgumentError(
            "shuffled", f"shuffled must be 2-D (shards x shuffles); got shape {arr.shape}"
        )
    if arr.shape[0] != r:
        raise ArgumentError(
            "shuffled",
            f"shuffled must have one row per shard of canonical ({r}); got {arr.shape[0]}",
        )
    if arr.shape[1] == 0:
        raise ArgumentError("shuffled", "shuffled must hold at least one shuffled order per shard")
    offsets = np.arange(0, arr.size + 1, arr.shape[1], dtype=np.int64)
    return np.ascontiguousarray(arr).reshape(-1), offsets


@dataclass(frozen=True, repr=False)
class ShardOrders(Result):
    """The orders a user must score to run a sharded contamination study.

    Attributes:
        n_examples: Size of the benchmark, n.
        n_shards: Number of contiguous shards, r.
        permutations_per_shard: Shuffled orders per shard, P.
        seed: The seed they were drawn from (re-running with it gives the same orders).
        offsets: Shard boundaries, length r + 1: shard i holds examples
            ``offsets[i] .. offsets[i+1] - 1`` in published order; shard sizes are
            ``n // r + (i < n % r)``.
        permutations: One (P, size_i) integer array per shard; row j lists the example
            indices (positions in the published benchmark) of shuffled order j.
    """

    n_examples: int
    n_shards: int
    permutations_per_shard: int
    seed: int
    offsets: npt.NDArray[np.int64]
    permutations: tuple[npt.NDArray[np.int64], ...]

    def canonical(self, shard: int) -> npt.NDArray[np.int64]:
        """Example indices of ``shard`` in published order."""
        shard = check_index("shard", shard, self.n_shards, "n_shards")
        return np.arange(self.offsets[shard], self.offsets[shard + 1], dtype=np.int64)

    _repr_fields = ("n_examples", "n_shards", "permutations_per_shard", "seed")

    def summary(self) -> str:
        sizes = np.diff(self.offsets)
        return (
            f"Shard orders: {self.n_examples} examples in {self.n_shards} shards of "
            f"{int(sizes.min())} to {int(sizes.max())}, {self.permutations_per_shard} "
            f"shuffled orders each, seed {self.seed} (re-running with it gives the same orders)"
        )


def shard_orders(
    n_examples: int, n_shards: int, permutations_per_shard: int, *, seed: SeedLike = 0
) -> ShardOrders:
    """Contiguous shard boundaries and the shuffled orders to score, from a seed.

    Shard i holds ``n // r + (i < n % r)`` consecutive examples. Its P shuffled orders
    come from ``numpy.random.Generator(numpy.random.Philox(child_i))`` where ``child_i``
    is the i-th child of ``numpy.random.SeedSequence(s).spawn(r)``, ``s = seed_int(seed)``
    (the recorded ``ShardOrders.seed``): each row is ``generator.permuted`` of the shard's
    indices. Anyone with NumPy and the seed can
    regenerate the orders, and shard i's orders do not depend on how many shards follow.

    Args:
        n_examples: Benchmark size n (at least 1).
        n_shards: Number of shards r, 1 <= r <= n.
        permutations_per_shard: P >= 1 shuffled orders per shard.
        seed: Any seed ``philox_key`` accepts (default 0). The orders come from the int
            ``seed_int(seed)`` (an int seed as given), recorded as ``ShardOrders.seed``:
            the orders can always be re-created from what is recorded.

    Returns:
        A :class:`ShardOrders`. Shuffles are uniform over all orders, so one can equal
        the published order; the exact test stays valid either way.

    Raises:
        ValueError: for a non-integer or out-of-range argument.
        MemoryError: naming ``n_shards`` or ``permutations_per_shard`` when the orders
            would not fit in memory (estimated before anything is allocated).
    """
    n = check_positive_int("n_examples", n_examples)
    r = check_positive_int("n_shards", n_shards)
    p = check_positive_int("permutations_per_shard", permutations_per_shard)
    s = seed_int(seed)
    if r > n:
        raise ArgumentError(
            "n_shards", template=f"{{n_shards}} must be at most {{n_examples}} ({n}); got {r}"
        )
    # The orders (8 bytes an index) and, per shard, its array and offsets (measured: about
    # 300 bytes a shard at the peak), before anything is allocated.
    data, per_shard = 8.0 * n * p, 300.0 * r
    if data >= per_shard:
        check_memory(
            "permutations_per_shard",
            data + per_shard,
            f"the orders of {{n_examples}}={n} examples take 8 bytes per example and order; "
            "use fewer {permutations_per_shard}",
        )
    else:
        check_memory("n_shards", data + per_shard, "use fewer {n_shards}")
    sizes = n // r + (np.arange(r) < n % r)
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    perms = []
    for i in range(r):
        # SeedSequence(s).spawn(r)[i], made one at a time rather than all r up front.
        child = np.random.SeedSequence(s, spawn_key=(i,))
        gen = np.random.Generator(np.random.Philox(child))
        indices = np.arange(offsets[i], offsets[i + 1], dtype=np.int64)
        base = np.broadcast_to(indices, (p, sizes[i]))
        perms.append(gen.permuted(base, axis=1))
    return ShardOrders(
        n_examples=n,
        n_shards=r,
        permutations_per_shard=p,
        seed=s,
        offsets=offsets,
        permutations=tuple(perms),
    )

"""Sign-flip tests of per-seed contrasts: the seed-paired contrast.

:func:`seed_contrast` summarises a contrast measured once per training seed: mean,
t-interval, seeds positive and the exact two-sided sign-flip p (the CleanScore paper's
Table 1). It runs on the sign-flip kernels of ``src/cpp/truescore/signflip.hpp``, as do
the package's other sign-flip tests: :func:`truescore_fast.paired_permutation` and
:func:`truescore_fast.paired_confidence_test` with ``method="sign_flip"``.

Randomness (Monte Carlo only): ``seed`` (default 0; any seed ``numpy.random.default_rng``
takes but None) is turned into one Philox4x64-10 key by :func:`truescore_fast._random.philox_key`;
random sign vectors are drawn in blocks of 256 per Philox stream, so the p-value is
bit-identical for any ``n_threads``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._numeric import scale_exponent, student_t_quantile, unscale, upper_quantile
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._result import Result
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    check_positive_int,
    finite_1d,
)
from truescore_fast.errors import ArgumentError

__all__ = ["SeedContrast", "seed_contrast"]

MAX_EXACT_SEEDS = 40


@dataclass(frozen=True, repr=False)
class SeedContrast(Result):
    """A contrast measured once per training seed.

    Attributes:
        estimate, sd: Mean and standard deviation (ddof = 1) of the per-seed contrasts
            (``sd`` is the spread between seeds, not a standard error: that is
            ``sd / sqrt(n)``).
        low, high: Student-t interval estimate +- t_{n-1, 1-alpha/2} sd / sqrt(n).
        n_positive, n_negative: Seeds with contrast > 0 and < 0 ("seeds positive").
        p_value: Two-sided sign-flip p: the share of sign vectors s with
            ``|sum s_i x_i| >= |sum x_i|`` (exact over all 2^n vectors, or Monte Carlo with the
            +1 correction).
        method: ``"exact"`` or ``"monte-carlo"``; n_sign_vectors: 2^n or the draws.

    What it does not mean: the p is about seeds of this training recipe; it says nothing
    about other data, models or recipes, and with 10 seeds the smallest possible exact p
    is 2/1024.
    """

    n: int
    estimate: float
    sd: float
    low: float
    high: float
    alpha: float
    n_positive: int
    n_negative: int
    p_value: float
    method: str
    n_sign_vectors: int

    _repr_fields = ("estimate", "low", "high", "p_value", "n")

    def summary(self) -> str:
        return "\n".join(
            [
                f"Seed-paired contrast over {self.n} seeds: mean {self.estimate:+.3f}, "
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
    seed: SeedLike = 0,
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
        draws, seed: For Monte Carlo only (``seed``: any seed ``philox_key`` accepts,
            default 0).
        n_threads: Threads for Monte Carlo (None: every usable CPU); never changes the result.

    Null: each seed's contrast is symmetric about 0, so its sign is a fair coin. The
    statistic is ``|sum x_i|``; sign vectors whose ``|sum|`` is within 16 m eps sum
    ``|x_i|`` (m the
    nonzero values, eps the float64 epsilon: a bound on the rounding of any signed sum) of
    the observed one count as ties (at least as extreme). Monte Carlo draws random sign
    vectors in blocks of 256 per Philox stream, as every sign-flip test of the package.

    Raises:
        ValueError: fewer than 2 values, non-finite values, bad alpha, an unknown method,
            ``"exact"`` with more than 40 values, a bad seed, draws < 1.
    """
    x = finite_1d("values", values)
    if x.size < 2:
        raise ArgumentError("values", f"values needs at least 2 seeds; got {x.size}")
    check_alpha(alpha)
    check_choice("method", method, ("auto", "exact", "monte_carlo"))
    threads = check_n_threads(n_threads)
    # checked whatever the method: a bad value is refused, never ignored by one method
    d = check_positive_int("draws", draws)
    key = philox_key(seed)
    n = x.size
    # Everything below is scale-free or scale-equivariant: values whose sums or squares
    # would overflow (or squares underflow) are scaled by a power of two (exact) first.
    exponent = scale_exponent(float(np.max(np.abs(x))), 2.0**400)
    if exponent:
        x = np.ldexp(x, exponent)
    mean = float(np.mean(x))
    sd = float(np.std(x, ddof=1))
    # No spread, no width (the quantile may be infinite for a subnormal alpha: inf * 0).
    quantile = upper_quantile(lambda p: student_t_quantile(p, n - 1), alpha / 2)
    half = quantile * sd / math.sqrt(n) if sd > 0.0 else 0.0
    low, high = unscale(mean - half, exponent), unscale(mean + half, exponent)
    mean, sd = unscale(mean, exponent), unscale(sd, exponent)
    if not math.isfinite(sd):
        raise ArgumentError(
            "values", "values: their standard deviation overflows float64; rescale them"
        )
    exact = method == "exact" or (method == "auto" and n <= MAX_EXACT_SEEDS)
    if exact:
        if n > MAX_EXACT_SEEDS:
            raise ArgumentError(
                "values",
                f"values: exact enumeration handles at most {MAX_EXACT_SEEDS} seeds; got {n} "
                "(use method='monte_carlo')",
            )
        count = _core.sign_flip_count_two_sided(x)
        vectors = 2**n
        p = count / vectors
        used = "exact"
    else:
        hits = _core.sign_flip_counts(
            x, exact=False, n_resamples=d, key0=key[0], key1=key[1], n_threads=threads
        )["count_two_sided"]
        p = (1.0 + hits) / (d + 1.0)
        vectors = d
        used = "monte-carlo"
    return SeedContrast(
        n=n,
        estimate=mean,
        sd=sd,
        low=low,
        high=high,
        alpha=alpha,
        n_positive=int(np.count_nonzero(x > 0)),
        n_negative=int(np.count_nonzero(x < 0)),
        p_value=float(min(p, 1.0)),
        method=used,
        n_sign_vectors=int(vectors),
    )

"""Exact power-of-two rescaling, shared by every function whose sums could overflow; and
upper-tail quantiles that stay finite and accurate for every alpha in (0, 1).

Sums of values near the float64 limit overflow. Multiplying by a power of two is exact
(short of the subnormal range), and means, quantiles, standard deviations and comparisons
with zero commute with it, so a function can work on scaled values and scale its results
back without changing any digit.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = [
    "SMALL_TAIL",
    "overflow_exponent",
    "scale_exponent",
    "student_t_quantile",
    "unscale",
    "upper_quantile",
]

# Below this tail probability, 1 - tail is not used: it rounds (to 1.0 below ~1.1e-16,
# where a quantile is infinite) and loses the tail's digits. From it up, 1 - tail moves a
# quantile by less than 1e-13, and the functions keep the bits they always had. The same
# switch as the compiled core's upper_normal_quantile (src/cpp/truescore/numeric.hpp).
SMALL_TAIL = 1e-3


def overflow_exponent(largest: float, headroom: float) -> int:
    """The exponent e <= 0 for which ``largest * 2**e`` lies within ``headroom``.

    0 when ``largest <= headroom`` (nothing to do, the usual case); otherwise
    ``floor(log2(headroom)) - ceil(log2(largest))``. Scale values by ``2.0**e`` (or
    ``ldexp(x, e)``) and results back by ``2.0**-e``.

    Downward only, for the truescore drop-ins (``paired_bootstrap``,
    ``paired_permutation``): their deterministic fields must equal truescore's bit for
    bit, which computes subnormal values as they are; scaling those up would round
    differently. Everything else uses :func:`scale_exponent`.
    """
    if largest <= headroom:
        return 0
    return math.floor(math.log2(headroom)) - math.ceil(math.log2(largest))


def scale_exponent(largest: float, headroom: float) -> int:
    """:func:`overflow_exponent`, and also upward for tiny values: 0 when ``largest`` is 0
    or lies within [1 / headroom, headroom]; otherwise the exponent that brings it just
    below ``headroom``. Values near the subnormal range have squares that underflow to 0
    (a spread of 1e-320 looks like no spread at all); scaled up, they do not, and the
    scaling is exact (a subnormal has fewer bits, never more)."""
    if largest == 0.0 or 1.0 / headroom <= largest <= headroom:
        return 0
    return math.floor(math.log2(headroom)) - math.ceil(math.log2(largest))


def unscale(value: float, exponent: int) -> float:
    """``value * 2**-exponent``, undoing :func:`overflow_exponent`'s scaling; beyond the
    largest double, the infinity of its sign (an interval end out there is no bound at
    all, and a sum out there is still that large)."""
    try:
        return math.ldexp(value, -exponent)
    except OverflowError:
        return math.copysign(math.inf, value)


def upper_quantile(ppf: Callable[[float], float], tail: float) -> float:
    """The 1 - ``tail`` quantile of a distribution symmetric about 0 with quantile
    function ``ppf``: ``-ppf(tail)`` below :data:`SMALL_TAIL`, ``ppf(1 - tail)`` above."""
    if tail < SMALL_TAIL:
        return -float(ppf(tail))
    return float(ppf(1.0 - tail))


def student_t_quantile(p: float, df: float) -> float:
    """Student's t quantile: ``scipy.stats.t.ppf(p, df)``, except in the far lower tail
    where SciPy's answer is not a finite negative number (``t.ppf(5e-301, 5)`` is +inf):
    there from the regularized incomplete beta function, P(T < -t) = I_x(df/2, 1/2) / 2
    with x = df / (df + t^2), so t = sqrt(df (1 - x)) / sqrt(x) (-inf only when the
    quantile lies beyond the largest double)."""
    from scipy import special, stats

    q = float(stats.t.ppf(p, df))
    if p < 0.5 and not (q < 0.0 and math.isfinite(q)):
        x = float(special.betaincinv(df / 2.0, 0.5, 2.0 * p))
        with_overflow = math.sqrt(df * (1.0 - x)) / math.sqrt(x) if x > 0.0 else math.inf
        q = -with_overflow
    return q

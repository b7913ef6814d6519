"""Exact power-of-two rescaling, shared by every function whose sums could overflow.

Sums of values near the float64 limit overflow. Multiplying by a power of two is exact
(short of the subnormal range), and means, quantiles, standard deviations and comparisons
with zero commute with it, so a function can work on scaled values and scale its results
back without changing any digit.
"""

from __future__ import annotations

import math

__all__ = ["overflow_exponent", "unscale"]


def overflow_exponent(largest: float, headroom: float) -> int:
    """The exponent e <= 0 for which ``largest * 2**e`` lies within ``headroom``.

    0 when ``largest <= headroom`` (nothing to do, the usual case); otherwise
    ``floor(log2(headroom)) - ceil(log2(largest))``. Scale values by ``2.0**e`` (or
    ``ldexp(x, e)``) and results back by ``2.0**-e``.
    """
    if largest <= headroom:
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

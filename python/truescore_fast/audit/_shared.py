"""What the matched-form audit shares with the randomization test and the sequential
audit: the check of the public and fresh scores, the parents' betting order, the
control bank's readings and the tau interval's half-width. Not a public API (the module
is private).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import numpy.typing as npt

from truescore_fast._validation import check_unit_interval

__all__ = ["CONTROL_READINGS", "check_forms", "scoring_order", "tau_half_width"]


def check_forms(
    public: npt.ArrayLike, fresh: npt.ArrayLike, prefix: str = ""
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The public scores (n,) and the fresh ones (n, K), checked (messages name the arrays
    with ``prefix``: ``control public``)."""
    pub = check_unit_interval(f"{prefix}public", public)
    fr = check_unit_interval(f"{prefix}fresh", fresh)
    if pub.ndim != 1:
        raise ValueError(
            f"{prefix}public must be 1-D (one score per parent); got shape {pub.shape}"
        )
    if fr.ndim == 1:
        fr = fr[:, None]
    if fr.ndim != 2:
        raise ValueError(f"{prefix}fresh must be 1-D or (n, K); got shape {fr.shape}")
    if fr.shape[0] != pub.shape[0]:
        raise ValueError(
            f"{prefix}fresh must have one row per parent: {prefix}public has {pub.shape[0]}, "
            f"{prefix}fresh has {fr.shape[0]}"
        )
    if fr.shape[1] < 1:
        raise ValueError(f"{prefix}fresh must hold at least one fresh form per parent")
    if pub.shape[0] < 2:
        raise ValueError(f"{prefix}public needs at least 2 parents; got {pub.shape[0]}")
    return pub, fr


#: The readings of the negative-control bank (``control_reading``).
CONTROL_READINGS = ("wald", "hoeffding", "fixed")


def scoring_order(n: int, seed_used: int) -> npt.NDArray[np.int64]:
    """The random order of n parents for an (already normalised) integer seed:
    ``numpy.random.default_rng(seed_used).permutation(n)``, the order the fixed audit
    reads its parents in and the order :func:`~truescore_fast.audit_order` hands out.
    A fresh array each call (the orders of recent small (n, seed) pairs are kept: seeding
    the generator costs more than a small audit's intervals)."""
    if n <= _CACHED_ORDER_MAX:
        return _cached_order(n, seed_used).copy()
    return np.random.default_rng(seed_used).permutation(n).astype(np.int64)


_CACHED_ORDER_MAX = 4096  # at most 64 orders of 32 KiB each are kept


@functools.lru_cache(maxsize=64)
def _cached_order(n: int, seed_used: int) -> npt.NDArray[np.int64]:
    order = np.random.default_rng(seed_used).permutation(n).astype(np.int64)
    order.flags.writeable = False
    return order


def tau_half_width(lo_d: float, hi_d: float, lc: float, uc: float, r: float) -> float:
    """The tau interval's half-width: Delta's interval [lo_d, hi_d] less the control
    bank's [lc, uc] widened by the transport radius r."""
    width = 0.5 * ((hi_d - (lc - r)) - (lo_d - (uc + r)))
    if math.isinf(width):  # a radius near the largest double: the same sum, regrouped
        width = 0.5 * (hi_d - lo_d) + 0.5 * (uc - lc) + r
    return width

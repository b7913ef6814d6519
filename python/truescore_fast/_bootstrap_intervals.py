"""Bootstrap interval helpers shared by the public modules: the equal-tailed percentile
interval and Efron's BCa interval, computed from replicates already drawn."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["bca_interval", "percentile_interval", "tail_levels"]


def tail_levels(alpha: float) -> npt.NDArray[np.float64]:
    """The two quantile levels of an equal-tailed 1 - alpha interval."""
    return np.array([alpha / 2, 1 - alpha / 2])


def percentile_interval(replicates: npt.ArrayLike, alpha: float) -> npt.NDArray[np.float64]:
    """``[low, high]``: the alpha/2 and 1 - alpha/2 quantiles of the replicates (NumPy's
    default linear interpolation)."""
    return np.quantile(np.asarray(replicates, dtype=np.float64), tail_levels(alpha))


def bca_interval(
    reps: npt.NDArray[np.float64],
    estimate: float,
    loo_groups: list[npt.NDArray[np.float64]],
    alpha: float,
) -> tuple[npt.NDArray[np.float64], float, float]:
    """BCa interval (Efron 1987), its bias correction z0 and acceleration a.

    ``loo_groups`` holds, per independently resampled group, the leave-one-out estimates
    (the acceleration combines groups as scipy.stats.bootstrap combines samples).
    """
    from scipy import special  # here: importing scipy.special costs ~0.2 s

    b = reps.size
    # Replicates within rounding of the estimate are ties (counted half): with 0/1 data
    # many replicates equal the estimate in exact arithmetic, and the last bit must not
    # decide on which side they fall.
    tol = 1e-12 * (1.0 + abs(estimate))
    below = np.count_nonzero(reps < estimate - tol)
    ties = np.count_nonzero(np.abs(reps - estimate) <= tol)
    share = (below + 0.5 * ties) / b
    share = min(max(share, 0.5 / b), 1 - 0.5 / b)
    z0 = float(special.ndtri(share))
    num = den = 0.0
    for loo in loo_groups:
        n = loo.size
        u = (n - 1) * (loo.mean() - loo)
        num += float(np.sum(u**3)) / n**3
        den += float(np.sum(u**2)) / n**2
    a = num / (6.0 * den**1.5) if den > 0 else 0.0
    z = special.ndtri(tail_levels(alpha))
    shifted = z0 + z
    denom = 1.0 - a * shifted
    levels = special.ndtr(z0 + shifted / np.where(denom > 0, denom, np.inf))
    levels = np.clip(levels, 0.0, 1.0)
    return np.quantile(reps, levels), z0, a

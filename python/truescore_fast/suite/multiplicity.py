"""Adjusting a suite's p-values for multiplicity: Benjamini-Hochberg, Benjamini-Yekutieli
and Holm, in one call (:func:`adjust`).

A suite audit runs hundreds of tests; at a per-test level of 0.05 some flag by chance.
The adjusted p-values here are compared with one level q: a test is flagged when its
adjusted p-value is at most q.

* ``"bh"`` (Benjamini-Hochberg, the default): the expected share of false flags among the
  flags (the false discovery rate, FDR) is at most q when the tests are independent or
  positively dependent (PRDS): the usual case for one-sided tests whose statistics rise
  together, such as the tests of one model on related benchmarks.
* ``"by"`` (Benjamini-Yekutieli): BH's adjusted p-values times c(m) = 1 + 1/2 + ... + 1/m,
  which controls the FDR at q under *any* dependence. Prefer it when the tests may be
  dependent in ways that are not positive: several tests of the same (model, benchmark)
  reuse the same items (the matched-form audit and the randomization test read the same
  gaps; ConStat compares each model with the others, so one model's tests on a benchmark
  are built from the same reference fit), and nothing guarantees PRDS among them. It is
  more conservative: c(m) is about ln(m) + 0.58, 6.3 for m = 300.
* ``"holm"``: the chance of *any* false flag (the family-wise error rate) is at most q,
  under any dependence. The strictest: use it when a single false flag is costly.

What the FDR does not mean: it is an average over repeated suites, not the chance that a
given flag is false; a flagged (model, benchmark, test) may be a false one, and an
unflagged one is not shown clean (the test may lack power, or a leak may carry over to
the fresh forms where no test sees it). With no real effect anywhere, FDR and
family-wise control coincide: every flag is false.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from truescore_fast._validation import check_choice, p_values_1d
from truescore_fast.compare.paired import benjamini_hochberg, holm

__all__ = ["FDR_METHODS", "adjust"]

FdrMethod = Literal["bh", "by", "holm"]

#: The values of ``adjust(method=...)`` (and of ``suite_audit(fdr=...)``).
FDR_METHODS: tuple[str, ...] = ("bh", "by", "holm")


def adjust(p_values: npt.ArrayLike, method: FdrMethod = "bh") -> npt.NDArray[Any]:
    """Adjusted p-values, in input order: compare each with one level q.

    Args:
        p_values: The family's p-values, 1-D, each in [0, 1].
        method: ``"bh"`` (Benjamini-Hochberg: FDR <= q for independent or positively
            dependent tests), ``"by"`` (Benjamini-Yekutieli: FDR <= q under any
            dependence; BH's adjusted values times c(m) = sum_{i<=m} 1/i, capped at 1) or
            ``"holm"`` (Holm: the chance of any false rejection <= q). See the module
            docstring for when to prefer which.

    Returns:
        A float64 array of the adjusted p-values, each in [0, 1] and at least its
        p-value.

    Raises:
        ValueError: an unknown method; p-values empty, not 1-D, non-finite or outside
            [0, 1].
        TypeError: values NumPy cannot convert to float.

    What it does not mean: an adjusted p-value at most q does not say this test's finding
    is true with probability 1 - q; the FDR bounds the *average* share of false flags.
    """
    check_choice("method", method, FDR_METHODS)
    p = p_values_1d("p_values", p_values)
    if method == "holm":
        return np.asarray(holm(p), dtype=np.float64)
    adjusted = np.asarray(benjamini_hochberg(p), dtype=np.float64)
    if method == "by":
        # c(m) summed from the smallest term up: the same number for any platform
        harmonic = float(np.sum(1.0 / np.arange(p.shape[0], 0, -1, dtype=np.float64)))
        adjusted = np.minimum(1.0, adjusted * harmonic)
    return adjusted

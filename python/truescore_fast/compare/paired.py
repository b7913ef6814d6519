"""Is system A better than system B on the same examples?

Paired comparisons on a compiled core, as a drop-in for ``truescore.compare``'s
``paired_bootstrap``, ``paired_permutation``, ``holm``, ``benjamini_hochberg`` and
``ComparisonResult`` (same signatures, defaults, fields and errors).

- ``paired_bootstrap`` streams: each resample's indices are drawn and summed on the fly,
  so memory is O(n + n_bootstrap) rather than truescore's (n_bootstrap x n) index matrix.
  When the differences take few distinct values (binary, rubric or Likert scores), a
  resample's counts of each value are drawn directly as one multinomial, which has
  exactly the distribution of counting n drawn indices, in O(#values) time.
- ``paired_permutation`` enumerates all 2^n sign flips exactly when 2^n <= n_resamples
  (the p-value is then identical to truescore's) and otherwise samples n_resamples random
  swap patterns with the +1 correction, counting each by the enumeration's (SciPy's)
  statistic and tie rule, so both modes estimate the same p-value. A pattern is first
  classified from a signed sum of the differences with a proven rounding bound; only
  near-ties are evaluated with SciPy's float statistic, which gives the same counts.
- ``holm`` and ``benjamini_hochberg`` give exactly truescore's adjusted p-values.

Randomness: ``seed`` (anything ``numpy.random.default_rng`` accepts, None included) becomes
a Philox4x64-10 key (:func:`truescore_fast._random.dropin_philox_key`);
resamples come in blocks of 256 and block k draws from counter ``[0, 0, k, 0]``, so a
result is reproducible from ``seed`` and identical for any number of threads. Monte Carlo
results are statistically equivalent to truescore's, not equal draw for draw: truescore
uses NumPy's default generator on a different sampling scheme.

What a result does not mean: a small p-value says the observed difference is unlikely
if the two systems were exchangeable on these examples. It says nothing about examples
unlike these, and a large p-value is not evidence that the systems are equal.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._bootstrap_intervals import percentile_interval
from truescore_fast._numeric import overflow_exponent
from truescore_fast._random import dropin_philox_key
from truescore_fast._validation import (
    check_same_length,
    cluster_codes,
    dropin_1d,
    dropin_alpha,
    p_values_1d,
)
from truescore_fast.errors import ArgumentError

__all__ = [
    "ComparisonResult",
    "benjamini_hochberg",
    "holm",
    "paired_bootstrap",
    "paired_permutation",
]

# The sign-flip stream uses a key distinct from the bootstrap's (same seed), so the
# permutation p-value and the interval reported with it never share random words.
_PERMUTATION_KEY_TWEAK = 0x5065726D75746521

# Data with K distinct differences and K * _DISCRETE_COST <= n (pass/fail, rubric and
# Likert scores) are bootstrapped by drawing each resample's multinomial counts (K - 1
# binomials) rather than n indices: the same distribution of resampled means, O(K) work.
_DISCRETE_COST = 30


@dataclass(frozen=True)
class ComparisonResult:
    """Two systems compared on the same examples.

    Attributes:
        difference: Mean metric of A minus mean metric of B; positive favours A.
        low: Lower end of the interval for the difference.
        high: Upper end of the interval for the difference.
        level: Nominal coverage of the interval (1 - alpha).
        p_value: Two-sided p-value for "no difference".
        method: Which procedure produced the result.
        n_pairs: Number of paired examples.
        n_discordant: For binary tests defined on disagreements, how many examples the
            two systems disagree on; ``None`` otherwise.

    ``significant`` is a statement about these examples under this procedure, not about
    how large or important the difference is; a non-significant result does not show
    that the systems perform the same.
    """

    difference: float
    low: float
    high: float
    level: float
    p_value: float
    method: str
    n_pairs: int
    n_discordant: int | None = None

    @property
    def significant(self) -> bool:
        """True when the p-value is below the significance level ``1 - level``."""
        return self.p_value < (1.0 - self.level)

    def summary(self) -> str:
        """truescore's report, word for word: procedure, difference, interval, p, verdict.

        The text is part of the drop-in contract (scripts and dashboards parse it); a
        plainer explanation of what the numbers do and do not say is :meth:`explain`.
        """
        verdict = (
            "difference is statistically distinguishable from zero"
            if self.significant
            else "difference is NOT distinguishable from zero -- this may be noise"
        )
        lines = [
            f"{self.method} on n={self.n_pairs} paired examples",
            f"  difference (A - B): {self.difference:+.4f} "
            f"[{self.low:+.4f}, {self.high:+.4f}] at {self.level:.0%}",
            f"  p = {self.p_value:.4g}: {verdict}",
        ]
        if self.n_discordant is not None:
            lines.append(f"  discordant pairs: {self.n_discordant} (all the evidence lives here)")
        return "\n".join(lines)

    def explain(self) -> str:
        """truescore_fast's longer reading of the result: what the verdict does not say."""
        if self.significant:
            verdict = "the systems differ beyond what chance on these examples explains"
        else:
            verdict = "no detectable difference -- the gap is within what chance alone produces"
        lines = [
            f"{self.method}, {self.n_pairs} paired examples",
            f"  A - B = {self.difference:+.4f}, {self.level:.0%} interval "
            f"[{self.low:+.4f}, {self.high:+.4f}]",
            f"  p-value {self.p_value:.4g} (two-sided): {verdict}",
        ]
        if self.n_discordant is not None:
            lines.append(
                f"  pairs where the systems disagree: {self.n_discordant} "
                "(only these carry evidence)"
            )
        lines.append(
            "  a difference on these examples says nothing about examples unlike them, and "
            "no finding is not evidence that the systems are equal"
        )
        return "\n".join(lines)


def _scaled_pairs(
    a: npt.ArrayLike, b: npt.ArrayLike, alpha: float
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    """Validated alpha, a and b; a and b times a power of two s, and s.

    s keeps n * max(|a|, |b|) * s far below overflow (s = 1.0 almost always); means,
    percentiles and comparisons with zero commute with it (see ``_numeric``).
    """
    dropin_alpha(alpha)
    arr_a = dropin_1d("a", a)
    arr_b = dropin_1d("b", b)
    check_same_length("a", arr_a, "b", arr_b)
    largest = max(float(np.max(np.abs(arr_a))), float(np.max(np.abs(arr_b))))
    scale = 2.0 ** overflow_exponent(largest, 2.0**1000 / (4 * arr_a.shape[0]))
    if scale != 1.0:
        arr_a, arr_b = arr_a * scale, arr_b * scale
    return arr_a, arr_b, scale


def _check_n_bootstrap(n_bootstrap: Any) -> int:
    """``n_bootstrap`` as a positive int, or truescore's exception for it.

    truescore's count reaches NumPy as ``rng.integers(..., size=(n_bootstrap, n))``, and
    a zero count as the percentile of no resamples. Anything but a positive integer is
    replayed through the same two calls (with no memory to fill), so the exception type
    and message are NumPy's, exactly as truescore users see them: ``IndexError`` for 0,
    ``TypeError`` for a float or bool, ``ValueError`` for a negative count.
    """
    if isinstance(n_bootstrap, (int, np.integer)) and not isinstance(n_bootstrap, bool):
        if 1 <= n_bootstrap < 2**63:
            return int(n_bootstrap)
    np.random.default_rng(0).integers(0, 1, size=(n_bootstrap, 0))  # raises as truescore
    count = operator.index(n_bootstrap)  # an int-like that NumPy took
    if count == 0:
        with np.errstate(invalid="ignore"):
            np.percentile(np.empty(0), [2.5, 97.5])  # raises truescore's IndexError
    return count


def _bootstrap(
    diffs: npt.NDArray[np.float64],
    alpha: float,
    n_bootstrap: Any,
    key: tuple[int, int],
    clusters: npt.ArrayLike | None,
) -> ComparisonResult:
    n = diffs.shape[0]
    if clusters is None:
        n_bootstrap = _check_n_bootstrap(n_bootstrap)
        values, counts = np.unique(diffs, return_counts=True)
        if values.shape[0] * _DISCRETE_COST <= n:
            means = _core.bootstrap_means_discrete(
                values, counts.astype(np.int64), n_bootstrap, key[0], key[1]
            )
        else:
            means = _core.bootstrap_means(diffs, n_bootstrap, key[0], key[1])
        method = "paired bootstrap (percentile)"
    else:
        codes, n_groups = cluster_codes("clusters", clusters, n)
        if n_groups < 2:
            raise ArgumentError(
                "clusters", f"cluster bootstrap needs at least 2 clusters; got {n_groups}"
            )
        n_bootstrap = _check_n_bootstrap(n_bootstrap)
        sums = np.bincount(codes, weights=diffs, minlength=n_groups)
        sizes = np.bincount(codes, minlength=n_groups).astype(np.int64)
        means = _core.cluster_bootstrap_means(sums, sizes, n_bootstrap, key[0], key[1])
        method = f"cluster bootstrap (percentile, {n_groups} clusters)"
    low, high = percentile_interval(means, alpha)
    # Resamples exactly at zero count in both tails: when A and B agree everywhere every
    # resample is 0, and the answer must be p = 1, not p = 0.
    at_or_below = np.count_nonzero(means <= 0.0) / n_bootstrap
    at_or_above = np.count_nonzero(means >= 0.0) / n_bootstrap
    return ComparisonResult(
        difference=float(diffs.mean()),
        low=float(low),
        high=float(high),
        level=1.0 - alpha,
        p_value=float(min(1.0, 2.0 * min(at_or_below, at_or_above))),
        method=method,
        n_pairs=n,
    )


def paired_bootstrap(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    n_bootstrap: int = 10000,
    seed: int = 0,
    clusters: npt.ArrayLike | None = None,
) -> ComparisonResult:
    """Paired percentile bootstrap for the difference in means, A - B.

    Examples (pairs) are resampled with replacement, so the pairing is kept. With
    ``clusters``, whole clusters are resampled instead and each resample's difference is
    (sum of the drawn clusters' differences) / (number of examples drawn): the right unit
    when examples come in correlated groups (epochs of one item, turns of one dialogue).

    Args:
        a: Per-example metric of system A.
        b: Per-example metric of system B, aligned with ``a``.
        alpha: Significance level; the interval has coverage ``1 - alpha``.
        n_bootstrap: Number of resamples.
        seed: Makes the result reproducible: anything ``numpy.random.default_rng``
            accepts (an int, a sequence of ints, a SeedSequence, a BitGenerator, a
            Generator, a RandomState, or None for fresh entropy).
        clusters: Optional cluster label per example.

    Returns:
        A :class:`ComparisonResult`. The interval is the (alpha/2, 1 - alpha/2)
        percentile interval of the resampled differences; the p-value is twice the
        smaller of the fractions of resamples <= 0 and >= 0 (capped at 1), i.e. the
        smallest level at which the percentile interval excludes zero. It is a
        bootstrap approximation, not an exact test, and it is least reliable for few
        examples or few clusters.

    Raises (each exactly as truescore 0.7.4 raises it, message included):
        ValueError: alpha outside (0, 1); a or b empty, not 1-D, holding non-finite
            values, of different lengths or not convertible to float (NumPy's message);
            a negative n_bootstrap; a negative seed; clusters not 1-D, of the wrong
            length, or naming fewer than 2 clusters; differences too large for float64
            (truescore returns NaN there instead).
        TypeError: a or b of a type NumPy cannot convert (a set, a dict, a generator,
            complex numbers); n_bootstrap not an integer (a float, a bool, None); a seed
            NumPy refuses (a float, a string).
        IndexError: n_bootstrap = 0, which truescore lets reach ``np.percentile`` of no
            resamples; mirrored on purpose, so code that catches it keeps working.
    """
    arr_a, arr_b, scale = _scaled_pairs(a, b, alpha)
    key = dropin_philox_key(seed)
    return _unscale(_bootstrap(arr_a - arr_b, alpha, n_bootstrap, key, clusters), scale)


def _unscale(result: ComparisonResult, scale: float) -> ComparisonResult:
    result = replace(
        result,
        difference=result.difference / scale,
        low=result.low / scale,
        high=result.high / scale,
    )
    if not all(math.isfinite(v) for v in (result.difference, result.low, result.high)):
        raise ValueError(
            "a - b is too large for float64: the difference or its interval overflows"
        )
    return result


def _check_permutation_args(
    arr_a: npt.NDArray[np.float64], arr_b: npt.NDArray[np.float64], n_resamples: Any
) -> float | int:
    """``n_resamples`` as a positive int or ``math.inf``, or truescore's exception.

    truescore hands both to ``scipy.stats.permutation_test``, which refuses fewer than 2
    pairs and a count that is not a positive whole number (or infinity). Anything else is
    replayed through SciPy's own argument checks (which stop before any statistic is
    computed), so the exception and message are the installed SciPy's, as in truescore.
    """
    if arr_a.shape[0] >= 2:
        if isinstance(n_resamples, (int, np.integer)) and n_resamples >= 1:
            math.isinf(n_resamples)  # beyond every double: SciPy's OverflowError, as here
            return int(n_resamples)
        if isinstance(n_resamples, (float, np.floating)):
            if n_resamples == math.inf:
                return math.inf
            if n_resamples >= 1 and float(n_resamples).is_integer():
                return int(n_resamples)
    from scipy import stats  # imported here: only bad input pays for it

    class _Accepted(Exception):
        pass

    def statistic(*_args: Any, **_kwargs: Any) -> float:
        raise _Accepted

    try:
        stats.permutation_test(
            (arr_a, arr_b), statistic, permutation_type="samples", n_resamples=n_resamples
        )
    except _Accepted:
        pass
    # SciPy took what the fast path did not (a 0-d array, say): read it as it would.
    value = float(n_resamples)
    return math.inf if math.isinf(value) else operator.index(int(value))


def paired_permutation(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    alpha: float = 0.05,
    n_resamples: int = 10000,
    seed: int = 0,
) -> ComparisonResult:
    """Sign-flip permutation test for the difference in means, A - B.

    Under the null that A's and B's scores are exchangeable within each pair, swapping
    the two scores of any pair (flipping the sign of its difference) leaves the
    distribution unchanged. When 2^n <= n_resamples every one of the 2^n swap patterns
    is evaluated and the p-value is exact (and identical to truescore's); otherwise
    n_resamples random patterns are drawn and each tail is counted as
    (1 + #{as extreme}) / (n_resamples + 1), which keeps the test valid. Both modes compute
    each pattern's mean(x) - mean(y) as SciPy does and count ties as SciPy does (within 100
    eps of the observed statistic, relative), so the Monte Carlo p-value estimates exactly
    the p-value the enumeration computes.

    Args:
        a: Per-example metric of system A (at least 2 pairs).
        b: Per-example metric of system B, aligned with ``a``.
        alpha: Significance level of the accompanying bootstrap interval.
        n_resamples: Random sign patterns when exact enumeration is too large; a whole
            number, or ``numpy.inf`` to demand exact enumeration.
        seed: Makes the result reproducible.

    Returns:
        A :class:`ComparisonResult`. The p-value is the permutation p-value; the interval
        is :func:`paired_bootstrap`'s with the same ``alpha`` and ``seed`` (a permutation
        test has no interval of its own). The test is of exchangeability within pairs,
        not of equal means under arbitrary distributions.

    Raises:
        ValueError: as :func:`paired_bootstrap`; for fewer than 2 pairs or an n_resamples
            that is not a positive whole number (SciPy's messages, as in truescore); and
            for one that asks for exact enumeration (n_resamples >= 2^n) with more than 30
            pairs -- 2^31 patterns and up, which truescore would attempt and not finish in
            any useful time.
        TypeError: as :func:`paired_bootstrap`, and n_resamples None or a string.
    """
    arr_a, arr_b, scale = _scaled_pairs(a, b, alpha)
    n = arr_a.shape[0]
    key = dropin_philox_key(seed)
    budget = _check_permutation_args(arr_a, arr_b, n_resamples)
    p_value = _sign_flip_p_value(arr_a, arr_b, budget, key)
    interval = _unscale(_bootstrap(arr_a - arr_b, alpha, 10000, key, None), scale)
    return ComparisonResult(
        difference=interval.difference,
        low=interval.low,
        high=interval.high,
        level=1.0 - alpha,
        p_value=p_value,
        method="paired permutation (sign-flip)",
        n_pairs=n,
    )


def _sign_flip_p_value(
    arr_a: npt.NDArray[np.float64],
    arr_b: npt.NDArray[np.float64],
    budget: float | int,
    key: tuple[int, int],
) -> float:
    n = arr_a.shape[0]
    if budget >= 2**n:
        if n > _core.MAX_EXACT_PAIRS:
            raise ArgumentError(
                "n_resamples",
                template=f"exact enumeration of 2^{n} sign patterns is infeasible; "
                f"pass a finite {{n_resamples}} below 2^{n}",
            )
        counts = _core.sign_flip_exact_pairs(arr_a, arr_b)
        extra = 0
    else:
        if budget >= 2**63:
            raise ArgumentError(
                "n_resamples",
                f"n_resamples must be below 2**63 for Monte Carlo sampling; got {budget}",
            )
        # Random swap patterns with the enumeration's statistic and tie rule, so the two
        # modes estimate the same p (truescore's Monte Carlo does the same, via SciPy).
        perm_key = (key[0], key[1] ^ _PERMUTATION_KEY_TWEAK)
        counts = _core.sign_flip_monte_carlo_pairs(
            arr_a, arr_b, n_resamples=int(budget), key0=perm_key[0], key1=perm_key[1]
        )
        extra = 1
    total = counts["n_patterns"] + extra
    lower = (counts["count_less"] + extra) / total
    upper = (counts["count_greater"] + extra) / total
    return float(min(1.0, max(0.0, 2.0 * min(lower, upper))))


def holm(p_values: npt.ArrayLike) -> npt.NDArray[Any]:
    """Holm's step-down adjustment (family-wise error control), in input order.

    With p-values sorted ascending, the k-th (0-based) of m becomes
    ``min(1, max_{j <= k} (m - j) * p_(j))``. Compare the adjusted values with the
    original alpha. Valid under any dependence between the tests; it controls the chance
    of any false rejection, which makes it conservative when many tests are real.

    Raises:
        ValueError: empty, not 1-D, non-finite, outside [0, 1], or strings that are not
            numbers.
        TypeError: values NumPy cannot convert to float (a set, a dict, complex numbers).
    """
    p = p_values_1d("p_values", p_values, dropin=True)
    m = p.shape[0]
    order = np.argsort(p)
    scaled = (m - np.arange(m)) * p[order]
    adjusted = np.empty(m, dtype=float)
    # The running maximum starts from +0.0, as truescore's does: "+ 0.0" turns the -0.0
    # that a p-value of -0.0 would otherwise carry through into +0.0 (and nothing else).
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate(scaled) + 0.0)
    return adjusted


def benjamini_hochberg(p_values: npt.ArrayLike) -> npt.NDArray[Any]:
    """Benjamini-Hochberg adjusted p-values (q-values, false discovery rate), input order.

    With p-values sorted ascending and ranks i = 1..m, ``q_(i) = min(1, min_{j >= i}
    m / j * p_(j))``. Rejecting q <= alpha keeps the expected share of false discoveries
    among the rejections at most alpha for independent or positively dependent tests;
    it does not bound the chance of any single false rejection.

    Raises:
        ValueError: empty, not 1-D, non-finite, outside [0, 1], or strings that are not
            numbers.
        TypeError: values NumPy cannot convert to float (a set, a dict, complex numbers).
    """
    p = p_values_1d("p_values", p_values, dropin=True)
    m = p.shape[0]
    order = np.argsort(p)[::-1]
    factors = m / (m - np.arange(m))
    scaled = factors * p[order]
    running = np.minimum.accumulate(np.minimum(1.0, scaled))
    zeros = running == 0.0
    if zeros.any():
        # A running minimum keeps the first zero it meets, sign included (as truescore's
        # loop does); NumPy's minimum may pick either zero of a +0.0/-0.0 pair.
        running[zeros] = scaled[np.argmax(scaled == 0.0)]
    adjusted = np.empty(m, dtype=float)
    adjusted[order] = running
    return adjusted

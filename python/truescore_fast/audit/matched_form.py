"""How much of a benchmark score could be exposure? The matched-form audit (CleanScore).

For each sampled parent item i = 1..n (drawn without replacement from a benchmark of N
parents) a model is scored on the public form and on K fresh forms of the same item.
The gap d_i = public_i - mean_k fresh_ik lies in [-1, 1], and Delta-hat = mean d is the
public-form advantage. This module runs the audit: intervals for Delta that hold (the
methods are in :mod:`truescore_fast.audit.intervals`), a control bank for the ordinary
form-mismatch term b, and the sensitivity interval for the exposure effect
tau = Delta - b; :func:`matched_form_audits` audits every model of a long-format table
(read by :func:`read_audit_table`). The exact randomization test of "no form effect" is
in :mod:`truescore_fast.audit.randomization`.

The audit's primary interval is the finite-population Wald interval when at least
``guardrail`` gaps are nonzero, else a distribution-free ``fallback`` (betting by
default). The betting interval depends on the order of the gaps; the audit fixes the
order with a recorded seed so it is never an accident of the file.

What a result does not mean: a paraphrase audit sees only the part of a leak's effect
that does *not* carry over to the fresh forms. In the paper's positive control most of
the effect (an estimated 77%, interval 52% to 110%) carried over to the paraphrases and
was invisible to the audit. An interval that covers zero is therefore not evidence that
the score is clean.

References:
    J. Opoku and D. Banahene, "CleanScore: Black-Box Benchmark Audits with Negative
    Controls and Sensitivity Bounds".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._random import SeedLike, seed_int
from truescore_fast._result import Result, built
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_population_size,
    check_positive_int,
    real_scalar,
)
from truescore_fast.audit._methods import FALLBACK_METHODS, TRAITS, methods_for
from truescore_fast.audit._shared import (
    CONTROL_READINGS,
    check_forms,
    scoring_order,
    tau_half_width,
)
from truescore_fast.audit.data import ALL_MODELS, AuditData, _read_table, read_audit_table
from truescore_fast.audit.intervals import Interval, _single, _single_and_half, interval
from truescore_fast.errors import ArgumentError, literal

__all__ = [
    "ControlBank",
    "MatchedFormAudit",
    "matched_form_audit",
    "matched_form_audits",
]


_NULL_DOES_NOT_MEAN = (
    "An interval that covers zero does not mean the score is clean. A paraphrase audit sees "
    "only the part of a leak's effect that does not carry over to the fresh forms; in the "
    "CleanScore positive control an estimated 77% of the effect (interval 52% to 110%) "
    "carried over to the paraphrases and was invisible to any paraphrase audit."
)


@dataclass(frozen=True, repr=False)
class ControlBank(Result):
    """The control bank's form gap b_C (never-public items, scored the same way).

    ``estimate`` is b_C-hat, the bank's mean gap. ``readings`` holds b_C's interval at
    level 1 - alpha/2 under three readings: ``"wald"`` (the paper's registered
    construction), ``"hoeffding"`` (the small-sample guardrail applied to the bank too)
    and ``"fixed"`` (the bank as a fully measured object: zero width, the transport
    radius carries everything).
    """

    estimate: float
    n: int
    nonzero_gaps: int
    public_score: float
    fresh_score: float
    readings: dict[str, Interval]

    _repr_fields = ("estimate", "n", "nonzero_gaps")

    def summary(self) -> str:
        lines = [
            f"Control bank: n = {self.n}, b_C = {self.estimate:+.4f}, "
            f"nonzero gaps {self.nonzero_gaps}"
        ]
        lines += [f"  b_C ({name:<9}) {iv}" for name, iv in self.readings.items()]
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class MatchedFormAudit(Result):
    """The result of :func:`matched_form_audit`.

    Attributes:
        public_score, fresh_score: Mean correctness on the public and on the fresh forms.
        estimate: Delta-hat, the mean gap (public minus mean fresh).
        n, n_forms: Sampled parents and fresh forms per parent (K).
        nonzero_gaps: Parents whose gap is not zero.
        population_size: N, the benchmark's number of parents, or None.
        alpha: Error rate; every interval in ``intervals`` has level 1 - alpha.
        intervals: Every interval for Delta, by method (Hoeffding-Serfling only with N).
        primary: The interval the claim uses, and ``primary_reason`` why it was chosen.
        control: The control bank, or None when there is none.
        control_reading: Which reading of the bank the claim uses.
        transport_radius: r, the assumed bound ``|b - b_C| <= r``.
        tau: Sensitivity interval for tau = Delta - b: [L - (U_C + r), U - (L_C - r)],
            built from Delta's primary method and b_C's interval each at 1 - alpha/2.
        tau_intervals: tau under every reading of the bank.
        claim: True only when both ``primary`` and ``tau`` lie entirely above zero (never
            when either is empty: see :class:`~truescore_fast.audit.intervals.Interval`).
        seed, order: The recorded shuffle of the parents used by the betting interval
            (``order[t]`` is the parent placed at step t; ``to_dict`` leaves it out: it
            follows from the seed).

    What a result does not mean: ``claim`` False is not evidence of a clean score (see
    :meth:`summary`), and ``claim`` True says exposure is the best reading only under
    the transport radius given.
    """

    public_score: float
    fresh_score: float
    estimate: float
    n: int
    n_forms: int
    nonzero_gaps: int
    population_size: int | None
    alpha: float
    intervals: dict[str, Interval]
    primary: Interval
    primary_reason: str
    control: ControlBank | None
    control_reading: str
    transport_radius: float
    tau: Interval
    tau_intervals: dict[str, Interval]
    claim: bool
    guardrail: int
    fallback: str
    seed: int
    order: npt.NDArray[np.int64]

    _dict_exclude = ("order",)

    def __repr__(self) -> str:
        return (
            f"MatchedFormAudit(estimate={self.estimate:.4g}, primary={self.primary.method!r}, "
            f"low={self.primary.low:.4g}, high={self.primary.high:.4g}, n={self.n}, "
            f"claim={self.claim})"
        )

    def summary(self) -> str:
        """A readable report, including what a null result does not mean."""
        lines = [
            f"Matched-form audit: n = {self.n} parents, K = {self.n_forms} fresh form(s)"
            + (f", N = {self.population_size}" if self.population_size else ""),
            f"  public score {self.public_score:.4f}, fresh score {self.fresh_score:.4f}, "
            f"Delta-hat {self.estimate:+.4f}, nonzero gaps {self.nonzero_gaps}",
            f"  primary interval {self.primary}: {self.primary_reason}",
        ]
        for name, iv in self.intervals.items():
            lines.append(f"    {name:<20} {iv}  half-width {iv.half_width:.4f}")
        if self.control is None:
            lines.append(
                "  no control bank: tau assumes the form-mismatch term b satisfies "
                f"|b| <= r = {self.transport_radius:g}"
            )
        else:
            c = self.control
            lines.append(
                f"  control bank: n = {c.n}, b_C = {c.estimate:+.4f}, "
                f"nonzero gaps {c.nonzero_gaps}"
            )
            for name, iv in c.readings.items():
                lines.append(f"    b_C ({name:<9}) {iv}")
        lines.append(f"  transport radius r = {self.transport_radius:g}")
        for name, iv in self.tau_intervals.items():
            mark = "  <- used for the claim" if name == self.control_reading else ""
            lines.append(f"    tau ({name:<9}) [{iv.low:+.4f}, {iv.high:+.4f}]{mark}")
        if self.claim:
            lines.append(
                "  CLAIM: the primary interval and the tau interval both exclude zero on the "
                "positive side; exposure is supported under the stated transport radius."
            )
        else:
            lines.append(
                "  No claim: the primary interval or the tau interval reaches zero or below."
            )
            lines.append("  " + _NULL_DOES_NOT_MEAN)
        lines.append(f"  (betting order: parents shuffled with seed {self.seed})")
        return "\n".join(lines)


def _gaps(
    public: npt.ArrayLike, fresh: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], int, int, float, float, float]:
    """The audit's gaps d = public - mean fresh (n,), their nonzero count, K, and the
    public, fresh and gap means. The fast path (issue 37): float64 arrays of scores in
    [0, 1] give them (NumPy's sums) in one core call; anything else is validated (and
    raises) and computed with NumPy. The same numbers either way."""
    fast = _core.matched_form_gaps(public, fresh)
    if fast is None:
        pub, fr = check_forms(public, fresh)
        d = np.ascontiguousarray(pub - fr.mean(axis=1))
        nonzero, k = int(np.count_nonzero(d)), fr.shape[1]
        return d, nonzero, k, float(np.mean(pub)), float(np.mean(fr)), float(np.mean(d))
    d, nonzero, public_sum, fresh_sum, gap_sum = fast
    n = d.shape[0]
    k = 1 if np.ndim(fresh) == 1 else np.shape(fresh)[1]
    return d, nonzero, k, public_sum / n, fresh_sum / (n * k), gap_sum / n


def matched_form_audit(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    *,
    population_size: int | None = None,
    control: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
    transport_radius: float = 0.0,
    alpha: float = 0.05,
    guardrail: int = 30,
    fallback: str = "betting",
    seed: SeedLike = 0,
    control_reading: str = "wald",
) -> MatchedFormAudit:
    """The matched-form audit of one model on one benchmark.

    Args:
        public: Correctness on the public form, shape (n,), values in [0, 1].
        fresh: Correctness on the fresh forms, shape (n, K) (or (n,) for K = 1).
        population_size: N, the number of parents the n were drawn from without
            replacement; enables the finite-population corrections, and cuts every
            interval for Delta to the values the n gaps allow (the N - n others
            anywhere in [-1, 1]).
        control: ``(public, fresh)`` for a control bank of never-public items scored the
            same way, or None.
        transport_radius: r >= 0, the assumed bound on ``|b - b_C|``.
        alpha: Error rate of every interval and of the claim.
        guardrail: When fewer than this many parents have a nonzero gap, the Wald
            interval is not trusted and ``fallback`` is primary.
        fallback: ``"betting"`` (default), ``"hoeffding"`` (the paper's registration),
            ``"bernstein"`` or ``"hoeffding_serfling"`` (needs N).
        seed: Shuffles the parents into a recorded order before the betting interval:
            ``numpy.random.default_rng(seed_int(seed)).permutation(n)``. Any seed
            ``philox_key`` accepts (default 0); the result records the int it used.
        control_reading: Which reading of the control bank the claim uses: ``"wald"``
            (registered), ``"hoeffding"`` or ``"fixed"``.

    Returns:
        A :class:`MatchedFormAudit`. ``claim`` is True only when both the primary Delta
        interval and the tau interval lie entirely above zero.

    Raises:
        ValueError: scores outside [0, 1] or non-finite, mismatched shapes, n < 2,
            N < n, bad alpha / radius / guardrail / fallback / seed.

    A null result does not mean the score is clean: most of a leak's effect can carry
    over to paraphrases, where no paraphrase audit can see it.
    """
    check_alpha(alpha)
    d, nonzero, k, public_score, fresh_score, estimate = _gaps(public, fresh)
    n = d.shape[0]
    pop = check_population_size(population_size, n)
    radius = real_scalar("transport_radius", transport_radius, low=0.0)
    guard = check_positive_int("guardrail", guardrail, minimum=0)
    check_choice("fallback", fallback, FALLBACK_METHODS)
    if TRAITS[fallback].needs_population and pop is None:
        raise ArgumentError(
            "fallback",
            template=f"{{fallback}} {literal(repr(fallback))} needs {{population_size}}",
        )
    check_choice("control_reading", control_reading, CONTROL_READINGS)
    seed_used = seed_int(seed)
    order = scoring_order(n, seed_used)
    d_ordered = np.ascontiguousarray(d[order])
    if nonzero < guard:
        primary_method = fallback
        reason = (
            f"{nonzero} nonzero gaps < guardrail {guard}: the Wald interval is not trusted, "
            f"the distribution-free {fallback} interval is primary"
        )
    else:
        primary_method = "wald"
        reason = f"{nonzero} nonzero gaps >= guardrail {guard}: finite-population Wald interval"
    # every interval at alpha, and for tau (Delta and b_C each at 1 - alpha/2, so the pair
    # holds jointly at 1 - alpha) the primary one at alpha / 2
    half_alpha = alpha / 2.0
    intervals, primary_half = _single_and_half(methods_for(pop), primary_method, d_ordered,
                                               pop, alpha)  # fmt: skip
    primary = intervals[primary_method]
    lo_d, hi_d = primary_half.low, primary_half.high
    bank: ControlBank | None = None
    if control is None:
        readings_c = {"none": (0.0, 0.0)}
        reading_used = "none"
    else:
        bank = control_bank(control, half_alpha)
        readings_c = {name: (iv.low, iv.high) for name, iv in bank.readings.items()}
        reading_used = control_reading
    r = radius  # validated above
    tau_intervals = {
        name: interval(
            low=lo_d - (uc + r),
            high=hi_d - (lc - r),
            estimate=estimate - (0.0 if bank is None else bank.estimate),
            method=f"sensitivity ({primary_method} Delta, {name} control, r = {r:g})",
            alpha=alpha,
            half_width=tau_half_width(lo_d, hi_d, lc, uc, r),
            empty=primary_half.empty,  # built on an empty set, tau is no interval either
        )
        for name, (lc, uc) in readings_c.items()
    }
    tau = tau_intervals[reading_used]
    return built(  # MatchedFormAudit(...) without its __init__ (a setattr per field)
        MatchedFormAudit,
        public_score=public_score,
        fresh_score=fresh_score,
        estimate=estimate,
        n=n,
        n_forms=k,
        nonzero_gaps=nonzero,
        population_size=pop,
        alpha=alpha,
        intervals=intervals,
        primary=primary,
        primary_reason=reason,
        control=bank,
        control_reading=reading_used,
        transport_radius=r,
        tau=tau,
        tau_intervals=tau_intervals,
        claim=primary.excludes_zero_above and tau.excludes_zero_above,
        guardrail=guard,
        fallback=fallback,
        seed=seed_used,
        order=order,
    )


class ClaimRule:
    """The matched-form audit's claim as a function of alpha, for one model's ``public``
    and ``fresh`` scores under the audit's defaults (no population size, no control bank,
    radius 0, guardrail 30, betting fallback) and ``seed``: ``rule(alpha)`` is
    ``matched_form_audit(public, fresh, alpha=alpha, seed=seed).claim``, the same bit for
    bit, from the primary interval alone (at alpha and at alpha / 2, two core calls)
    instead of the whole audit. The suite audit inverts it to a p-value.

    Attributes:
        audit: the audit at alpha 0.05 (validating the input; its primary method is the
            rule's, chosen from the data alone).
    """

    def __init__(self, public: npt.ArrayLike, fresh: npt.ArrayLike, *, seed: SeedLike = 0,
                 audit: MatchedFormAudit | None = None) -> None:  # fmt: skip
        if audit is None:
            audit = matched_form_audit(public, fresh, seed=seed)
        self.audit = audit
        self._method = audit.primary.method
        self._d = np.ascontiguousarray(_gaps(public, fresh)[0][audit.order])  # as the audit

    def outcome(self, alpha: float) -> tuple[bool, bool]:
        """(the claim at ``alpha``, whether the primary or the tau interval is empty)."""
        m = self._method
        primary = _single((m,), self._d, None, alpha)[m]
        half = _single((m,), self._d, None, alpha / 2.0)[m]  # tau's Delta, no bank, r = 0
        claim = primary.excludes_zero_above and half.excludes_zero_above
        return claim, primary.empty or half.empty

    def __call__(self, alpha: float) -> bool:
        return self.outcome(alpha)[0]


def control_bank(control: Any, alpha: float) -> ControlBank:
    """The control bank ``(public, fresh)`` read at level 1 - ``alpha`` (the audits pass
    alpha/2, so that Delta and b_C hold jointly at 1 - alpha)."""
    if not isinstance(control, (tuple, list)) or len(control) != 2:
        raise ArgumentError("control", "control must be a (public, fresh) pair of arrays")
    cpub, cfr = check_forms(control[0], control[1], prefix="control ")
    dc = np.ascontiguousarray(cpub - cfr.mean(axis=1))
    b = float(np.mean(dc))
    readings = _single(("wald", "hoeffding"), dc, None, alpha)
    readings["fixed"] = Interval(b, b, b, "fixed", 0.0, 0.0)
    return ControlBank(
        estimate=b,
        n=int(dc.shape[0]),
        nonzero_gaps=int(np.count_nonzero(dc)),
        public_score=float(np.mean(cpub)),
        fresh_score=float(np.mean(cfr)),
        readings=readings,
    )


def _audit_data(table: Any, name: str = "table") -> dict[str, AuditData]:
    if isinstance(table, AuditData):
        return {table.model: table}
    if (
        isinstance(table, Mapping)
        and table
        and all(isinstance(item, AuditData) for item in table.values())
    ):
        return dict(table)
    if name == "table":
        return read_audit_table(table)
    return _read_table(
        table,
        name,
        parent_column="parent",
        form_column="form",
        correct_column="correct",
        model_column="model",
        public_form="public",
    )


def matched_form_audits(
    table: Any, *, control: Any = None, **options: Any
) -> dict[str, MatchedFormAudit]:
    """:func:`matched_form_audit` for every model of a long-format table.

    ``table`` is anything :func:`read_audit_table` reads with its default column names,
    or data already read: an :class:`AuditData` (from :func:`read_harness_runs`, or
    ``read_audit_table(..., parent_column=...)``) or a ``{model: AuditData}`` mapping.
    ``control`` is the control bank in the same forms. With a ``model`` column its
    rows are matched to the audited model (a model missing from it is an error);
    without one the same bank serves every model. Other keyword arguments go to
    :func:`matched_form_audit`.
    """
    data = _audit_data(table)
    banks = _audit_data(control, "control") if control is not None else None
    results: dict[str, MatchedFormAudit] = {}
    for model, item in data.items():
        results[model] = matched_form_audit(
            item.public, item.fresh, control=control_for(model, banks), **options
        )
    return results


def control_for(
    model: str, banks: dict[str, AuditData] | None, name: str = "control"
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """Model ``model``'s control bank ``(public, fresh)`` from ``{model: AuditData}``: its
    own rows, or the one bank of a table without a ``model`` column; None without banks.

    Raises:
        ValueError: the banks name models, but not this one (the message names ``name``:
            the argument, or the command line's flag).
    """
    if banks is None:
        return None
    if model in banks:
        bank = banks[model]
    elif list(banks) == [ALL_MODELS]:
        bank = banks[ALL_MODELS]
    else:
        raise ArgumentError(name, f"{name} has no rows for model {model!r}")
    return bank.public, bank.fresh

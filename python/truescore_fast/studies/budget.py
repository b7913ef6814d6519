"""The budget study and the audit-size planner: subsample n parents of a multi-model
audit for the mean half-width, the recovery of the full-sample ordering of the models and
the share of pairs ordered as in the full sample (CleanScore, Table 10);
:func:`plan_audit_size` gives the parents needed for a given power.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._numeric import upper_quantile
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_gaps,
    check_n_threads,
    check_open_unit,
    check_positive_int,
    float_array,
)
from truescore_fast.audit._methods import INTERVAL_METHODS, code_of
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._common import (
    check_floats,
    check_replications,
    check_sizes,
    mean_with_se,
    rate_with_se,
    run_meta,
    table_columns,
)
from truescore_fast.studies._engine import (
    BUDGET_LAYOUT,
    CELL_STRIDE,
    BudgetSums,
    Cell,
    execute,
)

__all__ = [
    "budget_study",
    "plan_audit_size",
]


# ---------------------------------------------------------------------------- budget


def _gap_matrix(gaps: Any) -> tuple[npt.NDArray[np.float64], tuple[str, ...]]:
    if isinstance(gaps, Mapping):
        names = tuple(str(k) for k in gaps)
        rows = [check_gaps(f"gaps[{k!r}]", v) for k, v in gaps.items()]
        if len({r.shape for r in rows}) > 1:
            raise ValueError("every model's gaps must cover the same parents (equal lengths)")
        matrix = np.ascontiguousarray(np.stack(rows)) if rows else np.zeros((0, 0))
    else:
        matrix = check_gaps("gaps", gaps, ndim=2)
        names = tuple(f"model {i}" for i in range(matrix.shape[0]))
    if matrix.shape[0] < 2:
        raise ArgumentError("gaps", "gaps must hold at least 2 models (rows)")
    return matrix, names


def budget_study(
    gaps: npt.ArrayLike | Mapping[str, npt.ArrayLike],
    *,
    sizes: int | Sequence[int] = (25, 50, 100, 150),
    interval: str = "wald",
    replications: int = 2000,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """Budgeted audits: what a subsample of n parents recovers of a multi-model audit.

    ``gaps`` holds M models' gaps on the same N audited parents ((M, N), or a mapping
    model name -> gaps). Each replication draws n of the N parents without replacement
    (the same parents for every model) and records the mean ``interval`` half-width over
    models (with N as the population size), whether the subsample orders all models'
    mean gaps exactly as the full sample does, and the share of model pairs it orders as
    the full sample does. Pairs the full sample ties are left out; a pair tied in the
    subsample counts as not ordered.

    ``n_threads``, ``progress``, ``executor`` and ``checkpoint`` work as in
    :func:`coverage_study`; none of them changes a result.

    Returns:
        A :class:`StudyTable`, one row per n: half_width, half_width_se, exact_order,
        exact_order_se, pairs_correct, pairs_correct_se (CleanScore, Table 10).

    What it does not mean: recovering the full-sample ordering says nothing about the
    true ordering; the full sample is itself a sample.
    """
    matrix, names = _gap_matrix(gaps)
    check_alpha(alpha)
    check_choice("interval", interval, INTERVAL_METHODS)
    ns = check_sizes("sizes", sizes)
    reps = check_replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    big_n = matrix.shape[1]
    full = matrix.mean(axis=1)
    # the pairs (i, j) the full sample orders strictly, mean i > mean j, row by row
    pair_high, pair_low = (
        np.ascontiguousarray(a, dtype=np.int64) for a in np.nonzero(full[:, None] > full[None, :])
    )
    if not pair_high.size:
        raise ArgumentError(
            "gaps",
            "gaps: the full sample ties every model (equal mean gaps): there is no ordering "
            "to recover",
        )
    if max(ns) > big_n:
        raise ArgumentError(
            "sizes", f"sizes must not exceed the {big_n} audited parents; got {max(ns)}"
        )
    cells = [
        Cell(
            "budget_tasks",
            (matrix, size, pair_high, pair_low, code_of(interval), alpha),
            key,
            c * CELL_STRIDE,
            reps,
            BUDGET_LAYOUT,
        )
        for c, size in enumerate(ns)
    ]
    totals = execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="budget",
        checkpoint=checkpoint,
    )
    columns = table_columns(
        (
            "n",
            "half_width",
            "half_width_se",
            "exact_order",
            "exact_order_se",
            "pairs_correct",
            "pairs_correct_se",
        ),
        (
            (
                size,
                *mean_with_se(t[BudgetSums.HALF_WIDTH], t[BudgetSums.HALF_WIDTH_SQUARES], reps),
                *rate_with_se(t[BudgetSums.EXACT_ORDER], reps),
                *mean_with_se(
                    t[BudgetSums.PAIRS_CORRECT], t[BudgetSums.PAIRS_CORRECT_SQUARES], reps
                ),
            )
            for size, t in zip(ns, totals, strict=True)
        ),
    )
    return StudyTable(
        title=f"Budgeted audits: {len(names)} models, subsamples of N = {big_n:,} parents "
        f"({reps:,} per size, {interval} half-width)",
        columns=columns,
        notes=(
            f"exact_order: the subsample orders all {len(names)} models as the full sample "
            f"does; pairs_correct: share of the {pair_high.size} strictly ordered pairs kept. "
            f"Seed {seed!r}.",
            "Recovering the full-sample ordering is not recovering the true ordering.",
        ),
        meta={
            **run_meta("budget", seed, key, reps),
            "alpha": alpha,
            "interval": interval,
            "models": list(names),
            "full_means": full.tolist(),
        },
    )


def plan_audit_size(
    gaps: npt.ArrayLike,
    deltas: float | Sequence[float] = (0.02, 0.05, 0.10),
    *,
    power: float = 0.8,
    alpha: float = 0.05,
    population_size: int | None = None,
    guardrail: int = 30,
) -> StudyTable:
    """Parents needed for the interval rule to detect an advantage delta with ``power``.

    From pilot gaps (1-D, or (models, N): variances and nonzero shares averaged over
    models): under the normal approximation the finite-population Wald rule claims with
    probability Phi(delta / se(n) - z_{1-alpha/2}), se(n)^2 = (1 - n/N) s^2 / n, so
    n0 = (z_{1-alpha/2} + z_power)^2 s^2 / delta^2 and, with N, n = n0 N / (n0 + N).
    The rule uses Wald only with at least ``guardrail`` nonzero gaps, so the plan is at
    least guardrail / (nonzero share). ``n_planned`` is the larger, rounded up.

    What it does not mean: the normal approximation assumes the pilot's gap variance
    holds under the advantage; check the plan with :func:`detection_study` on the bank.
    """
    from scipy.stats import norm

    arr = float_array("gaps", gaps)
    if arr.ndim not in (1, 2):
        raise ArgumentError("gaps", f"gaps must be 1-D or 2-D (models, N); got shape {arr.shape}")
    matrix = check_gaps("gaps", arr if arr.ndim == 2 else arr[None, :], ndim=2)
    check_alpha(alpha)
    check_open_unit("power", power)
    ds = check_floats("deltas", deltas)
    if 0.0 in ds:
        raise ArgumentError("deltas", "deltas must be positive")
    guard = check_positive_int("guardrail", guardrail, minimum=0)
    if population_size is not None:
        population_size = check_positive_int("population_size", population_size, minimum=2)
    variance = float(np.mean(matrix.var(axis=1, ddof=1)))
    share = float(np.mean(matrix != 0))
    z = upper_quantile(norm.ppf, alpha / 2) + float(norm.ppf(power))
    rows = []
    for delta in ds:
        squared = delta * delta  # 0.0 for deltas below ~1e-162: no finite plan
        n0 = z * z * variance / squared if squared > 0.0 else math.inf
        if population_size is None:
            n_norm = n0
        else:  # finite-population correction; n0 = inf needs the whole population
            n_norm = (
                n0 * population_size / (n0 + population_size) if n0 < math.inf else population_size
            )
        # A plan beyond 2**53 parents has no exact integer: report it as inf, as n_guardrail.
        n_normal: float = max(2, math.ceil(n_norm)) if n_norm < 2.0**53 else math.inf
        n_guard = math.inf if share == 0 else math.ceil(guard / share)
        planned = max(n_normal, n_guard)
        rows.append((delta, math.sqrt(variance), n_normal, float(n_guard), float(planned)))
    columns = table_columns(("delta", "gap_sd", "n_normal", "n_guardrail", "n_planned"), rows)
    return StudyTable(
        title=f"Parents needed to detect an advantage delta with power {power:g} "
        f"(alpha = {alpha:g})",
        columns=columns,
        notes=(
            f"Normal approximation for the finite-population Wald rule; nonzero-gap share "
            f"{share:.3f}, guardrail {guard}. n_planned = max(n_normal, n_guardrail); inf "
            "means the pilot has no nonzero gap.",
            "Check a plan by simulation with detection_study on the bank itself.",
        ),
        meta={"study": "plan", "power": power, "alpha": alpha, "population_size": population_size},
    )

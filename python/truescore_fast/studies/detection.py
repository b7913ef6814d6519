"""The detection study: detection rate of a planted public-form advantage, the interval
rule against the exact randomization test (CleanScore, Tables 11-12), type-I error with
the labels relabelled so the null holds (Fig. 10), and rejections under pure form
mismatch (Table 13).

A detection rate is a property of the effect and design simulated: a low rate at a small
planted effect does not say that a real audit of that size would miss a real leak.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from concurrent.futures import Executor

import numpy as np
import numpy.typing as npt

from truescore_fast._random import SeedLike, philox_key
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    check_positive_int,
    one_line,
)
from truescore_fast.audit._methods import FALLBACK_METHODS, code_of
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._common import (
    check_floats,
    check_replications,
    check_sizes,
    model_banks,
    rate_with_se,
    run_meta,
    table_columns,
)
from truescore_fast.studies._engine import (
    CELL_STRIDE,
    DETECTION_LAYOUT,
    Cell,
    DetectionSums,
    execute,
)

__all__ = [
    "detection_study",
]


# ---------------------------------------------------------------------------- detection


def detection_study(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    *,
    sizes: int | Sequence[int] = (50, 100, 200, 400, 800),
    deltas: float | Sequence[float] = (0.02, 0.05, 0.10, 0.20),
    form_gaps: float | Sequence[float] = (0.0,),
    relabel: bool = False,
    replications: int = 2000,
    alpha: float = 0.05,
    guardrail: int = 30,
    fallback: str = "betting",
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """Detection rate of a planted public-form advantage: interval rule vs exact test.

    ``public`` (N,) and ``fresh`` (N, K) are the binary correctness labels of a bank of N
    parents (or (models, N) and (models, N, K): one bank per model, rates pooled over
    models with equal weight, as the paper pools five models). Each replication draws n
    parents without replacement and, per drawn parent:

    1. ``relabel=True``: swaps the public label with one of the K + 1 labels chosen
       uniformly, so "no form effect" holds by construction (Fig. 10's null);
    2. plants delta: each incorrect public label becomes correct with probability
       q = delta / (1 - p), p the bank's mean public correctness (after relabelling, in
       expectation), so the public mean rises by delta in expectation;
    3. plants a form gap g: each correct fresh label becomes incorrect with probability
       g / f (f the mean fresh correctness), so fresh forms are harder by g in
       expectation -- pure form mismatch, no contamination (Table 13).

    Then the *interval rule* claims when the primary interval (finite-population Wald
    with N when at least ``guardrail`` gaps are nonzero, else ``fallback``; the sample in
    draw order) lies above zero, and the *exact test* rejects when the randomization
    test's P(T >= t) <= alpha.

    With ``relabel=True`` the null is a super-population one (fresh randomness in every
    replication), while the Wald interval's finite-population correction treats the bank's
    gaps as fixed: at large sampling fractions the interval rule's rate under that null
    exceeds alpha (about 0.19 at n = 800 of N = 1,000 in the tests' synthetic bank); the
    exact test's does not.

    ``n_threads``, ``progress``, ``executor`` and ``checkpoint`` work as in
    :func:`coverage_study`; none of them changes a result.

    Returns:
        A :class:`StudyTable`, one row per (n, delta, form_gap): interval_rate,
        interval_se, test_rate, test_se, mean_delta_hat. With ``relabel=True`` and
        delta = form_gap = 0 the rates are type-I errors.

    What it does not mean: the exact test rejects any form effect, including fresh forms
    that are merely harder (rows with a form gap and delta = 0); a rejection is not
    evidence of contamination. A planted advantage here is a public-only effect; a real
    leak that carries over to the paraphrases is invisible to both rules.
    """
    banks = model_banks(public, fresh)
    check_alpha(alpha)
    ns = check_sizes("sizes", sizes)
    ds = check_floats("deltas", deltas)
    gs = check_floats("form_gaps", form_gaps)
    reps = check_replications(replications)
    guard = check_positive_int("guardrail", guardrail, minimum=0)
    check_choice("fallback", fallback, FALLBACK_METHODS)
    threads = check_n_threads(n_threads)
    if not isinstance(relabel, (bool, np.bool_)):
        raise ArgumentError("relabel", f"relabel must be True or False; got {one_line(relabel)}")
    key = philox_key(seed)
    big_n = banks[0][0].shape[0]
    if max(ns) > big_n:
        raise ArgumentError(
            "sizes", f"sizes must not exceed the bank's {big_n} parents; got {max(ns)}"
        )
    # mean public and fresh correctness of each bank (after relabelling, in expectation)
    means = []
    for pub, fr in banks:
        labels_mean = float((pub.sum() + fr.sum()) / (pub.size + fr.size))
        means.append(
            (labels_mean, labels_mean) if relabel else (float(pub.mean()), float(fr.mean()))
        )
    cells, grid = [], []
    c = 0
    for size in ns:
        for delta in ds:
            for gap in gs:
                grid.append((size, delta, gap))
                for (pub, fr), (p_pub, p_fresh) in zip(banks, means, strict=True):
                    q = 0.0 if delta == 0 else delta / (1.0 - p_pub) if p_pub < 1 else math.inf
                    h = 0.0 if gap == 0 else gap / p_fresh if p_fresh > 0 else math.inf
                    if q > 1.0:
                        raise ArgumentError(
                            "deltas",
                            f"deltas: {delta} cannot be planted: only {1 - p_pub:.3f} of the "
                            "public answers are incorrect",
                        )
                    if h > 1.0:
                        raise ArgumentError(
                            "form_gaps",
                            f"form_gaps: {gap} cannot be planted: the fresh forms score only "
                            f"{p_fresh:.3f}",
                        )
                    args = (pub, fr, size, bool(relabel), q, h, guard, code_of(fallback), alpha)
                    offset = c * CELL_STRIDE
                    cells.append(
                        Cell("detection_tasks", args, key, offset, reps, DETECTION_LAYOUT)
                    )
                    c += 1
    totals = execute(
        cells,
        n_threads=threads,
        progress=progress,
        executor=executor,
        desc="detection",
        checkpoint=checkpoint,
    )
    m = len(banks)
    rows = []
    for g_index, (size, delta, gap) in enumerate(grid):
        parts = totals[g_index * m : (g_index + 1) * m]
        rates = [
            [rate_with_se(t[j], reps) for t in parts]
            for j in (DetectionSums.CLAIMS, DetectionSums.REJECTIONS)
        ]
        row = [size, delta, gap]
        for j in (0, 1):
            row.append(float(np.mean([r[0] for r in rates[j]])))
            row.append(math.sqrt(sum(r[1] ** 2 for r in rates[j])) / m)
        row.append(float(np.mean([t[DetectionSums.DELTA_HAT] / reps for t in parts])))
        rows.append(row)
    columns = table_columns(
        (
            "n",
            "delta",
            "form_gap",
            "interval_rate",
            "interval_se",
            "test_rate",
            "test_se",
            "mean_delta_hat",
        ),
        rows,
    )
    return StudyTable(
        title=f"Detection of a planted public-form advantage ({m} bank(s), {reps:,} audits per "
        f"cell{', labels relabelled under the null' if relabel else ''})",
        columns=columns,
        notes=(
            f"interval rule: primary interval (Wald with N, or {fallback} below {guard} "
            "nonzero gaps) above zero; exact test: randomization P(T >= t) <= "
            f"{alpha:g}. Seed {seed!r}.",
            "The exact test rejects any form effect, including merely harder fresh forms: a "
            "rejection is not evidence of contamination.",
        ),
        meta={
            **run_meta("detection", seed, key, reps),
            "alpha": alpha,
            "guardrail": guard,
            "fallback": fallback,
            "relabel": bool(relabel),
            "models": m,
        },
    )

"""The tests of the suite audit, one function per test, each run on one benchmark's
pairs: ``rows(task) -> (rows, reason)``, the rows of the pairs where its data exist and
why it did not run, if so. :data:`truescore_fast._catalog.SUITE_TESTS` names each (its
order is the order of a pair's rows); :func:`truescore_fast.suite.audit.suite_audit` runs
them and documents what each test computes. Not a public API.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from truescore_fast._random import seed_int
from truescore_fast.audit.matched_form import ClaimRule, matched_form_audit
from truescore_fast.audit.randomization import randomization_test
from truescore_fast.contamination.batch import exchangeability_tests
from truescore_fast.suite.constat import MIN_REFERENCE_MODELS, constat_tests
from truescore_fast.suite.data import SuitePair

__all__ = [
    "CONSTAT_MIN_MODELS",
    "BenchmarkTask",
    "Row",
    "claim_p_value",
    "constat_matrices",
    "constat_rows",
    "matched_form_rows",
    "order_rows",
    "randomization_rows",
]

Row = tuple[str, str, str, float, float, float, float, int]  # model .. high, n

#: ConStat needs this many models on a benchmark (each tested against at least 5 others).
CONSTAT_MIN_MODELS = MIN_REFERENCE_MODELS + 1


class BenchmarkTask(NamedTuple):
    """One benchmark's share of a suite audit: what every test's ``rows`` reads. A task of
    its own (an executor runs it anywhere): its rows depend on these fields only."""

    b_index: int  # the benchmark's place in the suite (ConStat's seed)
    benchmark: str
    pairs: Sequence[SuitePair]  # the benchmark's pairs, one per model
    alpha: float
    seed: int
    threads: int | None
    n_bootstrap: int
    reference_models: Sequence[str] | None
    random_guess: float  # ConStat's random-guess point on this benchmark


# Levels tried, from the top down, for one at which the audit claims: at levels near 1
# the betting interval (the primary one below the guardrail) can be empty (no value
# consistent with the data), which is no claim although smaller levels claim.
_CLAIM_LEVELS = (1.0 - 1e-9, 0.5, 0.25, 0.1, 0.05, 0.025, 0.01)
_P_FLOOR = 1e-16  # the smallest matched-form p-value reported
_Z_975 = 1.959963984540054  # the standard normal's 0.975 quantile (scipy.special.ndtri's)


def claim_p_value(
    pub: npt.NDArray[np.float64],
    fr: npt.NDArray[np.float64],
    seed: int,
    closed_form: bool = True,
    probe: Any = None,
) -> float:
    """The smallest alpha at which the matched-form audit claims (see the module
    docstring). With the Wald interval primary (at least ``guardrail`` nonzero gaps: every
    large suite), in closed form: the claim at alpha needs the primary interval at alpha/2
    (the tau interval, without a control bank) above zero, mean - z(1 - alpha/4) se > 0,
    so p = 4 Phi(-mean / se), raised by 1e-9 relative and confirmed by the claim rule
    there. Otherwise (the betting interval primary), bracketed by bisection in
    log(alpha), the bracket's upper end (within about 4e-5 relative of the exact value,
    never below). Each level is decided by :class:`ClaimRule` (the primary interval at
    alpha and alpha / 2, the audit's claim bit for bit), not by re-running the audit.
    ``probe``: the audit at alpha 0.05 when the caller has it (it is not run again)."""
    claims = ClaimRule(pub, fr, seed=seed, audit=probe)
    probe = claims.audit

    wald = probe.primary.method == "wald" and probe.estimate > 0
    if closed_form and wald and probe.primary.half_width > 0:
        se = probe.primary.half_width / _Z_975
        # 4 Phi(-mean / se), Phi by erfc (within 1e-13 relative of SciPy's ndtr, far
        # inside the 1e-9 raise below; scipy.special is not imported for it)
        exact = 2.0 * math.erfc(probe.estimate / se / math.sqrt(2.0))
        candidate = max(_P_FLOOR, exact * (1.0 + 1e-9))
        if candidate < 1.0 and claims(candidate):
            return candidate
    low = math.log(_P_FLOOR)
    for level in _CLAIM_LEVELS:
        claim, empty = claims.outcome(level)
        if claim:
            high = math.log(level)
            break
        if not empty:
            return 1.0  # an interval reaching zero: a smaller level does not claim either
    else:
        return 1.0
    if claims(math.exp(low)):
        return math.exp(low)
    for _ in range(20):
        middle = 0.5 * (low + high)
        if claims(math.exp(middle)):
            high = middle
        else:
            low = middle
    return min(1.0, math.exp(high))


def matched_form_rows(task: BenchmarkTask) -> tuple[list[Row], str | None]:
    """The matched-form audit's claim rule, inverted to a p-value, on each pair with fresh
    forms."""
    rows: list[Row] = []
    for pair in task.pairs:
        if not pair.has_fresh:
            continue
        pub, fr = pair.matched_public, pair.fresh
        audit = matched_form_audit(pub, fr, alpha=task.alpha, seed=task.seed)
        probe = audit if task.alpha == 0.05 else None
        p = claim_p_value(pub, fr, task.seed, probe=probe)
        rows.append((pair.model, pair.benchmark, "matched_form", p, audit.estimate,
                     audit.primary.low, audit.primary.high, int(pub.shape[0])))  # fmt: skip
    return rows, None


def randomization_rows(task: BenchmarkTask) -> tuple[list[Row], str | None]:
    """The exact randomization test of no form effect on each pair with fresh forms."""
    rows: list[Row] = []
    for pair in task.pairs:
        if not pair.has_fresh:
            continue
        pub, fr = pair.matched_public, pair.fresh
        test = randomization_test(
            pub, fr, alternative="greater", seed=task.seed, n_threads=task.threads
        )
        rows.append((pair.model, pair.benchmark, "randomization", test.p_value, test.estimate,
                     -math.inf, math.inf, int(pub.shape[0])))  # fmt: skip
    return rows, None


def order_rows(task: BenchmarkTask) -> tuple[list[Row], str | None]:
    """The exact order test on each pair with log-likelihoods, shards pooled by Fisher."""
    rows: list[Row] = []
    for pair in task.pairs:
        order = pair.order
        if order is None:
            continue
        values = np.concatenate(order.shuffled)
        offsets = np.concatenate(([0], np.cumsum([s.shape[0] for s in order.shuffled])))
        batch = exchangeability_tests(
            order.canonical, values, offsets=offsets, n_threads=task.threads
        )
        p = float(batch.p_values[0]) if len(batch) == 1 else float(batch.combine("fisher").p_value)
        rows.append((pair.model, pair.benchmark, "order", p, float(np.mean(batch.z_scores)),
                     -math.inf, math.inf, len(batch)))  # fmt: skip
    return rows, None


def constat_matrices(
    pairs: Sequence[SuitePair],
) -> tuple[list[SuitePair], npt.NDArray[np.float64], npt.NDArray[np.float64], str] | str:
    """One benchmark's ConStat inputs: (the models' pairs, scores (m, n), reference
    scores (m, n_ref), which reference), or why it cannot run. The reference rows when at
    least CONSTAT_MIN_MODELS models have them, else the fresh forms."""
    with_reference = [p for p in pairs if p.reference.shape[0] > 0]
    with_fresh = [p for p in pairs if p.has_fresh]
    if with_reference and (
        len(with_reference) >= CONSTAT_MIN_MODELS or len(with_fresh) < CONSTAT_MIN_MODELS
    ):
        used, kind = with_reference, "reference rows"
    else:
        used, kind = with_fresh, "fresh forms"
    if len(used) < CONSTAT_MIN_MODELS:
        return f"{len(used)} model(s) with {kind}; ConStat needs {CONSTAT_MIN_MODELS}"
    by_reference = kind == "reference rows"

    def reference_of(p: SuitePair) -> tuple[tuple[str, ...], npt.NDArray[np.float64]]:
        if by_reference:
            return p.reference_parents, p.reference
        return p.fresh_parents, p.fresh.mean(axis=1)

    # A leaderboard's models usually share one list of items in one order: then the
    # intersection is that list and every row is taken as it is.
    first_items, first_refs = tuple(used[0].parents), tuple(reference_of(used[0])[0])
    if all(p.parents == first_items for p in used):
        item_order = list(first_items)
    else:
        items = set.intersection(*(set(p.parents) for p in used))
        item_order = [x for x in first_items if x in items]
    if all(reference_of(p)[0] == first_refs for p in used):
        ref_order = list(first_refs)
    else:
        refs = set.intersection(*(set(reference_of(p)[0]) for p in used))
        ref_order = [x for x in first_refs if x in refs]
    if len(set(item_order)) < 2 or len(set(ref_order)) < 2:
        return f"fewer than 2 items that every model with {kind} has"
    item_key, ref_key = tuple(item_order), tuple(ref_order)

    def gather(labels: Sequence[str], values: npt.NDArray[np.float64], order: list[str]) -> Any:
        if tuple(labels) == (item_key if order is item_order else ref_key):
            return values
        position = {label: k for k, label in enumerate(labels)}
        return values[np.fromiter((position[x] for x in order), dtype=np.int64, count=len(order))]

    scores = np.array([gather(p.parents, p.public, item_order) for p in used])
    reference = np.array([gather(*reference_of(p), ref_order) for p in used])
    return used, scores, reference, kind


def constat_rows(task: BenchmarkTask) -> tuple[list[Row], str | None]:
    """ConStat on one benchmark: a row per testable model, and why it did not run (or
    for which models it could not), if so. Benchmark b's bootstrap is seeded by
    ``(seed, b)``."""
    benchmark, pairs, reference_models = task.benchmark, task.pairs, task.reference_models
    alpha, n_bootstrap, threads = task.alpha, task.n_bootstrap, task.threads
    seed, random_guess = seed_int([task.seed, task.b_index]), task.random_guess
    built = constat_matrices(pairs)
    if isinstance(built, str):
        return [], f"constat on {benchmark}: {built}"
    used, scores, reference, _ = built
    names = [p.model for p in used]
    options: dict[str, Any] = {}
    if reference_models is not None:
        missing = [m for m in reference_models if m not in names]
        if missing:
            return [], f"constat on {benchmark}: reference models without data {missing}"
        options["reference_models"] = [names.index(m) for m in reference_models]
    result = constat_tests(
        scores, reference, alpha=alpha, n_bootstrap=n_bootstrap, seed=seed, n_threads=threads,
        random_guess=random_guess, **options,
    )  # fmt: skip
    # The bootstrap resolves no p-value below 1 / B: a p of 0 would claim certainty and
    # rank above every exact p-value in the adjustment.
    floor = 1.0 / n_bootstrap
    rows: list[Row] = []
    untestable: list[str] = []
    for k, pair in enumerate(used):
        if not result.testable[k]:
            untestable.append(pair.model)
            continue
        rows.append((pair.model, benchmark, "constat", max(floor, float(result.p_value[k])),
                     float(result.estimate[k]), float(result.low[k]), float(result.high[k]),
                     int(scores.shape[1])))  # fmt: skip
    if untestable:
        reason = next(r for r in result.reason if r)
        return rows, f"constat on {benchmark}: not testable for {untestable}: {reason}"
    return rows, None

"""The suite audit: every applicable test on every (model, benchmark) of a suite, the
p-values adjusted together, and the (model, benchmark, test) triples flagged at level q
(:func:`suite_audit`, :class:`SuiteAudit`).

The tests, each run where its data exist (``tests=`` picks a subset):

``matched_form``
    The matched-form audit (:func:`~truescore_fast.matched_form_audit`) on the parents
    with fresh forms. Its p-value inverts the claim rule: the smallest alpha at which the
    audit would claim exposure (primary interval and tau interval above zero). With the
    Wald interval primary (at least ``guardrail`` nonzero gaps) that is
    4 Phi(-mean / se) (the claim at alpha needs the primary interval at alpha / 2 above
    zero), reported 1e-9 above and confirmed by the claim rule there; otherwise it is
    found by bisection on a log scale, each level decided by the primary interval alone
    (the audit's claim bit for bit, without re-running the audit; 20 steps from 1e-16 to
    the largest of 1 - 1e-9, 0.5, 0.25,
    0.1, 0.05, 0.025, 0.01 at which it claims; the upper end of the last bracket is
    reported, so the p-value is never smaller than the exact one), 1 when it does not
    claim at any of those. The levels near 1 are passed over when the interval there is
    empty: the betting interval (primary below the guardrail) can leave no value
    consistent with the data at a level near 1, which is no claim, while smaller levels
    claim. The claim rule is otherwise monotone in alpha (wider intervals at smaller
    alpha), so the p-value is valid: under "no exposure" P(p <= a) <= a. Estimate:
    Delta-hat (public minus mean fresh); interval: the primary interval at level
    1 - alpha.
``randomization``
    The exact randomization test of "no form effect" (one-sided: public above fresh;
    :func:`~truescore_fast.randomization_test`) on the same parents. Estimate: Delta-hat;
    no interval (low -inf, high +inf: the test bounds nothing).
``order``
    The exact order-based (exchangeability) test on the pair's log-likelihoods
    (:func:`~truescore_fast.exchangeability_test`), each shard tested exactly and the
    shards pooled by Fisher's method (:func:`~truescore_fast.exchangeability_tests`).
    Estimate: the z-score of the published order among the shuffled ones (the mean over
    shards), descriptive only, in standard deviations, not in score units; no interval
    (low -inf, high +inf).
``constat``
    ConStat's performance-based test (:func:`~truescore_fast.suite.constat.constat_tests`):
    per benchmark, the models with data form the matrix, the benchmark score is the public
    form and the reference score the ``reference`` rows when at least 6 models have them on
    the benchmark (ConStat's synthetic or other-benchmark reference; models without them
    are left out), else the fresh forms (ConStat's "rephrased" reference: the mean over
    the fresh forms of each parent); each model is tested against the others (or against
    ``reference_models``, at least 6).
    Items are those every model of the matrix has. Needs at least 6 models. Computed as
    ConStat's reference code computes it, with the random-guess point at ``random_guess``.
    Estimate: the inflation actual - predicted; interval: ConStat's basic bootstrap
    interval. The p-value is ConStat's, raised to at least 1 / n_bootstrap, the finest
    the B replicates resolve (ConStat reports 0 when every interval's lower end is above
    the bound; a p-value of 0 would claim certainty and rank above every exact p-value).
    A model whose reference models leave fewer than 5 distinct reference scores (every
    model alike, or almost) is not testable: no row, and the reason in ``skipped``.

Which p-values form one family: every test of every pair together, so the FDR (or, for
Holm, the family-wise error rate) is controlled over all the flags the suite reports.
Fewer tests mean a smaller family and more power for each: pick them with ``tests=``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _catalog
from truescore_fast._progress import Progress
from truescore_fast._random import SeedLike, seed_int
from truescore_fast._result import TabularResult
from truescore_fast._text import visible
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    check_positive_int,
    one_line,
    real_scalar,
)
from truescore_fast.errors import ArgumentError
from truescore_fast.suite._tests import BenchmarkTask, Row
from truescore_fast.suite.constat import MIN_REFERENCE_MODELS
from truescore_fast.suite.data import SuiteData, read_suite
from truescore_fast.suite.multiplicity import FDR_METHODS, FdrMethod, adjust

__all__ = ["SUITE_TESTS", "SuiteAudit", "suite_audit"]

#: The tests a suite audit runs, in the order of its rows within a pair (the catalog's,
#: :data:`truescore_fast._catalog.SUITE_TESTS`, where each names its implementation).
SUITE_TESTS: tuple[str, ...] = tuple(test.name for test in _catalog.SUITE_TESTS)

_NOT_MEAN = (
    "What a flag does not mean: not proof of contamination (a public form that is merely "
    "easier than its fresh forms, or a model that is better at the benchmark than at its "
    "reference for other reasons, is flagged too), and with FDR control some flags are "
    "expected to be false. What no flag does not mean: a clean score (a leak that carries "
    "over to the fresh forms or the reference is invisible to these tests)."
)


@dataclass(frozen=True, repr=False)
class SuiteAudit(TabularResult):
    """The result of :func:`suite_audit`: one row per (model, benchmark, test) run.

    Attributes:
        model, benchmark, test: The row's pair and test (one of :data:`SUITE_TESTS`).
        p_value: The test's own p-value (never NaN).
        adjusted_p_value: Adjusted across every row together by ``fdr``.
        flagged: ``adjusted_p_value <= q``.
        estimate, low, high: The test's estimate and interval (level 1 - alpha, not
            adjusted); low -inf and high +inf where a test gives no interval (see the
            module docstring for what each test's estimate measures).
        n: The items (parents) the test used; for ``order`` the shards.
        q, fdr: The level and the adjustment (``"bh"``, ``"by"``, ``"holm"``).
        alpha: The level of each row's interval.
        n_tests: The rows (the size of the family).
        skipped: Why tests did not run where they were asked for (one line each).
        seed: The seed used (an int: passing it again replays the result).

    What it does not mean: see :meth:`summary`. A flag is a test's finding after the
    adjustment, not proof of contamination; no flag is not a clean bill.
    """

    model: tuple[str, ...]
    benchmark: tuple[str, ...]
    test: tuple[str, ...]
    p_value: npt.NDArray[np.float64]
    adjusted_p_value: npt.NDArray[np.float64]
    flagged: npt.NDArray[np.bool_]
    estimate: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    high: npt.NDArray[np.float64]
    n: npt.NDArray[np.int64]
    q: float
    fdr: str
    alpha: float
    n_tests: int
    models: tuple[str, ...]
    benchmarks: tuple[str, ...]
    skipped: tuple[str, ...]
    seed: int

    _repr_fields = ("n_tests", "n_flagged", "q", "fdr")

    @property
    def n_flagged(self) -> int:
        return int(np.count_nonzero(self.flagged))

    def _columns(self) -> dict[str, Any]:
        return {
            "model": list(self.model),
            "benchmark": list(self.benchmark),
            "test": list(self.test),
            "p_value": self.p_value,
            "adjusted_p_value": self.adjusted_p_value,
            "flagged": self.flagged,
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "n": self.n,
        }

    def summary(self) -> str:
        """The flagged triples, the family and what a flag does not mean."""
        method = {"bh": "Benjamini-Hochberg", "by": "Benjamini-Yekutieli", "holm": "Holm"}
        control = "family-wise error rate" if self.fdr == "holm" else "false discovery rate"
        lines = [
            f"Suite audit: {len(self.models)} model(s) x {len(self.benchmarks)} benchmark(s), "
            f"{self.n_tests} test(s) in one family, {method[self.fdr]} ({control}) at "
            f"q = {self.q:g}: {self.n_flagged} flagged",
        ]
        order = np.argsort(self.adjusted_p_value, kind="stable")
        for i in (int(k) for k in order if self.flagged[k]):
            interval = (
                f" [{self.low[i]:+.4f}, {self.high[i]:+.4f}]"
                if math.isfinite(self.low[i]) and math.isfinite(self.high[i])
                else ""
            )
            lines.append(
                f"  FLAG {visible(self.model[i])} on {visible(self.benchmark[i])} "
                f"({self.test[i]}): estimate "
                f"{self.estimate[i]:+.4f}{interval}, p = {self.p_value[i]:.3g}, adjusted "
                f"{self.adjusted_p_value[i]:.3g}"
            )
        if not self.n_flagged:
            lines.append("  nothing flagged after the adjustment")
        for reason in self.skipped:
            lines.append(f"  skipped: {visible(reason)}")
        lines.append("  " + _NOT_MEAN)
        return "\n".join(lines)


# ------------------------------------------------------------------------------ the tests


def _benchmark_rows(task: BenchmarkTask, chosen: Sequence[str]) -> tuple[list[Row], list[str]]:
    """Every chosen test of one benchmark: its rows (by model, then test in the order of
    SUITE_TESTS) and why a test did not run there. A task of its own (an executor runs it
    anywhere): its result depends on its arguments only."""
    by_model: dict[str, list[Row]] = {p.model: [] for p in task.pairs}
    reasons: list[str] = []
    for entry in _catalog.SUITE_TESTS:
        if entry.name in chosen:
            found, reason = _catalog.load(entry.rows)(task)
            for row in found:
                by_model[row[0]].append(row)
            if reason is not None:
                reasons.append(reason)
    return [row for model_rows in by_model.values() for row in model_rows], reasons


def _run_benchmarks(
    tasks: Sequence[BenchmarkTask], chosen: Sequence[str], executor: Executor | None, bar: Progress
) -> list[tuple[list[Row], list[str]]]:
    """Each benchmark's task, in order: here, or on ``executor`` (all submitted at once,
    collected in order; on any exception, Ctrl-C included, the ones not yet started are
    cancelled)."""
    if executor is None:
        out = []
        for task in tasks:
            out.append(_benchmark_rows(task, chosen))
            bar.update(len(task.pairs))
        return out
    futures = [executor.submit(_benchmark_rows, task, chosen) for task in tasks]
    try:
        out = []
        for future, task in zip(futures, tasks, strict=True):
            out.append(future.result())
            bar.update(len(task.pairs))
        return out
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _check_random_guess(value: Any) -> Any:
    """``random_guess`` checked, as a function benchmark -> accuracy."""
    if isinstance(value, Mapping):
        table = {}
        for name, v in value.items():
            if not isinstance(name, str):
                raise TypeError(f"random_guess must map benchmark names to numbers; got {name!r}")
            table[name] = real_scalar("random_guess", v, low=0.0, high=1.0)
        return lambda benchmark: table.get(benchmark, 0.0)
    one = real_scalar("random_guess", value, low=0.0, high=1.0)
    return lambda benchmark: one


def _check_tests(tests: Any) -> tuple[str, ...]:
    if isinstance(tests, str):
        tests = (tests,)
    if not isinstance(tests, Sequence) or not tests:
        raise ArgumentError(
            "tests", f"tests must name at least one of {SUITE_TESTS}; got {one_line(tests)}"
        )
    for name in tests:
        check_choice("tests", name, SUITE_TESTS)
    if len(set(tests)) != len(tests):
        raise ArgumentError("tests", f"tests must not repeat a test; got {list(tests)}")
    return tuple(t for t in SUITE_TESTS if t in tests)


def suite_audit(
    source: Any,
    *,
    q: float = 0.05,
    fdr: FdrMethod = "bh",
    tests: Sequence[str] = SUITE_TESTS,
    alpha: float = 0.05,
    n_bootstrap: int = 1000,
    reference_models: Sequence[str] | None = None,
    random_guess: float | Mapping[str, float] = 0.0,
    seed: SeedLike = 0,
    threads: int | None = None,
    columns: Mapping[str, str] | None = None,
    logliks: Mapping[tuple[str, str], Any] | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
) -> SuiteAudit:
    """Audit a whole suite: every applicable test per (model, benchmark), the p-values of
    all of them adjusted together, and the triples flagged at level q.

    Args:
        source: A :class:`~truescore_fast.suite.data.SuiteData` (from :func:`read_suite`
            or :func:`truescore_fast.io.read_suite_manifest`), or anything
            :func:`read_suite` reads (then ``columns`` and ``logliks`` are passed to it).
        q: The level of the adjusted p-values: the false discovery rate (``"bh"``,
            ``"by"``) or family-wise error rate (``"holm"``) the flags are held to.
        fdr: ``"bh"`` (Benjamini-Hochberg, default), ``"by"`` (Benjamini-Yekutieli: any
            dependence; prefer it when one model's tests may depend on each other in ways
            that are not positive) or ``"holm"`` (see :mod:`~truescore_fast.suite.multiplicity`).
        tests: The tests to run, any of :data:`SUITE_TESTS` (all by default); each runs
            where its data exist. All the p-values form one family.
        alpha: The level of each row's interval (1 - alpha, marginal: not adjusted) and of
            the matched-form audit's reported interval.
        n_bootstrap: ConStat's bootstrap resamples B. Its p-values enter the adjustment
            as at least 1 / B, so in a family of m tests a ConStat row can be flagged on
            its own (first in Benjamini-Hochberg's order) only when B >= m / q: raise it
            for large suites.
        reference_models: ConStat's reference models by name (at least 6, so that each
            of them is tested against 5 others), each a model of the suite; default: each
            model against all the others. On a benchmark where one of them has no data,
            ConStat is skipped (the reason is in ``skipped``).
        random_guess: ConStat's random-guess point: the accuracy of guessing at random on
            a benchmark (and its reference), one number for every benchmark or a mapping
            benchmark -> number (benchmarks it does not name get 0). Default 0, ConStat's
            own default (the point (0, 0)); pass the chance level where you know it, 1/k for
            k-way multiple choice (0.25 for four options, as ConStat's scripts do).
        seed: Seeds the matched-form audit's betting order and ConStat's bootstrap
            (benchmark b gets its own seed derived from ``(seed, b)``). Default 0: the same
            result on every run.
        threads: Threads for the randomization test, the order test and ConStat; the
            result does not depend on it.
        columns, logliks: Passed to :func:`read_suite` when ``source`` is not a
            :class:`SuiteData`.
        progress: A progress bar on stderr, counted in pairs: True, False, or None
            (default: one appears when the audit has run for a second), as the studies'.
        executor: Any :class:`concurrent.futures.Executor` (a process pool, a Dask
            ``distributed.Client``'s ``get_executor()``): each benchmark's tests run there
            as one task. The result is the serial run's, row for row: a task's result
            depends only on its benchmark's data and the seed.

    Returns:
        A :class:`SuiteAudit`, rows ordered by benchmark, model and then test.

    Raises:
        ValueError: bad arguments, unreadable data, or a suite on which no test could run.

    What it does not mean: a flag is a test's finding after adjustment, not proof that
    the model saw the benchmark (ordinary form mismatch and plain differences in ability
    are flagged too); FDR control bounds the average share of false flags, so a flagged
    triple may still be a false one; and no flag does not clear a score.
    """
    check_alpha(q, "q")
    check_alpha(alpha)
    check_choice("fdr", fdr, FDR_METHODS)
    if not (progress is None or isinstance(progress, (bool, np.bool_))):
        raise ArgumentError(
            "progress", f"progress must be True, False or None (auto); got {one_line(progress)}"
        )
    if executor is not None and not isinstance(executor, Executor):
        raise ArgumentError(
            "executor",
            f"executor must be a concurrent.futures.Executor; got {type(executor).__name__}",
        )
    chosen = _check_tests(tests)
    resamples = check_positive_int("n_bootstrap", n_bootstrap)
    n_threads = check_n_threads(threads)
    seed_used = seed_int(seed)
    if reference_models is not None:
        if isinstance(reference_models, str) or not isinstance(reference_models, Sequence):
            raise ArgumentError(
                "reference_models",
                f"reference_models must be a sequence of model names; got "
                f"{one_line(reference_models)}",
            )
        if len(set(reference_models)) < MIN_REFERENCE_MODELS + 1:
            raise ArgumentError(
                "reference_models",
                f"reference_models must name at least {MIN_REFERENCE_MODELS + 1} distinct "
                "models (a referenced model is tested against the others); got "
                f"{len(set(reference_models))}",
            )
    guesses = _check_random_guess(random_guess)
    if isinstance(source, SuiteData):
        if columns is not None or logliks is not None:
            raise ArgumentError(
                "columns", "columns and logliks apply when source is a table, not SuiteData"
            )
        data = source
    else:
        data = read_suite(source, columns=columns, logliks=logliks)
    if reference_models is not None:
        unknown = [m for m in reference_models if m not in data.models]
        if unknown:
            raise ArgumentError(
                "reference_models",
                f"reference_models names model(s) the suite does not have: {unknown}; its "
                f"models are {list(data.models)}",
            )

    tasks = [
        BenchmarkTask(b_index, benchmark, [p for p in data.pairs if p.benchmark == benchmark],
                      alpha, seed_used, n_threads, resamples, reference_models,
                      guesses(benchmark))
        for b_index, benchmark in enumerate(data.benchmarks)
    ]  # fmt: skip
    rows: list[Row] = []
    skipped: list[str] = []
    bar = Progress(progress, len(data.pairs), "suite audit", unit="pair")
    try:
        for found, reasons in _run_benchmarks(tasks, chosen, executor, bar):
            rows += found
            skipped += reasons
    finally:
        bar.close()
    ran = {r[2] for r in rows}
    skipped += [
        f"{t.name}: no pair has {t.needs}"
        for t in _catalog.SUITE_TESTS
        if t.name in chosen and t.needs is not None and t.name not in ran
    ]
    if not rows:
        raise ValueError(
            "no test could run on this suite: "
            + ("; ".join(skipped) if skipped else "it has no pair with data for the tests asked")
        )
    p = np.array([r[3] for r in rows], dtype=np.float64)
    adjusted = adjust(p, fdr)
    return SuiteAudit(
        model=tuple(r[0] for r in rows),
        benchmark=tuple(r[1] for r in rows),
        test=tuple(r[2] for r in rows),
        p_value=p,
        adjusted_p_value=adjusted,
        flagged=adjusted <= q,
        estimate=np.array([r[4] for r in rows], dtype=np.float64),
        low=np.array([r[5] for r in rows], dtype=np.float64),
        high=np.array([r[6] for r in rows], dtype=np.float64),
        n=np.array([r[7] for r in rows], dtype=np.int64),
        q=float(q),
        fdr=fdr,
        alpha=float(alpha),
        n_tests=len(rows),
        models=data.models,
        benchmarks=data.benchmarks,
        skipped=tuple(skipped),
        seed=seed_used,
    )

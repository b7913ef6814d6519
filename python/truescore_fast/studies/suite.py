"""The suite study: the false discovery rate and the per-pair power of the suite audit
(:func:`~truescore_fast.suite_audit`), by simulating whole suites with leaks planted in
chosen (model, benchmark) pairs (:func:`suite_study`; one suite: :func:`simulate_suite`).

The simulated suite: model m has ability a_m, evenly spaced over [-spread, spread];
benchmark b has difficulty c_b, evenly spaced over [-0.5, 0.5]; parent i of benchmark b
has difficulty d_bi ~ N(0, 1), the same for every model (the items of a benchmark are
shared). Model m answers every form of parent i (the public form and each fresh form)
correctly with probability logistic(a_m - c_b - d_bi), independently: without a leak the
public form is exchangeable with the fresh ones, so every test's null holds exactly. A
leak of size L in pair (m, b) makes each incorrect public answer of that pair correct with
probability L: the public score rises, the fresh forms do not move.

A rate here is a property of the suites simulated (the spread of abilities, the number of
parents, the size of the leaks): a high power at a planted leak does not say a real
audit would find a real leak, which may carry over to the fresh forms where no test sees
it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._random import SeedLike, philox_key, philox_stream
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_choice,
    check_n_threads,
    check_positive_int,
    one_line,
    real_scalar,
)
from truescore_fast.errors import ArgumentError
from truescore_fast.studies._common import (
    check_replications,
    mean_with_se,
    rate_with_se,
    run_meta,
    table_columns,
)
from truescore_fast.studies._engine import Cell, RowLayout, execute
from truescore_fast.suite.audit import SUITE_TESTS, suite_audit
from truescore_fast.suite.data import SuiteData, SuitePair
from truescore_fast.suite.multiplicity import FDR_METHODS

__all__ = ["simulate_suite", "suite_study"]

# Replications per task: each task draws only from its own Philox stream.
_SUITE_TASK = 5

Leak = tuple[int, int, float]


def _check_leaks(leaks: Any, n_models: int, n_benchmarks: int) -> tuple[Leak, ...]:
    if not isinstance(leaks, Sequence) or isinstance(leaks, str):
        raise ArgumentError(
            "leaks", f"leaks must be a sequence of (model, benchmark, size); got {one_line(leaks)}"
        )
    out: list[Leak] = []
    for leak in leaks:
        if not (isinstance(leak, Sequence) and len(leak) == 3):
            raise ArgumentError(
                "leaks", f"leaks must hold (model, benchmark, size) triples; got {leak!r}"
            )
        m = check_positive_int("leaks", leak[0], minimum=0, maximum=n_models - 1)
        b = check_positive_int("leaks", leak[1], minimum=0, maximum=n_benchmarks - 1)
        size = real_scalar("leaks", leak[2], low=0.0, high=1.0, high_open=False)
        out.append((m, b, size))
    if len({(m, b) for m, b, _ in out}) != len(out):
        raise ArgumentError("leaks", "leaks must not plant two leaks in one pair")
    return tuple(out)


def _names(n_models: int, n_benchmarks: int) -> tuple[list[str], list[str]]:
    return [f"model-{m + 1:02d}" for m in range(n_models)], [
        f"bench-{b + 1}" for b in range(n_benchmarks)
    ]


def _simulate(
    rng: np.random.Generator,
    n_models: int,
    n_benchmarks: int,
    n_parents: int,
    n_fresh: int,
    leaks: tuple[Leak, ...],
    spread: float,
) -> SuiteData:
    models, benchmarks = _names(n_models, n_benchmarks)
    ability = np.linspace(-spread, spread, n_models)
    offset = np.linspace(-0.5, 0.5, n_benchmarks)
    size = {(m, b): s for m, b, s in leaks}
    parents = tuple(f"p{i + 1:04d}" for i in range(n_parents))
    forms = tuple(f"fresh{k + 1}" for k in range(n_fresh))
    pairs = []
    for b in range(n_benchmarks):
        difficulty = rng.standard_normal(n_parents)
        logit = ability[:, None] - offset[b] - difficulty[None, :]
        p = 1.0 / (1.0 + np.exp(-logit))  # (models, parents)
        answers = (rng.random((n_models, n_parents, n_fresh + 1)) < p[:, :, None]).astype(float)
        leak_draws = rng.random((n_models, n_parents))
        for m in range(n_models):
            public = answers[m, :, 0].copy()
            if (m, b) in size:
                public[(public == 0.0) & (leak_draws[m] < size[(m, b)])] = 1.0
            pairs.append(
                SuitePair(
                    model=models[m],
                    benchmark=benchmarks[b],
                    parents=parents,
                    public=public,
                    fresh_parents=parents,
                    fresh_forms=forms,
                    matched_public=public,
                    fresh=np.ascontiguousarray(answers[m, :, 1:]),
                )
            )
    return SuiteData(tuple(pairs))


def _check_design(
    models: Any, benchmarks: Any, parents: Any, fresh_forms: Any, spread: Any
) -> tuple[int, int, int, int, float]:
    return (
        check_positive_int("models", models, minimum=1, maximum=10_000),
        check_positive_int("benchmarks", benchmarks, minimum=1, maximum=10_000),
        check_positive_int("parents", parents, minimum=2, maximum=10_000_000),
        check_positive_int("fresh_forms", fresh_forms, minimum=1, maximum=100),
        real_scalar("spread", spread, low=0.0, high=20.0, high_open=False),
    )


def simulate_suite(
    *,
    models: int = 8,
    benchmarks: int = 4,
    parents: int = 200,
    fresh_forms: int = 1,
    leaks: Sequence[tuple[int, int, float]] = ((0, 0, 0.3), (3, 2, 0.3)),
    spread: float = 1.5,
    seed: SeedLike = 0,
) -> SuiteData:
    """One simulated suite (see the module docstring for the model).

    Args:
        models, benchmarks, parents: The suite's size (parents per benchmark, shared by
            every model).
        fresh_forms: Fresh forms per parent (K).
        leaks: ``(model index, benchmark index, size)`` per contaminated pair: each
            incorrect public answer of the pair becomes correct with probability ``size``.
        spread: Abilities are evenly spaced over [-spread, spread] (logit scale).
        seed: Any seed :func:`~truescore_fast._random.philox_key` accepts; the suite is
            drawn from Philox stream 0 of its key.

    Returns:
        A :class:`~truescore_fast.suite.data.SuiteData`: models ``model-01`` ...,
        benchmarks ``bench-1`` ..., parents ``p0001`` ..., forms ``fresh1`` ....

    What it does not mean: real suites have fresh forms that differ in difficulty from the
    public ones and leaks that carry over to them; this one has neither.
    """
    design = _check_design(models, benchmarks, parents, fresh_forms, spread)
    planted = _check_leaks(leaks, design[0], design[1])
    return _simulate(philox_stream(philox_key(seed)), *design[:4], planted, design[4])


def _suite_task(
    key: tuple[int, int],
    stream: int,
    size: int,
    design: tuple[int, int, int, int, float],
    leaks: tuple[Leak, ...],
    tests: tuple[str, ...],
    q: float,
    fdr: str,
    n_bootstrap: int,
) -> npt.NDArray[np.float64]:
    """One task: the sums of ``size`` replications from Philox stream ``stream``: the
    false discovery proportion and its square, flags, false flags and their squares, then
    per leak and per
    test (and any test) the detections, then the histogram of replications with and
    without a false flag."""
    rng = philox_stream(key, stream)
    models, benchmarks = _names(design[0], design[1])
    planted = {(models[m], benchmarks[b]) for m, b, _ in leaks}
    columns = (*tests, "any")
    sums = np.zeros(6 + len(leaks) * len(columns) + 2)
    for _ in range(size):
        data = _simulate(rng, *design[:4], leaks, design[4])
        result = suite_audit(
            data, q=q, fdr=fdr, tests=tests, n_bootstrap=n_bootstrap,  # type: ignore[arg-type]
            seed=int(rng.integers(0, 2**63)), threads=1, progress=False,
        )  # fmt: skip
        flagged = result.flagged
        true = np.array(
            [(m, b) in planted for m, b in zip(result.model, result.benchmark, strict=True)]
        )
        false_flags = int(np.count_nonzero(flagged & ~true))
        flags = int(np.count_nonzero(flagged))
        fdp = false_flags / flags if flags else 0.0
        sums[:6] += (fdp, fdp * fdp, flags, false_flags, flags * flags, false_flags**2)
        for j, (m, b, _) in enumerate(leaks):
            in_pair = (np.array(result.model) == models[m]) & (
                np.array(result.benchmark) == benchmarks[b]
            )
            for t, name in enumerate(columns):
                chosen = in_pair if name == "any" else in_pair & (np.array(result.test) == name)
                sums[6 + j * len(columns) + t] += bool(np.any(flagged & chosen))
        sums[-2 + (false_flags > 0)] += 1.0
    return sums


def suite_study(
    *,
    models: int = 8,
    benchmarks: int = 3,
    parents: int = 100,
    fresh_forms: int = 1,
    leaks: Sequence[tuple[int, int, float]] = ((0, 0, 0.3), (4, 1, 0.3), (7, 2, 0.15)),
    spread: float = 1.5,
    tests: Sequence[str] = ("matched_form", "randomization", "constat"),
    fdr: str = "bh",
    n_bootstrap: int = 200,
    replications: int = 200,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
    progress: bool | None = None,
    executor: Executor | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> StudyTable:
    """The suite audit's false discovery rate and per-pair power, by simulation.

    Each replication draws a suite (:func:`simulate_suite` with these settings), runs
    :func:`~truescore_fast.suite_audit` on it with ``tests``, ``fdr`` and q = ``alpha``,
    and counts its flags: a flag on a pair without a leak is a false one. The false
    discovery proportion of a replication is its false flags over its flags (0 without
    flags); the false discovery rate is its mean.

    Args:
        models, benchmarks, parents, fresh_forms, leaks, spread: The suites simulated (see
            :func:`simulate_suite`).
        tests: The suite audit's tests (any of :data:`~truescore_fast.suite.audit.SUITE_TESTS`
            but ``order``: the simulated suites have no log-likelihoods).
        fdr: The adjustment, ``"bh"``, ``"by"`` or ``"holm"``.
        n_bootstrap: ConStat's resamples per benchmark (its p-values count as at least
            1 / n_bootstrap in the adjustment: few resamples cost ConStat power in
            a large family; see :func:`~truescore_fast.suite_audit`).
        replications: Suites simulated.
        alpha: The level q of the suite procedure.
        seed, n_threads, progress, executor, checkpoint: As for the other studies: the
            replications run in tasks of 5, task t drawing from Philox stream t of the
            seed's key and adding its sums in task order, so the table is the same for
            any thread count, executor or resumed checkpoint.

    Returns:
        A :class:`~truescore_fast.StudyTable`: the rows ``fdr`` (the false discovery rate
        and its Monte Carlo standard error), ``fwer`` (the share of suites with any false
        flag), ``false_flags`` and ``flags`` (mean per suite), then one ``power`` row per
        leak and test (and ``any``: some test flags the pair); ``leak`` is the planted size
        (0 on the rows about the whole suite), ``se`` the Monte Carlo standard error.

    What it does not mean: the rates belong to the suites simulated: exchangeable forms,
    leaks that do not carry over to the fresh forms, models that differ only in ability.
    A false discovery rate below q here does not bound it for suites whose fresh forms
    are harder than the public ones (then the matched-form tests flag clean pairs).
    """
    design = _check_design(models, benchmarks, parents, fresh_forms, spread)
    planted = _check_leaks(leaks, design[0], design[1])
    if isinstance(tests, str) or not isinstance(tests, Sequence) or not tests:
        raise ArgumentError("tests", f"tests must name at least one test; got {one_line(tests)}")
    for name in tests:
        check_choice("tests", name, tuple(t for t in SUITE_TESTS if t != "order"))
    chosen = tuple(t for t in SUITE_TESTS if t in tests)
    check_choice("fdr", fdr, FDR_METHODS)
    q = check_alpha(alpha)
    resamples = check_positive_int("n_bootstrap", n_bootstrap)
    reps = check_replications(replications)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)
    columns = (*chosen, "any")
    width = 6 + len(planted) * len(columns) + 2
    args = (design, planted, chosen, q, fdr, resamples)
    layout = RowLayout(width, histogram=width - 2)  # replications with, without a false flag
    cell = Cell(_suite_task, args, key, 0, reps, layout, block=_SUITE_TASK)
    (total,) = execute(
        [cell], n_threads=threads, progress=progress, executor=executor, desc="suite",
        checkpoint=checkpoint,
    )  # fmt: skip
    names, benches = _names(design[0], design[1])
    fdr_rate, fdr_se = mean_with_se(total[0], total[1], reps)
    fwer, fwer_se = rate_with_se(total[-1], reps)
    rows: list[list[Any]] = [
        ["fdr", "-", "-", "-", 0.0, fdr_rate, fdr_se],
        ["fwer", "-", "-", "-", 0.0, fwer, fwer_se],
        ["flags", "-", "-", "-", 0.0, *mean_with_se(total[2], total[4], reps)],
        ["false_flags", "-", "-", "-", 0.0, *mean_with_se(total[3], total[5], reps)],
    ]
    for j, (m, b, size) in enumerate(planted):
        for t, name in enumerate(columns):
            rate, se = rate_with_se(total[6 + j * len(columns) + t], reps)
            rows.append(["power", names[m], benches[b], name, size, rate, se])
    return StudyTable(
        title=f"Suite audit: false discovery rate and power ({design[0]} models x "
        f"{design[1]} benchmarks x {design[2]} parents, {len(planted)} leak(s), {reps:,} "
        "suites)",
        columns=table_columns(
            ("quantity", "model", "benchmark", "test", "leak", "rate", "se"), rows
        ),
        notes=(
            f"tests {', '.join(chosen)}; {fdr} at q = {q:g}; ConStat with {resamples} "
            f"resamples. Seed {seed!r}.",
            "The rates belong to the suites simulated (exchangeable forms, leaks that do not "
            "carry over to the fresh forms); a real leak may be invisible to every test.",
        ),
        meta={
            **run_meta("suite", seed, key, reps),
            "q": q,
            "fdr": fdr,
            "tests": list(chosen),
            "leaks": [list(leak) for leak in planted],
        },
        keys=("quantity", "model", "benchmark", "test"),
    )

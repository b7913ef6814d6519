"""Difference in differences over parents, with bootstrap intervals.

:func:`did_estimate` compares exposed and unexposed parents, before and after training,
on the public and on the fresh forms, per model and pooled (the CleanScore paper's
Tables 14-16, 21), with percentile and BCa bootstrap intervals over parents.

Randomness: ``seed`` (default 0; any seed ``numpy.random.default_rng`` takes but
None) is turned into one Philox4x64-10 key by
:func:`truescore_fast._random.philox_key`. Replicate b draws from its own
stream, counter ``[0, 0, b, 0]``, so a result is bit-identical for any ``n_threads`` and
can be reproduced draw for draw with ``numpy.random.Philox`` (the order of draws is
documented in ``src/cpp/truescore/resampling.hpp``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast import _core
from truescore_fast._bootstrap_intervals import bca_interval, percentile_interval
from truescore_fast._random import SeedLike, philox_key
from truescore_fast._result import TabularResult
from truescore_fast._table import StudyTable
from truescore_fast._validation import (
    check_alpha,
    check_bool,
    check_n_threads,
    check_positive_int,
    check_sequence,
    check_unit_interval,
    float_array,
)
from truescore_fast.errors import ArgumentError

__all__ = ["DID_COLUMNS", "DiDResult", "did_estimate"]

#: The four columns of an arm, in order: correctness on the public and on the fresh forms,
#: before and after training.
DID_COLUMNS = ("public_before", "public_after", "fresh_before", "fresh_after")
_QUANTITIES = ("public", "fresh", "visible_gap")


@dataclass(frozen=True, repr=False)
class DiDResult(TabularResult):
    """Difference in differences per model and pooled, with bootstrap intervals.

    Rows (axis 0) are ``models`` followed by ``"pooled"`` (the mean over models); columns
    (axis 1) are ``quantities``: ``public`` (effect on the trained wording), ``fresh``
    (effect on forms never trained on), ``visible_gap`` (public minus fresh: the part a
    paraphrase audit can see).

    Attributes:
        exposed_change, unexposed_change: Mean after minus mean before, per group.
        estimate: exposed_change - unexposed_change.
        standard_error: Bootstrap standard deviation.
        percentile: (..., 2) percentile interval; bca: (..., 2) BCa interval.
        bias_correction, acceleration: BCa's z0 and a (z0 from the share of replicates
            below the estimate, replicates within ``1e-12 (1 + |estimate|)`` of it counted
            half, the share clipped to [1/(2B), 1 - 1/(2B)]; a from the jackknife).
        spread: Max minus min of the per-model estimates, per quantity (Table 21's
            "Spread" when the models are reruns).

    What it does not mean: the intervals are over parents only; they treat the trained
    model as fixed, so rerunning training (another seed) varies more than they show
    (Table 21). A visible gap near zero with large public and fresh effects means the
    leak carried over to the paraphrases, not that there was no leak.
    """

    models: tuple[str, ...]
    quantities: tuple[str, ...]
    exposed_change: npt.NDArray[np.float64]
    unexposed_change: npt.NDArray[np.float64]
    estimate: npt.NDArray[np.float64]
    standard_error: npt.NDArray[np.float64]
    percentile: npt.NDArray[np.float64]
    bca: npt.NDArray[np.float64]
    bias_correction: npt.NDArray[np.float64]
    acceleration: npt.NDArray[np.float64]
    spread: npt.NDArray[np.float64]
    n_exposed: tuple[int, ...]
    n_unexposed: tuple[int, ...]
    replicates: int
    alpha: float
    shared_parents: bool

    def __repr__(self) -> str:
        pooled = ", ".join(
            f"{q}={v:.4g}" for q, v in zip(self.quantities, self.estimate[-1], strict=True)
        )
        return (
            f"DiDResult(models={len(self.models) - 1}, pooled: {pooled}, "
            f"replicates={self.replicates}, alpha={self.alpha:.4g})"
        )

    def table(self) -> StudyTable:
        rows = [(i, q) for i in range(len(self.models)) for q in range(3)]
        col = lambda a: np.array([a[i, q] for i, q in rows])  # noqa: E731
        return StudyTable(
            title="Difference in differences (exposed minus unexposed parents, "
            "after minus before)",
            columns={
                "model": np.array([self.models[i] for i, _ in rows]),
                "quantity": np.array([self.quantities[q] for _, q in rows]),
                "exposed change": col(self.exposed_change),
                "unexposed change": col(self.unexposed_change),
                "DiD": col(self.estimate),
                "SE": col(self.standard_error),
                "pct low": col(self.percentile[..., 0]),
                "pct high": col(self.percentile[..., 1]),
                "BCa low": col(self.bca[..., 0]),
                "BCa high": col(self.bca[..., 1]),
            },
            notes=(
                f"{self.replicates:,} bootstrap replicates over parents (exposed and unexposed "
                f"resampled separately{', shared across models' if self.shared_parents else ''}); "
                f"{100 * (1 - self.alpha):g}% intervals.",
                "Intervals are over parents only: a training rerun varies more.",
            ),
            meta={"replicates": self.replicates, "alpha": self.alpha},
        )

    def _columns(self) -> Mapping[str, npt.NDArray[Any]]:
        return self.table().columns

    def summary(self) -> str:
        return self.table().summary()


def _did_groups(name: str, data: Any) -> list[np.ndarray]:
    try:
        arr = float_array(name, data)
    except ValueError:
        arr = None  # ragged: a list of per-model arrays
    if arr is not None and arr.ndim in (2, 3):
        groups = [arr] if arr.ndim == 2 else list(arr)
    elif arr is None and isinstance(data, Sequence) and len(data) > 0:
        groups = [float_array(f"{name}[{m}]", g) for m, g in enumerate(data)]
    else:
        shape = None if arr is None else arr.shape
        raise ArgumentError(
            name,
            f"{name} must be (n, 4), (models, n, 4) or a list of (n_m, 4) arrays; "
            f"got shape {shape}",
        )
    out = []
    for m, g in enumerate(groups):
        if g.ndim != 2 or g.shape[1] != 4:
            raise ArgumentError(
                name,
                f"{name}[{m}] must have shape (n, 4) with columns {', '.join(DID_COLUMNS)}; "
                f"got {g.shape}",
            )
        if g.shape[0] < 2:
            raise ArgumentError(name, f"{name}[{m}] needs at least 2 parents; got {g.shape[0]}")
        out.append(np.ascontiguousarray(check_unit_interval(f"{name}[{m}]", g)))
    return out


def _loo_means(d: np.ndarray) -> np.ndarray:
    return (d.sum() - d) / (d.size - 1)


def did_estimate(
    exposed: Any,
    unexposed: Any,
    *,
    models: Sequence[str] | None = None,
    shared_parents: bool = False,
    replicates: int = 2000,
    alpha: float = 0.05,
    seed: SeedLike = 0,
    n_threads: int | None = None,
) -> DiDResult:
    """Difference in differences of correctness over parents, per model and pooled.

    Args:
        exposed, unexposed: Per-parent correctness with columns ``DID_COLUMNS`` =
            (public_before, public_after, fresh_before, fresh_after), each in [0, 1]
            (fresh averaged over the fresh forms). For one model an (n, 4) array; for
            several an (M, n, 4) array or a list of (n_m, 4) arrays (counts may differ).
        models: Names for the models (default "model 1", ...).
        shared_parents: True when every model was scored on the same parents in the same
            row order: a replicate then resamples parents once for all models, keeping
            the models' dependence in the pooled interval. Default False: each model's
            parents are resampled independently.
        replicates: Bootstrap replicates B.
        alpha: Intervals have level 1 - alpha.
        seed: Any seed ``philox_key`` accepts (default 0); replicate b uses Philox task
            stream b.
        n_threads: Threads (None: every usable CPU); the result never depends on it.

    For each model: DiD_public = (mean after - mean before of public correctness on the
    exposed parents) - (the same on the unexposed parents); DiD_fresh likewise; the
    visible gap is DiD_public - DiD_fresh. Pooled = mean over models. The bootstrap
    resamples exposed and unexposed parents separately (with replacement, their own
    sizes); intervals are percentile and BCa (bias correction z0 from the replicates,
    acceleration from the jackknife over parents of both groups, combined as
    ``scipy.stats.bootstrap`` does for several samples). Other form families (a deep
    paraphrase bank) are a second call with those columns in the fresh slots.

    Raises:
        ValueError: wrong shapes, values outside [0, 1] or non-finite, fewer than 2
            parents in a group, different numbers of models in the two groups,
            ``shared_parents`` with unequal parent counts, replicates < 2, bad alpha,
            seed or n_threads.
    """
    ex = _did_groups("exposed", exposed)
    un = _did_groups("unexposed", unexposed)
    if len(ex) != len(un):
        raise ArgumentError(
            "exposed",
            "exposed and unexposed must hold the same number of models; "
            f"got {len(ex)} and {len(un)}",
        )
    n_models = len(ex)
    if models is None:
        names = tuple(f"model {i + 1}" for i in range(n_models))
    else:
        given = check_sequence("models", models, "model names")
        if len(given) != n_models:
            raise ArgumentError("models", f"models must name {n_models} models; got {len(given)}")
        names = tuple(str(v) for v in given)
    check_bool("shared_parents", shared_parents)
    if shared_parents and (len({g.shape[0] for g in ex}) > 1 or len({g.shape[0] for g in un}) > 1):
        raise ArgumentError(
            "shared_parents", "shared_parents needs the same number of parents for every model"
        )
    b = check_positive_int("replicates", replicates, minimum=2)
    check_alpha(alpha)
    threads = check_n_threads(n_threads)
    key = philox_key(seed)

    dpe = [np.ascontiguousarray(g[:, 1] - g[:, 0]) for g in ex]
    dfe = [np.ascontiguousarray(g[:, 3] - g[:, 2]) for g in ex]
    dpu = [np.ascontiguousarray(g[:, 1] - g[:, 0]) for g in un]
    dfu = [np.ascontiguousarray(g[:, 3] - g[:, 2]) for g in un]
    e_off = np.concatenate([[0], np.cumsum([d.size for d in dpe])]).astype(np.int64)
    u_off = np.concatenate([[0], np.cumsum([d.size for d in dpu])]).astype(np.int64)
    reps = _core.did_replicates(
        np.concatenate(dpe),
        np.concatenate(dfe),
        e_off,
        np.concatenate(dpu),
        np.concatenate(dfu),
        u_off,
        bool(shared_parents),
        b,
        key[0],
        key[1],
        n_threads=threads,
    )

    rows = n_models + 1
    exposed_change = np.empty((rows, 3))
    unexposed_change = np.empty((rows, 3))
    for m in range(n_models):
        ep, ef = np.mean(dpe[m]), np.mean(dfe[m])
        up, uf = np.mean(dpu[m]), np.mean(dfu[m])
        exposed_change[m] = (ep, ef, ep - ef)
        unexposed_change[m] = (up, uf, up - uf)
    estimate = np.empty((rows, 3))
    estimate[:n_models] = exposed_change[:n_models] - unexposed_change[:n_models]
    estimate[:n_models, 2] = estimate[:n_models, 0] - estimate[:n_models, 1]
    for arr in (exposed_change, unexposed_change, estimate):
        acc = np.zeros(3)
        for m in range(n_models):
            acc = acc + arr[m]
        arr[n_models] = acc / n_models

    # Jackknife (leave one parent out) estimates per independently resampled group.
    def loo(m: int, q: int) -> list[np.ndarray]:
        if q < 2:
            e, u = (dpe[m], dpu[m]) if q == 0 else (dfe[m], dfu[m])
            return [_loo_means(e) - np.mean(u), np.mean(e) - _loo_means(u)]
        ge = _loo_means(dpe[m]) - _loo_means(dfe[m]) - (np.mean(dpu[m]) - np.mean(dfu[m]))
        gu = (np.mean(dpe[m]) - np.mean(dfe[m])) - (_loo_means(dpu[m]) - _loo_means(dfu[m]))
        return [ge, gu]

    se = np.std(reps, axis=0, ddof=1)
    percentile = np.empty((rows, 3, 2))
    bca = np.empty((rows, 3, 2))
    z0 = np.empty((rows, 3))
    acc_ = np.empty((rows, 3))
    for q in range(3):
        per_model = [loo(m, q) for m in range(n_models)]
        for m in range(rows):
            if m < n_models:
                groups = per_model[m]
            elif shared_parents:
                groups = [
                    np.mean([per_model[k][g] for k in range(n_models)], axis=0) for g in range(2)
                ]
            else:
                groups = [
                    estimate[n_models, q] + (per_model[k][g] - estimate[k, q]) / n_models
                    for k in range(n_models)
                    for g in range(2)
                ]
            r = reps[:, m, q]
            percentile[m, q] = percentile_interval(r, alpha)
            bca[m, q], z0[m, q], acc_[m, q] = bca_interval(r, estimate[m, q], groups, alpha)
    return DiDResult(
        models=names + ("pooled",),
        quantities=_QUANTITIES,
        exposed_change=exposed_change,
        unexposed_change=unexposed_change,
        estimate=estimate,
        standard_error=se,
        percentile=percentile,
        bca=bca,
        bias_correction=z0,
        acceleration=acc_,
        spread=estimate[:n_models].max(axis=0) - estimate[:n_models].min(axis=0),
        n_exposed=tuple(g.shape[0] for g in ex),
        n_unexposed=tuple(g.shape[0] for g in un),
        replicates=b,
        alpha=alpha,
        shared_parents=bool(shared_parents),
    )

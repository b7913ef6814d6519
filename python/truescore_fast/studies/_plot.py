"""The figures of ``truescore-fast calibrate --plot``: one function per study, each taking
``matplotlib.pyplot`` and the study's tables and returning the figure.

Made to be read: every interval method has its own line style and marker (and, where
lines coincide, a small offset in n), so Hoeffding and Bernstein at 100% coverage do not
hide each other; axes name what they show (the stress settings, not an index); reference
lines (the nominal level, alpha) are labelled; error bars are 2 Monte Carlo SE.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from truescore_fast._table import StudyTable
from truescore_fast.audit._methods import INTERVAL_METHODS

__all__ = ["plot_budget", "plot_coverage", "plot_detection", "plot_stress"]

# One look per interval method, so lines that coincide (Hoeffding and Bernstein often
# cover 100%) stay visible: distinct dashes and markers, and small horizontal offsets.
_STYLE: dict[str, dict[str, Any]] = {
    "hoeffding": {"linestyle": "-", "marker": "o"},
    "bernstein": {"linestyle": "--", "marker": "s", "fillstyle": "none"},
    "wald": {"linestyle": ":", "marker": "^"},
    "hoeffding_serfling": {"linestyle": "-.", "marker": "D", "fillstyle": "none"},
    "betting": {"linestyle": (0, (5, 1, 1, 1, 1, 1)), "marker": "v"},
}
# A method the core's registry gains later is drawn with a style of its own from these,
# chosen by its place in INTERVAL_METHODS, until it is given one above.
_SPARE_MARKERS = ("P", "X", "*", "h", "<", ">", "p", "8")


def _style(method: str) -> dict[str, Any]:
    """The line and marker style of ``method``: its own, or a spare one by registry order."""
    if method in _STYLE:
        return _STYLE[method]
    place = INTERVAL_METHODS.index(method) if method in INTERVAL_METHODS else len(_STYLE)
    return {"linestyle": "-", "marker": _SPARE_MARKERS[place % len(_SPARE_MARKERS)]}


def _offsets(count: int, spread: float = 0.035) -> list[float]:
    """Multiplicative x offsets, so that markers of lines that coincide sit side by side."""
    return [1.0 + spread * (k - (count - 1) / 2) for k in range(count)]


def plot_coverage(pyplot: Any, tables: list[StudyTable]) -> Any:
    designs = tables[0].meta["tables"]
    figure, axes = pyplot.subplots(1, 1 + len(designs), figsize=(5.5 * (1 + len(designs)), 4.5))
    first = designs[0]["columns"]
    methods = list(dict.fromkeys(first["interval"]))
    offset = _offsets(len(methods))
    for k, m in enumerate(methods):
        rows = np.asarray(first["interval"]) == m
        n = np.asarray(first["n"])[rows]
        axes[0].plot(n * offset[k], np.asarray(first["half_width"])[rows], label=m, **_style(m))
    axes[0].set(xlabel="audit size n", ylabel="mean half-width", title="Precision (srs)")
    axes[0].set_xscale("log")
    for axis, design in zip(axes[1:], designs, strict=True):
        cols = design["columns"]
        for k, m in enumerate(methods):
            rows = np.asarray(cols["interval"]) == m
            n = np.asarray(cols["n"])[rows]
            cover = np.asarray(cols["coverage"])[rows]
            se = np.asarray(cols["coverage_se"])[rows]
            axis.errorbar(n * offset[k], cover, yerr=2 * se, label=m, capsize=2, **_style(m))
        level = 1 - design["meta"]["alpha"]
        axis.axhline(level, color="grey", linestyle=":", linewidth=1)
        axis.set_xscale("log")
        axis.set(
            xlabel="audit size n",
            ylabel="coverage (bars: 2 Monte Carlo SE)",
            title=f"Coverage ({cols['design'][0]}); dotted: nominal {level:.2f}",
        )
    for axis in axes:
        axis.set_xticks(sorted(set(first["n"])), [str(v) for v in sorted(set(first["n"]))])
        axis.minorticks_off()
    axes[0].legend(title="interval (offset in n to stay visible)", fontsize="small")
    figure.tight_layout()
    return figure


_SHAPE_ABBREVIATION = {"symmetric": "sym", "one-sided": "one", "bimodal": "bim"}


def plot_stress(pyplot: Any, tables: list[StudyTable]) -> Any:
    grid = tables[1]
    methods = [m for m in INTERVAL_METHODS if m in grid.columns]
    designs = list(dict.fromkeys(zip(grid["N"].tolist(), grid["n"].tolist(), strict=True)))
    ncols = min(2, len(designs))
    nrows = -(-len(designs) // ncols)
    figure, axes = pyplot.subplots(
        nrows,
        ncols,
        figsize=(6.5 * ncols, 3.6 * nrows + 0.6),
        squeeze=False,
        sharey=True,
        layout="constrained",
    )
    level = 1 - grid.meta["alpha"]
    width = 0.6
    for axis, (big_n, n) in zip(axes.flat, designs, strict=False):
        rows = np.flatnonzero((grid["N"] == big_n) & (grid["n"] == n))
        labels = [
            f"{_SHAPE_ABBREVIATION.get(str(grid['shape'][r]), grid['shape'][r])}\n"
            f"{float(grid['nonzero_share'][r]):.0%}"
            for r in rows
        ]
        x = np.arange(rows.size)
        for k, m in enumerate(methods):
            shift = width * (k / max(1, len(methods) - 1) - 0.5)
            axis.plot(
                x + shift,
                grid[m][rows],
                label=m,
                linestyle="none",
                marker=_style(m)["marker"],
                fillstyle=_style(m).get("fillstyle", "full"),
            )
        axis.axhline(level, color="grey", linestyle=":", linewidth=1)
        axis.set_xticks(x, labels, fontsize="small")
        axis.set(title=f"N = {big_n:,}, n = {n}", ylabel="coverage")
        axis.set_xlabel("gap shape (sym, one-sided, bimodal) / share of nonzero gaps")
    for axis in list(axes.flat)[len(designs) :]:
        axis.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(methods))
    figure.suptitle(f"Coverage across the stress grid (dotted: nominal {level:.2f})")
    return figure


def plot_detection(pyplot: Any, tables: list[StudyTable]) -> Any:
    planted = tables[3]
    null = tables[1]
    alpha = planted.meta["alpha"]
    figure, axes = pyplot.subplots(1, 3, figsize=(15, 4.5))
    test: dict[str, Any] = {"linestyle": "-", "marker": "o", "label": "exact test"}
    rule: dict[str, Any] = {
        "linestyle": "--",
        "marker": "s",
        "fillstyle": "none",
        "label": "interval rule",
    }
    for axis, delta in zip(axes[:2], (0.05, 0.10), strict=True):
        rows = planted["delta"] == delta
        axis.plot(planted["n"][rows], planted["test_rate"][rows], **test)
        axis.plot(planted["n"][rows], planted["interval_rate"][rows], **rule)
        axis.set(
            xlabel="audit size n",
            ylabel="detection rate",
            ylim=(0, 1.02),
            title=f"planted advantage d = {delta:.2f}",
        )
        axis.legend()
    axes[2].errorbar(null["n"], null["exact test"], yerr=2 * null["test SE"], capsize=2, **test)
    axes[2].errorbar(
        null["n"], null["interval rule"], yerr=2 * null["interval SE"], capsize=2, **rule
    )
    axes[2].axhline(alpha, color="grey", linestyle=":", linewidth=1, label=f"alpha = {alpha:g}")
    top = max(float(np.max(null["interval rule"])), float(np.max(null["exact test"])), alpha)
    axes[2].set(
        xlabel="audit size n",
        ylabel="rejection rate under the null (bars: 2 SE)",
        ylim=(0, 1.15 * top + 0.01),
        title="null (labels relabelled)",
    )
    axes[2].legend()
    figure.tight_layout()
    return figure


def plot_budget(pyplot: Any, tables: list[StudyTable]) -> Any:
    curves = tables[0]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 4.5))
    left.plot(curves["n"], curves["half_width"], marker="o")
    left.set(
        xlabel="audited parents n",
        ylabel="mean half-width",
        title=f"Precision ({curves.meta['interval']})",
    )
    right.plot(curves["n"], curves["exact_order"], marker="o", label="every model in order")
    right.plot(
        curves["n"],
        curves["pairs_correct"],
        marker="s",
        linestyle="--",
        fillstyle="none",
        label="share of pairs in order",
    )
    right.set(
        xlabel="audited parents n",
        ylabel="share of subsamples",
        ylim=(0, 1.02),
        title="Full-sample ordering recovered",
    )
    right.legend()
    figure.tight_layout()
    return figure

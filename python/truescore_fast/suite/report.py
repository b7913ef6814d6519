"""What a suite audit found, to look at: a models × benchmarks heatmap
(:func:`plot_heatmap`) and one self-contained HTML page (:func:`write_report`).

Both read a suite audit's result through its protocol only: ``result.to_frame()`` (one row
per model, benchmark and test: ``p_value``, ``adjusted_p_value``, ``flagged``,
``estimate``, ``low``, ``high``), ``result.q``, ``result.fdr`` and ``result.n_tests``
(``result.seed`` and ``result.summary()`` when present).

The figure is drawn on a :class:`matplotlib.figure.Figure` made here, never through
``pyplot``: nothing global (the backend, the current figure, the list of open figures)
changes, and a script or notebook that uses ``pyplot`` keeps its state. Its size follows
the table: every cell has the same size and every label the same font at 8 models or at
60; past ``max_models`` models (or ``max_benchmarks`` benchmarks) it shows the flagged
ones and the strongest evidence, and says on the figure how many were left out.
"""

from __future__ import annotations

import io
import math
import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from truescore_fast._output import check_output_path, output_file
from truescore_fast._text import visible
from truescore_fast._validation import check_choice, check_positive_int, one_line, optional_module
from truescore_fast.errors import ArgumentError, ArgumentTypeError
from truescore_fast.suite._report_page import ROW_COLUMNS, page

__all__ = ["plot_heatmap", "write_report"]

# The test whose estimate colours a (model, benchmark) cell when the pair has several:
# the first of these with a finite estimate, then any other test with one (in the order
# the result lists them). The matched-form audit measures the inflation directly on the
# items (public form against fresh forms of the same items); ConStat infers it from the
# other models; the order-based test has no estimate in score units.
_COLOUR_TESTS: tuple[str, ...] = ("matched_form", "constat")

_COLUMNS = ROW_COLUMNS  # the result's table columns the report reads (one list)
_FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
_FDR_NAMES = {"bh": "Benjamini–Hochberg", "by": "Benjamini–Yekutieli", "holm": "Holm"}
_LABEL_CHARACTERS = 40  # longer model or benchmark names are shortened on the figure only
_PLOT = {"requirement": "matplotlib>=3.7", "extra": "plot"}

#: How rows and columns can be ordered (see :func:`plot_heatmap`).
_ORDERS = ("auto", "name", "evidence", "strength")
_ORDER_WORDS = {
    "name": "by name",
    "evidence": "strongest evidence first",
    "strength": "highest score first",
}
# The figure's geometry, in inches and points: every cell and label the same size at any
# table size, so a label reads the same at 8 models and at 60.
_CELL_WIDTH, _CELL_HEIGHT = 0.42, 0.26
_FONT = 9.0
_BAR_GAP, _BAR_WIDTH = 0.15, 0.18
MAX_MODELS, MAX_BENCHMARKS = 60, 40


# --------------------------------------------------------------------------- reading


def _frame(result: Any, purpose: str) -> Any:
    """The result's table, checked: every column, at least one row, no repeated triple;
    rows by model, then benchmark (in natural order: model-2 before model-10), then test
    in the order the result lists them."""
    to_frame = getattr(result, "to_frame", None)
    if not callable(to_frame):
        raise ArgumentTypeError(
            "result",
            f"result must be a suite audit's result (with to_frame()); got {one_line(result)}",
        )
    frame = to_frame()
    missing = [c for c in _COLUMNS if c not in getattr(frame, "columns", ())]
    if missing:
        raise ValueError(f"result's table lacks the columns {missing} that {purpose} needs")
    if len(frame) == 0:
        raise ArgumentError("result", f"result has no tests: {purpose} has nothing to show")
    frame = frame.loc[:, list(_COLUMNS)].copy()
    for name in ("model", "benchmark", "test"):
        frame[name] = frame[name].map(str)
    for name in ("p_value", "adjusted_p_value", "estimate", "low", "high"):
        frame[name] = frame[name].astype(float)
    if not frame["flagged"].map(lambda v: isinstance(v, (bool, np.bool_))).all():
        raise ValueError("result's flagged column must hold True or False only")
    frame["flagged"] = frame["flagged"].astype(bool)
    repeated = frame.duplicated(["model", "benchmark", "test"])
    if repeated.any():
        row = frame[repeated].iloc[0]
        raise ArgumentError(
            "result",
            f"result lists ({row['model']!r}, {row['benchmark']!r}, {row['test']!r}) twice",
        )
    tests = {t: k for k, t in enumerate(dict.fromkeys(frame["test"]))}
    order = np.lexsort(
        (
            frame["test"].map(tests).to_numpy(),
            _natural_ranks(frame["benchmark"]),
            _natural_ranks(frame["model"]),
        )
    )
    return frame.iloc[order].reset_index(drop=True)


def _natural(name: str) -> tuple[Any, ...]:
    """A sort key that orders the numbers inside names by value: m2 < m10."""
    parts = re.split(r"([0-9]+)", name)
    # a number as (its digit count, its digits) without leading zeros: its value's order,
    # with no int() of a 5,000-digit string (which Python refuses)
    return (
        *(
            (len(p.lstrip("0")), p.lstrip("0")) if k % 2 else p.casefold()
            for k, p in enumerate(parts)
        ),
        name,
    )


def _natural_ranks(names: Any) -> Any:
    """Each name's place in the natural order of the distinct names (one key per name)."""
    rank = {name: k for k, name in enumerate(sorted(set(names), key=_natural))}
    return names.map(rank).to_numpy()


def _check_scores(scores: Any) -> dict[tuple[str, str], float] | None:
    if scores is None:
        return None
    if not isinstance(scores, Mapping):
        raise ArgumentTypeError(
            "scores",
            f"scores must be None or a mapping of (model, benchmark) to a score; "
            f"got {one_line(scores)}",
        )
    checked = {}
    for key, value in scores.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise ValueError(f"scores' keys must be (model, benchmark) pairs; got {one_line(key)}")
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ArgumentError(
                "scores", f"scores[{key!r}] must be a number; got {one_line(value)}"
            )
        if not math.isfinite(value):
            raise ArgumentError("scores", f"scores[{key!r}] must be finite; got {value!r}")
        checked[key] = float(value)
    return checked


def _layout(
    frame: Any,
    test: str | None,
    order: str,
    scores: dict[tuple[str, str], float] | None,
    max_models: int | None,
    max_benchmarks: int | None,
) -> dict[str, Any]:
    """Which models and benchmarks the heatmap shows, in which order, and what it left
    out. Past a limit the names kept are those with a flag, then the smallest adjusted
    p-value (then p-value), over the rows drawn (one test's with ``test=``)."""
    rows = frame if test is None else frame[frame["test"] == test]
    layout: dict[str, Any] = {}
    for axis, limit in (("model", max_models), ("benchmark", max_benchmarks)):
        names = sorted(set(frame[axis]), key=_natural)
        evidence = rows.groupby(axis, sort=False).agg(
            flag=("flagged", "max"), adjusted=("adjusted_p_value", "min"), p=("p_value", "min")
        )
        summary = {
            name: (not bool(flag), _or_inf(adjusted), _or_inf(p))
            for name, flag, adjusted, p in evidence.itertuples()
        }
        strongest = sorted(names, key=lambda n: summary.get(n, (True, math.inf, math.inf)))
        kept = set(strongest if limit is None else strongest[:limit])
        n_flagged = sum(not summary[n][0] for n in summary)
        layout[axis] = {
            "total": len(names),
            "flagged": n_flagged,
            "flagged_shown": sum(not summary[n][0] for n in summary if n in kept),
            "evidence": [n for n in strongest if n in kept],
            "name": [n for n in names if n in kept],
        }
        if scores is not None:
            layout[axis]["strength"] = _by_strength(layout[axis]["name"], axis, scores)
    left_out = any(layout[a]["total"] > len(layout[a]["name"]) for a in ("model", "benchmark"))
    chosen = ("evidence" if left_out else "name") if order == "auto" else order
    layout["order"] = chosen
    layout["models"] = layout["model"][chosen]
    layout["benchmarks"] = layout["benchmark"][chosen]
    layout["note"] = _left_out(layout)
    return layout


def _or_inf(value: Any) -> float:
    value = float(value)
    return math.inf if math.isnan(value) else value


def _by_strength(names: list[str], axis: str, scores: dict[tuple[str, str], float]) -> list[str]:
    """Names by their mean score (over the other axis), highest first; without a score last."""
    k = 0 if axis == "model" else 1
    sums: dict[str, list[float]] = {}
    for key, value in scores.items():
        sums.setdefault(key[k], []).append(value)
    mean = {n: math.fsum(v) / len(v) for n, v in sums.items()}
    # names keep their natural order among equals (a stable sort of the natural order)
    return sorted(names, key=lambda n: (n not in mean, -mean.get(n, 0.0)))


def _left_out(layout: dict[str, Any]) -> str:
    """What the heatmap does not show, in a sentence (empty when it shows everything)."""
    sentences = []
    for axis, plural in (("model", "models"), ("benchmark", "benchmarks")):
        part = layout[axis]
        shown, total = len(part["name"]), part["total"]
        if shown == total:
            continue
        missed = part["flagged"] - part["flagged_shown"]
        kept = "the smallest adjusted p-values"
        if missed == 0 and part["flagged"]:
            kept = f"every flagged one ({part['flagged']:,}) and {kept}"
        flags = f"{missed:,} of them flagged" if missed else "none of them flagged"
        sentences.append(
            f"Showing {shown:,} of {total:,} {plural}: {kept}; {total - shown:,} left out, "
            f"{flags} (every test is in the table)."
        )
    return " ".join(sentences)


def _grid(frame: Any, test: str | None, layout: dict[str, Any]) -> dict[str, Any]:
    """The heatmap's content: models and benchmarks in the layout's order, each cell's
    estimate (NaN: none), whether it is flagged, whether it is tested."""
    models, benchmarks = layout["models"], layout["benchmarks"]
    rows = frame if test is None else frame[frame["test"] == test]
    row = rows["model"].map({m: i for i, m in enumerate(models)}).fillna(-1).to_numpy(int)
    col = rows["benchmark"].map({b: j for j, b in enumerate(benchmarks)}).fillna(-1)
    col = col.to_numpy(int)
    shown = (row >= 0) & (col >= 0)
    shape = (len(models), len(benchmarks))
    cell = np.where(shown, row * shape[1] + col, -1)
    tested = np.zeros(shape[0] * shape[1], dtype=bool)
    flagged = np.zeros_like(tested)
    tested[cell[shown]] = True
    np.logical_or.at(flagged, cell[shown], rows["flagged"].to_numpy(bool)[shown])
    values = np.full(shape[0] * shape[1], np.nan)
    # each cell's estimate: the first finite one by the colouring tests' priority, ties
    # (tests outside _COLOUR_TESTS) in the result's order
    priority = {name: k for k, name in enumerate(_COLOUR_TESTS)}
    rank = rows["test"].map(lambda t: priority.get(t, len(priority))).to_numpy(int)
    estimate = rows["estimate"].to_numpy(float)
    usable = np.flatnonzero(shown & np.isfinite(estimate))
    usable = usable[np.lexsort((usable, rank[usable]))]
    cells, first = np.unique(cell[usable], return_index=True)
    values[cells] = estimate[usable[first]]
    return {
        "models": models,
        "benchmarks": benchmarks,
        "values": values.reshape(shape),
        "flagged": flagged.reshape(shape),
        "tested": tested.reshape(shape),
        "order": layout["order"],
        "note": layout["note"],
    }


def _check_path(path: Any, suffixes: tuple[str, ...]) -> Path:
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise ArgumentTypeError("path", f"path must be a str or os.PathLike; got {one_line(path)}")
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise ArgumentError("path", f"path must end in {', '.join(suffixes)}; got {str(out)!r}")
    check_output_path(out, flag="path")  # before any drawing: a directory, a dead link
    return out


def _check_view(
    order: Any, scores: Any, max_models: Any, max_benchmarks: Any
) -> tuple[str, dict[tuple[str, str], float] | None, int | None, int | None]:
    order = check_choice("order", order, _ORDERS)
    checked = _check_scores(scores)
    if order == "strength" and checked is None:
        raise ArgumentError(
            "order", "order='strength' needs scores (each (model, benchmark) pair's score)"
        )
    limits = [
        None if value is None else check_positive_int(name, value)
        for name, value in (("max_models", max_models), ("max_benchmarks", max_benchmarks))
    ]
    return order, checked, limits[0], limits[1]


def _fdr_text(result: Any) -> str:
    fdr = str(result.fdr)
    return _FDR_NAMES.get(fdr, fdr)


def _q(result: Any) -> float:
    q = result.q
    if isinstance(q, bool) or not isinstance(q, (int, float, np.floating, np.integer)):
        raise ArgumentTypeError("result", f"result.q must be a number; got {one_line(q)}")
    if not 0 < q < 1:
        raise ArgumentError("result", f"result.q must be in (0, 1); got {one_line(q)}")
    return float(q)


def _short_label(name: str) -> str:
    name = visible(str(name))  # no control or bidi character drawn (reordering the rest)
    if len(name) <= _LABEL_CHARACTERS:
        return name
    return name[: _LABEL_CHARACTERS - 1] + "…"


# --------------------------------------------------------------------------- the heatmap


def plot_heatmap(
    result: Any,
    path: str | os.PathLike[str] | None = None,
    *,
    test: str | None = None,
    ax: Any = None,
    order: str = "auto",
    scores: Mapping[tuple[str, str], float] | None = None,
    max_models: int | None = MAX_MODELS,
    max_benchmarks: int | None = MAX_BENCHMARKS,
) -> Any:
    """Draw a suite audit as a models × benchmarks heatmap, and save it when ``path`` is given.

    Each cell is one (model, benchmark) pair. Its colour is the estimated inflation, in
    score units (fraction correct; positive: the public score is above what the test
    expects), on a diverging scale centred at 0 (red above, blue below, white at 0; as
    wide as the largest estimate shown, at least ±0.05, at most ±1), with the colour bar
    beside the cells. A pair with several tests is coloured by the matched-form audit's
    estimate, else ConStat's, else the first other test with a finite estimate. A black
    ✕ marks a pair with a test flagged after the suite's multiplicity adjustment.
    Hatched: no test ran on the pair; grey: tests ran but none has an estimate in score
    units (the order-based test has none).

    The figure's size follows the table: every cell is 0.42 × 0.26 inches and every label
    9 pt, whatever the number of models, so the labels stay legible and never overlap.
    Past ``max_models`` models (``max_benchmarks`` benchmarks) the figure keeps the
    flagged ones first, then those with the smallest adjusted p-values, and says under
    the legend how many it left out and whether any of them is flagged (the report's
    table has every test). Names longer than 40 characters are shortened on the figure,
    and characters its font lacks are drawn as boxes (the report's table has every name
    whole).

    Args:
        result: a suite audit's result (see the module docstring for what is read).
        path: where to save the figure, as PNG, SVG or PDF by its suffix (with no date
            in the file, so the same result gives the same bytes); None: not saved.
        test: colour and mark by this one test only (``"constat"``, ...): a pair without
            it is hatched. None: all tests, as above.
        ax: a matplotlib ``Axes`` to draw on (its figure gets the colour bar); None: a
            new figure, made without ``pyplot``, sized to the table.
        order: how rows and columns are sorted: ``"name"`` (numbers inside a name by
            value: ``model-2`` before ``model-10``), ``"evidence"`` (flagged first, then
            by the smallest adjusted p-value of the row's or column's tests),
            ``"strength"`` (by the mean of ``scores``, highest first: the strongest
            models at the top, the easiest benchmarks on the left), or ``"auto"``: by
            name when every model and benchmark is shown, by evidence when some are left
            out.
        scores: each (model, benchmark) pair's score (for example its public score,
            fraction correct), read by ``order="strength"`` only.
        max_models, max_benchmarks: the most rows and columns drawn (at least 1); None:
            every one (a figure of 1,000 models is 260 inches tall).

    Returns:
        The ``matplotlib.figure.Figure`` drawn on. A new one is not registered with
        ``pyplot``: a notebook shows it as a cell's value; ``figure.savefig`` saves it.

    Raises:
        MissingExtraError: (an ImportError) matplotlib is not installed.
        TypeError: naming the argument: a ``result`` without ``to_frame()``, a ``path``
            that is not a str or path, an ``ax`` that is not an Axes, ``scores`` that is
            not a mapping.
        ValueError: naming the argument: a ``test`` the result does not have, a
            ``path`` suffix other than .png, .svg, .pdf or a ``path`` that cannot be
            written (checked before drawing: a directory, a folder that does not exist, a
            symbolic link to nothing or another user's; the file is replaced only once
            whole), an ``order`` not listed above (or ``"strength"`` without ``scores``), a
            score that is not a finite number, a ``max_models`` or ``max_benchmarks`` below
            1, a table without the columns, with no row, or with a (model, benchmark,
            test) twice.

    What the colour does NOT mean: a red cell is an estimate, not a finding (only a ✕
    is, at the suite's error rate); a white or blue cell is not evidence that a score is
    clean (a test's power depends on the data it had). A ✕ is evidence that the pair's
    score is inflated relative to fresh forms or reference models, not proof that the
    model was trained on the test set; a fraction of the flags (up to q of them under
    Benjamini–Hochberg) is expected to be false. A model left out of a large figure is
    not thereby clean either: it had weaker evidence than those shown.
    """
    frame = _frame(result, "plot_heatmap")
    if test is not None:
        tests = tuple(dict.fromkeys(frame["test"]))
        if not isinstance(test, str) or test not in tests:
            raise ArgumentError(
                "test",
                f"test must be None or one of the result's tests "
                f"{', '.join(map(repr, tests))}; got {one_line(test)}",
            )
    out = None if path is None else _check_path(path, _FIGURE_SUFFIXES)
    if ax is not None:
        axes_module = optional_module("matplotlib.axes", purpose="plot_heatmap", **_PLOT)
        if not isinstance(ax, axes_module.Axes):
            raise ArgumentTypeError(
                "ax", f"ax must be None or a matplotlib Axes; got {one_line(ax)}"
            )
    view = _check_view(order, scores, max_models, max_benchmarks)
    grid = _grid(frame, test, _layout(frame, test, *view))
    figure = _draw(grid, ax, _q(result), _fdr_text(result), test)
    if out is not None:
        _save(figure, out, out.suffix.lower()[1:])
    return figure


def _draw(grid: dict[str, Any], ax: Any, q: float, fdr: str, test: str | None) -> Any:
    mpl = optional_module("matplotlib", purpose="plot_heatmap", **_PLOT)
    colors = optional_module("matplotlib.colors", purpose="plot_heatmap", **_PLOT)
    patches = optional_module("matplotlib.patches", purpose="plot_heatmap", **_PLOT)
    lines = optional_module("matplotlib.lines", purpose="plot_heatmap", **_PLOT)
    n_models, n_benchmarks = grid["values"].shape
    bar_ax = legend_at = None
    if ax is None:
        ax, bar_ax, legend_at = _new_axes(grid)
    figure = ax.figure
    values = grid["values"]
    finite = values[np.isfinite(values)]
    # centred at 0 and symmetric, so equal distances from 0 look equally strong; at least
    # +-0.05 so that noise around 0 is not drawn in saturated colours, at most +-1 (a
    # difference of two fractions), beyond which a cell has the end colour
    limit = min(1.0, max(0.05, float(np.max(np.abs(finite))) if finite.size else 0.0))
    cmap = mpl.colormaps["RdBu_r"].with_extremes(bad=(0.0, 0.0, 0.0, 0.0))
    extent = (-0.5, n_benchmarks - 0.5, n_models - 0.5, -0.5)
    # under the image: hatching where no test ran, grey where tests ran without an estimate
    ax.add_patch(
        patches.Rectangle(
            (-0.5, -0.5), n_benchmarks, n_models, facecolor="white", edgecolor="0.6",
            hatch="///", linewidth=0, zorder=0, gid="not_tested",
        )
    )  # fmt: skip
    for i, j in zip(*np.nonzero(grid["tested"] & ~np.isfinite(values)), strict=True):
        ax.add_patch(
            patches.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.82", linewidth=0, zorder=0.5)
        )
    image = ax.imshow(
        np.ma.masked_invalid(np.clip(values, -1.0, 1.0)),  # drawn in the end colours beyond
        cmap=cmap,
        norm=colors.Normalize(-limit, limit),
        aspect="auto",
        interpolation="nearest",
        extent=extent,
        zorder=1,
    )
    ax.set_xlim(extent[0], extent[1])
    ax.set_ylim(extent[2], extent[3])
    # thin white lines between cells, so that neighbours of one colour stay separate
    ax.set_xticks(np.arange(-0.5, n_benchmarks, 1.0), minor=True)
    ax.set_yticks(np.arange(-0.5, n_models, 1.0), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.2)
    ax.tick_params(which="minor", length=0)
    ax.set_xticks(
        range(n_benchmarks), [_short_label(b) for b in grid["benchmarks"]], parse_math=False
    )
    ax.set_yticks(range(n_models), [_short_label(m) for m in grid["models"]], parse_math=False)
    ax.tick_params(which="major", labelsize=_FONT, length=0)
    ax.xaxis.tick_top()
    for label in ax.get_xticklabels():
        label.set(rotation=40, ha="left", rotation_mode="anchor")
    sorted_by = _ORDER_WORDS[grid["order"]]
    ax.set_xlabel(f"benchmark ({sorted_by})", fontsize=_FONT + 1)
    ax.xaxis.set_label_position("top")
    ax.set_ylabel(f"model ({sorted_by})", fontsize=_FONT + 1)
    rows, cols = np.nonzero(grid["flagged"])
    which = f"{test} " if test is not None else ""
    flag_label = f"{which}flagged at q = {q:g} ({fdr})"
    ax.plot(
        cols, rows, linestyle="none", marker="X", markersize=9,
        markerfacecolor="black", markeredgecolor="white", markeredgewidth=0.8, zorder=3,
        gid="flagged", label=flag_label,
    )  # fmt: skip
    if bar_ax is None:
        bar = figure.colorbar(image, ax=ax, shrink=min(1.0, 6.0 / max(n_models, 1) + 0.4))
    else:
        bar = figure.colorbar(image, cax=bar_ax)
    # two lines: as one, the label outgrows the shortest bar and runs into the legend
    bar.set_label("estimated inflation\n(fraction correct)", fontsize=_FONT)
    bar.ax.tick_params(labelsize=_FONT)
    colour_by = (
        f"colour: {test}'s estimate"
        if test is not None
        else "colour: matched-form estimate, else ConStat's"
    )
    handles = [
        lines.Line2D([], [], linestyle="none", marker="X", markersize=8, markerfacecolor="black",
                     markeredgecolor="white", label=flag_label),
        patches.Patch(facecolor="white", edgecolor="0.6", hatch="///", label="not tested"),
        patches.Patch(facecolor="0.82", label="no estimate in score units"),
    ]  # fmt: skip
    legend = ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(0.0, -0.01) if legend_at is None else legend_at,
        bbox_transform=ax.transAxes if legend_at is None else figure.transFigure,
        ncols=3 if n_benchmarks >= 8 else 1,
        fontsize=_FONT,
        frameon=False,
        title=colour_by,
        title_fontsize=_FONT,
        alignment="left",
    )
    for text in (*legend.get_texts(), legend.get_title()):  # names from the data, not TeX
        text.set_parse_math(False)
    if grid["note"]:
        note = ax.annotate(
            _wrap(grid["note"], max(60, int(n_benchmarks * _CELL_WIDTH * 72 / (0.5 * _FONT)))),
            xy=(0.0, 0.0), xycoords=legend, xytext=(0.0, -4.0), textcoords="offset points",
            ha="left", va="top", fontsize=_FONT, annotation_clip=False, gid="left_out",
        )  # fmt: skip
        note.set_parse_math(False)
    return figure


def _wrap(text: str, width: int) -> str:
    """Words on lines of at most ``width`` characters."""
    out: list[str] = []
    for word in text.split():
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return "\n".join(out)


def _new_axes(grid: dict[str, Any]) -> tuple[Any, Any, tuple[float, float]]:
    """A figure sized to the table: (the cells' axes, the colour bar's axes beside them,
    where the legend's top left corner goes, in figure fractions)."""
    figure_module = optional_module("matplotlib.figure", purpose="plot_heatmap", **_PLOT)
    n_models, n_benchmarks = grid["values"].shape
    character = 0.6 * _FONT / 72  # the width of an average character, in inches
    longest = max(len(_short_label(m)) for m in grid["models"])
    tallest = max(len(_short_label(b)) for b in grid["benchmarks"]) * math.sin(math.radians(40))
    cells_width, cells_height = n_benchmarks * _CELL_WIDTH, n_models * _CELL_HEIGHT
    bar_height = min(max(cells_height, 1.6), 4.0)
    # inches around the cells: model labels on the left, benchmark labels above, the
    # colour bar and its ticks on the right, the legend and the note of what was left out
    # below (the saved figure is cropped to what is drawn)
    left, top = 0.45 + longest * character, 0.45 + tallest * character
    right = _BAR_GAP + _BAR_WIDTH + 0.9
    below = max(cells_height, bar_height) - cells_height
    bottom = below + 1.0 + 0.2 * (1 + len(grid["note"]) // 60)
    width = max(left + cells_width + right, 6.5)
    height = top + cells_height + bottom
    figure = figure_module.Figure(figsize=(width, height))
    ax = figure.add_axes(
        (left / width, bottom / height, cells_width / width, cells_height / height)
    )
    bar_ax = figure.add_axes(
        (
            (left + cells_width + _BAR_GAP) / width,
            (bottom + cells_height - bar_height) / height,
            _BAR_WIDTH / width,
            bar_height / height,
        )
    )
    return ax, bar_ax, (left / width, (bottom - below - 0.05) / height)


def _save(figure: Any, path: Path | io.BytesIO, kind: str, dpi: float = 150) -> None:
    # no dates or random ids in the file: the same result gives the same bytes
    metadata: dict[str, Any] = {
        "png": {"Software": None},
        "svg": {"Date": None},
        "pdf": {"CreationDate": None, "ModDate": None},
    }[kind]
    rc = optional_module("matplotlib", purpose="plot_heatmap", **_PLOT).rc_context
    with rc({"svg.hashsalt": "truescore-fast"}), warnings.catch_warnings():
        # a name in a script the font lacks (CJK with the default DejaVu Sans) is drawn
        # with boxes, once per glyph warned about; the report's table has it whole
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        options = {"format": kind, "dpi": dpi, "metadata": metadata, "facecolor": "white",
                   "bbox_inches": "tight", "pad_inches": 0.15}  # fmt: skip
        if isinstance(path, io.BytesIO):
            figure.savefig(path, **options)
            return
        # a temporary file renamed over the path once whole (the package's one output path)
        with output_file(path, flag="path", binary=True) as handle:
            figure.savefig(handle, **options)


# --------------------------------------------------------------------------- the report

_REPORT_DPI = 150


def write_report(
    result: Any,
    path: str | os.PathLike[str],
    *,
    title: str = "Suite audit",
    created: str | None = None,
    order: str = "auto",
    scores: Mapping[tuple[str, str], float] | None = None,
    max_models: int | None = MAX_MODELS,
    max_benchmarks: int | None = MAX_BENCHMARKS,
) -> Path:
    """Write a suite audit as one self-contained HTML page, and return its path.

    The page holds what was run (models, benchmarks, tests, q, the multiplicity method,
    the seed when the result has one), the heatmap of :func:`plot_heatmap` (inline, as a
    PNG ``data:`` URI, at its full size or narrowed by at most a fifth to fit the
    screen; a figure wider still scrolls in its own box), a section per flagged (model,
    benchmark) pair (at most 20: the smallest adjusted p-values), the result's summary
    and the table of every test, which sorts
    by any column (click its heading), filters by a name and by "flagged only", and
    downloads every row as CSV or JSON. It needs nothing else: no network, no font or
    image from elsewhere, and its one inline script is allowed by its hash in the page's
    Content-Security-Policy, which forbids every other script and every request; so it
    opens from disk, offline, and can be attached or archived as it is. It reads on a
    400-pixel phone: the page never scrolls sideways (the figure and the table scroll in
    their own boxes). Every name from the data is HTML-escaped.

    Args:
        result: a suite audit's result (see the module docstring for what is read).
        path: the file to write, ending in ``.html`` or ``.htm`` (replaced if it exists).
        title: the page's title.
        created: a date or note shown under the title (for example ``"2026-12-02"``).
            None: none; the page has no timestamp of its own, so the same result gives
            the same bytes.
        order, scores, max_models, max_benchmarks: the heatmap's, as in
            :func:`plot_heatmap` (the table always has every test).

    Returns:
        The path written, as a ``pathlib.Path``.

    Raises:
        MissingExtraError: (an ImportError) matplotlib (the heatmap) is not installed.
        TypeError: naming the argument: a ``result`` without ``to_frame()``, a ``path``,
            ``title``, ``created`` or ``scores`` of the wrong type.
        ValueError: naming the argument: a ``path`` not ending in .html or .htm or that
            cannot be written (a folder that does not exist, a directory, a symbolic link
            to nothing or another user's), an ``order``, score, ``max_models`` or
            ``max_benchmarks`` as :func:`plot_heatmap` refuses them, a table without the
            columns, with no row, or with a (model, benchmark, test) twice.

    What the report does NOT say: a flag is evidence, at the suite's error rate, that
    the public score is inflated relative to fresh forms or reference models; it is not
    proof of training on the test set, and some flags (up to a fraction q of them under
    Benjamini–Hochberg) are expected to be false. A pair without a flag is not shown
    clean: its tests may have lacked the power to see an inflation.
    """
    out = _check_path(path, (".html", ".htm"))
    if not isinstance(title, str):
        raise ArgumentTypeError("title", f"title must be a str; got {one_line(title)}")
    if created is not None and not isinstance(created, str):
        raise ArgumentTypeError(
            "created", f"created must be None or a str; got {one_line(created)}"
        )
    view = _check_view(order, scores, max_models, max_benchmarks)
    frame = _frame(result, "write_report")
    q, fdr = _q(result), _fdr_text(result)
    grid = _grid(frame, None, _layout(frame, None, *view))
    figure = _draw(grid, None, q, fdr, None)
    png = io.BytesIO()
    _save(figure, png, "png", dpi=_REPORT_DPI)
    text = page(
        result, frame, title=title, created=created, png=png.getvalue(), dpi=_REPORT_DPI,
        q=q, fdr=fdr, heatmap_note=grid["note"],
    )  # fmt: skip
    with output_file(out, flag="path") as handle:  # whole, or the old file left as it was
        handle.write(text)
    return out

"""What a suite audit found, to look at: a models × benchmarks heatmap
(:func:`plot_heatmap`) and one self-contained HTML page (:func:`write_report`).

Both read a suite audit's result through its protocol only: ``result.to_frame()`` (one row
per model, benchmark and test: ``p_value``, ``adjusted_p_value``, ``flagged``,
``estimate``, ``low``, ``high``), ``result.q``, ``result.fdr`` and ``result.n_tests``
(``result.seed`` and ``result.summary()`` when present).

The figure is drawn on a :class:`matplotlib.figure.Figure` made here, never through
``pyplot``: nothing global (the backend, the current figure, the list of open figures)
changes, and a script or notebook that uses ``pyplot`` keeps its state.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from truescore_fast import __version__
from truescore_fast._output import check_output_path, output_file
from truescore_fast._text import visible
from truescore_fast._validation import one_line, optional_module

__all__ = ["plot_heatmap", "write_report"]

# The test whose estimate colours a (model, benchmark) cell when the pair has several:
# the first of these with a finite estimate, then any other test with one (in the order
# the result lists them). The matched-form audit measures the inflation directly on the
# items (public form against fresh forms of the same items); ConStat infers it from the
# other models; the order-based test has no estimate in score units.
_COLOUR_TESTS: tuple[str, ...] = ("matched_form", "constat")

_COLUMNS = (
    "model",
    "benchmark",
    "test",
    "p_value",
    "adjusted_p_value",
    "flagged",
    "estimate",
    "low",
    "high",
)
_FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
_FDR_NAMES = {"bh": "Benjamini–Hochberg", "by": "Benjamini–Yekutieli", "holm": "Holm"}
_TEST_NAMES = {
    "matched_form": "matched-form audit",
    "randomization": "randomization test",
    "order": "order-based test",
    "constat": "ConStat",
}
# What each test compares, for the report's sections on flagged pairs.
_TEST_MEANING = {
    "matched_form": "the public score is above the score on fresh forms of the same items",
    "randomization": "the exact randomization test finds the public form scoring above "
    "the fresh forms more often than chance would",
    "order": "the model's log-likelihoods favour the published order of the items",
    "constat": "the score on the benchmark is above what the other models' scores "
    "predict from this model's score on the reference benchmark",
}
_LABEL_CHARACTERS = 40  # longer model or benchmark names are shortened on the figure only
_PLOT = {"requirement": "matplotlib>=3.7", "extra": "plot"}


# --------------------------------------------------------------------------- reading


def _frame(result: Any, purpose: str) -> Any:
    """The result's table, checked: every column, at least one row, no repeated triple."""
    to_frame = getattr(result, "to_frame", None)
    if not callable(to_frame):
        raise TypeError(
            f"result must be a suite audit's result (with to_frame()); got {one_line(result)}"
        )
    frame = to_frame()
    missing = [c for c in _COLUMNS if c not in getattr(frame, "columns", ())]
    if missing:
        raise ValueError(f"result's table lacks the columns {missing} that {purpose} needs")
    if len(frame) == 0:
        raise ValueError(f"result has no tests: {purpose} has nothing to show")
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
        raise ValueError(
            f"result lists ({row['model']!r}, {row['benchmark']!r}, {row['test']!r}) twice"
        )
    # rows by model, then benchmark (in natural order: model-2 before model-10), then test
    # in the order the result lists them
    tests = {t: k for k, t in enumerate(dict.fromkeys(frame["test"]))}
    order = sorted(
        range(len(frame)),
        key=lambda k: (
            _natural(frame["model"].iloc[k]),
            _natural(frame["benchmark"].iloc[k]),
            tests[frame["test"].iloc[k]],
        ),
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


def _grid(frame: Any, test: str | None) -> dict[str, Any]:
    """The heatmap's content: models and benchmarks in the frame's (natural) order,
    each cell's estimate (NaN: none) and colouring test, whether it is flagged, tested."""
    models = sorted(set(frame["model"]), key=_natural)
    benchmarks = sorted(set(frame["benchmark"]), key=_natural)
    row = {m: i for i, m in enumerate(models)}
    col = {b: j for j, b in enumerate(benchmarks)}
    shape = (len(models), len(benchmarks))
    values = np.full(shape, np.nan)
    source = np.full(shape, "", dtype=object)
    flagged = np.zeros(shape, dtype=bool)
    tested = np.zeros(shape, dtype=bool)
    rows = frame if test is None else frame[frame["test"] == test]
    order = {name: k for k, name in enumerate(_COLOUR_TESTS)}
    ranked = sorted(  # stable: tests outside _COLOUR_TESTS keep the result's order
        range(len(rows)), key=lambda k: order.get(rows["test"].iloc[k], len(order))
    )
    for k in ranked:
        r = rows.iloc[k]
        i, j = row[r["model"]], col[r["benchmark"]]
        tested[i, j] = True
        flagged[i, j] |= bool(r["flagged"])
        if math.isnan(values[i, j]) and math.isfinite(r["estimate"]):
            values[i, j] = r["estimate"]
            source[i, j] = r["test"]
    return {
        "models": models,
        "benchmarks": benchmarks,
        "values": values,
        "source": source,
        "flagged": flagged,
        "tested": tested,
    }


def _check_path(path: Any, suffixes: tuple[str, ...]) -> Path:
    if not isinstance(path, (str, os.PathLike)) or isinstance(path, bytes):
        raise TypeError(f"path must be a str or os.PathLike; got {one_line(path)}")
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise ValueError(f"path must end in {', '.join(suffixes)}; got {str(out)!r}")
    check_output_path(out, flag="path")  # before any drawing: a directory, a dead link
    return out


def _fdr_text(result: Any) -> str:
    fdr = str(result.fdr)
    return _FDR_NAMES.get(fdr, fdr)


def _q(result: Any) -> float:
    q = result.q
    if isinstance(q, bool) or not isinstance(q, (int, float, np.floating, np.integer)):
        raise TypeError(f"result.q must be a number; got {one_line(q)}")
    if not 0 < q < 1:
        raise ValueError(f"result.q must be in (0, 1); got {one_line(q)}")
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
) -> Any:
    """Draw a suite audit as a models × benchmarks heatmap, and save it when ``path`` is given.

    Each cell is one (model, benchmark) pair. Its colour is the estimated inflation, in
    score units (fraction correct; positive: the public score is above what the test
    expects), on a diverging scale centred at 0 (red above, blue below, white at 0; as
    wide as the largest estimate shown, at least ±0.05, at most ±1). A pair with several
    tests is coloured by the matched-form audit's estimate, else ConStat's, else the
    first other test with a finite estimate. A black ✕ marks a pair with a test flagged
    after the suite's multiplicity adjustment. Hatched: no test ran on the pair; grey:
    tests ran but none has an estimate in score units (the order-based test has none).

    Rows (models) and columns (benchmarks) are sorted by name, numbers inside a name by
    value (``model-2`` before ``model-10``). Names longer than 40 characters are
    shortened on the figure, and characters its font lacks are drawn as boxes (the
    report's table has every name whole). Readable up to about 50 models × 20
    benchmarks; the figure grows with both.

    Args:
        result: a suite audit's result (see the module docstring for what is read).
        path: where to save the figure, as PNG, SVG or PDF by its suffix (with no date
            in the file, so the same result gives the same bytes); None: not saved.
        test: colour and mark by this one test only (``"constat"``, ...): a pair without
            it is hatched. None: all tests, as above.
        ax: a matplotlib ``Axes`` to draw on (its figure gets the colour bar); None: a
            new figure, made without ``pyplot``.

    Returns:
        The ``matplotlib.figure.Figure`` drawn on. A new one is not registered with
        ``pyplot``: a notebook shows it as a cell's value; ``figure.savefig`` saves it.

    Raises:
        MissingExtraError: (an ImportError) matplotlib is not installed.
        TypeError: naming the argument: a ``result`` without ``to_frame()``, a ``path``
            that is not a str or path, an ``ax`` that is not an Axes.
        ValueError: naming the argument: a ``test`` the result does not have, a
            ``path`` suffix other than .png, .svg, .pdf or a ``path`` that cannot be
            written (checked before drawing: a directory, a folder that does not exist, a
            symbolic link to nothing or another user's; the file is replaced only once
            whole), a table without the columns, with no row, or with a (model,
            benchmark, test) twice.

    What the colour does NOT mean: a red cell is an estimate, not a finding (only a ✕
    is, at the suite's error rate); a white or blue cell is not evidence that a score is
    clean (a test's power depends on the data it had). A ✕ is evidence that the pair's
    score is inflated relative to fresh forms or reference models, not proof that the
    model was trained on the test set; a fraction of the flags (up to q of them under
    Benjamini–Hochberg) is expected to be false.
    """
    frame = _frame(result, "plot_heatmap")
    if test is not None:
        tests = tuple(dict.fromkeys(frame["test"]))
        if not isinstance(test, str) or test not in tests:
            raise ValueError(
                f"test must be None or one of the result's tests "
                f"{', '.join(map(repr, tests))}; got {one_line(test)}"
            )
    out = None if path is None else _check_path(path, _FIGURE_SUFFIXES)
    if ax is not None:
        axes_module = optional_module("matplotlib.axes", purpose="plot_heatmap", **_PLOT)
        if not isinstance(ax, axes_module.Axes):
            raise TypeError(f"ax must be None or a matplotlib Axes; got {one_line(ax)}")
    grid = _grid(frame, test)
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
    fontsize = 9 if n_models <= 30 and n_benchmarks <= 12 else 7.5
    if ax is None:
        figure_module = optional_module("matplotlib.figure", purpose="plot_heatmap", **_PLOT)
        figure = figure_module.Figure(figsize=_size(grid, fontsize), layout="constrained")
        ax = figure.add_subplot()
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
    ax.tick_params(which="major", labelsize=fontsize, length=0)
    ax.xaxis.tick_top()
    for label in ax.get_xticklabels():
        label.set(rotation=40, ha="left", rotation_mode="anchor")
    ax.set_xlabel("benchmark", fontsize=fontsize + 1)
    ax.xaxis.set_label_position("top")
    ax.set_ylabel("model", fontsize=fontsize + 1)
    rows, cols = np.nonzero(grid["flagged"])
    which = f"{test} " if test is not None else ""
    flag_label = f"{which}flagged at q = {q:g} ({fdr})"
    ax.plot(
        cols, rows, linestyle="none", marker="X", markersize=9 if fontsize == 9 else 7,
        markerfacecolor="black", markeredgecolor="white", markeredgewidth=0.8, zorder=3,
        gid="flagged", label=flag_label,
    )  # fmt: skip
    bar = figure.colorbar(image, ax=ax, shrink=min(1.0, 6.0 / max(n_models, 1) + 0.4))
    bar.set_label("estimated inflation (fraction correct)", fontsize=fontsize)
    bar.ax.tick_params(labelsize=fontsize)
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
        bbox_to_anchor=(0.0, -0.01),
        ncols=3 if n_benchmarks >= 8 else 1,
        fontsize=fontsize,
        frameon=False,
        title=colour_by,
        title_fontsize=fontsize,
        alignment="left",
    )
    for text in (*legend.get_texts(), legend.get_title()):  # names from the data, not TeX
        text.set_parse_math(False)
    return figure


def _size(grid: dict[str, Any], fontsize: float) -> tuple[float, float]:
    """A figure size (inches) that fits the labels, the cells, the colour bar and legend."""
    n_models, n_benchmarks = grid["values"].shape
    character = 0.6 * fontsize / 72  # the width of an average character, in inches
    longest = max(len(_short_label(m)) for m in grid["models"])
    tallest = max(len(_short_label(b)) for b in grid["benchmarks"]) * math.sin(math.radians(40))
    width = 0.6 + longest * character + 0.45 * n_benchmarks + 1.4
    height = 0.9 + tallest * character + 0.26 * n_models + 0.9
    return max(width, 6.5), max(height, 3.5)


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

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1.5rem;
  color: #1f2328; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de;
  padding-bottom: 0.25rem; }
h3 { font-size: 1.05rem; margin-bottom: 0.3rem; }
.lead { color: #57606a; margin-top: 0; }
dl.run { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1.2rem; }
dl.run dt { font-weight: 600; } dl.run dd { margin: 0; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; }
figcaption { color: #57606a; font-size: 0.9rem; }
table { border-collapse: collapse; font-size: 0.88rem; width: 100%; }
th, td { border-bottom: 1px solid #d0d7de; padding: 0.3rem 0.55rem; text-align: left; }
th { background: #f6f8fa; position: sticky; top: 0; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.flagged td { background: #fff1f0; }
tr.flagged td.flag { color: #b42318; font-weight: 700; }
section.pair { border-left: 4px solid #b42318; padding: 0.1rem 1rem 0.6rem;
  margin: 1rem 0; background: #fffafa; }
.caveat { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px;
  padding: 0.6rem 1rem; }
pre { background: #f6f8fa; padding: 0.8rem; overflow-x: auto; font-size: 0.85rem; }
footer { margin-top: 3rem; color: #57606a; font-size: 0.85rem; }
"""
# Nothing may load: no script runs, no request leaves, even if a name in the data were
# not escaped. Images only from data: URIs (the heatmap), styles only from this page.
_REPORT_DPI = 150
_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def write_report(
    result: Any,
    path: str | os.PathLike[str],
    *,
    title: str = "Suite audit",
    created: str | None = None,
) -> Path:
    """Write a suite audit as one self-contained HTML page, and return its path.

    The page holds what was run (models, benchmarks, tests, q, the multiplicity method,
    the seed when the result has one), the heatmap of :func:`plot_heatmap` (inline, as a
    PNG ``data:`` URI), a section per flagged (model, benchmark) pair (what each test
    found, and what a flag does not mean), the result's summary and the table of every
    test. It needs nothing else: no network, no script, no font or image from elsewhere
    (its Content-Security-Policy forbids them), so it opens from disk, offline, and can
    be attached or archived as it is. Every name from the data is HTML-escaped.

    Args:
        result: a suite audit's result (see the module docstring for what is read).
        path: the file to write, ending in ``.html`` or ``.htm``; an existing file is
            replaced only once the new page is whole on disk (a failed write leaves it as
            it was), as every file the package writes (docs/cli.md, "Output files").
        title: the page's title.
        created: a date or note shown under the title (for example ``"2026-12-02"``).
            None: none; the page has no timestamp of its own, so the same result gives
            the same bytes.

    Returns:
        The path written, as a ``pathlib.Path``.

    Raises:
        MissingExtraError: (an ImportError) matplotlib (the heatmap) is not installed.
        TypeError: naming the argument: a ``result`` without ``to_frame()``, a ``path``,
            ``title`` or ``created`` of the wrong type.
        ValueError: naming the argument: a ``path`` not ending in .html or .htm or that
            cannot be written (a folder that does not exist, a directory, a symbolic link
            to nothing or another user's), a table without the columns, with no row, or
            with a (model, benchmark, test) twice.

    What the report does NOT say: a flag is evidence, at the suite's error rate, that
    the public score is inflated relative to fresh forms or reference models; it is not
    proof of training on the test set, and some flags (up to a fraction q of them under
    Benjamini–Hochberg) are expected to be false. A pair without a flag is not shown
    clean: its tests may have lacked the power to see an inflation.
    """
    out = _check_path(path, (".html", ".htm"))
    if not isinstance(title, str):
        raise TypeError(f"title must be a str; got {one_line(title)}")
    if created is not None and not isinstance(created, str):
        raise TypeError(f"created must be None or a str; got {one_line(created)}")
    frame = _frame(result, "write_report")
    q, fdr = _q(result), _fdr_text(result)
    figure = _draw(_grid(frame, None), None, q, fdr, None)
    png = io.BytesIO()
    _save(figure, png, "png", dpi=_REPORT_DPI)
    page = _page(result, frame, title, created, png.getvalue())
    with output_file(out, flag="path") as handle:  # whole, or the old file left as it was
        handle.write(page)
    return out


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _name(value: Any) -> str:
    """A model's or benchmark's name in the page: control characters, bidi controls and
    lone surrogates shown as escapes, and isolated (``<bdi>``) so that a right-to-left
    name cannot reorder the text around it."""
    return f"<bdi>{_e(visible(str(value)))}</bdi>"


def _number(value: float, digits: int = 3) -> str:
    return "–" if math.isnan(value) else f"{value:.{digits}g}"


def _signed(value: float) -> str:
    if math.isnan(value):
        return "–"
    return f"{value:+.3f}" if abs(value) < 1e6 else f"{value:+.3g}"


def _interval(low: float, high: float) -> str:
    # no interval: NaN, or the whole line (a test that bounds nothing: -inf to +inf)
    if not math.isfinite(low) and not math.isfinite(high):
        return "–"
    return f"{_signed(low)} to {_signed(high)}"


def _page(result: Any, frame: Any, title: str, created: str | None, png: bytes) -> str:
    q, fdr = _q(result), _fdr_text(result)
    models = sorted(set(frame["model"]), key=_natural)
    benchmarks = sorted(set(frame["benchmark"]), key=_natural)
    tests = list(dict.fromkeys(frame["test"]))
    counts = frame["test"].value_counts()
    flagged = frame[frame["flagged"]]
    pairs = list(dict.fromkeys(zip(flagged["model"], flagged["benchmark"], strict=True)))
    seed = getattr(result, "seed", None)
    run = [
        ("Models", f"{len(models)}"),
        ("Benchmarks", f"{len(benchmarks)}"),
        (
            "Tests",
            ", ".join(f"{_TEST_NAMES.get(t, t)} ({counts[t]})" for t in tests)
            + f"; {len(frame)} in all",
        ),
        ("Multiplicity", f"{fdr}, q = {q:g}, over {getattr(result, 'n_tests', len(frame))} tests"),
        ("Seed", "not recorded" if seed is None else f"{seed}"),
        ("Flagged", f"{len(flagged)} tests on {len(pairs)} (model, benchmark) pairs"),
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
    ]
    lead = "Which scores in this table can you not trust? Every applicable test on every "
    lead += "(model, benchmark) pair, with the error rate controlled across the suite."
    if created is not None:
        lead = f"{_e(created)}. {lead}"
    parts.append(f'<p class="lead">{lead}</p>')
    parts.append('<h2 id="run">What was run</h2><dl class="run">')
    parts += [f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in run]
    parts.append("</dl>")
    parts.append(_caveats(q, fdr))
    parts.append('<h2 id="heatmap">Heatmap</h2><figure>')
    alt = f"Heatmap of estimated inflation for {len(models)} models by {len(benchmarks)} "
    alt += f"benchmarks; {len(pairs)} pairs flagged."
    # shown at 120 CSS px per inch (a little above the CSS inch of 96 px, so the figure's
    # 9 pt labels read as 15 px), sharp on screens of up to 1.25 device pixels per px
    width, height = (
        round(int.from_bytes(png[k : k + 4], "big") * 120 / _REPORT_DPI) for k in (16, 20)
    )
    data = base64.b64encode(png).decode("ascii")
    parts.append(
        f'<img src="data:image/png;base64,{data}" width="{width}" height="{height}" '
        f'alt="{_e(alt)}">'
    )
    parts.append(
        "<figcaption>Colour: the estimated inflation of the public score (fraction "
        "correct; red above expectation, blue below), from the matched-form audit where "
        "it ran, else from ConStat. ✕: a test on the pair is flagged after the "
        "multiplicity adjustment. Hatched: not tested.</figcaption></figure>"
    )
    parts.append(f'<h2 id="flagged">Flagged pairs ({len(pairs)})</h2>')
    if not pairs:
        parts.append(
            f"<p>No test is flagged at q = {q:g} ({_e(fdr)}). That does not show the "
            "scores are clean: a test's power depends on how many items and forms it "
            "had, and an inflation smaller than it can see passes unflagged.</p>"
        )
    for model, benchmark in pairs:
        parts.append(_pair_section(frame, model, benchmark, q))
    summary = getattr(result, "summary", None)
    if callable(summary):
        parts.append('<h2 id="summary">Summary</h2>')
        parts.append(f"<pre>{_e(summary())}</pre>")
    parts.append(f'<h2 id="table">Every test ({len(frame)})</h2>')
    parts.append(_table(frame))
    parts.append(
        f"<footer>Written by truescore-fast {_e(__version__)}. This page is self-contained: "
        "it loads nothing from the network.</footer>"
    )
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _caveats(q: float, fdr: str) -> str:
    if fdr == "Holm":
        rate = (
            f"Holm's method keeps the chance of even one false flag in the suite at or below {q:g}"
        )
    else:
        rate = (
            f"{_e(fdr)} keeps the expected fraction of false flags among all flags at or "
            f"below {q:g}: about {q:.0%} of the flags may be false"
        )
    return (
        '<div class="caveat"><p><strong>What a flag means.</strong> Evidence, at the '
        "suite's error rate, that the public score is inflated relative to fresh forms "
        f"of the same items or to reference models. {rate}.</p>"
        "<p><strong>What it does not mean.</strong> A flag is not proof that the model "
        "was trained on the test set (other causes can raise a public score above fresh "
        "forms: easier public wording, selection of the published items). No flag does "
        "not mean clean: a pair's tests may lack the power to see its inflation.</p></div>"
    )


def _pair_section(frame: Any, model: str, benchmark: str, q: float) -> str:
    rows = frame[(frame["model"] == model) & (frame["benchmark"] == benchmark)]
    items = []
    for _, r in rows.iterrows():
        name = _TEST_NAMES.get(r["test"], r["test"])
        numbers = f"p = {_number(r['p_value'])}, adjusted p = {_number(r['adjusted_p_value'])}"
        if r["flagged"]:
            numbers += f" ≤ q = {q:g}"
        if not math.isnan(r["estimate"]):
            numbers += f"; estimated inflation {_signed(r['estimate'])}"
            if not (math.isnan(r["low"]) and math.isnan(r["high"])):
                numbers += f" (interval {_interval(r['low'], r['high'])})"
        if r["flagged"]:
            meaning = _TEST_MEANING.get(r["test"], "the test rejects its null hypothesis")
            items.append(
                f"<li><strong>{_e(name)}: flagged.</strong> "
                f"{_e(meaning[0].upper() + meaning[1:])}: {_e(numbers)}.</li>"
            )
        else:
            items.append(f"<li>{_e(name)}: not flagged; {_e(numbers)}.</li>")
    return (
        f'<section class="pair"><h3>{_name(model)} on {_name(benchmark)}</h3>'
        f"<ul>{''.join(items)}</ul>"
        "<p>What this does not show: that the model was trained on these items (other "
        "causes can raise a public score), nor that the inflation is exactly the estimate "
        "(it lies in the interval, if any, at the test's level).</p></section>"
    )


def _table(frame: Any) -> str:
    head = "".join(
        f"<th>{h}</th>"
        if h in ("model", "benchmark", "test", "flagged")
        else f'<th class="num">{h}</th>'
        for h in (
            "model",
            "benchmark",
            "test",
            "p",
            "adjusted p",
            "flagged",
            "estimate",
            "interval",
        )
    )
    body = []
    for _, r in frame.iterrows():
        cls = ' class="flagged"' if r["flagged"] else ""
        body.append(
            f"<tr{cls}><td>{_name(r['model'])}</td><td>{_name(r['benchmark'])}</td>"
            f"<td>{_e(r['test'])}</td>"
            f'<td class="num">{_number(r["p_value"])}</td>'
            f'<td class="num">{_number(r["adjusted_p_value"])}</td>'
            f'<td class="flag">{"yes" if r["flagged"] else "no"}</td>'
            f'<td class="num">{_signed(r["estimate"])}</td>'
            f'<td class="num">{_interval(r["low"], r["high"])}</td></tr>'
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"

"""The suite audit's report at leaderboard scale (issue 34): the heatmap sized to the table
(cells and labels one size at any number of models, the colour bar beside the cells),
ordered by name, evidence or strength, and past a limit the flagged models and the
strongest evidence kept, with what was left out said; the page read in headless Chromium
at 1,400 and 400 px on the shipped 8 x 4 example and on a 200 x 20 suite (no sideways
scroll, no CSP violation, no request), its table sorted, filtered and downloaded.

The 200 x 20 suite is a real :class:`SuiteAudit` built from seeded arrays (its p-values
adjusted by the suite's own Benjamini-Hochberg): a real audit of 200 models takes minutes.
Every expected order below is computed here from the rows, not read from the page's code.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib", reason="the heatmap needs matplotlib (the plot extra)")

from browser import CHROMIUM, Browser  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from truescore_fast.suite import (  # noqa: E402
    SuiteAudit,
    adjust,
    plot_heatmap,
    suite_audit,
    write_report,  # noqa: E402
)
from truescore_fast.suite._report_page import FORMULA_START, csv_text  # noqa: E402

NAN, INF = float("nan"), float("inf")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "suite" / "suite_example.csv.gz"
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install chromium; CI does)",
)


def make_suite(n_models, n_benchmarks, *, seed=34, planted=40):
    """A SuiteAudit of ``n_models`` x ``n_benchmarks`` pairs, each with the matched-form
    audit, ConStat and (every seventh pair) the order-based test, else the randomization
    test; ``planted`` pairs get small p-values and a large estimate."""
    rng = np.random.default_rng(seed)
    models = [f"model-{m}" for m in range(n_models)]
    benchmarks = [f"bench-{b}" for b in range(n_benchmarks)]
    rows = []
    pairs = [(m, b) for m in models for b in benchmarks]
    leaks = {pairs[k] for k in rng.choice(len(pairs), size=planted, replace=False)}
    for k, (m, b) in enumerate(pairs):
        leak = (m, b) in leaks
        shift = 0.15 if leak else 0.0
        for test in ("matched_form", "order" if k % 7 == 0 else "randomization", "constat"):
            p = rng.uniform(0, 1e-6) if leak else rng.uniform()
            estimate = shift + rng.normal(0, 0.03)
            low, high = {
                "matched_form": (estimate - 0.05, estimate + 0.05),
                "constat": (estimate - 0.07, estimate + 0.07),
            }.get(test, (-INF, INF))
            if test == "order":
                estimate = rng.normal(3 if leak else 0, 1)  # a z-score, not score units
            rows.append((m, b, test, p, estimate, low, high))
    p = np.array([r[3] for r in rows])
    adjusted = adjust(p, "bh")
    return SuiteAudit(
        model=tuple(r[0] for r in rows),
        benchmark=tuple(r[1] for r in rows),
        test=tuple(r[2] for r in rows),
        p_value=p,
        adjusted_p_value=adjusted,
        flagged=adjusted <= 0.05,
        estimate=np.array([r[4] for r in rows]),
        low=np.array([r[5] for r in rows]),
        high=np.array([r[6] for r in rows]),
        n=np.full(len(rows), 1000, dtype=np.int64),
        q=0.05,
        fdr="bh",
        alpha=0.05,
        n_tests=len(rows),
        models=tuple(models),
        benchmarks=tuple(benchmarks),
        skipped=(),
        seed=seed,
    )


class Double:
    """Literal rows (model, benchmark, adjusted p, flagged) of one ConStat test each."""

    def __init__(self, rows):
        self.rows = rows
        self._frame = pd.DataFrame(
            [(m, b, "constat", a / 2, a, f, 0.01, NAN, NAN) for m, b, a, f in rows],
            columns="model benchmark test p_value adjusted_p_value flagged estimate low "
            "high".split(),
        )
        self.q, self.fdr, self.n_tests = 0.05, "bh", len(rows)

    def to_frame(self):
        return self._frame.copy()


def _cells_axes(figure):
    (ax,) = [a for a in figure.axes if any(line.get_gid() == "flagged" for line in a.lines)]
    return ax


def _bar_axes(figure):
    (bar,) = [a for a in figure.axes if a is not _cells_axes(figure)]
    return bar


def _inches(figure, ax):
    """The axes' box, in inches from the figure's lower left corner."""
    return ax.get_position().transformed(figure.transFigure + figure.dpi_scale_trans.inverted())


def _rows(figure):
    return [t.get_text() for t in _cells_axes(figure).get_yticklabels()]


def _note(figure):
    texts = [t for t in _cells_axes(figure).texts if t.get_gid() == "left_out"]
    return " ".join(texts[0].get_text().split()) if texts else ""


def _number(name):
    return int(name.rsplit("-", 1)[1])


# ------------------------------------------------------------------------- the heatmap


@pytest.fixture(scope="module")
def suites():
    return {m: make_suite(m, 10, planted=min(40, m)) for m in (8, 30, 60, 200)}


def test_heatmap_cells_and_labels_keep_their_size(suites):
    sizes, fonts = set(), set()
    for n_models in (8, 30, 60):
        figure = plot_heatmap(suites[n_models])
        ax = _cells_axes(figure)
        box = _inches(figure, ax)
        sizes.add((round(box.width / 10, 9), round(box.height / n_models, 9)))
        labels = ax.get_yticklabels() + ax.get_xticklabels()
        fonts |= {label.get_fontsize() for label in labels}
        # rows' labels never overlap: each is below the one before it, drawn
        renderer = FigureCanvasAgg(figure).get_renderer()
        extents = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
        assert all(a.y0 >= b.y1 for a, b in zip(extents, extents[1:], strict=False))
        # the benchmarks' labels (at 40 degrees) are further apart than they are tall
        (font,) = {t.get_fontsize() for t in ax.get_xticklabels()}
        assert box.width / 10 * 72 * math.sin(math.radians(40)) > font
    assert len(sizes) == 1 and len(fonts) == 1 and fonts.pop() >= 9


def test_heatmap_colour_bar_is_beside_the_cells(suites):
    for n_models in (8, 30, 60, 200):
        figure = plot_heatmap(suites[n_models])
        cells, bar = _inches(figure, _cells_axes(figure)), _inches(figure, _bar_axes(figure))
        assert 0 < bar.x0 - cells.x1 < 0.3, n_models  # inches
        assert bar.y1 == pytest.approx(cells.y1)  # top-aligned with the cells


def test_heatmap_size_follows_the_table_up_to_the_limit(suites):
    heights = {m: _inches(f, _cells_axes(f)).height for m, f in
               ((m, plot_heatmap(suites[m])) for m in (8, 30, 60, 200))}  # fmt: skip
    assert heights[8] < heights[30] < heights[60] == pytest.approx(heights[200])
    assert len(_rows(plot_heatmap(suites[200]))) == 60
    assert len(_rows(plot_heatmap(suites[200], max_models=None))) == 200


# 100 models: three flagged (adjusted p 0.001 to 0.003), two strong unflagged, the rest weak
_FLAGGED = {"model-90": 0.001, "model-5": 0.002, "model-42": 0.003}
_STRONG = {"model-60": 0.06, "model-61": 0.07}


def _hundred():
    rows = []
    for m in range(100):
        name = f"model-{m}"
        adjusted = _FLAGGED.get(name, _STRONG.get(name, 0.5 + m / 1000))
        rows += [(name, b, adjusted, name in _FLAGGED) for b in ("b1", "b2")]
    return Double(rows)


def test_heatmap_past_the_limit_keeps_the_flagged_and_strongest_evidence():
    figure = plot_heatmap(_hundred(), max_models=5)
    assert _rows(figure) == ["model-90", "model-5", "model-42", "model-60", "model-61"]
    note = _note(figure)
    assert "Showing 5 of 100 models" in note and "every flagged one (3)" in note
    assert "95 left out, none of them flagged" in note
    # by name, the same five
    figure = plot_heatmap(_hundred(), max_models=5, order="name")
    assert _rows(figure) == ["model-5", "model-42", "model-60", "model-61", "model-90"]
    # fewer places than flags: the strongest flags, and the missed ones counted
    figure = plot_heatmap(_hundred(), max_models=2)
    assert _rows(figure) == ["model-90", "model-5"]
    assert "98 left out, 1 of them flagged" in _note(figure)
    # nothing flagged: the smallest adjusted p-values, and none left out is flagged
    unflagged = Double([(m, b, a, False) for m, b, a, _ in _hundred().rows])
    note = _note(plot_heatmap(unflagged, max_models=5))
    assert "Showing 5 of 100 models: the smallest adjusted p-values; 95 left out, none" in note


def test_heatmap_everything_shown_says_nothing_left_out(suites):
    figure = plot_heatmap(suites[30])
    assert _note(figure) == ""
    assert _rows(figure) == [f"model-{m}" for m in range(30)]  # by name: nothing left out


def test_heatmap_by_evidence_and_by_strength():
    double = _hundred()
    by_evidence = _rows(plot_heatmap(double, order="evidence", max_models=None))
    expected = sorted((f"model-{m}" for m in range(100)), key=lambda n: (
        _FLAGGED.get(n, _STRONG.get(n, 0.5 + _number(n) / 1000))))  # fmt: skip
    assert by_evidence == expected
    scores = {("model-1", "b1"): 0.9, ("model-1", "b2"): 0.7, ("model-2", "b1"): 0.85,
              ("model-3", "b2"): 0.1, ("model-0", "b2"): 0.95}  # fmt: skip
    figure = plot_heatmap(double, order="strength", scores=scores, max_models=None)
    rows = _rows(figure)
    # means: model-0 0.95, model-2 0.85, model-1 0.80, model-3 0.10; the others unscored
    assert rows[:4] == ["model-0", "model-2", "model-1", "model-3"]
    assert rows[4:] == [f"model-{m}" for m in range(4, 100)]
    benchmarks = [t.get_text() for t in _cells_axes(figure).get_xticklabels()]
    assert benchmarks == ["b1", "b2"]  # b1's mean 0.875 above b2's 0.583


@pytest.mark.parametrize(
    ("keywords", "error", "message"),
    [
        ({"order": "size"}, ValueError, "^order must be one of 'auto', 'name'"),
        ({"order": "strength"}, ValueError, "^order='strength' needs scores"),
        ({"scores": [("m", "b", 1.0)]}, TypeError, "^scores must be None or a mapping"),
        ({"scores": {("m",): 1.0}}, ValueError, "^scores' keys must be"),
        ({"scores": {("m", "b"): NAN}}, ValueError, r"^scores\[\('m', 'b'\)\] must be finite"),
        ({"scores": {("m", "b"): "0.5"}}, ValueError, r"^scores\[\('m', 'b'\)\] must be a num"),
        ({"max_models": 0}, ValueError, "^max_models must be at least 1"),
        ({"max_benchmarks": 2.5}, ValueError, "^max_benchmarks must be an integer"),
    ],
)
def test_view_arguments_name_themselves(keywords, error, message, tmp_path):
    with pytest.raises(error, match=message):
        plot_heatmap(_hundred(), **keywords)
    with pytest.raises(error, match=message):
        write_report(_hundred(), tmp_path / "r.html", **keywords)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------- the report


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    """The 200 x 20 suite and its report: (result, path, text)."""
    result = make_suite(200, 20)
    path = write_report(result, tmp_path_factory.mktemp("large") / "large.html")
    return result, path, path.read_text(encoding="utf-8")


def _table_order(result):
    """The report's rows, as this test expects them: model and benchmark by their
    number, then the tests in the order the result lists them."""
    tests = list(dict.fromkeys(result.test))
    return sorted(
        range(result.n_tests),
        key=lambda i: (_number(result.model[i]), _number(result.benchmark[i]),
                       tests.index(result.test[i])),
    )  # fmt: skip


def _same(value, expected):
    if isinstance(expected, float) and math.isnan(expected):
        return value is None
    if isinstance(expected, float) and math.isinf(expected):
        return value == ("inf" if expected > 0 else "-inf")
    return value == expected and type(value) is type(expected)


def _embedded(text):
    block = text.split('<script type="application/json" id="suite-rows">', 1)[1]
    return json.loads(block.split("</script>", 1)[0])


@pytest.mark.slow
def test_report_embeds_every_row_in_the_tables_order(large):
    result, _, text = large
    data = _embedded(text)
    columns = "model benchmark test p_value adjusted_p_value flagged estimate low high".split()
    assert data["columns"] == columns
    assert len(data["rows"]) == result.n_tests == 200 * 20 * 3
    for row, i in zip(data["rows"], _table_order(result), strict=True):
        for value, name in zip(row, columns, strict=True):
            expected = getattr(result, name)[i]
            expected = expected.item() if hasattr(expected, "item") else expected
            assert _same(value, expected), (name, value, expected)
    # the table's rows are the embedded rows, one for one (the script sorts by them)
    body = text.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    shown = [row.split("</td>")[:3] for row in body.split("</tr>")[:-1]]
    # each cell's text, without its tags (names are isolated in <bdi> elements)
    assert [[re.sub(r"<[^>]*>", "", c) for c in cells] for cells in shown] == [
        r[:3] for r in data["rows"]
    ]


def test_report_sections_for_the_strongest_twenty_flags(tmp_path):
    rows = [(f"m{k}", "b", 0.001 * (30 - k), True) for k in range(25)]
    rows += [(f"m{k}", "b", 0.5, False) for k in range(25, 40)]
    text = write_report(Double(rows), tmp_path / "r.html").read_text()
    headings = [re.sub(r"<[^>]*>", "", s.split("</h3>")[0])
                for s in text.split('<section class="pair"><h3>')[1:]]  # fmt: skip
    assert headings == [f"m{k} on b" for k in range(24, 4, -1)]  # smallest adjusted p first
    assert "the other 5 flagged pairs are in the table" in " ".join(text.split())


@pytest.mark.slow
def test_report_at_scale_is_deterministic(large, tmp_path):
    result, _, text = large
    assert write_report(result, tmp_path / "again.html").read_text(encoding="utf-8") == text


# ------------------------------------------------------------------- in a real browser

_MEASURE = """({
  scrollWidth: document.documentElement.scrollWidth,
  clientWidth: document.documentElement.clientWidth,
  innerWidth: window.innerWidth,
  image: [document.querySelector("figure img").naturalWidth,
          document.querySelector("figure img").getBoundingClientRect().width,
          Number(document.querySelector("figure img").getAttribute("width"))],
  controls: !document.getElementById("controls").hidden,
  shown: document.getElementById("shown").textContent,
})"""


@pytest.fixture(scope="module")
def example_report(tmp_path_factory):
    result = suite_audit(EXAMPLE)
    return result, write_report(result, tmp_path_factory.mktemp("example") / "example.html")


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("which", ["example", "large"])
def test_report_reads_at_desktop_and_phone_widths(which, example_report, large, tmp_path):
    result, page = example_report if which == "example" else large[:2]
    with Browser(tmp_path) as browser:
        for width, mobile in ((1400, False), (400, True)):
            browser.open(page, width, 900, mobile=mobile)
            seen = browser.evaluate(_MEASURE)
            # no sideways scroll of the page: the figure and the table scroll in their boxes
            assert seen["scrollWidth"] == seen["clientWidth"] == width, seen
            natural, drawn, declared = seen["image"]
            # decoded, and drawn at its size or narrowed to fit by at most 20 % (the
            # labels' 15 px to no less than 12 px): wider, it scrolls in its own box
            assert natural > 0 and 0.8 * declared - 1 <= drawn <= declared
            assert seen["controls"], "the script did not run"
            total = f"{result.n_tests:,}"
            assert seen["shown"] == f"{total} of {total} tests shown"
            shot = browser.screenshot()
            assert shot.shape[1] == width
            assert len(np.unique((shot * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50
            assert browser.violations() == []
        assert browser.console_errors == []
    assert browser.requests == []


def _dom_rows(browser):
    return browser.evaluate(
        "Array.from(document.querySelectorAll('#tests tbody tr'),"
        " (r) => [r.cells[0].textContent, r.cells[1].textContent, r.cells[2].textContent])"
    )


def _visible(browser):
    return browser.evaluate(
        "Array.from(document.querySelectorAll('#tests tbody tr')).filter((r) => !r.hidden).length"
    )


def _click(browser, column):
    browser.evaluate(
        f"document.querySelector('#tests th[data-column=\"{column}\"] button').click()"
    )


@pytest.mark.slow
@needs_chromium
def test_report_table_sorts_filters_and_downloads_every_row(large, tmp_path):
    result, page, _ = large
    order = _table_order(result)  # the rows as the page lists them
    triple = [[result.model[i], result.benchmark[i], result.test[i]] for i in order]
    p = [result.p_value[i] for i in order]
    with Browser(tmp_path) as browser:
        browser.open(page, 1400, 900)
        _click(browser, 3)  # p, ascending; ties in the page's order
        expected = sorted(range(len(order)), key=lambda k: (p[k], k))
        assert _dom_rows(browser) == [triple[k] for k in expected]
        _click(browser, 3)  # again: descending
        expected = sorted(range(len(order)), key=lambda k: (-p[k], k))
        assert _dom_rows(browser) == [triple[k] for k in expected]
        assert (
            browser.evaluate(
                "document.querySelector('#tests th[data-column=\"3\"]').getAttribute('aria-sort')"
            )
            == "descending"
        )
        _click(browser, 0)  # model: by name, numbers by value (model-2 before model-10)
        expected = sorted(range(len(order)), key=lambda k: (_number(triple[k][0]), k))
        assert _dom_rows(browser) == [triple[k] for k in expected]
        # filter by a name (case-insensitive, anywhere in model, benchmark or test)
        browser.evaluate(
            "const f = document.getElementById('filter'); f.value = 'MODEL-17';"
            "f.dispatchEvent(new Event('input'))"
        )
        assert _visible(browser) == sum("model-17" in " ".join(t) for t in triple) == 11 * 60
        browser.evaluate(
            "const g = document.getElementById('filter'); g.value = '';"
            "g.dispatchEvent(new Event('input'));"
            "document.getElementById('flagged-only').click()"
        )
        assert _visible(browser) == result.n_flagged > 0
        csv_file, json_file = browser.download("#save-csv"), browser.download("#save-json")
        assert browser.violations() == [] and browser.console_errors == []
    assert browser.requests == []
    # every row, in the page's order, whatever the sort and filter on screen
    columns = "model benchmark test p_value adjusted_p_value flagged estimate low high".split()
    with open(csv_file, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    assert table[0] == columns and len(table) == result.n_tests + 1
    records = json.loads(json_file.read_text(encoding="utf-8"))
    assert len(records) == result.n_tests
    for k, i in enumerate(order):
        line, record = table[k + 1], records[k]
        assert line[:3] == [result.model[i], result.benchmark[i], result.test[i]]
        assert line[5] == ("true" if result.flagged[i] else "false")
        for c, name in enumerate(columns):
            value = getattr(result, name)[i]
            value = value.item() if hasattr(value, "item") else value
            assert _same(record[name], value), (name, record[name], value)
            if c in (3, 4, 6, 7, 8):  # the numbers, exactly: inf as "inf"
                assert float(line[c]) == value


@pytest.mark.slow
@needs_chromium
def test_browser_check_sees_a_script_the_policy_refuses(tmp_path):
    # the violation check above can fail: a script the page's policy does not list by its
    # hash is refused, reported and does not run
    page = write_report(make_suite(8, 4, planted=3), tmp_path / "report.html")
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("</body>", "<script>document.title = 'ran';</script></body>"))
    with Browser(tmp_path) as browser:
        browser.open(page, 1400, 900)
        assert browser.evaluate("document.title") != "ran"
        assert browser.evaluate("document.getElementById('controls').hidden") is False
        violations = browser.violations()
    assert violations and all(v.startswith("script-src") for v in violations), violations
    assert any("Content Security Policy" in e for e in browser.console_errors)


@pytest.mark.slow
@needs_chromium
def test_report_without_its_script_has_the_table_and_no_dead_controls(tmp_path):
    page = write_report(make_suite(8, 4, planted=3), tmp_path / "report.html")
    with Browser(tmp_path) as browser:
        browser.call("Emulation.setScriptExecutionDisabled", value=True, session=True)
        browser.open(page, 400, 900, mobile=True)
        seen = browser.evaluate(
            "[getComputedStyle(document.getElementById('controls')).display,"
            " document.querySelectorAll('#tests tbody tr').length,"
            " document.documentElement.scrollWidth]"
        )
    assert seen == ["none", 8 * 4 * 3, 400]


# names a spreadsheet would run as a formula (each first character of FORMULA_START), and
# names that only contain one of those characters later, or need CSV quoting
FORMULAS = ["=1+1", '=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)",
            "\t=1+1", "\r=1+1"]  # fmt: skip
PLAIN = ["a,b", 'say "hi"', "two\nlines", "plain", "a=1", "model-+-@", " =1"]


def test_csv_text_neutralises_a_name_that_starts_a_formula():
    assert set(FORMULA_START) == set("=+-@\t\r")
    for name in FORMULAS:
        assert csv_text(name) == "'" + name
    for name in [*PLAIN, "", "'=1"]:  # "'=1" already starts with the apostrophe
        assert csv_text(name) == name


@pytest.mark.slow
@needs_chromium
def test_csv_download_quotes_names_that_need_it(tmp_path):
    names = PLAIN + FORMULAS
    rows = [(m, "bench", 0.5, False) for m in names]
    page = write_report(Double(rows), tmp_path / "report.html")
    with Browser(tmp_path) as browser:
        browser.open(page, 1400, 900)
        saved = browser.download("#save-csv")
        saved_json = browser.download("#save-json")
    with open(saved, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    # the JSON download keeps every name as it is; the CSV, row for row in the same order,
    # each name read back whole by csv_text's rule: those that start a formula with an
    # apostrophe in front, the rest as they are
    records = json.loads(saved_json.read_text(encoding="utf-8"))
    assert sorted(r["model"] for r in records) == sorted(names)
    assert len(table) == len(records) + 1
    for line, record in zip(table[1:], records, strict=True):
        assert line[:2] == [csv_text(record["model"]), "bench"], line
    assert browser.requests == []


@pytest.mark.slow
@needs_chromium
def test_csv_download_keeps_negative_numbers_as_numbers(tmp_path):
    # an estimate below 0 and an infinite interval end are numbers, not formulas: only the
    # name columns are text
    result = make_suite(4, 2, planted=1)
    page = write_report(result, tmp_path / "report.html")
    with Browser(tmp_path) as browser:
        browser.open(page, 1400, 900)
        saved = browser.download("#save-csv")
    with open(saved, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    cells = [line[c] for line in table[1:] for c in (6, 7, 8)]
    assert any(c.startswith("-") for c in cells), cells
    assert [float(c) for c in cells if c]  # each a number as it is (no apostrophe)

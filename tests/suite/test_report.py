"""The suite audit's heatmap and HTML report (truescore_fast.suite.report).

The result they read is a test double, :class:`SuiteAuditDouble`: a table of literal rows
with the attributes a suite audit's result has (``to_frame()``, ``q``, ``fdr``,
``n_tests``, ``summary()``), so every expected value below is written by hand, not taken
from the code under test. The browser tests render the report in headless Chromium (the
distribution's package; skipped only when it is not installed). The last section runs the
real suite audit end to end: the command line on the shipped example, with --report,
--plot and --json, and the report it writes in the browser.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import math
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from truescore_fast._text import visible

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib", reason="the heatmap needs matplotlib (the plot extra)")

import matplotlib.image  # noqa: E402
from browser import CHROMIUM, SANITIZER_VARIABLES, page_requests  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from truescore_fast.suite import plot_heatmap, write_report  # noqa: E402

# the columns of a suite audit's to_frame(), as issue 25 states them
COLUMNS = "model benchmark test p_value adjusted_p_value flagged estimate low high".split()
NAN = float("nan")


class SuiteAuditDouble:
    """A test double of a suite audit's result: literal rows, and the attributes read."""

    def __init__(self, rows, *, q=0.05, fdr="bh", seed=None):
        self._frame = pd.DataFrame(rows, columns=COLUMNS)
        self.q, self.fdr, self.n_tests = q, fdr, len(self._frame)
        if seed is not None:
            self.seed = seed

    def to_frame(self):
        return self._frame.copy()

    def summary(self):
        return f"Suite audit double: {self.n_tests} tests <summary & more>"


# model, benchmark, test, p, adjusted p, flagged, estimate, low, high. m1 has no test on
# b2 (hatched); m10 has only the order-based test on b2 (no estimate: grey); m2 on b1 has
# ConStat listed before the matched-form audit, whose estimate still colours the cell.
ROWS = [
    ("m2", "b1", "constat", 0.2, 0.4, False, 0.30, 0.10, 0.50),
    ("m2", "b1", "matched_form", 0.03, 0.09, False, 0.10, 0.05, 0.15),
    ("m2", "b2", "constat", 0.001, 0.004, True, -0.20, -0.30, -0.10),
    ("m10", "b1", "order", 0.0004, 0.002, True, NAN, NAN, NAN),
    ("m10", "b1", "randomization", 0.0123, 0.05, False, 0.07, NAN, NAN),
    ("m10", "b2", "order", 0.5, 0.6, False, NAN, NAN, NAN),
    ("m1", "b1", "matched_form", 0.9, 0.9, False, 0.0, -0.04, 0.04),
]


@pytest.fixture
def result():
    return SuiteAuditDouble(ROWS, seed=11)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of ``result``, written once: its text."""
    path = tmp_path_factory.mktemp("report") / "report.html"
    return write_report(SuiteAuditDouble(ROWS, seed=11), path).read_text(encoding="utf-8")


def _axes(figure):
    """The heatmap's axes: the one holding the image (the other is the colour bar)."""
    (ax,) = [a for a in figure.axes if any(line.get_gid() == "flagged" for line in a.lines)]
    return ax


def _cells(figure):
    """{(model, benchmark): value} read back from the drawn image, via the tick labels."""
    ax = _axes(figure)
    models = [t.get_text() for t in ax.get_yticklabels()]
    benchmarks = [t.get_text() for t in ax.get_xticklabels()]
    data = ax.images[0].get_array()
    return {
        (m, b): (NAN if np.ma.is_masked(data[i, j]) else float(data[i, j]))
        for i, m in enumerate(models)
        for j, b in enumerate(benchmarks)
    }


def _marked(figure):
    """The (model, benchmark) cells under the flag marks."""
    ax = _axes(figure)
    models = [t.get_text() for t in ax.get_yticklabels()]
    benchmarks = [t.get_text() for t in ax.get_xticklabels()]
    (line,) = [line for line in ax.lines if line.get_gid() == "flagged"]
    x, y = line.get_data()
    return {(models[int(round(r))], benchmarks[int(round(c))]) for c, r in zip(x, y, strict=True)}


def _grey_cells(figure):
    ax = _axes(figure)
    models = [t.get_text() for t in ax.get_yticklabels()]
    benchmarks = [t.get_text() for t in ax.get_xticklabels()]
    return {
        (models[round(p.get_y() + 0.5)], benchmarks[round(p.get_x() + 0.5)])
        for p in ax.patches
        if p.get_gid() != "not_tested" and p.get_width() == 1 and p.get_height() == 1
    }


# ------------------------------------------------------------------------- the heatmap


def test_heatmap_rows_and_columns_in_natural_order(result):
    ax = _axes(plot_heatmap(result))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["m1", "m2", "m10"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["b1", "b2"]


def test_heatmap_cells_hold_the_documented_tests_estimate(result):
    cells = _cells(plot_heatmap(result))
    expected = {
        ("m1", "b1"): 0.0,
        ("m1", "b2"): NAN,  # not tested
        ("m2", "b1"): 0.10,  # the matched-form audit's, not ConStat's 0.30
        ("m2", "b2"): -0.20,  # ConStat's: no matched-form audit on the pair
        ("m10", "b1"): 0.07,  # the randomization test's: the order test has no estimate
        ("m10", "b2"): NAN,  # tested, no estimate
    }
    assert cells.keys() == expected.keys()
    for key, value in expected.items():
        assert cells[key] == pytest.approx(value, nan_ok=True), key


def test_heatmap_colour_scale_is_centred_at_zero(result):
    image = _axes(plot_heatmap(result)).images[0]
    # symmetric about 0, to the largest shown |estimate| (0.20; ConStat's 0.30 is not shown)
    assert (image.norm.vmin, image.norm.vmax) == pytest.approx((-0.20, 0.20))
    assert image.norm(0.0) == pytest.approx(0.5)


def test_heatmap_colour_scale_is_at_least_five_points():
    rows = [("m1", "b1", "matched_form", 0.5, 0.5, False, 0.01, NAN, NAN)]
    image = _axes(plot_heatmap(SuiteAuditDouble(rows))).images[0]
    assert (image.norm.vmin, image.norm.vmax) == pytest.approx((-0.05, 0.05))


def test_heatmap_marks_pairs_with_any_flagged_test(result):
    figure = plot_heatmap(result)
    # m10/b1: its order-based test is flagged although that test has no estimate
    assert _marked(figure) == {("m2", "b2"), ("m10", "b1")}
    assert _grey_cells(figure) == {("m10", "b2")}


def test_heatmap_of_one_test(result):
    figure = plot_heatmap(result, test="constat")
    cells = _cells(figure)
    assert cells[("m2", "b1")] == pytest.approx(0.30)
    assert cells[("m2", "b2")] == pytest.approx(-0.20)
    assert all(math.isnan(v) for k, v in cells.items() if k[0] != "m2")
    assert _marked(figure) == {("m2", "b2")}


def test_heatmap_with_no_flag_has_no_mark():
    rows = [r[:5] + (False,) + r[6:] for r in ROWS]
    assert _marked(plot_heatmap(SuiteAuditDouble(rows))) == set()


def test_heatmap_draws_on_given_axes(result):
    figure = Figure()
    ax = figure.add_subplot()
    assert plot_heatmap(result, ax=ax) is figure
    assert ax.images and _axes(figure) is ax


def test_heatmap_does_not_use_pyplot(result, monkeypatch, tmp_path):
    # pyplot's global state (backend, current figure, open figures) is the user's: the
    # heatmap must be drawn and saved without importing it
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # any import fails
    plot_heatmap(result, tmp_path / "heat.png")
    write_report(result, tmp_path / "report.html")


@pytest.mark.parametrize(
    ("suffix", "magic"), [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")]
)
def test_heatmap_saves_by_suffix_and_deterministically(result, tmp_path, suffix, magic):
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix.upper()}"
    plot_heatmap(result, first)
    plot_heatmap(result, second)
    assert first.read_bytes().startswith(magic)
    assert first.read_bytes() == second.read_bytes()


def test_heatmap_many_models_and_long_names():
    rows = [
        (f"organisation/model-{m}-" + "x" * 50, f"benchmark-{b}", "constat", 0.5, 0.5, False,
         0.01 * (m - b), NAN, NAN)
        for m in range(50)
        for b in range(20)
    ]  # fmt: skip
    ax = _axes(plot_heatmap(SuiteAuditDouble(rows)))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 50 and max(map(len, labels)) == 40  # shortened on the figure
    assert labels[:3] == [f"organisation/model-{m}-" + "x" * 18 + "…" for m in range(3)]
    assert ax.images[0].get_array().shape == (50, 20)


@pytest.mark.parametrize("test", ["ConStat", "unknown", 3, ""])
def test_heatmap_unknown_test_names_the_argument(result, test):
    with pytest.raises(ValueError, match=r"^test must be None or one of .*'constat'"):
        plot_heatmap(result, test=test)


@pytest.mark.parametrize("function", [plot_heatmap, write_report])
@pytest.mark.parametrize("path", [3, b"out.html", ["out.html"]])
def test_path_of_wrong_type(result, function, path):
    with pytest.raises(TypeError, match="^path must be a str or os.PathLike"):
        function(result, path)


def test_heatmap_path_of_unknown_suffix(result, tmp_path):
    with pytest.raises(ValueError, match=r"^path must end in \.png, \.svg, \.pdf"):
        plot_heatmap(result, tmp_path / "heat.jpg")
    assert not list(tmp_path.iterdir())


def test_heatmap_ax_of_wrong_type(result):
    with pytest.raises(TypeError, match="^ax must be None or a matplotlib Axes"):
        plot_heatmap(result, ax=Figure())


# ------------------------------------------------------------------------ the result read


class _NoFrame:
    q, fdr, n_tests = 0.05, "bh", 0


@pytest.mark.parametrize("function", [plot_heatmap, write_report])
def test_result_without_a_table(function, tmp_path):
    for bad in (_NoFrame(), pd.DataFrame(ROWS, columns=COLUMNS), None):
        with pytest.raises(TypeError, match="^result must be a suite audit's result"):
            function(bad, tmp_path / "out.html" if function is write_report else None)


@pytest.mark.parametrize("function", [plot_heatmap, write_report])
def test_result_table_missing_columns_empty_or_repeated(function, tmp_path):
    path = tmp_path / "out.html" if function is write_report else None
    double = SuiteAuditDouble(ROWS)
    double._frame = double._frame.drop(columns=["low", "flagged"])
    with pytest.raises(
        ValueError, match=r"^result's table lacks the columns \['flagged', 'low'\]"
    ):
        function(double, path)
    with pytest.raises(ValueError, match="^result has no tests"):
        function(SuiteAuditDouble([]), path)
    with pytest.raises(ValueError, match=r"^result lists \('m2', 'b1', 'constat'\) twice"):
        function(SuiteAuditDouble([*ROWS, ROWS[0]]), path)


def test_result_q_must_be_a_level(tmp_path):
    for q in ("0.05", None, True):
        with pytest.raises(TypeError, match="^result.q must be a number"):
            write_report(SuiteAuditDouble(ROWS, q=q), tmp_path / "r.html")
    for q in (NAN, 0.0, 1.0, -0.1, math.inf, 1e308):
        with pytest.raises(ValueError, match=r"^result.q must be in \(0, 1\)"):
            plot_heatmap(SuiteAuditDouble(ROWS, q=q))


def test_result_flags_must_be_true_or_false():
    for flag in (NAN, None, "yes", 1):
        rows = [ROWS[0][:5] + (flag,) + ROWS[0][6:]]
        with pytest.raises(ValueError, match="^result's flagged column must hold True or False"):
            plot_heatmap(SuiteAuditDouble(rows))


_NAMES = st.text(min_size=1, max_size=12)  # any characters: "<", "&", "$" (TeX), digits


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            _NAMES,
            _NAMES,
            st.sampled_from(["matched_form", "constat", "order", "x$y$"]),
            st.floats(0, 1),
            st.booleans(),
            st.floats(allow_nan=True, allow_infinity=True),
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda r: r[:3],
    )
)
def test_any_names_and_numbers_give_a_report(rows, tmp_path_factory):
    rows = [(m, b, t, p, p, f, e, e - 0.1, e + 0.1) for m, b, t, p, f, e in rows]
    page = write_report(SuiteAuditDouble(rows), tmp_path_factory.mktemp("r") / "r.html")
    parsed = _Page(page.read_text(encoding="utf-8"))
    _loads_nothing(parsed)
    text = "".join(parsed.text)
    # each name as _text.visible writes it (control and bidi characters as escapes: the
    # page shows them, and none can reorder or break the text around it)
    for name in {r[0] for r in rows} | {r[1] for r in rows}:
        assert visible(name) in text


# ------------------------------------------------------------------------- the report


class _Page(HTMLParser):
    """The tags, attributes and text of a page (as a browser's parser reads them); the
    contents of its script elements apart, with their attributes."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.text, self.style = [], [], [], []
        self.scripts = []  # (the element's attributes as a dict, its text)
        self._in = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, k, v or "") for k, v in attrs]
        self._in = tag
        if tag == "script":
            self.scripts.append((dict(attrs), ""))

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "script":
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        else:
            (self.style if self._in == "style" else self.text).append(data)


def _policy(page):
    """The page's Content-Security-Policy, as {directive: [sources]}."""
    (policy,) = [v for _, k, v in page.attributes if k == "content" and "default-src" in v]
    return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}


def _loads_nothing(page):
    """Every attribute that could load something is inline: no link, frame or object
    element, every src/href/srcset/action/poster a data: URI or a fragment; every script
    element inline: data (type application/json, never run) or code whose SHA-256 the
    page's policy lists as the only scripts it allows."""
    assert not {"link", "iframe", "object", "embed", "base"} & set(page.tags)
    for tag, name, value in page.attributes:
        if name in ("src", "href", "srcset", "action", "poster", "data", "background"):
            assert value.startswith(("data:", "#")), (tag, name, value[:80])
    style = "".join(page.style)
    assert "url(" not in style and "@import" not in style and "@font-face" not in style
    if page.scripts:
        policy = _policy(page)
        assert policy["default-src"] == ["'none'"]
        assert all(s.startswith("'sha256-") for s in policy["script-src"]), policy
    for attrs, text in page.scripts:
        assert "src" not in attrs, attrs
        if attrs.get("type") != "application/json":
            digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in policy["script-src"], text[:80]


def test_report_is_self_contained(report):
    page = _Page(report)
    _loads_nothing(page)
    (src,) = [v for tag, k, v in page.attributes if tag == "img" and k == "src"]
    assert src.startswith("data:image/png;base64,")
    image = matplotlib.image.imread(io.BytesIO(base64.b64decode(src[22:])))
    assert image.ndim == 3 and image.shape[0] > 300 and image.shape[1] > 500
    policy = _policy(page)
    assert policy["default-src"] == ["'none'"] and policy["img-src"] == ["data:"]
    # one script, allowed by its hash, and the rows it reads (data, not code)
    assert [a.get("type") for a, _ in page.scripts] == ["application/json", None]
    assert len(policy["script-src"]) == 1


_POLICY_META = (
    '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
    "script-src 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='\">"  # of ""
)


def test_report_negative_control_of_the_self_containment_check():
    # the check above must catch what it looks for
    for leak in (
        '<img src="https://example.com/a.png">',
        '<link rel="stylesheet" href="http://example.com/a.css">',
        "<script>alert(1)</script>",  # not the page's script: its hash is not allowed
        '<script src="data:text/javascript,alert(1)"></script>',
        "<style>body { background: url(http://example.com/a.png) }</style>",
    ):
        with pytest.raises(AssertionError):
            _loads_nothing(_Page(f"<html><head>{_POLICY_META}</head><body>{leak}</body></html>"))


def test_report_escapes_every_string_from_the_data(tmp_path):
    evil = "<script>alert(1)</script>"
    rows = [
        (evil, "Q&A <b>", "constat", 0.001, 0.002, True, 0.2, 0.1, 0.3),
        ('m"2', "Q&A <b>", 'te"st<i>', 0.5, 0.5, False, 0.0, NAN, NAN),
    ]
    text = write_report(SuiteAuditDouble(rows), tmp_path / "r.html", title="A & <B>").read_text()
    # the page's two script elements, and no other tag from a name
    assert text.count("<script") == 2 and "<b>" not in text and "<i>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "Q&amp;A &lt;b&gt;" in text and "m&quot;2" in text
    assert "<title>A &amp; &lt;B&gt;</title>" in text
    assert "&lt;summary &amp; more&gt;" in text  # the result's summary too
    page = _Page(text)
    _loads_nothing(page)
    for name in (evil, "Q&A <b>", 'm"2', 'te"st<i>'):
        assert name in "".join(page.text)
    # in the embedded rows every "<" is escaped: no name can end the element
    (data,) = [t for a, t in page.scripts if a.get("type") == "application/json"]
    assert "<" not in data
    assert {tuple(r[:3]) for r in json.loads(data)["rows"]} == {r[:3] for r in rows}


def test_report_is_deterministic(report, tmp_path):
    again = write_report(SuiteAuditDouble(ROWS, seed=11), tmp_path / "b.htm").read_bytes()
    assert again == report.encode("utf-8")
    dated = write_report(SuiteAuditDouble(ROWS), tmp_path / "c.html", created="2026-12-02")
    assert "2026-12-02" in dated.read_text() and "2026-12-02" not in report


def test_report_says_what_was_run(report):
    page = _Page(report)
    text = " ".join(" ".join(page.text).split())
    assert "Models 3 Benchmarks 2" in text
    # the tests in the order of the table (sorted by model and benchmark)
    tests = "matched-form audit (2), ConStat (2), order-based test (2), randomization test (1)"
    assert f"Tests {tests}; 7 in all" in text
    assert "Benjamini–Hochberg, q = 0.05, over 7 tests" in text
    assert "Seed 11" in text
    assert "Flagged 2 tests on 2 (model, benchmark) pairs" in text


def test_report_table_has_every_test(report):
    body = report.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = [
        [html.unescape(re.sub(r"</?bdi>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in body.split("</tr>")[:-1]
    ]  # (names are in <bdi>: isolated from the text around them)
    assert body.count("<bdi>") == 2 * len(ROWS)
    assert len(rows) == len(ROWS)
    assert rows[0] == ["m1", "b1", "matched_form", "0.9", "0.9", "no", "+0.000",
                       "-0.040 to +0.040"]  # fmt: skip
    # m10 on b1: the order test (no estimate, flagged), then the randomization test
    assert rows[-3] == ["m10", "b1", "order", "0.0004", "0.002", "yes", "–", "–"]
    assert rows[-2] == ["m10", "b1", "randomization", "0.0123", "0.05", "no", "+0.070", "–"]
    assert body.count('<tr class="flagged">') == 2


@pytest.mark.parametrize(
    ("fdr", "phrase"),
    [
        ("bh", "Benjamini–Hochberg keeps the expected fraction of false flags"),
        ("by", "Benjamini–Yekutieli keeps the expected fraction of false flags"),
        ("holm", "Holm's method keeps the chance of even one false flag"),
    ],
)
def test_report_states_the_error_rate_of_its_method(fdr, phrase, tmp_path):
    text = write_report(SuiteAuditDouble(ROWS, q=0.1, fdr=fdr), tmp_path / "r.html").read_text()
    text = " ".join(html.unescape(text).split())
    assert phrase in text and "at or below 0.1" in text
    assert "not proof that the model was trained on the test set" in text
    assert "No flag does not mean clean" in text


def test_report_has_a_section_per_flagged_pair(report):
    text = html.unescape(report)
    sections = text.split('<section class="pair">')[1:]
    assert [s.split("</h3>")[0] for s in sections] == [
        "<h3><bdi>m2</bdi> on <bdi>b2</bdi>",  # each name isolated from the text around it
        "<h3><bdi>m10</bdi> on <bdi>b1</bdi>",
    ]
    flagged_constat = " ".join(sections[0].split())
    assert "ConStat: flagged." in flagged_constat
    assert "adjusted p = 0.004 ≤ q = 0.05; estimated inflation -0.200" in flagged_constat
    assert "(interval -0.300 to -0.100)" in flagged_constat
    assert "does not show: that the model was trained on these items" in flagged_constat
    second = " ".join(sections[1].split())
    assert "order-based test: flagged." in second and "randomization test: not flagged" in second


def test_report_without_flags_says_no_flag_is_not_clean(tmp_path):
    rows = [r[:5] + (False,) + r[6:] for r in ROWS]
    text = write_report(SuiteAuditDouble(rows), tmp_path / "r.html").read_text()
    assert "Flagged pairs (0)" in text and '<section class="pair">' not in text
    assert "That does not show the scores are clean" in text


def test_report_bad_arguments(result, tmp_path):
    with pytest.raises(TypeError, match="^path must be a str or os.PathLike"):
        write_report(result, None)
    with pytest.raises(ValueError, match=r"^path must end in \.html, \.htm"):
        write_report(result, tmp_path / "r.pdf")
    with pytest.raises(TypeError, match="^title must be a str"):
        write_report(result, tmp_path / "r.html", title=None)
    with pytest.raises(TypeError, match="^created must be None or a str"):
        write_report(result, tmp_path / "r.html", created=20261202)
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------- in a real browser

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install chromium; CI does)",
)


def _render(page: Path, out: Path) -> tuple[str, np.ndarray, list[str]]:
    """Open ``page`` from disk in headless Chromium: (the rendered DOM, a 1280 px wide
    screenshot as an RGB array, the URLs of the requests the page made)."""
    shot, netlog = out / "shot.png", out / "netlog.json"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={out / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        f"--log-net-log={netlog}",
        "--dump-dom",
        page.resolve().as_uri(),
    ]
    env = {k: v for k, v in os.environ.items() if k not in SANITIZER_VARIABLES}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, check=False, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, matplotlib.image.imread(shot)[..., :3], page_requests(netlog)


@pytest.mark.slow
@needs_chromium
def test_report_in_a_browser(tmp_path):
    # one strongly negative cell (saturated blue: no other blue on the page) shows that
    # the inline heatmap was decoded and drawn
    rows = [*ROWS, ("<script>alert(1)</script> & co", "b3", "constat", 0.5, 0.5, False,
                    -0.25, NAN, NAN)]  # fmt: skip
    page = write_report(SuiteAuditDouble(rows), tmp_path / "report.html")
    dom, shot, requests = _render(page, tmp_path)
    assert requests == []
    parsed = _Page(dom)
    _loads_nothing(parsed)
    assert len(parsed.scripts) == 2  # the page's own: the model's name stayed text
    text = "".join(parsed.text)
    for name in ("m1", "m2", "m10", "b1", "b2", "b3", "<script>alert(1)</script> & co"):
        assert name in text, name
    code = (shot * 255).round().astype(np.int32) @ np.array([1 << 16, 1 << 8, 1], np.int32)
    assert len(np.unique(code)) > 50  # not blank: text, the figure's colours, anti-aliasing
    red, green, blue = (shot[..., k] for k in range(3))
    assert np.count_nonzero((blue > red + 0.3) & (blue > green + 0.1)) > 400


@pytest.mark.slow
@needs_chromium
def test_browser_check_sees_a_pages_external_requests(tmp_path):
    # the request check above can fail: a page that loads from the network is caught
    page = tmp_path / "leaky.html"
    page.write_text(
        '<!DOCTYPE html><html><head><link rel="stylesheet" href="https://example.invalid/a.css">'
        '</head><body><p>leak</p><img src="http://127.0.0.1:9/leak.png"></body></html>'
    )
    _, _, requests = _render(page, tmp_path)
    assert sorted(requests) == ["http://127.0.0.1:9/leak.png", "https://example.invalid/a.css"]


# ------------------------------------------- the real report: the example, end to end

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "suite" / "suite_example.csv.gz"
PLANTED = {("model-01", "bench-1"), ("model-04", "bench-3"), ("model-07", "bench-2")}


@pytest.fixture(scope="module")
def example_run(tmp_path_factory):
    """``truescore-fast suite EXAMPLE --report --plot --json``, every test, as a user runs
    it: (exit code, the JSON, the report's text, the plot's path, the folder)."""
    from commands import run_cli

    out = tmp_path_factory.mktemp("example")
    report, plot = out / "suite.html", out / "suite.png"
    code, stdout, err = run_cli(
        "suite", EXAMPLE, "--report", report, "--plot", plot, "--json"
    )  # fmt: skip
    assert "Traceback" not in err, err
    return code, json.loads(stdout), report.read_text(encoding="utf-8"), plot, out


def test_the_example_through_the_command_line(example_run):
    code, result, page, plot, _ = example_run
    assert code == 2  # something flagged
    models = [f"model-{m:02d}" for m in range(1, 9)]
    benchmarks = [f"bench-{b}" for b in range(1, 5)]
    # every test the data allow on every pair: 2 matched-form tests and ConStat per pair
    assert len(result["test"]) == 8 * 4 * 3 == result["n_tests"]
    assert set(zip(result["model"], result["benchmark"], strict=True)) == {
        (m, b) for m in models for b in benchmarks
    }
    flagged = {
        (m, b)
        for m, b, f in zip(result["model"], result["benchmark"], result["flagged"], strict=True)
        if f
    }
    assert PLANTED <= flagged
    parsed = _Page(page)
    _loads_nothing(parsed)
    text = " ".join(parsed.text)
    for name in (*models, *benchmarks):
        assert name in text, name
    # one section per flagged pair, the planted leaks among them
    sections = html.unescape(page).split('<section class="pair">')[1:]
    headed = {
        tuple(re.sub("</?bdi>", "", s.split("<h3>")[1].split("</h3>")[0]).split(" on "))
        for s in sections
    }
    assert headed == flagged
    # the report's table has the JSON's rows: every p-value, adjusted p-value and flag
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert body.count("<tr") == result["n_tests"]
    assert body.count('<tr class="flagged">') == sum(result["flagged"])
    (src,) = [v for tag, k, v in parsed.attributes if tag == "img" and k == "src"]
    assert src.startswith("data:image/png;base64,")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@needs_chromium
def test_the_example_report_in_a_browser(example_run):
    _, _, _, _, out = example_run
    dom, shot, requests = _render(out / "suite.html", out)
    assert requests == []
    text = "".join(_Page(dom).text)
    for name in [f"model-{m:02d}" for m in range(1, 9)] + [f"bench-{b}" for b in range(1, 5)]:
        assert name in text, name
    # the inline heatmap was decoded and drawn: the dark red of the largest leaks' cells
    # (the page's own red, the flags' (180, 35, 24), is lighter; without the image the
    # count is 0)
    red, green, blue = (shot[..., k] for k in range(3))
    assert np.count_nonzero((red > 0.35) & (red < 0.75) & (green < 0.1) & (blue < 0.2)) > 400

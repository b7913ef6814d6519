"""The HTML of the suite audit's report (:func:`~truescore_fast.suite.report.write_report`):
the page, its style, its one inline script and the Content-Security-Policy that allows
that script by its hash and nothing else.

The page is built from the checked table (``report._frame``) and the heatmap's PNG; it
loads nothing. The script sorts and filters the table of every test and downloads every
row as CSV or JSON from the rows embedded in the page (a ``<script type=
"application/json">`` block, which is data, never run); without it the page is whole,
only the table's controls stay hidden.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import numbers
from typing import Any

from truescore_fast import __version__
from truescore_fast._result import to_plain
from truescore_fast._text import visible

# The tests' names in prose, and what each compares (the sections on flagged pairs).
TEST_NAMES = {
    "matched_form": "matched-form audit",
    "randomization": "randomization test",
    "order": "order-based test",
    "constat": "ConStat",
}
_TEST_MEANING = {
    "matched_form": "the public score is above the score on fresh forms of the same items",
    "randomization": "the exact randomization test finds the public form scoring above "
    "the fresh forms more often than chance would",
    "order": "the model's log-likelihoods favour the published order of the items",
    "constat": "the score on the benchmark is above what the other models' scores "
    "predict from this model's score on the reference benchmark",
}
# At most this many flagged pairs get a section of their own (the strongest evidence
# first when there are more); every flagged row is in the table, which filters to them.
PAIR_SECTIONS = 20
# The heatmap is narrowed to fit the page, to no less than this fraction of its size.
_NARROWEST = 0.8

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1.5rem;
  color: #1f2328; line-height: 1.45; overflow-wrap: anywhere; }
h1 { font-size: 1.6rem; margin-bottom: 0.3rem; }
h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de;
  padding-bottom: 0.25rem; }
h3 { font-size: 1.05rem; margin-bottom: 0.3rem; }
.lead { color: #57606a; margin-top: 0; }
dl.run { display: grid; grid-template-columns: max-content auto; gap: 0.2rem 1.2rem; }
dl.run dt { font-weight: 600; } dl.run dd { margin: 0; }
figure { margin: 1rem 0; }
.scroll { overflow-x: auto; max-width: 100%; }
.scroll img { display: block; max-width: 100%; height: auto; }
figcaption { color: #57606a; font-size: 0.9rem; }
.controls { display: flex; flex-wrap: wrap; gap: 0.5rem 1rem; align-items: center;
  margin: 0.6rem 0; }
.controls[hidden] { display: none; }
.controls input[type=search] { min-width: 12rem; font: inherit; padding: 0.2rem 0.4rem; }
.controls button { font: inherit; }
.rows { max-height: 85vh; overflow: auto; border: 1px solid #d0d7de; }
table { border-collapse: collapse; font-size: 0.88rem; width: 100%; overflow-wrap: normal; }
th, td { border-bottom: 1px solid #d0d7de; padding: 0.3rem 0.55rem; text-align: left;
  white-space: nowrap; }
th { background: #f6f8fa; position: sticky; top: 0; }
th button { all: unset; cursor: pointer; font-weight: 700; }
th button:focus-visible { outline: 2px solid #0969da; }
th[aria-sort=ascending] button::after { content: " \\25B2"; }
th[aria-sort=descending] button::after { content: " \\25BC"; }
td:nth-child(n+4), th:nth-child(n+4) { text-align: right;
  font-variant-numeric: tabular-nums; }
td:nth-child(6), th:nth-child(6) { text-align: left; }
tr.flagged td { background: #fff1f0; }
tr.flagged td:nth-child(6) { color: #b42318; font-weight: 700; }
section.pair { border-left: 4px solid #b42318; padding: 0.1rem 1rem 0.6rem;
  margin: 1rem 0; background: #fffafa; }
.caveat { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px;
  padding: 0.6rem 1rem; }
pre { background: #f6f8fa; padding: 0.8rem; overflow: auto; max-height: 30rem;
  font-size: 0.85rem; overflow-wrap: normal; }
footer { margin-top: 3rem; color: #57606a; font-size: 0.85rem; }
@media (max-width: 40rem) {
  body { margin: 1rem auto; padding: 0 0.75rem; }
  dl.run { grid-template-columns: 1fr; } dl.run dd { margin-bottom: 0.4rem; }
}
"""

# A CSV cell of text that starts with one of these characters is read by a spreadsheet
# (Excel, LibreOffice, Google Sheets) as a formula, which can compute, link or run a
# command: "=HYPERLINK(...)", "+cmd|...", "-2+3", "@SUM(...)", and with a tab or a
# carriage return first where a spreadsheet drops the white space (OWASP's list).
FORMULA_START = "=+-@\t\r"


def csv_text(name: str) -> str:
    """A name (a model, a benchmark, a test) as the report's CSV download writes it, before
    the CSV quoting: with an apostrophe in front when it starts with a character of
    :data:`FORMULA_START`, so that a spreadsheet shows it as the text it is, never runs it
    as a formula (the apostrophe is the spreadsheets' own mark for "text"; the JSON
    download, and the page, keep the name as it is). Numbers are written as they are
    (a negative estimate stays a number, ``inf`` and ``-inf`` too): only the three name
    columns are text. The script applies this same rule (its FORMULA_START is this one)."""
    return "'" + name if name[:1] and name[0] in FORMULA_START else name


# The one script: sorts the table by a column (click its heading again to reverse),
# filters it by a text and by "flagged only", and saves every row as CSV (names by
# csv_text's rule) or JSON from the embedded rows (a Blob: nothing is requested). Rows
# keep their place in ROWS, so a row's values are read from the data, never parsed back
# from the formatted cells.
SCRIPT = (
    """
"use strict";
(() => {
  const FORMULA_START = """
    + json.dumps(FORMULA_START)
    + """;
  const data = JSON.parse(document.getElementById("suite-rows").textContent);
  const columns = data.columns, values = data.rows;
  const body = document.getElementById("tests").tBodies[0];
  const rows = Array.from(body.rows);
  const filter = document.getElementById("filter");
  const flaggedOnly = document.getElementById("flagged-only");
  const shown = document.getElementById("shown");
  const collator = new Intl.Collator("en", { numeric: true });
  const number = (v) => v === null ? NaN : Number(String(v).replace("inf", "Infinity"));
  let key = -1, direction = 1;
  const compare = (a, b) => {
    const x = values[a][key], y = values[b][key];
    if (typeof x === "string" && key < 3) return direction * collator.compare(x, y) || a - b;
    const u = number(x), v = number(y);
    if (Number.isNaN(u) || Number.isNaN(v)) return Number.isNaN(u) - Number.isNaN(v) || a - b;
    return direction * (u - v) || a - b;
  };
  const show = () => {
    const text = filter.value.trim().toLowerCase();
    let count = 0;
    values.forEach((row, i) => {
      const keep = (!flaggedOnly.checked || row[5] === true) && (text === "" ||
        [row[0], row[1], row[2]].some((name) => name.toLowerCase().includes(text)));
      rows[i].hidden = !keep;
      count += keep;
    });
    shown.textContent = `${count.toLocaleString("en")} of ` +
      `${rows.length.toLocaleString("en")} tests shown`;
  };
  for (const th of document.querySelectorAll("#tests th[data-column]")) {
    th.querySelector("button").addEventListener("click", () => {
      const column = Number(th.dataset.column);
      direction = column === key ? -direction : 1;
      key = column;
      for (const other of document.querySelectorAll("#tests th")) {
        other.removeAttribute("aria-sort");
      }
      th.setAttribute("aria-sort", direction > 0 ? "ascending" : "descending");
      const order = rows.map((_, i) => i).sort(compare);
      const sorted = document.createDocumentFragment();
      for (const i of order) sorted.appendChild(rows[i]);
      body.appendChild(sorted);
    });
  }
  const save = (text, type, name) => {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text], { type }));
    link.download = name;
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 60000);
  };
  // csv_text's rule (the module's): a name that starts a formula gets an apostrophe
  const cell = (v, k) => {
    let s = v === null ? "" : String(v);
    if (k < 3 && s !== "" && FORMULA_START.includes(s[0])) s = "'" + s;
    return /[",\\r\\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  document.getElementById("save-csv").addEventListener("click", () => save(
    [columns, ...values].map((row) => row.map(cell).join(",")).join("\\r\\n") + "\\r\\n",
    "text/csv", "suite-audit.csv"));
  document.getElementById("save-json").addEventListener("click", () => save(
    JSON.stringify(values.map((row) => Object.fromEntries(
      columns.map((c, k) => [c, row[k]]))), null, 1) + "\\n",
    "application/json", "suite-audit.json"));
  filter.addEventListener("input", show);
  flaggedOnly.addEventListener("change", show);
  document.getElementById("controls").hidden = false;
  show();
})();
"""
)
SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
# Nothing may load: no request leaves, even if a name in the data were not escaped. Images
# only from data: URIs (the heatmap), styles only from this page, and the one script
# above, by its hash (an injected script, inline or not, is refused).
POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{SCRIPT_HASH}'"
)
# The columns of the embedded rows and of the downloads, as the result's table has them.
ROW_COLUMNS = (
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


def escape(value: Any) -> str:
    """A name or text from the data, as HTML text or an attribute value."""
    return html.escape(str(value), quote=True)


def name_html(value: Any) -> str:
    """A model's or benchmark's name in the page: control characters, bidi controls and
    lone surrogates shown as escapes, and isolated (``<bdi>``) so that a right-to-left
    name cannot reorder the text around it."""
    return f"<bdi>{escape(visible(str(value)))}</bdi>"


def _count(result: Any, rows: int) -> str:
    n_tests = getattr(result, "n_tests", rows)
    return f"{int(n_tests):,}" if isinstance(n_tests, numbers.Integral) else str(n_tests)


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


def rows_json(frame: Any) -> str:
    """Every row of the table as JSON, safe inside a ``<script>`` element: ``<`` is
    written ``\\u003c``, so no name can close the element or open a comment, and every
    character beyond ASCII as its ``\\u`` escape, so no bidi control or lone surrogate of a
    name stands raw in the page (the script decodes the names exactly)."""
    columns = [frame[c].tolist() for c in ROW_COLUMNS]
    rows = [[to_plain(v) for v in row] for row in zip(*columns, strict=True)]  # as to_dict()
    text = json.dumps(
        {"columns": list(ROW_COLUMNS), "rows": rows},
        allow_nan=False,
        ensure_ascii=True,
        separators=(",", ":"),
    )
    return text.replace("<", "\\u003c")


def page(
    result: Any,
    frame: Any,
    *,
    title: str,
    created: str | None,
    png: bytes,
    dpi: float,
    q: float,
    fdr: str,
    heatmap_note: str,
) -> str:
    """The whole page, as text."""
    tests = list(dict.fromkeys(frame["test"]))
    counts = frame["test"].value_counts()
    flagged = frame[frame["flagged"]]
    pairs = list(dict.fromkeys(zip(flagged["model"], flagged["benchmark"], strict=True)))
    n_models, n_benchmarks = frame["model"].nunique(), frame["benchmark"].nunique()
    seed = getattr(result, "seed", None)
    run = [
        ("Models", f"{n_models:,}"),
        ("Benchmarks", f"{n_benchmarks:,}"),
        (
            "Tests",
            ", ".join(f"{TEST_NAMES.get(t, t)} ({counts[t]:,})" for t in tests)
            + f"; {len(frame):,} in all",
        ),
        ("Multiplicity", f"{fdr}, q = {q:g}, over {_count(result, len(frame))} tests"),
        ("Seed", "not recorded" if seed is None else f"{seed}"),
        ("Flagged", f"{len(flagged)} tests on {len(pairs)} (model, benchmark) pairs"),
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
    ]
    lead = "Which scores in this table can you not trust? Every applicable test on every "
    lead += "(model, benchmark) pair, with the error rate controlled across the suite."
    if created is not None:
        lead = f"{escape(created)}. {lead}"
    parts.append(f'<p class="lead">{lead}</p>')
    parts.append('<h2 id="run">What was run</h2><dl class="run">')
    parts += [f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in run]
    parts.append("</dl>")
    parts.append(_caveats(q, fdr))
    parts.append(_heatmap(png, dpi, n_models, n_benchmarks, len(pairs), heatmap_note))
    parts.append(f'<h2 id="flagged">Flagged pairs ({len(pairs)})</h2>')
    if not pairs:
        parts.append(
            f"<p>No test is flagged at q = {q:g} ({escape(fdr)}). That does not show the "
            "scores are clean: a test's power depends on how many items and forms it "
            "had, and an inflation smaller than it can see passes unflagged.</p>"
        )
    elif len(pairs) > PAIR_SECTIONS:
        strongest = flagged.groupby(["model", "benchmark"], sort=False)["adjusted_p_value"].min()
        ranked = sorted(range(len(pairs)), key=lambda k: (strongest[pairs[k]], k))
        pairs = [pairs[k] for k in ranked[:PAIR_SECTIONS]]
        parts.append(
            f"<p>The {PAIR_SECTIONS} pairs with the smallest adjusted p-values, smallest "
            f"first; the other {len(ranked) - PAIR_SECTIONS:,} flagged pairs are in the "
            'table of <a href="#table">every test</a> (tick "flagged only").</p>'
        )
    for model, benchmark in pairs:
        parts.append(_pair_section(frame, model, benchmark, q))
    summary = getattr(result, "summary", None)
    if callable(summary):
        parts.append('<h2 id="summary">Summary</h2>')
        parts.append(f"<pre>{escape(summary())}</pre>")
    parts.append(f'<h2 id="table">Every test ({len(frame):,})</h2>')
    parts.append(_table(frame))
    parts.append(
        f"<footer>Written by truescore-fast {escape(__version__)}. This page is "
        "self-contained: it loads nothing from the network.</footer>"
    )
    parts.append(f'<script type="application/json" id="suite-rows">{rows_json(frame)}</script>')
    parts.append(f"<script>{SCRIPT}</script>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _heatmap(
    png: bytes, dpi: float, n_models: int, n_benchmarks: int, n_pairs: int, note: str
) -> str:
    alt = f"Heatmap of estimated inflation for {n_models:,} models by {n_benchmarks:,} "
    alt += f"benchmarks; {n_pairs} pairs flagged."
    if note:
        alt += f" {note}"
    # shown at 120 CSS px per inch (a little above the CSS inch of 96 px, so the figure's
    # 9 pt labels read as 15 px), sharp on screens of up to 1.25 device pixels per px;
    # narrowed to fit the page down to 80 % (labels of 12 px), and a figure wider still
    # (or a phone's) scrolls in its own box: the page does not
    width, height = (round(int.from_bytes(png[k : k + 4], "big") * 120 / dpi) for k in (16, 20))
    narrowest = round(width * _NARROWEST)
    data = base64.b64encode(png).decode("ascii")
    caption = (
        "Colour: the estimated inflation of the public score (fraction correct; red above "
        "expectation, blue below), from the matched-form audit where it ran, else from "
        "ConStat. ✕: a test on the pair is flagged after the multiplicity adjustment. "
        "Hatched: not tested."
    )
    if note:
        caption += f" {note}"
    return (
        '<h2 id="heatmap">Heatmap</h2><figure><div class="scroll">'
        f'<img src="data:image/png;base64,{data}" width="{width}" height="{height}" '
        f'style="min-width: {narrowest}px" '
        f'alt="{escape(alt)}"></div><figcaption>{escape(caption)}</figcaption></figure>'
    )


def _caveats(q: float, fdr: str) -> str:
    if fdr == "Holm":
        rate = (
            f"Holm's method keeps the chance of even one false flag in the suite at or below {q:g}"
        )
    else:
        rate = (
            f"{escape(fdr)} keeps the expected fraction of false flags among all flags at or "
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
        name = TEST_NAMES.get(r["test"], r["test"])
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
                f"<li><strong>{escape(name)}: flagged.</strong> "
                f"{escape(meaning[0].upper() + meaning[1:])}: {escape(numbers)}.</li>"
            )
        else:
            items.append(f"<li>{escape(name)}: not flagged; {escape(numbers)}.</li>")
    return (
        f'<section class="pair"><h3>{name_html(model)} on {name_html(benchmark)}</h3>'
        f"<ul>{''.join(items)}</ul>"
        "<p>What this does not show: that the model was trained on these items (other "
        "causes can raise a public score), nor that the inflation is exactly the estimate "
        "(it lies in the interval, if any, at the test's level).</p></section>"
    )


# the table's headings, and the column of the embedded rows each sorts by (the interval
# by its lower end)
_HEADINGS = (
    ("model", 0),
    ("benchmark", 1),
    ("test", 2),
    ("p", 3),
    ("adjusted p", 4),
    ("flagged", 5),
    ("estimate", 6),
    ("interval", 7),
)


def _table(frame: Any) -> str:
    controls = (
        '<div class="controls" id="controls" hidden>'
        '<input type="search" id="filter" placeholder="Filter by model, benchmark or test" '
        'aria-label="Filter the tests by model, benchmark or test">'
        '<label><input type="checkbox" id="flagged-only"> flagged only</label>'
        '<span id="shown" aria-live="polite"></span>'
        '<span>Every row: <button type="button" id="save-csv">CSV</button> '
        '<button type="button" id="save-json">JSON</button></span></div>'
    )
    head = "".join(
        f'<th data-column="{k}"><button type="button">{h}</button></th>' for h, k in _HEADINGS
    )
    body = []
    columns = [frame[c].tolist() for c in ROW_COLUMNS]
    for model, benchmark, test, p, adjusted, flag, estimate, low, high in zip(
        *columns, strict=True
    ):
        flagged = ' class="flagged"' if flag else ""
        body.append(
            f"<tr{flagged}><td>{name_html(model)}</td>"
            f"<td>{name_html(benchmark)}</td><td>{escape(test)}</td><td>{_number(p)}</td>"
            f"<td>{_number(adjusted)}</td><td>{'yes' if flag else 'no'}</td>"
            f"<td>{_signed(estimate)}</td><td>{_interval(low, high)}</td></tr>"
        )
    return (
        f'{controls}<div class="rows"><table id="tests"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )

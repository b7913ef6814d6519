"""The documentation builds without a warning, and its API reference covers the public API.

Sphinx runs in a subprocess (as a user would run it) with warnings as errors, into a
temporary directory, importing the same truescore_fast this test session imports: the
installed package, or the development tree with its in-place build of the core.
"""

from __future__ import annotations

import argparse
import html as html_module
import os
import pkgutil
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import truescore_fast

ROOT = Path(__file__).resolve().parents[2]


DOCS = ROOT / "docs"


pytest.importorskip("sphinx", reason="the docs build needs the test extra (Sphinx)")


pytest.importorskip("myst_parser", reason="the docs build needs the test extra (MyST)")


pytest.importorskip("furo", reason="the docs build needs the test extra (the furo theme)")

from browser import CHROMIUM, Browser  # noqa: E402

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install chromium; CI does)",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Build the HTML docs once: (output directory, completed process)."""
    out = tmp_path_factory.mktemp("docs")
    package_parent = str(Path(truescore_fast.__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html"]
    command += ["-d", str(out / "doctrees"), str(DOCS), str(out / "html")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return out / "html", done


@pytest.mark.slow
def test_docs_build_without_warnings(built):
    _, done = built
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # -q: anything printed is a warning or an error


@pytest.mark.slow
def test_docs_import_this_package(built):
    html, _ = built
    assert f"truescore-fast {truescore_fast.__version__}" in (html / "index.html").read_text()


def _api_entries(html: Path) -> dict[str, list[str]]:
    """The API entries of each API page (its stem): the ids of its objects, without the
    ``truescore_fast.`` prefix (``contamination.exact.exchangeability_test``)."""
    return {
        page.stem: re.findall(r'<dt class="[^"]*" id="truescore_fast\.([\w.]+)"', page.read_text())
        for page in (html / "api").glob("*.html")
    }


MODULES = {info.name for info in pkgutil.walk_packages(truescore_fast.__path__, "truescore_fast.")}


def test_every_public_name_is_documented_once(built):
    html, _ = built
    anchors = [anchor for page in _api_entries(html).values() for anchor in page]
    # an entry of a module's own name (truescore_fast.contamination.exact.exchangeability_test),
    # not of a class member (....ExchangeabilityTests.combine)
    documented = [
        anchor.rsplit(".", 1)[-1]
        for anchor in anchors
        if "." in anchor and f"truescore_fast.{anchor.rsplit('.', 1)[0]}" in MODULES
    ]
    public = [name for name in truescore_fast.__all__ if name != "__version__"]
    missing = sorted(set(public) - set(documented))
    assert not missing, f"public names without an API entry: {missing}"
    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert not twice, f"public names documented on more than one page: {twice}"


def test_one_api_page_per_subpackage_titled_with_its_path(built):
    html, _ = built
    packages = {
        info.name
        for info in pkgutil.iter_modules(truescore_fast.__path__)
        if info.ispkg and info.name != "cli"  # the command line has its own page, cli.md
    }
    top_modules = {
        info.name
        for info in pkgutil.iter_modules(truescore_fast.__path__)
        if not info.ispkg and not info.name.startswith("_")
    }
    pages = {page.stem for page in (html / "api").glob("*.html")}
    assert pages == packages | top_modules | {"index"}
    for stem in pages - {"index"}:
        page = (html / "api" / f"{stem}.html").read_text()
        (title,) = re.findall(r"<h1>(.*?)</h1>", page, re.S)
        title = html_module.unescape(re.sub(r"<[^>]+>", "", title)).rstrip("¶").strip()
        assert title == f"truescore_fast.{stem}"
        # the page holds its package's modules, every public one
        if stem in packages:
            public = {
                name
                for name in MODULES
                if name.startswith(f"truescore_fast.{stem}.")
                and not any(part.startswith("_") for part in name.split(".")[2:])
            }
            shown = set(re.findall(r'id="module-(truescore_fast\.[\w.]+)"', page))
            assert public <= shown, sorted(public - shown)
            assert all(name.startswith(f"truescore_fast.{stem}") for name in shown), shown


def test_every_entry_is_on_its_subpackages_page(built):
    html, _ = built
    for stem, anchors in _api_entries(html).items():
        for anchor in anchors:
            top = anchor.split(".", 1)[0]
            if top == "_table":  # StudyTable, with the studies that return it
                assert stem == "studies", anchor
            else:
                assert top == stem, (stem, anchor)


def test_guide_pages_cross_references_resolve(built):
    # {py:mod}`...` on a guide page that names no documented module renders as plain code,
    # without a link and without a warning: every one must have become a link.
    html, _ = built
    for page in html.rglob("*.html"):
        if "api" in page.relative_to(html).parts or "_static" in page.relative_to(html).parts:
            continue
        text = page.read_text()
        references = len(re.findall(r'<code class="xref py', text))
        linked = len(re.findall(r'<a class="reference internal"[^>]*><code class="xref py', text))
        assert references == linked, page.name


def test_command_line_page_has_every_command(built, monkeypatch):
    # every command's whole --help, as the command prints it at 90 columns (cli._build_parser()
    # lists the commands by name only; cli._build_parser(name) adds one command's options)
    from truescore_fast import cli

    html, _ = built
    page = html_module.unescape(re.sub(r"<[^>]+>", "", (html / "cli.html").read_text()))
    monkeypatch.setenv("COLUMNS", "90")
    parser = cli._build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in commands.choices:
        full = cli._build_parser(name)
        (sub,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
        command = sub.choices[name]
        # its options or subcommands, not -h alone (as a command listed by name only shows)
        assert any(not isinstance(a, argparse._HelpAction) for a in command._actions), name
        parsers = [command]
        for parser in parsers:  # and every subcommand's (disclose template, ...)
            assert parser.format_help().rstrip() in page, parser.prog
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    parsers += [p for p in action.choices.values() if p not in parsers]


def test_every_page_is_reachable(built):
    html, _ = built
    index = (html / "index.html").read_text()
    for page in (
        "install",
        "cli",
        "input-formats",
        "dropin",
        "performance",
        "developer",
        "references",
        "api/index",
        *(f"quickstart/{p.stem}" for p in (DOCS / "quickstart").glob("*.md")),
        *(f"guide/{p.stem}" for p in (DOCS / "guide").glob("*.md")),
    ):
        assert f'href="{page}.html"' in index, page


@pytest.mark.slow
def test_command_line_page_lines_run_with_the_exit_codes_they_state(tmp_path):
    # docs/cli.md lists one command per workflow, each with its exit code in a comment (a
    # long one continued on the next line with a backslash, so that it fits the column).
    page = (DOCS / "cli.md").read_text()
    section = page.split("\n## One command per workflow\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None
    joined = re.sub(r" \\\n +", " ", block.group(1))
    lines = [line for line in joined.splitlines() if line.strip()]
    assert len(lines) >= 10
    env = dict(os.environ)
    package_parent = str(Path(truescore_fast.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    for line in lines:
        command, _, comment = line.partition("  # exit ")
        argv = shlex.split(command)
        assert argv[0] == "truescore-fast"
        # inputs come from examples/; files the commands write go to a scratch directory
        argv = [str(ROOT / w) if w.startswith("examples/") else w for w in argv[1:]]
        done = subprocess.run(
            [sys.executable, "-m", "truescore_fast", *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert done.returncode == int(comment), (line, done.stderr)


@pytest.mark.slow
def test_input_formats_page_harness_commands_exit_as_it_says():
    # docs/input-formats.md: the lm-eval example "exits 2 (... public score 0.80, fresh
    # 0.37)", the Inspect example "exits 0".
    page = (DOCS / "input-formats.md").read_text()
    commands = [
        block.replace("\\\n", " ")
        for block in re.findall(r"```console\n(truescore-fast audit.*?)```", page, re.S)
        if "--public" in block
    ]
    assert len(commands) == 2
    env = dict(os.environ)
    package_parent = str(Path(truescore_fast.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_parent, env.get("PYTHONPATH", "")])
    done = [
        subprocess.run(
            [sys.executable, "-m", "truescore_fast", *shlex.split(command)[1:]],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        for command in commands
    ]
    assert [d.returncode for d in done] == [2, 0], [d.stderr for d in done]
    assert "public score 0.8000, fresh score 0.3667" in done[0].stdout


def test_readme_speed_table_quotes_the_performance_page():
    # README.md's "Speed" table is a digest of docs/performance.md: it links there, names
    # the machine that page names, and each of its ratios is one of that page's, rounded
    # to the digits the README shows (88x for 87.6x, 3,480x for 3.48e+03x).
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Speed\n", 1)[1].split("\n## ", 1)[0]
    performance = (DOCS / "performance.md").read_text()
    assert "(docs/performance.md)" in section
    assert "AMD EPYC" in section and "AMD EPYC" in performance
    measured = [float(v) for v in re.findall(r"(\d[\d.e+]*)×", performance.replace(",", ""))]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "×" in line]
    assert 4 <= len(rows) <= 8  # a short table
    for row in rows:
        for shown in re.findall(r"(\d[\d,.]*)×", row.split("|")[3]):
            digits = len(shown.split(".")[1]) if "." in shown else 0
            value = float(shown.replace(",", ""))
            assert any(round(m, digits) == value for m in measured), (shown, row)


def test_calibrate_run_seeds_as_the_conventions_page_says(monkeypatch, capsys):
    # docs/guide/conventions.md: calibrate draws its synthetic population with
    # numpy.random.default_rng(seed) (PCG64), and every study call of one run gets the
    # same seed, hence the same Philox key (philox_key: SeedSequence(seed)'s first two words).
    import json

    import numpy as np
    from truescore_fast import cli
    from truescore_fast._random import philox_key

    made = []
    real = np.random.default_rng

    def recording(*args, **kwargs):
        generator = real(*args, **kwargs)
        made.append((args, type(generator.bit_generator).__name__))
        return generator

    monkeypatch.setattr(np.random, "default_rng", recording)
    argv = ["calibrate", "coverage", "--replications", "250", "--seed", "5", "--json"]
    assert cli.main(argv) == 0
    assert ((5,), "PCG64") in made
    designs = json.loads(capsys.readouterr().out)["tables"][0]["meta"]["tables"]
    assert [d["meta"]["design"] for d in designs] == ["srs", "stratified"]
    assert all(d["meta"]["key"] == list(philox_key(5)) for d in designs)
    words = np.random.SeedSequence(5).generate_state(2, np.uint64)
    assert philox_key(5) == (int(words[0]), int(words[1]))


# ------------------------------------------------------------------- in a real browser

# Every <pre> block: its text's width against its box's (scrollWidth > clientWidth is a
# block cut at its right edge, to be scrolled), and how it lays out its lines.
_CODE_BLOCKS = """[...document.querySelectorAll("article pre")].map((pre) => ({
  text: pre.textContent.slice(0, 60),
  scroll: pre.scrollWidth,
  client: pre.clientWidth,
  wraps: getComputedStyle(pre).whiteSpace !== "pre",
}))"""

# Every "# exit N" comment of the page's code: where its text ends, against the right
# edges of its block's visible box and of the window.
_EXIT_COMMENTS = r"""(() => {
  const found = [];
  for (const pre of document.querySelectorAll("article pre")) {
    const box = pre.getBoundingClientRect();
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.textContent.matchAll(/# exit \d+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()];
        found.push({
          text: match[0],
          right: Math.max(...rects.map((r) => r.right)),
          lines: rects.length,
          box: box.right,
          window: window.innerWidth,
        });
      }
    }
  }
  return found;
})()"""


@needs_chromium
def test_command_line_page_code_is_not_cut_at_1400_px(built, tmp_path):
    # The page in headless Chromium at a 1,400-px window: no code block is wider than its
    # box (nothing to scroll to), the one-command-per-workflow block keeps its lines as
    # written (it fits; it is not wrapped), and every "# exit N" comment is on screen.
    html, _ = built
    with Browser(tmp_path) as browser:
        browser.open(html / "cli.html", 1400, 900)
        blocks = browser.evaluate(_CODE_BLOCKS)
        comments = browser.evaluate(_EXIT_COMMENTS)
        page_width = browser.evaluate("document.documentElement.scrollWidth")
    assert len(blocks) >= 10  # the workflow block and every command's --help
    cut = [b for b in blocks if b["scroll"] > b["client"]]
    assert not cut, cut
    (workflow,) = [b for b in blocks if b["text"].startswith("truescore-fast contamination")]
    assert not workflow["wraps"]
    assert len(comments) == 12, comments
    for comment in comments:
        assert comment["lines"] == 1, comment
        assert comment["right"] <= min(comment["box"], comment["window"]), comment
    assert page_width <= 1400  # nor does the page scroll sideways


@needs_chromium
@pytest.mark.parametrize("width", [1400, 390])
def test_api_page_titles_stay_in_the_column(built, tmp_path, width):
    # A page title or module heading is a module path in code: at 1,400 px it fits on one
    # line; on a phone (390 px) it may break, but never leaves the column.
    html, _ = built
    pages = sorted((html / "api").glob("*.html"))
    spilled, broken = [], []
    with Browser(tmp_path) as browser:
        for page in pages:
            browser.open(page, width, 900, mobile=width < 800)
            for heading in browser.evaluate(
                """(() => {
                  const column = document.querySelector("article").getBoundingClientRect();
                  return [...document.querySelectorAll("article h1 code, article h2 code")]
                    .map((code) => {
                      const rects = [...code.getClientRects()];
                      return {text: code.textContent, lines: rects.length,
                              over: Math.max(...rects.map((r) => r.right)) - column.right};
                    });
                })()"""
            ):
                if heading["over"] > 0:
                    spilled.append((page.name, heading))
                if width == 1400 and heading["lines"] > 1:
                    broken.append((page.name, heading))
    assert not spilled
    assert not broken

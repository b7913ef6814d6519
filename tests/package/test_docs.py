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


def test_every_public_name_is_documented_once(built):
    html, _ = built
    anchors: list[str] = []
    for page in (html / "api").glob("*.html"):
        anchors += re.findall(r'<dt class="[^"]*" id="truescore_fast\.([\w.]+)"', page.read_text())
    # an entry of a module's own name (truescore_fast.contamination.exact.exchangeability_test),
    # not of a class member (....ExchangeabilityTests.combine)
    modules = {
        info.name for info in pkgutil.walk_packages(truescore_fast.__path__, "truescore_fast.")
    }
    documented = [
        anchor.rsplit(".", 1)[-1]
        for anchor in anchors
        if "." in anchor and f"truescore_fast.{anchor.rsplit('.', 1)[0]}" in modules
    ]
    public = [name for name in truescore_fast.__all__ if name != "__version__"]
    missing = sorted(set(public) - set(documented))
    assert not missing, f"public names without an API entry: {missing}"
    twice = sorted({name for name in documented if documented.count(name) > 1})
    assert not twice, f"public names documented on more than one page: {twice}"


def test_command_line_page_has_every_command(built):
    from truescore_fast import cli

    html, _ = built
    page = html_module.unescape(re.sub(r"<[^>]+>", "", (html / "cli.html").read_text()))
    parser = cli._build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in commands.choices:
        assert f"usage: truescore-fast {name}" in page, name


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
    # docs/cli.md lists one command line per workflow, each with its exit code in a comment.
    page = (DOCS / "cli.md").read_text()
    section = page.split("\n## One line per workflow\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.strip()]
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

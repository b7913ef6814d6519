"""Sphinx configuration: the API reference from the docstrings, the pages in Markdown (MyST).

Build with ``python -m sphinx -W -b html docs build/docs`` (tests/package/test_docs.py does, into a
temporary directory). autodoc imports the package: an installed truescore-fast, or else the
development tree ``python/`` with the core built in place by ``tools/dev-build.sh``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[1]

try:
    import truescore_fast
except ImportError:  # not installed: the development tree, with its in-place build of _core
    sys.path.insert(0, str(ROOT / "python"))
    import truescore_fast

project = "truescore-fast"
author = "the truescore-fast authors"
copyright = "the truescore-fast authors"
release = truescore_fast.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# The docstrings are Google style ("Args:", "Returns:", "Raises:", "Attributes:").
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# Attributes as fields of their class, not as separate objects: the result dataclasses
# list their fields under "Attributes:", and autodoc would describe each field a second time.
napoleon_use_ivar = False

autodoc_default_options = {"members": True, "member-order": "bysource"}
# Type hints go into the parameter lists, where they sit beside the docstring's words,
# instead of making the signatures several lines long.
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented_params"
autodoc_preserve_defaults = True
autoclass_content = "class"

myst_heading_anchors = 3

# furo, with its column made fluid by _static/fluid.css: the code blocks (the command line's
# --help, one command per workflow) get the window's width instead of a fixed 46em.
html_theme = "furo"
html_title = f"truescore-fast {release}"
html_static_path = ["_static"]
html_css_files = ["fluid.css"]
# The page's contents list (furo's right-hand column) names a class's members without the
# class (``p_value``, not ``CombinedContamination.p_value``): the nesting shows the class.
toc_object_entries_show_parents = "hide"

# Annotations are strings (``from __future__ import annotations``): show the aliases the
# code writes, not NumPy's expansion of ``ArrayLike`` into a dozen private protocol types.
autodoc_type_aliases = {
    "npt.ArrayLike": "numpy.typing.ArrayLike",
    "npt.NDArray": "numpy.typing.NDArray",
    "SeedLike": "truescore_fast._random.SeedLike",
    "Pattern": "truescore_fast.resampling.patterns.Pattern",
}


def _command_parsers(prog: str, parser: Any) -> Iterator[tuple[str, Any]]:
    """(command line, parser) for a parser and, depth first, each of its subcommands."""
    yield prog, parser
    seen: set[int] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias names the same parser again
                    seen.add(id(sub))
                    yield from _command_parsers(f"{prog} {name}", sub)


def _full_command_parsers(cli: Any) -> Iterator[tuple[str, Any]]:
    """(command line, parser) for truescore-fast and every command and subcommand, each
    command's parser with its options: ``cli._build_parser()`` lists the commands by name
    only (``--help`` imports no command's module), ``cli._build_parser(name)`` adds one
    command's options."""
    top = cli._build_parser()
    yield "truescore-fast", top
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    for name in commands.choices:
        full = cli._build_parser(name)
        (sub,) = [a for a in full._actions if isinstance(a, argparse._SubParsersAction)]
        yield from _command_parsers(f"truescore-fast {name}", sub.choices[name])


class CommandLineHelp(SphinxDirective):
    """``.. command-line-help::``: the ``--help`` of truescore-fast and every subcommand,
    read from the parser the command runs, so the page cannot fall behind the code."""

    def run(self) -> list[nodes.Node]:
        from truescore_fast import cli

        saved = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "90"  # argparse wraps to the terminal: fix the width
        try:
            found = list(_full_command_parsers(cli))
            result: list[nodes.Node] = []
            for prog, parser in found:
                result.append(nodes.rubric(text=prog))
                help_text = parser.format_help().rstrip()
                block = nodes.literal_block(help_text, help_text, language="text")
                block["classes"].append("command-help")  # wrapped as a terminal wraps it
                result.append(block)
        finally:
            if saved is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = saved
        return result


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("command-line-help", CommandLineHelp)
    return {"parallel_read_safe": True}

"""Sphinx configuration: the API reference from the docstrings, the pages in Markdown (MyST).

Build with ``python -m sphinx -W -b html docs build/docs`` (tests/test_docs.py does, into a
temporary directory). autodoc imports the package: an installed truescore-fast, or else the
development tree ``python/`` with the core built in place by ``tools/dev-build.sh``.
"""

from __future__ import annotations

import sys
from pathlib import Path

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
autodoc_typehints_description_target = "documented"
autodoc_preserve_defaults = True
autoclass_content = "class"

myst_heading_anchors = 3

html_theme = "alabaster"
html_title = f"truescore-fast {release}"
html_static_path: list[str] = []

# Annotations are strings (``from __future__ import annotations``): show the aliases the
# code writes, not NumPy's expansion of ``ArrayLike`` into a dozen private protocol types.
autodoc_type_aliases = {
    "npt.ArrayLike": "numpy.typing.ArrayLike",
    "npt.NDArray": "numpy.typing.NDArray",
    "SeedLike": "truescore_fast._random.SeedLike",
    "Pattern": "truescore_fast.patterns.Pattern",
}

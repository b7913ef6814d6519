"""The version is written once, in pyproject.toml, and every layer reports that string:
the compiled core (a compile definition from CMakeLists.txt), the Python package (which
re-exports the core's) and, when installed, the distribution's metadata."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pytest
import truescore_fast
from truescore_fast import _core

ROOT = Path(__file__).resolve().parents[2]


def test_compiled_and_python_versions_agree():
    assert isinstance(_core.__version__, str) and _core.__version__
    assert truescore_fast.__version__ == _core.__version__
    assert "__version__" in truescore_fast.__all__


def test_version_is_the_one_in_pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(ROOT / "pyproject.toml", "rb") as handle:
        assert _core.__version__ == tomllib.load(handle)["project"]["version"]


def test_installed_metadata_agrees():
    # Only when the imported package is the installed distribution: a PYTHONPATH=python
    # run imports the work tree, whatever else site-packages holds.
    try:
        dist = importlib.metadata.distribution("truescore-fast")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("truescore-fast is not installed")
    installed = Path(str(dist.locate_file("truescore_fast/__init__.py"))).resolve()
    if installed != Path(truescore_fast.__file__).resolve():
        pytest.skip("the imported truescore_fast is not the installed distribution")
    assert dist.version == truescore_fast.__version__


def test_stub_declares_the_version():
    stub = ast.parse(Path(truescore_fast.__file__).with_name("_core.pyi").read_text())
    declared = {
        node.target.id
        for node in stub.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    assert "__version__" in declared

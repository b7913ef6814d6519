"""The .pyi stub lists exactly the compiled module's functions, with its argument names."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import truescore_fast
from truescore_fast import _core


def stub_functions():
    path = Path(truescore_fast.__file__).with_name("_core.pyi")
    tree = ast.parse(path.read_text())
    return {
        node.name: [a.arg for a in node.args.args + node.args.kwonlyargs]
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def compiled_functions():
    return {
        name: obj
        for name, obj in vars(_core).items()
        if callable(obj) and not name.startswith("_")
    }


def test_stub_and_module_list_the_same_functions():
    assert set(stub_functions()) == set(compiled_functions())


def test_stub_argument_names_match_docstring_signatures():
    stubs = stub_functions()
    for name, func in compiled_functions().items():
        signature = inspect.getdoc(func).splitlines()[0]  # pybind11: "name(a: T, *, b: T) -> R"
        for arg in stubs[name]:
            assert f"{arg}:" in signature, (name, arg, signature)


def test_public_api_is_exported():
    for name in truescore_fast.__all__:
        assert hasattr(truescore_fast, name), name


def test_every_public_module_is_reexported():
    import importlib

    modules = (
        "audit",
        "calibration",
        "compare",
        "contamination",
        "did",
        "disclosure",
        "families",
        "finite_population",
        "intervals",
        "pacost",
        "patch",
        "patterns",
        "prune",
        "randomization",
        "resampling",
        "sharded",
        "signflip",
    )
    for name in modules:
        module = importlib.import_module(f"truescore_fast.{name}")
        missing = set(module.__all__) - set(truescore_fast.__all__)
        assert not missing, (name, missing)

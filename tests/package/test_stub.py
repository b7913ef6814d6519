"""The .pyi stub lists exactly the compiled module's functions, with its argument names."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import truescore_fast
from truescore_fast import _core


def _stub_tree():
    path = Path(truescore_fast.__file__).with_name("_core.pyi")
    return ast.parse(path.read_text())


def _functions(body):
    return {
        node.name: [a.arg for a in node.args.args + node.args.kwonlyargs]
        for node in body
        if isinstance(node, ast.FunctionDef)
    }


def _stub_class(name):
    (node,) = [n for n in _stub_tree().body if isinstance(n, ast.ClassDef) and n.name == name]
    return node


def stub_functions():
    return _functions(_stub_tree().body)


def stub_testing_functions():
    # The _core.testing submodule is stubbed as the class _Testing (static methods).
    return _functions(_stub_class("_Testing").body)


def compiled_functions(module=_core):
    return {
        name: obj
        for name, obj in vars(module).items()
        if callable(obj) and not name.startswith("_") and not isinstance(obj, type)
    }


def test_stub_and_module_list_the_same_functions():
    assert set(stub_functions()) == set(compiled_functions())


def test_stub_and_testing_submodule_list_the_same_functions():
    assert set(stub_testing_functions()) == set(compiled_functions(_core.testing))
    assert "testing: _Testing" in Path(truescore_fast.__file__).with_name("_core.pyi").read_text()


def test_stub_lists_the_interval_method_enum():
    node = _stub_class("IntervalMethod")
    members = {
        n.target.id
        for n in node.body
        if isinstance(n, ast.AnnAssign) and ast.unparse(n.annotation) == "ClassVar[IntervalMethod]"
    }
    assert members == set(_core.IntervalMethod.__members__)


def test_interval_registry_is_the_core_table():
    from truescore_fast.audit._methods import INTERVAL_METHODS, TRAITS

    table = _core.interval_method_traits()
    assert INTERVAL_METHODS == tuple(table) == tuple(_core.IntervalMethod.__members__)
    for name, row in table.items():
        assert int(_core.IntervalMethod.__members__[name]) == row["code"] == TRAITS[name].code
        assert set(row) == {
            "code",
            "needs_population",
            "order_dependent",
            "uses_variance",
            "may_be_fallback",
        }


def test_stub_argument_names_match_docstring_signatures():
    for stubs, module in ((stub_functions(), _core), (stub_testing_functions(), _core.testing)):
        for name, func in compiled_functions(module).items():
            signature = inspect.getdoc(func).splitlines()[
                0
            ]  # pybind11: "name(a: T, *, b: T) -> R"
            for arg in stubs[name]:
                assert f"{arg}:" in signature, (name, arg, signature)


def test_public_api_is_exported():
    for name in truescore_fast.__all__:
        assert hasattr(truescore_fast, name), name


def test_every_public_module_is_reexported():
    import importlib
    import pkgutil

    # every public module of the package: the subpackages and their public modules
    modules = [
        info.name
        for info in pkgutil.walk_packages(truescore_fast.__path__, "truescore_fast.")
        if not any(part.startswith("_") for part in info.name.split(".")[1:])
        and not info.name.startswith("truescore_fast.cli")  # the command line, not the API
    ]
    assert "truescore_fast.contamination.exact" in modules and len(modules) > 25
    for name in modules:
        module = importlib.import_module(name)
        missing = set(module.__all__) - set(truescore_fast.__all__)
        assert not missing, (name, missing)

"""``import truescore_fast`` loads only the compiled core; ``truescore-fast --version`` and
``--help`` load neither NumPy nor SciPy (an import check, never a timing: which modules a
fresh interpreter imported, from ``python -X importtime``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import truescore_fast
from commands import loaded_modules

PACKAGE = Path(truescore_fast.__file__).resolve().parent


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


HEAVY = ("numpy", "scipy")


# the library's own modules that pull in NumPy or SciPy
LIBRARY = tuple(
    f"truescore_fast.{name}"
    for name in ("audit", "calibration", "compare", "contamination", "sharded", "intervals")
)


def importtime_modules(*args: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules ``python -X importtime ARGS`` reports, and the process. (A module loaded
    by ``importlib.import_module`` gets no line of its own; what it imports does.)"""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    names = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return names, proc


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in HEAVY or n in LIBRARY)


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_importtime_of_version_and_help_shows_neither_numpy_nor_scipy(flag):
    names, proc = importtime_modules("-m", "truescore_fast", flag)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "truescore_fast.cli" in names, proc.stderr[-2000:]  # the parse saw the run
    assert heavy(names) == []


def test_the_importtime_check_sees_scipy_when_it_is_imported():
    # the check above can fail: the same parse finds SciPy once a library module is used
    names, _ = importtime_modules("-c", "import truescore_fast.studies.sequential")
    assert "truescore_fast.studies.sequential" in names
    assert any(n.startswith("scipy.special") for n in names)


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_neither_numpy_nor_scipy(flag):
    names, proc = loaded_modules(flag)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip(), "printed nothing"
    assert heavy(names) == []
    # the only package modules loaded: the package, its core, the CLI dispatcher
    ours = {n for n in names if n.startswith("truescore_fast")}
    assert ours <= {
        "truescore_fast",
        "truescore_fast._core",
        "truescore_fast._core.testing",  # a submodule of the compiled core
        "truescore_fast.errors",  # the argument errors: standard library only
        "truescore_fast.cli",
        "truescore_fast.cli._common",  # the exit codes and flag types: standard library only
    }, ours


def test_the_sys_modules_check_sees_scipy_when_a_command_runs():
    # the checks here can fail: a command that runs a test loads the library and SciPy
    names, proc = loaded_modules(
        "contamination", str(EXAMPLES / "contamination_sharded.csv"), "--shard-column", "shard"
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "scipy.special" in names and "truescore_fast.contamination.exact" in names


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "examples/audit_example.csv"],
        ["contamination", "examples/contamination_sharded.csv", "--shard-column", "shard"],
        ["compare", "examples/compare_example.csv", "--a-column", "system_a", "--b-column",
         "system_b"],
    ],
)  # fmt: skip
def test_commands_do_not_import_scipy_stats(argv):
    # a subpackage loads all its modules: those that need scipy.stats (0.5 s) import it
    # in the function that uses it, so a command that does not pays nothing for it
    root = EXAMPLES.parent
    names, proc = loaded_modules(
        *[str(root / w) if w.startswith("examples/") else w for w in argv]
    )
    assert proc.returncode in (0, 2), proc.stderr[-2000:]
    assert not [n for n in names if n == "scipy.stats" or n.startswith("scipy.stats.")]


def test_import_truescore_fast_loads_only_the_core():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, truescore_fast; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = set(ast.literal_eval(proc.stdout))
    assert heavy(names) == []
    assert {n for n in names if n.startswith("truescore_fast")} == {
        "truescore_fast",
        "truescore_fast._core",
        "truescore_fast._core.testing",
        "truescore_fast.errors",  # the argument errors the core raises
    }


# Every subcommand's --help: tests/cli/test_help.py (the commands read from the parser).


def _modules_listing(name: str) -> list[str]:
    """The package's modules (not subpackages) whose ``__all__`` lists ``name``."""
    import importlib
    import pkgutil

    found = []
    for info in pkgutil.walk_packages(truescore_fast.__path__, "truescore_fast."):
        if info.ispkg or info.name in ("truescore_fast.__main__",):
            continue
        module = importlib.import_module(info.name)
        if name in getattr(module, "__all__", ()):
            found.append(info.name)
    return found


def test_every_public_name_resolves_lazily():
    for name in truescore_fast.__all__:
        value = getattr(truescore_fast, name)
        if name != "__version__":
            # written once, in one public module's __all__ (a private module's __all__ is
            # its interface inside the package: _table's StudyTable is exported by studies)
            found = _modules_listing(name)
            public = [m for m in found if not any(p[0] == "_" for p in m.split(".")[1:])]
            (module,) = public or found
            assert value is getattr(sys.modules[module], name), name
    assert set(truescore_fast.__all__) <= set(dir(truescore_fast))
    with pytest.raises(AttributeError, match="no_such_name"):
        truescore_fast.no_such_name  # noqa: B018
    assert truescore_fast.compare.__name__ == "truescore_fast.compare"  # a module, on demand


def test_type_checking_imports_match_the_lazy_table():
    # the TYPE_CHECKING block is what mypy and editors see; _PUBLIC is what runs
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
    )
    seen = {
        node.module.rsplit(".", 1)[1]: tuple(alias.name for alias in node.names)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert seen == {module: ("*",) for module in truescore_fast._PUBLIC}

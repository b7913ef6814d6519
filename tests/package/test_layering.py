"""The package's layering, read from its imports (nothing of it is run): imports point
down the layers, never in a cycle (a function-level import counts), no private name is
taken from another subpackage, at most a few (each with its reason) from another module of
its own subpackage, and no module grows past the size one topic needs.

    compiled core and shared base (_core, errors, _validation, ...)   layer 0
    statistics: contamination, compare, audit, resampling             layer 1
    studies, patch, suite (the suite audit)                            layer 2
    input/output: io                                                   layer 3
    command line: cli                                                  layer 4

The four statistics subpackages do not import each other. docs/developer.md shows the
same picture.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "truescore_fast"


LAYERS = {
    "errors": 0,  # the argument errors: a leaf every layer raises (and the core fetches)
    "contamination": 1,
    "compare": 1,
    "audit": 1,
    "resampling": 1,
    "suite": 2,
    "studies": 2,
    "patch": 2,
    "io": 3,
    "cli": 4,
    "__main__": 4,
}


MAX_LINES = 700


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _area(module: str) -> str:
    """The subpackage (or top-level module) ``module`` belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _layer(module: str) -> int:
    area = _area(module)
    if area == "":  # truescore_fast/__init__.py assembles the exports: above everything
        return 5
    return LAYERS.get(area, 0 if area.startswith("_") else -1)


def _imports(module: str) -> list[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every import of the package's own
    modules in ``module``, at any depth of the code."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("truescore_fast"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    found.append((sub, "", node.lineno))
                else:
                    found.append((target, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            found += [
                (a.name, "", node.lineno)
                for a in node.names
                if a.name.startswith("truescore_fast")
            ]
    return [(m, n, line) for m, n, line in found if m in MODULES or m == "truescore_fast._core"]


EDGES = {m: [e for e in _imports(m) if e[0] != m] for m in MODULES}


def test_every_subpackage_has_a_layer():
    areas = {_area(m) for m in MODULES} - {""}
    assert sorted(a for a in areas if not a.startswith("_") and a not in LAYERS) == []


def test_imports_point_down_the_layers():
    upward = [
        f"{m}:{line} imports {target} (layer {_layer(m)} -> {_layer(target)})"
        for m, edges in EDGES.items()
        for target, _, line in edges
        if _layer(target) > _layer(m)
        # a subpackage's __init__ gathers its own modules' exports
        and not (MODULES[target].name == "__init__.py" and m.startswith(target + "."))
    ]
    assert upward == []


def test_the_statistics_subpackages_do_not_import_each_other():
    across = [
        f"{m}:{line} imports {target}"
        for m, edges in EDGES.items()
        for target, _, line in edges
        if _layer(m) == _layer(target) == 1 and _area(m) != _area(target)
    ]
    assert across == []


def test_no_import_cycle():
    graph = {
        m: {
            t
            for t, _, _ in edges
            if t in MODULES and not (MODULES[t].name == "__init__.py" and m.startswith(t + "."))
        }
        for m, edges in EDGES.items()
    }
    state: dict[str, int] = {}  # 1 on the path, 2 done
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_private_name_is_imported_across_subpackages():
    taken = [
        f"{m}:{line} takes {target}.{name}"
        for m, edges in EDGES.items()
        for target, name, line in edges
        if name.startswith("_")
        and not name.startswith("__")
        and _area(target) != _area(m)
        and _area(target) != ""  # the compiled core's names, truescore_fast.__version__
    ]
    assert taken == []


# The private names a module may take from another module of its own subpackage, each
# with its reason. Anything else shared inside a subpackage lives in a private module
# made for sharing, under public names (studies/_common.py, studies/_engine.py,
# audit/_shared.py, io/_runs.py, suite/_tests.py, ...).
ALLOWED_CROSSINGS = {
    ("truescore_fast.audit.matched_form", "truescore_fast.audit.data", "_read_table"): (
        "read_audit_table's reader, called for the control table so that its messages "
        "name `control`; a public reader with a name argument would be API for one caller"
    ),
    ("truescore_fast.audit.matched_form", "truescore_fast.audit.intervals", "_single"): (
        "the intervals' fast path on one gap vector, beside the public functions that "
        "share it; the audit is its one other caller"
    ),
    (
        "truescore_fast.audit.matched_form",
        "truescore_fast.audit.intervals",
        "_single_and_half",
    ): "the audit's intervals and its tau interval from one core call, on the same fast path",
    (
        "truescore_fast.contamination.batch",
        "truescore_fast.contamination.exact",
        "_fisher_from_log_sum",
    ): (
        "Fisher's method from a log-sum already formed; exact.py holds it beside "
        "combine_shards and the result type it builds (a private module would import "
        "exact.py and be imported by it)"
    ),
}
MAX_CROSSINGS = 5


def _crossings(module: str) -> set[tuple[str, str, str]]:
    """(module, other module of its subpackage, private name) for every private name
    ``module`` imports from, or reads as an attribute of, another module of its own
    subpackage."""
    found = {(module, t, n) for t, n, _ in EDGES[module] if n.startswith("_")}
    aliases = {}  # a name bound to one of the package's modules -> that module
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("truescore_fast"):
            for a in node.names:
                if f"{node.module}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in MODULES:
                    aliases[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
        ):
            found.add((module, aliases[node.value.id], node.attr))
    return {
        (m, t, n)
        for m, t, n in found
        if not n.startswith("__") and t != m and _area(t) == _area(m) and _area(m) != ""
    }


def test_few_private_names_cross_modules_inside_a_subpackage():
    crossings = set().union(*(_crossings(m) for m in MODULES))
    assert sorted(crossings - set(ALLOWED_CROSSINGS)) == []
    assert len(crossings) <= MAX_CROSSINGS
    assert len(ALLOWED_CROSSINGS) <= MAX_CROSSINGS
    stale = sorted(set(ALLOWED_CROSSINGS) - crossings)  # an allowance no longer needed
    assert stale == []


def test_the_crossing_count_sees_an_import_and_an_attribute(monkeypatch):
    # the same reading finds a planted private import and a planted attribute read
    planted = PACKAGE / "studies" / "coverage.py"
    code = (
        "from truescore_fast.studies._engine import _run_cell\n"
        "from truescore_fast.studies import _common\n"
        "_common._hidden\n"
    )
    monkeypatch.setitem(MODULES, "truescore_fast.studies._planted", planted)
    monkeypatch.setattr(Path, "read_text", lambda self, **kw: code)
    monkeypatch.setitem(EDGES, "truescore_fast.studies._planted",
                        _imports("truescore_fast.studies._planted"))  # fmt: skip
    assert _crossings("truescore_fast.studies._planted") == {
        ("truescore_fast.studies._planted", "truescore_fast.studies._engine", "_run_cell"),
        ("truescore_fast.studies._planted", "truescore_fast.studies._common", "_hidden"),
    }


def test_no_module_is_over_the_size_of_one_topic():
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize(
    "code, problem",
    [
        ("from truescore_fast.cli import main\n", "upward"),
        ("from truescore_fast.compare.paired import _core\n", "private"),
    ],
)
def test_the_checks_can_fail(tmp_path, monkeypatch, code, problem):
    # the same reading finds a planted upward import and a planted private import
    planted = PACKAGE / "audit" / "intervals.py"
    monkeypatch.setitem(MODULES, "truescore_fast.audit._planted", planted)
    monkeypatch.setattr(Path, "read_text", lambda self, **kw: code)
    edges = _imports("truescore_fast.audit._planted")
    if problem == "upward":
        assert any(_layer(t) > 1 for t, _, _ in edges)
    else:
        assert any(n.startswith("_") and _area(t) != "audit" for t, n, _ in edges)

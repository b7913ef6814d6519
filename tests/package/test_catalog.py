"""The catalog (truescore_fast/_catalog.py): every extensible list written once, importable
without NumPy, each implementation named by a "module:attribute" string that loads to
what the registry built from it runs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from commands import child_env
from truescore_fast import _catalog, _core


def test_the_catalog_loads_neither_numpy_nor_scipy():
    code = (
        "import json, sys\n"
        "from truescore_fast import _catalog as c\n"
        "names = [c.harness_names(), c.interval_methods(), [s.name for s in c.STUDIES],\n"
        "         [t.name for t in c.SUITE_TESTS]]\n"
        "print(json.dumps([names, sorted(sys.modules)]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False,
        env=child_env(), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    names, modules = json.loads(proc.stdout)
    assert names[0][0] == "auto" and len(names[1]) == len(_core.interval_method_traits())
    heavy = [m for m in modules if m.split(".")[0] in ("numpy", "scipy")]
    assert heavy == []
    # the check can fail: loading an implementation pulls NumPy in
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from truescore_fast import _catalog as c; "
         "c.load(c.HARNESS_FORMATS[0].reader); print('numpy' in sys.modules)"],
        capture_output=True, text=True, check=False, env=child_env(), timeout=120,
    )  # fmt: skip
    assert proc.stdout.strip() == "True", proc.stderr[-2000:]


@pytest.mark.parametrize("target", ["truescore_fast", "truescore_fast:", ":x", "a.b"])
def test_load_refuses_a_name_without_module_and_attribute(target):
    with pytest.raises(ValueError, match="module:attribute"):
        _catalog.load(target)


def test_every_study_entry_loads_and_is_the_registry_s_study():
    from truescore_fast.studies.registry import STUDIES

    assert list(STUDIES) == [entry.name for entry in _catalog.STUDIES]
    for entry in _catalog.STUDIES:
        study = STUDIES[entry.name]
        assert (study.summary, study.replications) == (entry.summary, entry.replications)
        assert callable(_catalog.load(entry.study))
        if entry.tables is not None:
            assert study.run is _catalog.load(entry.tables)
        assert study.settings == entry.settings
        assert study.plot is (None if entry.plot is None else _catalog.load(entry.plot))


def test_every_harness_format_loads_a_reader_of_its_name_in_the_registry_s_order():
    from truescore_fast.io import harness

    readers = [_catalog.load(entry.reader) for entry in _catalog.HARNESS_FORMATS]
    assert [r.name for r in readers] == [entry.name for entry in _catalog.HARNESS_FORMATS]
    assert harness.HARNESSES == _catalog.harness_names()


def test_every_suite_test_loads_its_rows_and_is_the_audit_s_test():
    from truescore_fast.suite.audit import SUITE_TESTS

    assert SUITE_TESTS == tuple(test.name for test in _catalog.SUITE_TESTS)
    assert all(callable(_catalog.load(test.rows)) for test in _catalog.SUITE_TESTS)


def test_the_interval_methods_are_the_core_s_table():
    from truescore_fast.audit._methods import FALLBACK_METHODS, INTERVAL_METHODS

    table = _core.interval_method_traits()
    assert _catalog.interval_methods() == INTERVAL_METHODS == tuple(table)
    assert _catalog.interval_methods(fallback_only=True) == FALLBACK_METHODS
    assert FALLBACK_METHODS == tuple(m for m, t in table.items() if t["may_be_fallback"])

"""truescore_fast: contamination tests and matched-form audits for benchmark scores.

A compiled (C++17) core behind a thin Python API. It is a drop-in for the pure-Python
truescore library's contamination module and its paired comparison of two systems
(``paired_bootstrap``, ``paired_permutation``, ``holm``, ``benjamini_hochberg``), and adds
Oren et al.'s sharded tests, the CleanScore matched-form audit, the studies that justify
it, and PaCoST, disclosure records, family-clustered intervals and Audit-Prune.

The package is laid out by domain, each subpackage with its own modules:

* :mod:`truescore_fast.contamination` -- order-based tests on log-likelihoods;
* :mod:`truescore_fast.compare` -- comparing systems (the truescore drop-in, families,
  PaCoST);
* :mod:`truescore_fast.audit` -- the matched-form audit (intervals, the audit, the
  randomization test, the sequential audit, Audit-Prune);
* :mod:`truescore_fast.resampling` -- permutation nulls, finite-population bootstraps,
  difference in differences, seed-paired contrasts;
* :mod:`truescore_fast.studies` -- the Monte Carlo studies;
* :mod:`truescore_fast.suite` -- auditing a whole evaluation suite (every test on every
  model and benchmark, ConStat's performance-based test, multiplicity control);
* :mod:`truescore_fast.io` -- evaluation-harness runs and disclosure records;
* :mod:`truescore_fast.cli` -- the ``truescore-fast`` command line.

Every public name is also here, flat (``truescore_fast.matched_form_audit``): each is
written once, in its module's ``__all__``, and found here on first use (PEP 562) by
importing ``patch`` and then the subpackages in the order above until one exports it. ``import
truescore_fast`` loads only the compiled core (and the argument errors it raises:
``ArgumentError``, ``ArgumentTypeError``, ``SizeError``), so ``truescore-fast --version`` and
``--help`` do not pay for SciPy.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

# The version is pyproject.toml's, compiled into the core (see CMakeLists.txt): one source.
from truescore_fast._core import __version__ as __version__

# The errors for a bad argument (NumPy-free; the core raises them too): imported at once.
from truescore_fast.errors import ArgumentError as ArgumentError
from truescore_fast.errors import ArgumentTypeError as ArgumentTypeError
from truescore_fast.errors import SizeError as SizeError

# The modules whose __all__ the top level re-exports, in the order they are searched
# (errors, imported above, then patch: it loads only the two drop-in subpackages, which
# come next).
_PUBLIC = (
    "errors",
    "patch",
    "contamination",
    "compare",
    "audit",
    "resampling",
    "studies",
    "suite",
    "io",
)

if TYPE_CHECKING:  # the same names, for type checkers and editors
    # ruff: noqa: F403
    from truescore_fast.audit import *
    from truescore_fast.compare import *
    from truescore_fast.contamination import *
    from truescore_fast.errors import *
    from truescore_fast.io import *
    from truescore_fast.patch import *
    from truescore_fast.resampling import *
    from truescore_fast.studies import *
    from truescore_fast.suite import *


def _public(module: str) -> ModuleType:
    try:
        return importlib.import_module(f"truescore_fast.{module}")
    except KeyboardInterrupt:
        # A Ctrl-C during this import (the first call of a function imports the library)
        # can pass through code CPython runs from a string (dataclasses, namedtuple), and
        # that marks the interrupt as unhandled (CPython 3.10-3.13, checked): a script that
        # catches it and then ends would still exit by SIGINT. Running a string again clears
        # the mark; the KeyboardInterrupt itself still reaches the caller.
        exec("pass")  # noqa: S102
        raise


def _all() -> list[str]:
    names = {name for module in _PUBLIC for name in _public(module).__all__}
    return ["__version__", *sorted(names, key=str.lower)]


def __getattr__(name: str) -> Any:
    if name == "__all__":  # `from truescore_fast import *`, help(), documentation tools
        value: Any = _all()
    elif name in _PUBLIC:  # a subpackage not imported yet: truescore_fast.compare
        return _public(name)
    elif name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    else:
        module = next((m for m in map(_public, _PUBLIC) if name in m.__all__), None)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(module, name)
    globals()[name] = value  # the next lookup is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_all()))

"""The names the ``audit`` and ``calibrate`` parsers list, known without the library.

``--help`` loads neither NumPy nor SciPy, but the registries these lists come from live in
modules that do: the harness formats (:data:`truescore_fast.io.harness.HARNESSES`) and the
studies (:data:`truescore_fast.studies.registry.STUDIES`). They are repeated here, and
tests/cli/test_help.py checks each against its registry: a new harness format or study
fails that test until it is listed here too. The interval methods need no copy: they come
from the compiled core's own registry, which loads neither.
"""

from __future__ import annotations

from truescore_fast import _core

__all__ = ["HARNESSES", "STUDIES", "interval_methods"]

#: The values of ``audit --harness``, as truescore_fast.io.harness registers them.
HARNESSES: tuple[str, ...] = ("auto", "lm-eval", "inspect", "table")

#: Every study of ``calibrate``: its one-line summary and default replications per cell,
#: as truescore_fast.studies.registry lists them.
STUDIES: dict[str, tuple[str, int]] = {
    "coverage": ("coverage and half-width of every interval (Table 2)", 5000),
    "stress": ("coverage over the 36 stress settings (Table 6)", 4000),
    "detection": ("detection rates, type-I error and form mismatch (Tables 11-13, Fig. 10)", 2000),
    "budget": ("budget curves and an audit-size plan (Table 10)", 2000),
    "sequential": ("the sequential audit under continuous monitoring", 1000),
    "sequential-orders": ("the sequential order test's size, power and orders scored", 2000),
    "suite": ("the suite audit's false discovery rate and power per pair", 200),
}


def interval_methods(*, fallback_only: bool = False) -> tuple[str, ...]:
    """The interval methods in the core's order (those that may serve as the audit's
    fallback under the guardrail, with ``fallback_only``)."""
    traits = _core.interval_method_traits()
    return tuple(m for m, t in traits.items() if t["may_be_fallback"] or not fallback_only)

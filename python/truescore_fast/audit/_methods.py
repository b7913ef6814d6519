"""The registry of interval methods, read from the compiled core's one table (through
:data:`truescore_fast._catalog.INTERVAL_TRAITS`, which the command line reads too).

``src/cpp/truescore/intervals.hpp`` lists every interval method once: its enum value,
its name and its traits. Everything in the package that names or chooses a method reads
this module: the interval functions, the audit's fallbacks, the studies' dispatch, the
command line's choices and the plots' styles. A new order-free method is therefore its
formula and one row of that table in C++; nothing here changes. Not a public API:
:data:`truescore_fast.INTERVAL_METHODS` is the public list.
"""

from __future__ import annotations

from typing import Any

from truescore_fast._catalog import INTERVAL_TRAITS, MethodTraits, interval_methods

__all__ = [
    "FALLBACK_METHODS",
    "INTERVAL_METHODS",
    "TRAITS",
    "MethodTraits",
    "code_of",
    "methods_for",
]


#: Every interval method and its traits, in the core's order.
TRAITS: dict[str, MethodTraits] = INTERVAL_TRAITS
#: The interval methods, in the order tables and audits list them.
INTERVAL_METHODS: tuple[str, ...] = tuple(TRAITS)
#: The methods that may serve as the audit's fallback under the guardrail.
FALLBACK_METHODS: tuple[str, ...] = interval_methods(fallback_only=True)


def code_of(method: str) -> int:
    """The core's code of ``method`` (a name from :data:`INTERVAL_METHODS`)."""
    return TRAITS[method].code


def methods_for(population_size: Any) -> tuple[str, ...]:
    """Every interval method, less those that need a population size when there is none."""
    return _EVERY if population_size is not None else _WITHOUT_POPULATION


_EVERY = tuple(TRAITS)
_WITHOUT_POPULATION = tuple(m for m, t in TRAITS.items() if not t.needs_population)

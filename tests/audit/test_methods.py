"""The interval-method registry: one table, the compiled core's, read by everything
that names or chooses a method (the audit's fallbacks, the studies, the command line and
the plots)."""

from __future__ import annotations

import argparse

import truescore_fast as tf
from truescore_fast import _core
from truescore_fast.audit._methods import FALLBACK_METHODS, INTERVAL_METHODS, TRAITS, code_of
from truescore_fast.studies import _plot


def test_the_registry_is_the_core_table():
    table = _core.interval_method_traits()
    assert INTERVAL_METHODS == tuple(table) == tf.INTERVAL_METHODS
    assert FALLBACK_METHODS == tuple(m for m, row in table.items() if row["may_be_fallback"])
    for name in INTERVAL_METHODS:
        assert code_of(name) == table[name]["code"] == int(_core.IntervalMethod.__members__[name])
        assert TRAITS[name].needs_population == table[name]["needs_population"]


def test_the_command_line_offers_the_registered_methods():
    from truescore_fast.cli import _build_parser

    def choices(command: str, flag: str) -> list[str]:
        parser = _build_parser(command)
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        (action,) = [a for a in sub.choices[command]._actions if flag in a.option_strings]
        return list(action.choices)

    assert choices("audit", "--fallback") == list(FALLBACK_METHODS)
    assert choices("calibrate", "--intervals") == list(INTERVAL_METHODS)


def test_every_method_has_a_plot_style_and_a_new_one_gets_a_spare():
    styles = [_plot._style(m) for m in INTERVAL_METHODS]
    markers = [s["marker"] for s in styles]
    assert len(set(markers)) == len(markers)  # each registered method its own marker
    spare = _plot._style("a_method_added_later")
    assert spare["marker"] not in markers and spare["linestyle"] == "-"

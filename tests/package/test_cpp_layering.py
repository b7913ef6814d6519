"""The compiled core's layering, read from its ``#include`` lines (nothing is built): no
topic includes another that includes it back, counting a header and its source file as
one topic (``betting.hpp`` and ``betting.cpp`` are the topic ``truescore/betting``), so
that each topic can be read, tested and built after the ones it uses."""

from __future__ import annotations

import re
from pathlib import Path

SOURCES = Path(__file__).resolve().parents[2] / "src" / "cpp"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def _topic(path: str) -> str:
    """``truescore/betting.hpp`` and ``truescore/betting.cpp`` -> ``truescore/betting``."""
    return path.rsplit(".", 1)[0]


def _graph(files: dict[str, str]) -> dict[str, set[str]]:
    """Topic -> the topics its files include (itself left out), from {path: text} with
    paths relative to src/cpp. A binding's include of "arrays.hpp" names its own folder."""
    graph: dict[str, set[str]] = {}
    for path, text in files.items():
        topic = _topic(path)
        folder = path.rsplit("/", 1)[0]
        targets = graph.setdefault(topic, set())
        for name in INCLUDE.findall(text):
            target = _topic(name if "/" in name else f"{folder}/{name}")
            if target != topic:
                targets.add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = {}  # 1 on the path, 2 done
    found: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def _core_files() -> dict[str, str]:
    return {
        p.relative_to(SOURCES).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(SOURCES.rglob("*"))
        if p.suffix in (".hpp", ".cpp")
    }


def test_the_core_topics_include_each_other_in_no_cycle():
    files = _core_files()
    assert "truescore/intervals.cpp" in files and "bindings/module.cpp" in files
    assert _cycles(_graph(files)) == []


def test_the_interval_result_is_in_neither_of_the_two_topics_that_return_it():
    graph = _graph(_core_files())
    assert "truescore/intervals" not in graph["truescore/betting"]
    assert "truescore/gap_interval" in graph["truescore/betting"]
    assert "truescore/gap_interval" in graph["truescore/intervals"]


def test_the_check_finds_a_cycle_through_a_source_file():
    # the loop issue 38 found: betting.hpp included intervals.hpp (for GapInterval) while
    # intervals.cpp included betting.hpp
    files = {
        "truescore/betting.hpp": '#include "truescore/intervals.hpp"\n',
        "truescore/intervals.hpp": "#include <string>\n",
        "truescore/intervals.cpp": (
            '#include "truescore/intervals.hpp"\n#include "truescore/betting.hpp"\n'
        ),
        "bindings/bind_intervals.cpp": (
            '#include "arrays.hpp"\n#include "truescore/intervals.hpp"\n'
        ),
    }
    (cycle,) = _cycles(_graph(files))
    assert cycle[0] == cycle[-1] and set(cycle) == {"truescore/betting", "truescore/intervals"}
    assert "bindings/arrays" in _graph(files)["bindings/bind_intervals"]


# Bindings that release the GIL without run_interruptible (bindings/interrupt.hpp, the one
# Ctrl-C mechanism of the core), each a call that ends within about a second: one rank
# test of one shard, and the exact two-sided sign-flip count of at most 40 values
# (2 x 2^20 sums). The test hooks (bind_testing.cpp) are left out.
SHORT_CALLS = {"bindings/bind_contamination.cpp": 1, "bindings/bind_signflip.cpp": 1}


def _plain_releases(files: dict[str, str]) -> dict[str, int]:
    return {
        path: count
        for path, text in files.items()
        if path.startswith("bindings/")
        and path not in ("bindings/interrupt.hpp", "bindings/bind_testing.cpp")
        and (count := text.count("gil_scoped_release"))
    }


def test_every_long_kernel_is_stopped_by_the_one_ctrl_c_mechanism():
    files = _core_files()
    assert "run_interruptible" in files["bindings/bind_calibration.cpp"]
    assert _plain_releases(files) == SHORT_CALLS
    # the check sees a study kernel run with the GIL merely released (before issue 38)
    planted = {"bindings/bind_calibration.cpp": "py::gil_scoped_release release;\n"}
    assert _plain_releases(planted) == {"bindings/bind_calibration.cpp": 1}

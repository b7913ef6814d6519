"""Every ```python block in the README runs as written (the README stays true to the code).

Blocks under one ``##`` heading run in order in one namespace, as a reader would run
them one after the other. Each section runs once per session of this module: the
calibration section's 36 x 4,000 stress grid (seconds) is also the grid whose summary
the last test checks.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = [
    (section.splitlines()[0], re.findall(r"```python\n(.*?)```", section, re.S))
    for section in (ROOT / "README.md").read_text().split("\n## ")
]
SECTIONS = [(title, blocks) for title, blocks in SECTIONS if blocks]
CALIBRATION = "Calibration studies"


@pytest.fixture(scope="module")
def run_section():
    """run_section(title) -> the namespace its blocks leave, each section run at most once."""
    namespaces: dict[str, dict[str, object]] = {}

    def run(title: str) -> dict[str, object]:
        if title not in namespaces:
            namespace: dict[str, object] = {"__name__": "readme"}
            with pytest.MonkeyPatch.context() as patch:
                patch.chdir(ROOT)  # the blocks name files relative to the repository
                for index, block in enumerate(dict(SECTIONS)[title]):
                    exec(compile(block, f"README.md {title!r} block {index}", "exec"), namespace)
            namespaces[title] = namespace
        return namespaces[title]

    return run


def test_readme_has_examples():
    assert sum(len(blocks) for _, blocks in SECTIONS) >= 8
    assert CALIBRATION in dict(SECTIONS)


@pytest.mark.parametrize("title", [t for t, _ in SECTIONS], ids=[t for t, _ in SECTIONS])
def test_readme_section_runs(title, run_section, capsys):
    run_section(title)
    capsys.readouterr()


def test_readme_stress_grid_summary_holds(run_section, capsys):
    # The calibration section's notes summarise its 36 x 4,000 stress grid at seed 2026.
    grid = run_section(CALIBRATION)["grid"]
    capsys.readouterr()
    assert grid.meta["replications"] == 4000 and grid.meta["seed"] == 2026
    for valid in ("hoeffding", "bernstein", "hoeffding_serfling", "betting"):
        assert (np.asarray(grid[valid]) >= 0.95).all(), valid
    wald = np.asarray(grid["wald"])
    assert (wald < 0.95).sum() > 18  # "falls below 95% in most settings"
    assert round(float(wald.min()), 2) in (0.87, 0.88)  # "down to about 0.87"
    ratio = np.asarray(grid["bernstein/hoeffding"])
    assert (round(float(ratio.min()), 2), round(float(ratio.max()), 2)) == (0.69, 1.83)


def test_readme_sequential_audit_example_holds(run_section, capsys):
    # "prints a finding after 850 of the 3,000 parents (Delta's sequence [+0.006, +0.128])"
    state = run_section("The matched-form audit (CleanScore)")["state"]
    capsys.readouterr()
    assert state.decision == "finding" and state.n_parents == 850
    assert (round(state.delta.low, 3), round(state.delta.high, 3)) == (0.006, 0.128)


def test_readme_sequential_study_table_holds(run_section, capsys):
    # The table under the sequential study: rates in percent and mean parents.
    namespace = run_section("The matched-form audit (CleanScore)")
    capsys.readouterr()
    study = namespace["study"]
    assert [round(100 * v, 1) for v in study["claim_rate"]][::2] == [1.7, 96.0]
    assert round(100 * study["claim_rate"][1]) == 39
    assert round(100 * study["false_claim_rate"][0], 1) == 0.2
    assert [round(100 * v, 1) for v in study["coverage_at_stop"]] == [97.4, 96.7, 96.4]
    assert [round(v) for v in study["mean_parents"]] == [928, 980, 510]
    assert [round(100 * v, 1) for v in study["fixed_claim_rate"]][:1] == [4.3]
    assert round(100 * study["fixed_claim_rate"][1]) == 86
    assert round(100 * study["wald_peek_claim_rate"][0], 1) == 16.8
    assert round(100 * study["bounded_rate"][0]) == 47
    orders = namespace["orders"]
    assert round(100 * orders["rejection_rate"][0], 1) == 3.0
    assert round(100 * orders["fixed_rate"][0], 2) == 3.05
    assert [round(100 * v, 1) for v in (orders["rejection_rate"][1], orders["fixed_rate"][1])] == [
        85.6,
        87.1,
    ]
    assert round(orders["mean_orders"][0]) == 202 and round(100 * orders["saving"][0]) == 80

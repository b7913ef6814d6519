"""Every ```python block in the README runs as written (the README stays true to the code).

Blocks under one ``##`` heading run in order in one namespace, as a reader would run
them one after the other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = [
    (section.splitlines()[0], re.findall(r"```python\n(.*?)```", section, re.S))
    for section in (ROOT / "README.md").read_text().split("\n## ")
]
SECTIONS = [(title, blocks) for title, blocks in SECTIONS if blocks]


def test_readme_has_examples():
    assert sum(len(blocks) for _, blocks in SECTIONS) >= 8


@pytest.mark.parametrize("title, blocks", SECTIONS, ids=[t for t, _ in SECTIONS])
def test_readme_section_runs(title, blocks, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "readme"}
    for index, block in enumerate(blocks):
        exec(compile(block, f"README.md {title!r} block {index}", "exec"), namespace)
    capsys.readouterr()


def test_readme_stress_grid_summary_holds():
    # The calibration section summarises the 36 x 4,000 stress grid at seed 2026.
    import numpy as np
    import truescore_fast as tf

    grid = tf.stress_grid(replications=4000, seed=2026, progress=False)
    for valid in ("hoeffding", "bernstein", "hoeffding_serfling", "betting"):
        assert (np.asarray(grid[valid]) >= 0.95).all(), valid
    wald = np.asarray(grid["wald"])
    assert (wald < 0.95).sum() > 18  # "falls below 95% in most settings"
    assert round(float(wald.min()), 2) in (0.87, 0.88)  # "down to about 0.87"
    ratio = np.asarray(grid["bernstein/hoeffding"])
    assert (round(float(ratio.min()), 2), round(float(ratio.max()), 2)) == (0.69, 1.83)

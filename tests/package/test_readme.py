"""Every ```python block of the README and of docs/ runs on its own, as written.

Each block runs in a fresh namespace (a reader may copy any one block into a fresh
interpreter), from the repository root (the blocks name files such as
``examples/audit_example.csv`` relative to it). When a block is followed directly by a
```text block, that block is the output the page shows: the printed output must equal it.
Each block runs at most once per session of this module: the calibration guide's block
runs the 36 x 4,000 stress grid (seconds), and a test checks the page's summary of that
grid; the sequential guide's figures are checked the same way.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


# A fenced block: its language, its body, and what follows it up to the next fence.
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


def _blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """(id, code, shown output or None) for every python block of a page."""
    text = page.read_text()
    fences = list(FENCE.finditer(text))
    blocks = []
    for number, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        shown = None
        after = fences[number + 1] if number + 1 < len(fences) else None
        if after and after.group(1) == "text" and not text[fence.end() : after.start()].strip():
            shown = after.group(2)
        heading = re.findall(r"^#+ (.*)$", text[: fence.start()], re.M)
        line = text.count("\n", 0, fence.start()) + 1
        where = f"{page.relative_to(ROOT)}:{line} ({heading[-1] if heading else 'top'})"
        blocks.append((where, fence.group(2), shown))
    return blocks


BLOCKS = [block for page in PAGES for block in _blocks(page)]


CALIBRATION = "tsf.stress_grid(replications=4000, seed=2026)"


@pytest.fixture(scope="module")
def run_block():
    """run_block(id) -> (namespace, printed output), each block run at most once."""
    done: dict[str, tuple[dict[str, object], str]] = {}
    code = {where: body for where, body, _ in BLOCKS}

    def run(where: str) -> tuple[dict[str, object], str]:
        if where not in done:
            namespace: dict[str, object] = {"__name__": "__main__"}
            printed = io.StringIO()
            with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
                patch.chdir(ROOT)
                exec(compile(code[where], where, "exec"), namespace)
            done[where] = (namespace, printed.getvalue())
        return done[where]

    return run


def test_pages_have_examples():
    pages = {where.split(":")[0] for where, _, _ in BLOCKS}
    assert "README.md" in pages
    for page in [
        *(ROOT / "docs" / "quickstart").glob("*.md"),
        *(ROOT / "docs" / "guide").glob("*.md"),
    ]:
        assert str(page.relative_to(ROOT)) in pages, page
    assert sum(1 for _, body, _ in BLOCKS if CALIBRATION in body) == 1


@pytest.mark.parametrize("where", [b[0] for b in BLOCKS], ids=[b[0] for b in BLOCKS])
def test_block_runs_alone(where, run_block):
    _, printed = run_block(where)
    shown = dict((w, s) for w, _, s in BLOCKS)[where]
    if shown is not None:
        assert printed == shown


def test_stress_grid_summary_holds(run_block):
    # docs/guide/calibration-studies.md summarises its 36 x 4,000 stress grid at seed 2026.
    (where,) = [w for w, body, _ in BLOCKS if CALIBRATION in body]
    grid = run_block(where)[0]["grid"]
    assert grid.meta["replications"] == 4000 and grid.meta["seed"] == 2026
    for valid in ("hoeffding", "bernstein", "hoeffding_serfling", "betting"):
        assert (np.asarray(grid[valid]) >= 0.95).all(), valid
    wald = np.asarray(grid["wald"])
    assert (wald < 0.95).sum() > 18  # "falls below 95% in most settings"
    assert round(float(wald.min()), 2) in (0.87, 0.88)  # "down to about 0.87"
    ratio = np.asarray(grid["bernstein/hoeffding"])
    assert (round(float(ratio.min()), 2), round(float(ratio.max()), 2)) == (0.69, 1.83)


SEQUENTIAL = "docs/guide/sequential.md"


def _page_block(page: str, text: str) -> str:
    (where,) = [w for w, body, _ in BLOCKS if w.startswith(page + ":") and text in body]
    return where


def test_sequential_audit_example_holds(run_block):
    # "prints a finding after 650 of the 3,000 parents (Delta's sequence [+0.007, +0.133])"
    state = run_block(_page_block(SEQUENTIAL, "tsf.SequentialAudit(3000"))[0]["state"]
    assert state.decision == "finding" and state.n_parents == 650
    assert (round(state.delta.low, 3), round(state.delta.high, 3)) == (0.007, 0.133)


def test_sequential_study_table_holds(run_block):
    # The table under the sequential study and the sentences after it: rates in percent,
    # mean parents, the fixed design with the same power.
    namespace = run_block(_page_block(SEQUENTIAL, "tsf.sequential_study("))[0]
    study = namespace["study"]
    assert [round(100 * v, 1) for v in study["claim_rate"]] == [4.3, 86.0, 100.0]
    assert round(100 * study["false_claim_rate"][0], 1) == 0.1
    assert [round(100 * v, 1) for v in study["coverage_at_stop"]] == [99.2, 99.3, 99.3]
    assert [f"{v:.0f}" for v in study["mean_parents"]] == ["700", "754", "379"]
    assert [round(v) for v in study["fixed_same_power_parents"][1:]] == [1200, 1150]
    assert round(study["fixed_same_power_se"][1]) == 30
    assert [round(100 * v, 1) for v in study["fixed_claim_rate"]] == [4.3, 86.0, 100.0]
    assert [round(100 * v) for v in study["horizon_free_claim_rate"]] == [2, 73, 99]
    assert round(100 * study["horizon_free_claim_rate"][0], 1) == 2.3
    assert [round(v) for v in study["horizon_free_mean_parents"]] == [752, 813, 342]
    assert [round(100 * v, 1) for v in study["wald_peek_claim_rate"]] == [16.8, 96.4, 100.0]
    assert round(100 * study["bounded_rate"][0]) == 89
    assert study.meta["horizon"] == 1200
    orders = namespace["orders"]
    assert round(100 * orders["rejection_rate"][0], 1) == 3.0
    assert round(100 * orders["fixed_rate"][0], 2) == 3.05
    assert [round(100 * v, 1) for v in (orders["rejection_rate"][1], orders["fixed_rate"][1])] == [
        85.6,
        87.1,
    ]
    assert round(orders["mean_orders"][0]) == 202 and round(100 * orders["saving"][0]) == 80

"""The positive control of ``truescore-fast score``: a real transformer that saw the
benchmark is flagged, and the same architecture is not flagged when it saw the same
examples in shuffled orders or was never trained.

The models are those of tests/scoring_control.py: a 2-layer GPT-2 (width 128, 4 heads,
128 positions) built from a config, a byte-level BPE tokenizer of 300 tokens trained
locally, 600 AdamW steps (batch 16 x 64 tokens, lr 3e-3 with 50 warm-up steps and a cosine
decay to 3e-4, one torch thread, seed 0) on
100 filler sentences with 8 copies of a 36-example benchmark inserted; scored by
``truescore-fast score`` (6 shards of 6 examples, 19 shuffled orders each, seed 0,
context 128, stride 64) and tested by ``truescore-fast contamination`` (exact per-shard
tests pooled by Fisher's method). About a minute or two on two cores (two trainings,
three scorings): marked ``control`` (``pytest -m "not control"`` leaves it out).

What it shows: on a real transformer, trained on a corpus that holds the benchmark in its
published order, the whole path (tokenization one example at a time, the sliding window,
the batching, the CSV, the test) finds the order the model memorised; and the two arms
that must not be flagged are not. What it does not show: anything about a large model,
about one copy in a web-scale corpus, or about the false-positive rate (two null arms at
one seed are two draws, each flagged with probability at most 0.05; the Monte Carlo
calibration of the tests is elsewhere). It also pins the committed copies = 8 rows of the
duplication table in docs/guide/order-tests.md (tools/duplication_table.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the score extra (torch) is not installed")
pytest.importorskip("transformers", reason="the score extra (transformers) is not installed")
pytest.importorskip("tokenizers", reason="the score extra (tokenizers) is not installed")

import scoring_control as control  # noqa: E402
from scoring_control import table_rows  # noqa: E402

pytestmark = [pytest.mark.control, pytest.mark.slow]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "order-tests.md"

ARMS = {
    "published": {"copies": 8},
    "shuffled": {"copies": 8, "order": "shuffled"},
    "untrained": {"copies": 8, "train": False},
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "duplication_table", Path(__file__).resolve().parents[2] / "tools" / "duplication_table.py"
    )
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return {
        arm: table.row(tmp_path_factory.mktemp(arm), **settings) for arm, settings in ARMS.items()
    }


def test_the_model_that_saw_the_published_order_is_flagged(results):
    assert results["published"]["contaminated"]
    assert results["published"]["p_value"] < 0.01


@pytest.mark.parametrize("arm", ["shuffled", "untrained"])
def test_the_controls_are_not_flagged(results, arm):
    assert not results[arm]["contaminated"]
    assert results[arm]["p_value"] > 0.05


@pytest.mark.parametrize("arm", list(ARMS))
def test_the_guides_table_agrees_with_this_run(results, arm):
    # the committed row for this arm: same verdict, each shard's p-value within one rank
    # step (1/20) of it (another CPU's floating point may move a near-tie by one rank)
    rows = table_rows(GUIDE.read_text(encoding="utf-8"))
    got = results[arm]
    committed = rows[(got["copies"], got["order"])]
    assert committed["contaminated"] == got["contaminated"]
    assert len(committed["shards"]) == len(got["shards"]) == control.N_SHARDS
    for mine, theirs in zip(got["shards"], committed["shards"], strict=True):
        assert abs(mine - theirs) <= 1 / (control.PERMUTATIONS + 1) + 1e-12


def test_table_rows_reads_the_table():
    text = "| 8 | published | 0.00091 | flagged | 0.05 0.05 0.2 |\n"
    assert table_rows(text) == {
        (8, "published"): {"p_value": 0.00091, "contaminated": True, "shards": [0.05, 0.05, 0.2]}
    }
    assert table_rows("| 2 | shuffled | 0.5 | not flagged | 1 |")[(2, "shuffled")]["shards"] == [
        1.0
    ]

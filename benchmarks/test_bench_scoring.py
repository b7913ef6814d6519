"""Benchmark of ``score_orders`` (truescore_fast.io.scoring) with the transformers backend
against scoring one order at a time, as the released script does, in the same run.

Group: a small GPT-2 (2 layers, width 128, random weights, CPU), 2 shards of 8 examples
(about 170 tokens an order) with 7 shuffled orders each, ``context_len=128, stride=64``:
``score_orders(..., batch_size=8)`` (a shard's 8 orders in one forward pass per window)
vs a loop of ``sliding_window_loglik`` over the 16 orders (one order, one window per
forward pass). Both give the same log-likelihoods (asserted, to float32 tolerance). The
ratio is batching's gain on a CPU; on a GPU it is larger. No time is asserted.

Skipped without the ``score`` extra (torch, transformers).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the score extra (torch) is not installed")
pytest.importorskip("transformers", reason="the score extra (transformers) is not installed")

import truescore_fast as tf  # noqa: E402
from truescore_fast.io.scoring import score_orders, sliding_window_loglik  # noqa: E402
from truescore_fast.io.transformers_backend import TransformersScorer  # noqa: E402

GROUP = "scoring: 2 shards x 8 orders x ~170 tokens, GPT-2 2 x 128, CPU"
CONTEXT, STRIDE = 128, 64


@pytest.fixture(scope="module")
def setup():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=300, n_positions=CONTEXT, n_embd=128, n_layer=2, n_head=4)
    model = GPT2LMHeadModel(config).eval()
    rng = np.random.default_rng(0)
    examples = [rng.integers(0, 300, size=rng.integers(16, 26)).tolist() for _ in range(16)]
    orders = tf.shard_orders(16, 2, 7, seed=0)
    return TransformersScorer(model), examples, orders


def _one_at_a_time(scorer, examples, orders):
    out = []
    for shard in range(orders.n_shards):
        for row in [orders.canonical(shard), *orders.permutations[shard]]:
            tokens = [t for k in row for t in examples[k]]
            out.append(sliding_window_loglik(tokens, scorer, context_len=CONTEXT, stride=STRIDE))
    return np.array(out)


def _flat(scores):
    # shard by shard, the published order first: the loop's order
    return np.column_stack([scores.canonical, scores.shuffled]).reshape(-1)


@pytest.mark.benchmark(group=GROUP)
def test_score_orders_batched(benchmark, setup, record_role):
    record_role("ours", "truescore_fast.io.scoring.score_orders, batch_size=8")
    scorer, examples, orders = setup
    scores = benchmark(
        score_orders,
        examples,
        orders,
        scorer,
        context_len=CONTEXT,
        stride=STRIDE,
        batch_size=8,
        progress=False,
    )
    want = _one_at_a_time(scorer, examples, orders)
    np.testing.assert_allclose(_flat(scores), want, rtol=1e-6, atol=1e-4)


@pytest.mark.benchmark(group=GROUP)
def test_one_order_at_a_time(benchmark, setup, record_role):
    record_role("baseline", "one order and one window per forward pass (the released script)")
    scorer, examples, orders = setup
    got = benchmark(_one_at_a_time, scorer, examples, orders)
    assert got.shape == (16,) and np.isfinite(got).all()

"""Tokens per second of ``truescore_fast.io.scoring.score_orders`` with a model of GPT-2
small's shape (124 M parameters, random weights built from ``GPT2Config()``: nothing is
downloaded), the figure docs/quickstart/order-based-test.md quotes.

    python tools/score_throughput.py [--device cpu] [--dtype float32] [--batch-size 4]

One shard of 20 examples of 100 random tokens (2,000 tokens an order), 3 shuffled orders,
``context_len=1024, stride=512`` (three windows an order): prints the tokens of the orders
scored per second, and the hours Oren et al.'s setting (250 shuffles) would take on a
100,000-token benchmark at that rate.
"""

from __future__ import annotations

import argparse
import os
import platform

import numpy as np
import torch
import truescore_fast as tsf
from transformers import GPT2Config, GPT2LMHeadModel
from truescore_fast.io.scoring import score_orders
from truescore_fast.io.transformers_backend import TransformersScorer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config())
    scorer = TransformersScorer(model, device=args.device, dtype=args.dtype)
    rng = np.random.default_rng(0)
    examples = [rng.integers(0, 50257, size=100).tolist() for _ in range(20)]
    orders = tsf.shard_orders(20, 1, 3, seed=0)
    scores = score_orders(
        examples,
        orders,
        scorer,
        context_len=1024,
        stride=512,
        batch_size=args.batch_size,
        progress=False,
    )
    rate = scores.tokens_per_second
    params = sum(p.numel() for p in model.parameters())
    print(
        f"{params / 1e6:.0f} M parameters, {args.device}, {args.dtype}, "
        f"torch {torch.__version__}, {os.cpu_count()} CPUs ({platform.processor() or '?'}), "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(f"{scores.tokens_scored:,} tokens in {scores.seconds:.1f} s: {rate:,.0f} tokens/s")
    print(f"250 shuffles of a 100,000-token benchmark: {100_000 * 251 / rate / 3600:,.1f} h")


if __name__ == "__main__":
    main()

"""Write the partial tables of a sequential run: what has been scored so far.

* ``examples/sequential_audit_partial.csv``: the first 300 of a 2,000-parent benchmark's
  parents, in the order ``truescore_fast.audit_order(2000, seed=0)`` gave, scored on the
  public form and two fresh forms by two models: ``leaky`` (a public-form advantage of
  0.30 on half of the parents) and ``clean`` (none).
* ``examples/sequential_orders_partial.csv``: a sharded order test (10 shards, up to 99
  shuffled orders each) part way: every shard's published order and its first 15
  shuffled orders, for a clean model (the published order is unremarkable).

Seeded, so the files are reproducible:

    python examples/make_sequential_examples.py
    truescore-fast audit examples/sequential_audit_partial.csv --sequential \\
        --population-size 2000 --effect 0.05
    truescore-fast contamination examples/sequential_orders_partial.csv \\
        --shard-column shard --sequential --max-permutations 99
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261201
N_POPULATION, N_SCORED, K = 2000, 300, 2
N_SHARDS, N_SCORED_ORDERS = 10, 15


def main() -> None:
    rng = np.random.default_rng(SEED)
    order = np.random.default_rng(0).permutation(N_POPULATION)[:N_SCORED]  # audit_order
    ability = rng.uniform(0.2, 0.95, size=N_POPULATION)
    leaked = rng.random(N_POPULATION) < 0.5
    rows = []
    for model, leak in (("leaky", 0.30), ("clean", 0.0)):
        p_public = np.clip(ability + leak * leaked, 0, 1)
        public = rng.random(N_POPULATION) < p_public
        fresh = rng.random((N_POPULATION, K)) < ability[:, None]
        for parent in order:
            rows.append([model, f"q{parent:04d}", "public", int(public[parent])])
            for k in range(K):
                rows.append([model, f"q{parent:04d}", f"fresh{k + 1}", int(fresh[parent, k])])
    with open(HERE / "sequential_audit_partial.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "parent", "form", "correct"])
        w.writerows(rows)

    with open(HERE / "sequential_orders_partial.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["shard", "kind", "loglik"])
        for shard in range(N_SHARDS):
            values = rng.normal(-2400.0, 6.0, size=N_SCORED_ORDERS + 1)
            w.writerow([shard, "canonical", f"{values[0]:.3f}"])
            for value in values[1:]:
                w.writerow([shard, "shuffled", f"{value:.3f}"])


if __name__ == "__main__":
    main()

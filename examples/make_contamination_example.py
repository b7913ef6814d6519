"""Write the bundled contamination examples (deterministic: re-running gives the same files).

contamination_sharded.csv: a 2,400-example benchmark in 8 shards of 300, each scored in
published order and in 99 shuffled orders, by a simulated model that memorised the
published order weakly: its canonical log-likelihood sits about 1.5 sd above the shuffled
mean in every shard. Single shards are weak evidence (99 permutations);
pooled with Fisher they are strong.

contamination_clean.csv: one shard, 99 shuffled orders, a model that never saw the data.

Usage: python examples/make_contamination_example.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(20231027)
    with (HERE / "contamination_sharded.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["shard", "kind", "loglik"])
        for shard in range(8):
            centre = -41_000.0 + 900.0 * rng.standard_normal()
            shuffled = centre + 35.0 * rng.standard_normal(99)
            canonical = centre + 35.0 * (1.5 + 0.4 * rng.standard_normal())
            out.writerow([shard, "canonical", f"{canonical:.3f}"])
            for value in shuffled:
                out.writerow([shard, "permuted", f"{value:.3f}"])
    with (HERE / "contamination_clean.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["kind", "loglik"])
        values = -5_200.0 + 12.0 * rng.standard_normal(100)
        out.writerow(["canonical", f"{values[0]:.3f}"])
        for value in values[1:]:
            out.writerow(["permuted", f"{value:.3f}"])


if __name__ == "__main__":
    main()

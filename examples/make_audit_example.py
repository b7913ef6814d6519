"""Write the example audit tables: examples/audit_example.csv and audit_control.csv.

Three models, each scored on 200 parents sampled from a 1,000-parent benchmark, on the
public form and on two fresh forms, plus a 300-parent control bank of never-public items
scored the same way. Seeded, so the files are reproducible:

* ``clean``: no public-form advantage and no form mismatch;
* ``mismatch``: the fresh forms are a little harder (b = 0.05), in the control bank too;
* ``leaky``: the same mismatch plus a planted public-form advantage of 0.40 on
  half of the parents.

    python examples/make_audit_example.py
    truescore-fast audit examples/audit_example.csv --control examples/audit_control.csv \
        --population-size 1000 --radius 0.02
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20240607
N_PARENTS, N_CONTROL, K = 200, 300, 2
MODELS = {"clean": (0.00, 0.00), "mismatch": (0.05, 0.00), "leaky": (0.05, 0.40)}


def scores(rng, n, base, mismatch, leak, leak_share):
    ability = rng.uniform(0.2, 0.95, size=n)  # per-parent difficulty
    leaked = rng.random(n) < leak_share
    p_public = np.clip(ability + leak * leaked, 0, 1)
    p_fresh = np.clip(ability - mismatch, 0, 1)
    public = (rng.random(n) < p_public).astype(int)
    fresh = (rng.random((n, K)) < p_fresh[:, None]).astype(int)
    return public, fresh


def write(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "parent", "form", "correct"])
        w.writerows(rows)


def main() -> None:
    rng = np.random.default_rng(SEED)
    audit_rows, control_rows = [], []
    for model, (mismatch, leak) in MODELS.items():
        pub, fr = scores(rng, N_PARENTS, 0.6, mismatch, leak, 0.5)
        for i in range(N_PARENTS):
            audit_rows.append([model, f"q{i:04d}", "public", pub[i]])
            for k in range(K):
                audit_rows.append([model, f"q{i:04d}", f"fresh{k + 1}", fr[i, k]])
        cpub, cfr = scores(rng, N_CONTROL, 0.6, mismatch, 0.0, 0.0)
        for i in range(N_CONTROL):
            control_rows.append([model, f"c{i:04d}", "public", cpub[i]])
            for k in range(K):
                control_rows.append([model, f"c{i:04d}", f"fresh{k + 1}", cfr[i, k]])
    write(HERE / "audit_example.csv", audit_rows)
    write(HERE / "audit_control.csv", control_rows)


if __name__ == "__main__":
    main()

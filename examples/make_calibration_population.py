"""Write examples/calibration_population.csv: the per-parent gaps of one model's audit, the
input of ``truescore-fast calibrate coverage --population``.

600 parents in three subjects, each scored on the public form and two fresh forms
(binary correctness), so every gap public - mean(fresh) lies on {-1, -1/2, 0, +1/2, +1}.
Most gaps are zero, as in real audits; the subjects differ in difficulty and in how
often the forms disagree. Seeded, so the file is reproducible:

    python examples/make_calibration_population.py
    truescore-fast calibrate coverage --population examples/calibration_population.csv \
        --strata-column subject --n 50 200
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 20261201
SUBJECTS = {"algebra": (200, 0.55), "biology": (250, 0.75), "history": (150, 0.85)}


def main() -> None:
    rng = np.random.default_rng(SEED)
    rows = []
    for subject, (count, accuracy) in SUBJECTS.items():
        ability = np.clip(rng.normal(accuracy, 0.15, size=count), 0.02, 0.98)
        consistent = rng.random(count) < 0.7  # the model answers every form alike
        public = rng.random(count) < ability
        fresh = rng.random((count, 2)) < ability[:, None]
        fresh[consistent] = public[consistent, None]
        gaps = public.astype(float) - fresh.mean(axis=1)
        for i, gap in enumerate(gaps):
            rows.append((f"{subject[:3]}{i:03d}", subject, f"{gap:g}"))
    with open(HERE / "calibration_population.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["parent", "subject", "gap"])
        writer.writerows(rows)


if __name__ == "__main__":
    main()

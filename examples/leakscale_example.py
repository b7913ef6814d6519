"""Worked example: family-clustered intervals and Holm correction (LeakScale-style).

Four primary cells (two models x two domains). In each, 200 task families are evaluated
exposed (treated) and unexposed (control), 8 tasks per family; families differ a lot in
difficulty, so tasks within a family are correlated. Run:

    python examples/leakscale_example.py
"""

from __future__ import annotations

import numpy as np
from truescore_fast.compare.families import family_bootstrap_difference, holm_correction


def simulate_cell(effect: float, seed: int, n_families: int = 200, per_family: int = 8):
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0.0, 1.5, n_families)
    families = np.repeat(np.arange(n_families), per_family)
    logit = difficulty[families]
    control = rng.random(families.size) < 1 / (1 + np.exp(-logit))
    treated = rng.random(families.size) < 1 / (1 + np.exp(-(logit + effect)))
    return treated.astype(float), control.astype(float), families


def main() -> None:
    cells = {
        "model A, code": 0.45,
        "model A, SQL": 0.25,
        "model B, code": 0.30,
        "model B, SQL": 0.05,
    }
    results = {}
    for k, (name, effect) in enumerate(cells.items()):
        treated, control, families = simulate_cell(effect, seed=k)
        results[name] = family_bootstrap_difference(
            treated, control, families=families, n_resamples=5000, seed=2026
        )
        print(name)
        print(results[name].summary(), end="\n\n")
    holm = holm_correction([r.p_value for r in results.values()], names=list(results))
    print(holm.summary())


if __name__ == "__main__":
    main()

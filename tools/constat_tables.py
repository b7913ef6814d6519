"""ConStat as published, side by side with an independent reimplementation of its code.

Writes the two tables of docs/guide/suite-audit.md ("ConStat as published") as JSON
(tests/suite/constat_tables.json), which tests/suite/test_constat_published.py pins:

1. per model, the estimate and p-value of ``constat_tests`` beside those of
   ``tests/reference.py``'s ``ref_constat_test`` (written from eth-sri/ConStat's
   ``ConStat.return_functions_test``, NumPy draws) on two suites: the guide's example and
   a clean suite;
2. the rate at which the tested model is flagged at alpha = 0.05 on three simulated
   suites: one latent skill (clean), the errors-in-variables null (the reference benchmark
   measured with model-level noise; clean) and a planted leak, for ours, ours with
   ``sort=False`` (the pairing ablation) and the reference, each with its Monte Carlo SE.

Usage: python tools/constat_tables.py [--suites 150] [--resamples 500]
(about 5 minutes on two cores; the reference's fits are Python, ~0.7 ms each).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import truescore_fast as tsf  # noqa: E402
from reference import ref_constat_test  # noqa: E402

OUT = ROOT / "tests" / "suite" / "constat_tables.json"


def guide_example():
    """The guide's example: 10 models of one latent skill, model 3 inflated by +0.1."""
    rng = np.random.default_rng(0)
    ability = rng.normal(0.0, 1.0, 10)
    hard_b, hard_r = rng.normal(0, 1, 400), rng.normal(0.3, 1, 400)
    p_bench = 1 / (1 + np.exp(-(ability[:, None] - hard_b) * 1.5))
    p_ref = 1 / (1 + np.exp(-(ability[:, None] - hard_r) * 1.5))
    scores = (rng.random((10, 400)) < p_bench).astype(float)
    reference = (rng.random((10, 400)) < p_ref).astype(float)
    wrong = np.flatnonzero(scores[3] == 0)
    scores[3, rng.choice(wrong, 40, replace=False)] = 1.0
    return scores, reference


def simulated(seed, *, m=10, n=400, spread=1.0, noise=0.0, leak=0.0):
    """m models of one latent skill on a benchmark and a reference benchmark of n items;
    ``noise``: the sd of a per-model error in the reference benchmark's ability (errors in
    variables); ``leak``: that many of the best model's wrong benchmark answers turned
    right, as a fraction of the items. Returns scores, reference, the best model's row."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, spread, m)
    hard_b, hard_r = rng.normal(0, 1, n), rng.normal(0.3, 1, n)
    shifted = ability + rng.normal(0.0, noise, m) if noise else ability
    p_bench = 1 / (1 + np.exp(-(ability[:, None] - hard_b) * 1.5))
    p_ref = 1 / (1 + np.exp(-(shifted[:, None] - hard_r) * 1.5))
    scores = (rng.random((m, n)) < p_bench).astype(float)
    reference = (rng.random((m, n)) < p_ref).astype(float)
    if not leak:
        return scores, reference, int(np.argmax(ability))
    tested = int(np.argsort(ability)[m // 2])
    wrong = np.flatnonzero(scores[tested] == 0)
    k = min(wrong.size, round(leak * n))
    scores[tested, rng.choice(wrong, k, replace=False)] = 1.0
    return scores, reference, tested


def side_by_side(scores, reference, resamples, seed):
    ours = tsf.constat_tests(scores, reference, n_bootstrap=resamples, seed=seed)
    rows = []
    for i in range(scores.shape[0]):
        others = [j for j in range(scores.shape[0]) if j != i]
        est, p = ref_constat_test(scores[i], reference[i], scores[others], reference[others],
                                  n_bootstrap=resamples, seed=seed + i)  # fmt: skip
        rows.append({
            "model": i,
            "ours_estimate": float(ours.estimate[i]),
            "ours_p": float(ours.p_value[i]),
            "ours_sd": float(ours.replicates[i].std()),
            "reference_estimate": est,
            "reference_p": p,
        })  # fmt: skip
    return rows


# 20 models of close ability (sd 0.3 on the logit scale), 1,000 items on each benchmark
# (the shape of ConStat's own simulations); the errors-in-variables null adds a per-model
# error of sd 0.15 to the ability the reference benchmark measures.
SHAPE = {"m": 20, "n": 1000, "spread": 0.3}
NULLS = {
    "latent skill (clean)": {**SHAPE, "noise": 0.0, "leak": 0.0},
    "errors in variables (clean)": {**SHAPE, "noise": 0.15, "leak": 0.0},
    "planted leak (+0.05)": {**SHAPE, "noise": 0.0, "leak": 0.05},
}


def rates(suites, resamples, alpha=0.05):
    out = {}
    for name, kind in NULLS.items():
        flags = {"ours": [], "ours_sort_false": [], "reference": []}
        for k in range(suites):
            s, r, best = simulated(10_000 + k, **kind)
            others = [j for j in range(s.shape[0]) if j != best]
            for label, sort in (("ours", True), ("ours_sort_false", False)):
                res = tsf.constat_test(s[best], r[best], s[others], r[others],
                                       n_bootstrap=resamples, seed=k, sort=sort)  # fmt: skip
                flags[label].append(bool(res.p_value < alpha))
            _, p = ref_constat_test(s[best], r[best], s[others], r[others],
                                    n_bootstrap=resamples, seed=k)  # fmt: skip
            flags["reference"].append(bool(p < alpha))
        out[name] = {label: v for label, v in flags.items()}
        print(name, {k: sum(v) / suites for k, v in flags.items()}, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=150)
    parser.add_argument("--resamples", type=int, default=500)
    args = parser.parse_args()
    s, r = guide_example()
    clean_s, clean_r, _ = simulated(7)
    tables = {
        "resamples_side_by_side": 1000,
        "side_by_side": {
            "guide example": side_by_side(s, r, 1000, 1),
            "clean suite": side_by_side(clean_s, clean_r, 1000, 1),
        },
        "suites": args.suites,
        "resamples_nulls": args.resamples,
        "alpha": 0.05,
        "nulls": rates(args.suites, args.resamples),
    }
    OUT.write_text(json.dumps(tables, indent=1) + "\n")
    for name, rows in tables["side_by_side"].items():
        d_est = max(abs(x["ours_estimate"] - x["reference_estimate"]) for x in rows)
        d_p = max(abs(x["ours_p"] - x["reference_p"]) for x in rows)
        print(f"{name}: largest differences: estimate {d_est:.4f}, p {d_p:.3f}")
    for table in markdown(tables):
        print(table, end="\n\n")


if __name__ == "__main__":
    main()


def markdown(tables) -> tuple[str, str]:
    """The guide's two tables from the saved JSON."""
    lines = [
        "| suite | model | ours: estimate | reference: estimate | ours: p | reference: p |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in tables["side_by_side"].items():
        for row in rows:
            lines.append(
                f"| {name} | {row['model']} | {row['ours_estimate']:+.4f} | "
                f"{row['reference_estimate']:+.4f} | {row['ours_p']:.3f} | "
                f"{row['reference_p']:.3f} |"
            )
    side = "\n".join(lines)
    lines = [
        "| suites | tested model | ours | ours, `sort=False` | reference |",
        "|---|---|---:|---:|---:|",
    ]
    for name, flags in tables["nulls"].items():
        who = "the leaked one" if "leak" in name else "the best"
        cells = []
        for label in ("ours", "ours_sort_false", "reference"):
            rate = float(np.mean(flags[label]))
            se = math.sqrt(rate * (1 - rate) / len(flags[label]))
            cells.append(f"{rate:.3f} ({se:.3f})")
        lines.append(f"| {name} | {who} | " + " | ".join(cells) + " |")
    return side, "\n".join(lines)

"""Helpers shared by the test files of several areas: bitwise equality of float arrays,
a rate's Monte Carlo standard error, small synthetic banks, gap populations and shard
tables, the equality of two study tables, and a child Python that imports this package."""

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np


def same_bits(a, b) -> bool:
    """Bitwise equality of float arrays (distinguishes -0.0 from 0.0; NaN never passes)."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    if a.shape != b.shape or np.isnan(a).any() or np.isnan(b).any():
        return False
    return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


def mc_se(rate: float, n: int) -> float:
    """The Monte Carlo standard error of a rate estimated from n replications."""
    return math.sqrt(rate * (1.0 - rate) / n)


def bank(big_n=120, k=2, seed=0):
    """Binary correctness on big_n parents, public and k fresh forms, per-parent
    difficulty Beta(2, 2), no form effect."""
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(2, 2, size=big_n)
    public = (rng.random(big_n) < difficulty).astype(float)
    fresh = (rng.random((big_n, k)) < difficulty[:, None]).astype(float)
    return public, fresh


def k2_scores(rng, n, p_public=0.6, p_fresh=0.6):
    return (
        (rng.random(n) < p_public).astype(float),
        (rng.random((n, 2)) < p_fresh).astype(float),
    )


def shards(rng, n_shards, m_choices, *, ties):
    """Ragged rows with realistic log-likelihoods, some ties, and canonical values that
    sometimes equal a permuted value exactly (the >= boundary)."""
    rows, canonical = [], []
    for _ in range(n_shards):
        m = int(rng.choice(m_choices))
        row = rng.normal(-2000.0, 30.0, size=m)
        if ties:
            row = np.round(row / 5.0) * 5.0
        c = rng.normal(-2000.0, 30.0)
        if rng.uniform() < 0.3:
            c = float(row[rng.integers(m)])
        rows.append(row)
        canonical.append(c)
    return np.array(canonical, dtype=np.float64), rows


def lattice_population(big_n, probs, seed=0):
    rng = np.random.default_rng(seed)
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], p=probs, size=big_n)


def same_table(a, b):
    return json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``code`` (dedented) run by a child Python with ``args`` as sys.argv[1:], importing
    the truescore_fast this process imported (tools/sanitize.sh's copy, say)."""
    import truescore_fast

    env = dict(os.environ)
    package_dir = str(Path(truescore_fast.__file__).resolve().parents[1])
    env["PYTHONPATH"] = package_dir + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def write_suite_table(path, data):
    """Write a SuiteData's public and fresh forms as a long suite table (CSV) at ``path``."""
    lines = ["model,benchmark,parent,form,correct"]
    for p in data.pairs:
        for i, parent in enumerate(p.parents):
            lines.append(f"{p.model},{p.benchmark},{parent},public,{p.public[i]:g}")
            for k, form in enumerate(p.fresh_forms):
                lines.append(f"{p.model},{p.benchmark},{parent},{form},{p.fresh[i, k]:g}")
    path.write_text("\n".join(lines) + "\n")
    return path

"""Bit-identical results across builds of the core and across its vector paths.

    python tools/compare_builds.py BUILD.so [BUILD.so ...]

Each compiled core (``_core*.so``, built by any compiler) is imported in its own
interpreter, beside a copy of this tree's ``python/truescore_fast`` package, and runs a
fixed set of seeded workloads -- bootstrap, permutation (sign flips), exchangeability
tests, betting intervals and confidence sequence, the randomization test, a
finite-population bootstrap and a coverage study (the samplers and the Philox streams) --
once per vector path the machine has: AVX-512 and AVX kernels on, AVX-512 off with the
betting interval and the rank tests on AVX, then on SSE2, and plain loops. Every result
is hashed from its exact bits.
Prints one line per workload and exits 1 if any build or path differs from the first.
tools/check-compilers.sh runs it on the GCC and the clang build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "truescore_fast"


def digest(value: Any) -> str:
    """A hash of value's exact bits (floats by their IEEE words, arrays by their bytes)."""
    h = hashlib.sha256()

    def feed(v: Any) -> None:
        import numpy as np

        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            v = {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
        if isinstance(v, dict):
            for key in sorted(v, key=str):
                h.update(f"k{key}".encode())
                feed(v[key])
        elif isinstance(v, list | tuple):
            h.update(f"l{len(v)}".encode())
            for item in v:
                feed(item)
        elif isinstance(v, np.ndarray):
            h.update(f"a{v.dtype.str}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif isinstance(v, float | np.floating):
            h.update(b"f" + struct.pack("<d", float(v)))
        else:
            h.update(f"{type(v).__name__}:{v!r}".encode())

    feed(value)
    return h.hexdigest()[:16]


def workloads() -> dict[str, Any]:
    """The seeded calls, by name (each a thunk returning a result)."""
    import numpy as np
    import truescore_fast as tsf

    rng = np.random.default_rng(20261202)
    a = rng.normal(0.62, 0.2, 300).clip(0, 1)
    b = (a + rng.normal(0.03, 0.1, 300)).clip(0, 1)
    shuffled = rng.normal(-4000.0, 30.0, size=(64, 199))
    canonical = shuffled[:, 0] + rng.normal(5.0, 10.0, 64)
    gaps = rng.choice([-1.0, 0.0, 0.0, 1.0], size=(40, 150))
    public = (rng.random(200) < 0.7).astype(float)
    fresh = (rng.random((200, 2)) < 0.6).astype(float)
    population = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], size=2000)
    return {
        "paired_bootstrap": lambda: tsf.paired_bootstrap(a, b, n_bootstrap=4000, seed=7),
        "paired_permutation": lambda: tsf.paired_permutation(a, b, n_resamples=4000, seed=7),
        "exchangeability_tests": lambda: tsf.exchangeability_tests(canonical, shuffled),
        "sharded_likelihood_test": lambda: tsf.sharded_likelihood_test(canonical, shuffled),
        "betting_intervals": lambda: tsf.betting_intervals(gaps, population_size=5000),
        "betting_confidence_sequence": lambda: tsf.betting_confidence_sequence(
            gaps[0], population_size=5000
        ),
        "sequential_audit": lambda: _sequential_audit(tsf, public, fresh),
        "randomization_test": lambda: tsf.randomization_test(
            public, fresh, method="monte_carlo", n_resamples=4000, seed=3
        ),
        "finite_population_bootstrap": lambda: tsf.finite_population_bootstrap(
            a, population_size=5000, replicates=500, seed=5
        ),
        "coverage_study": lambda: tsf.coverage_study(
            population, [40, 400], replications=300, seed=11, progress=False
        ),
    }


def _sequential_audit(tsf: Any, public: Any, fresh: Any) -> list[Any]:
    """Every state of a sequential audit fed one parent at a time (the compiled sequence's
    incremental and exact readings), and a sequential study's first hits."""
    from truescore_fast.studies.sequential import _first_hits

    audit = tsf.SequentialAudit(1000, horizon=None, effect_size=0.05)
    states = [audit.update(public[i], fresh[i]) for i in range(public.shape[0])]
    x = ((public - fresh.mean(axis=1) + 1.0) / 2.0).reshape(4, -1)
    hits = _first_hits(x, x.mean(axis=1), 1000, 0.05, None)
    return [states, list(hits)]


def run_here() -> None:
    """In the worker interpreter: every workload on every vector path, as JSON."""
    from truescore_fast import _core

    testing = _core.testing
    paths = {"native": 3, "no-avx512, avx": 2, "no-avx512, sse2": 1, "plain": 0}
    out: dict[str, Any] = {"core": _core.__file__, "results": {}}
    for path, cap in paths.items():
        testing.simd_level(cap)
        level = testing.betting_vector_level()
        label = f"{path} (betting level {level}, rank tests {testing.rank_vector_path()})"
        out["results"][label] = {name: digest(call()) for name, call in workloads().items()}
    print(json.dumps(out))


def run_build(core: Path) -> dict[str, Any]:
    """The worker's results for one compiled core, imported from a private copy of the
    package (nothing of this tree's python/ directory is on the path)."""
    with tempfile.TemporaryDirectory(prefix="compare-builds-") as tmp:
        target = Path(tmp) / "truescore_fast"
        shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
        shutil.copy2(core, target / core.name)
        env = {**os.environ, "PYTHONPATH": tmp}
        proc = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"{core}: the worker failed:\n{proc.stderr[-3000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        loaded = Path(result["core"])
        if loaded.parent != target:
            sys.exit(f"{core}: the worker imported {loaded}, not the copy under test")
        return result


def main(argv: list[str]) -> int:
    if argv == ["--worker"]:
        run_here()
        return 0
    if not argv or any(a.startswith("-") for a in argv):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 1
    runs = {name: run_build(Path(name).resolve())["results"] for name in argv}
    first_build, first_path = argv[0], next(iter(runs[argv[0]]))
    reference = runs[first_build][first_path]
    differ = 0
    for workload, expected in reference.items():
        seen = {
            f"{build} [{path}]": results[workload]
            for build, by_path in runs.items()
            for path, results in by_path.items()
        }
        wrong = [where for where, h in seen.items() if h != expected]
        differ += bool(wrong)
        verdict = "identical" if not wrong else "DIFFERS in " + "; ".join(wrong)
        print(f"{workload:30s} {expected}  {len(seen)} runs {verdict}")
    print(f"{len(runs)} builds x {len(runs[first_build])} vector paths: {differ} workloads differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

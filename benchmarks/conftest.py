"""What every benchmark module shares: the role record that benchmarks/ratios.py reads, and
the NumPy references in tests/reference.py that several baselines run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # reference.py


@pytest.fixture
def record_role(benchmark) -> Callable[..., None]:
    """``record_role(role, label, scale=1.0, **extra)`` marks this benchmark for ratios.py.

    role: "ours", "baseline" or "ours-variant" (compared within the benchmark's group);
    label: the row's "Compared with" text; scale: the factor that extrapolates a baseline
    timed on part of the job to the whole job; extra: anything else worth saving with the
    run (e.g. replications, so a median converts to a time per replication).
    """

    def record(role: str, label: str, scale: float = 1.0, **extra: object) -> None:
        benchmark.extra_info.update({"role": role, "label": label, "scale": scale, **extra})

    return record

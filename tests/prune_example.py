"""The bundled Audit-Prune example (examples/prune_example.csv), read for
tests/audit/test_prune.py and tests/package/test_result_protocol.py."""

import csv
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load_example():
    with (EXAMPLES / "prune_example.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return (
        [r["question"] for r in rows],
        [r["correct_answer"] for r in rows],
        [r["incorrect_answer"] for r in rows],
        np.array([int(r["planted"]) for r in rows], dtype=bool),
    )

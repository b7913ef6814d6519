"""The scorer's positive control in miniature, as a table: how strongly the order test
flags a small GPT-2-style model against the number of copies of the benchmark in its
training corpus (Oren et al.'s duplication-count result), with the two controls (the
same examples in shuffled orders, an untrained model).

    python tools/duplication_table.py            # every row (about 10 minutes on 2 cores)
    python tools/duplication_table.py --copies 8 # one row

Each row trains the model of tests/scoring_control.py (seed 0, one torch thread, CPU),
scores it with ``truescore-fast score`` and tests it with ``truescore-fast contamination``
(Fisher's pooling of the exact per-shard tests), and prints one Markdown row; the table
in docs/guide/order-tests.md is this script's output, and
tests/io/test_scoring_control.py re-runs the copies = 8 rows and checks they agree.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # scoring_control.py

import scoring_control as control  # noqa: E402
from truescore_fast.cli import main  # noqa: E402

ROWS = [
    {"copies": 0},
    {"copies": 1},
    {"copies": 2},
    {"copies": 4},
    {"copies": 8},
    {"copies": 16},
    {"copies": 8, "order": "shuffled"},
    {"copies": 8, "train": False},
]

HEADER = (
    "| copies in the corpus | training order | pooled p (Fisher) | verdict at 0.05 | "
    "shard p-values |\n|---:|---|---:|---|---|"
)


def row(directory: Path, copies: int, order: str = "published", train: bool = True) -> dict:
    """Train, score and test one arm; its numbers."""
    built = control.build(directory, copies=copies, order=order, train=train)
    scores = directory / "scores.csv"
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(control.score_args(built, scores))
    if code != 0:
        raise SystemExit(f"score exited {code}")
    seconds = time.perf_counter() - started
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["contamination", str(scores), "--shard-column", "shard", "--json"])
    report = json.loads(out.getvalue())
    return {
        "copies": copies,
        "order": order if train else "untrained",
        "p_value": report["p_value"],
        "contaminated": report["contaminated"],
        "shards": [s["p_value"] for s in report["shards"]],
        "score_seconds": seconds,
    }


def markdown(result: dict) -> str:
    shards = " ".join(f"{p:g}" for p in result["shards"])
    verdict = "flagged" if result["contaminated"] else "not flagged"
    return (
        f"| {result['copies']} | {result['order']} | {result['p_value']:.3g} | {verdict} | "
        f"{shards} |"
    )


def main_table(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=None, help="only the rows with these copies")
    args = parser.parse_args(argv)
    rows = [r for r in ROWS if args.copies is None or r["copies"] == args.copies]
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for k, settings in enumerate(rows):
            print(markdown(row(Path(scratch) / str(k), **settings)), flush=True)


if __name__ == "__main__":
    main_table()

"""Write the example suite: examples/suite/suite_example.csv.gz.

Eight simulated models of spread ability on four benchmarks of 200 parents each, every
parent scored on its public form and on one fresh form (``fresh1``), drawn by
:func:`truescore_fast.simulate_suite` with a fixed seed, so the file is reproducible.
Three leaks are planted: each incorrect public answer of the pair becomes correct with
the probability given, the fresh form does not move:

* ``model-01`` on ``bench-1``: 0.30;
* ``model-04`` on ``bench-3``: 0.30;
* ``model-07`` on ``bench-2``: 0.25.

    python examples/make_suite_example.py
    truescore-fast suite examples/suite/suite_example.csv.gz
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

import truescore_fast as tsf

HERE = Path(__file__).resolve().parent
SEED = 20251202
LEAKS = ((0, 0, 0.30), (3, 2, 0.30), (6, 1, 0.25))


def main() -> None:
    suite = tsf.simulate_suite(
        models=8, benchmarks=4, parents=200, fresh_forms=1, leaks=LEAKS, seed=SEED
    )
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(["model", "benchmark", "parent", "form", "correct"])
    for pair in suite.pairs:
        for i, parent in enumerate(pair.parents):
            writer.writerow([pair.model, pair.benchmark, parent, "public", int(pair.public[i])])
            for k, form in enumerate(pair.fresh_forms):
                writer.writerow([pair.model, pair.benchmark, parent, form, int(pair.fresh[i, k])])
    path = HERE / "suite" / "suite_example.csv.gz"
    path.parent.mkdir(exist_ok=True)
    # mtime=0: the same bytes on every run
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(text.getvalue().encode("utf-8"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

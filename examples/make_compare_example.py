"""Write the bundled paired-comparison example (deterministic: re-running gives the same
file).

compare_example.csv: 400 questions in 40 topics of 10, each answered by three systems
(1 = correct, 0 = wrong). Questions in one topic share a difficulty, so rows are
clustered by ``topic``. ``system_a`` is better than the other two (+0.5 on the logit
scale); ``system_b`` and ``system_c`` are equally good, so comparing them should find
nothing.

    truescore-fast compare examples/compare_example.csv --a-column system_a \\
        --b-column system_b --cluster-column topic        # a difference: exit 2
    truescore-fast compare examples/compare_example.csv --a-column system_b \\
        --b-column system_c --cluster-column topic        # no difference: exit 0

Usage: python examples/make_compare_example.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def main() -> None:
    rng = np.random.default_rng(20240611)
    topics, per_topic = 40, 10
    skill = {"system_a": 0.5, "system_b": 0.0, "system_c": 0.0}
    with (HERE / "compare_example.csv").open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["question", "topic", *skill])
        for topic in range(topics):
            topic_ease = rng.normal(0.3, 1.0)
            for item in range(per_topic):
                ease = topic_ease + rng.normal(0.0, 0.5)
                correct = [
                    int(rng.random() < 1.0 / (1.0 + np.exp(-(ease + s)))) for s in skill.values()
                ]
                out.writerow([f"q{topic * per_topic + item:03d}", f"topic{topic:02d}", *correct])


if __name__ == "__main__":
    main()

"""Make examples/prune_example.csv: a synthetic binary-choice benchmark with planted
length leakage, for Audit-Prune.

400 question/answer pairs. Correct and incorrect answers are drawn from the same
distribution of words, digits and punctuation, except in the 35% of pairs marked
``planted``, where the correct answer gets an extra explanatory clause of 5-9 words: a
length cue a classifier can exploit without knowing anything. Deterministic (seeded):

    python examples/make_prune_example.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

SEED = 20260824
N_PAIRS = 400
PLANTED_SHARE = 0.35

WORDS = (
    "river stone market winter signal copper garden lantern harbor engine orbit meadow "
    "pencil thunder canyon violet fabric ladder mirror planet cotton bridge falcon marble "
    "island rocket saddle timber velvet walnut anchor beacon cradle desert ember forest "
    "glacier hollow ivory jungle kettle lemon mosaic nectar oyster prairie quartz ribbon"
).split()
CONNECTORS = "the a of in on with by for from near".split()
CLAUSE_OPENERS = ["because", "since", "which means", "as shown by", "given that"]


def phrase(rng: np.random.Generator, n_words: int) -> str:
    words = []
    for _ in range(n_words):
        pool = CONNECTORS if rng.random() < 0.3 else WORDS
        words.append(str(rng.choice(pool)))
    if rng.random() < 0.3:
        words.insert(int(rng.integers(0, len(words) + 1)), str(int(rng.integers(1, 2000))))
    text = " ".join(words)
    if rng.random() < 0.4:
        cut = int(rng.integers(1, len(words) + 1))
        text = " ".join(words[:cut]) + ", " + " ".join(words[cut:])
    return text.strip(" ,").capitalize() + "."


def make_rows(seed: int = SEED) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(N_PAIRS):
        question = f"Which statement about the {rng.choice(WORDS)} {rng.choice(WORDS)} is true?"
        correct = phrase(rng, int(rng.integers(4, 12)))
        incorrect = phrase(rng, int(rng.integers(4, 12)))
        planted = rng.random() < PLANTED_SHARE
        if planted:
            opener = str(rng.choice(CLAUSE_OPENERS))
            clause = " ".join(str(w) for w in rng.choice(WORDS, int(rng.integers(5, 10))))
            correct = correct[:-1] + f", {opener} {clause}."
        rows.append(
            {
                "pair_id": str(k),
                "question": question,
                "correct_answer": correct,
                "incorrect_answer": incorrect,
                "planted": str(int(planted)),
            }
        )
    return rows


def main() -> None:
    path = Path(__file__).with_name("prune_example.csv")
    rows = make_rows()
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {len(rows)} pairs to {path}")


if __name__ == "__main__":
    main()

"""The betting confidence sequence measured from known truth (issue 22): its width against
an independent hedged_cs and its time-uniform miss rate, by simulation.

* Widths: N = 5,000 parents of three shapes (sparse, moderate, skewed; see
  :func:`population`), read at n = 50, 200 and 1,000 parents of random orders:
  the mean width of ``betting_confidence_sequence`` (horizon-free, population_size N)
  over the mean width of Waudby-Smith & Ramdas's hedged capital sequence with the
  truncation scale of confseq's ``hedged_cs`` (1/2), and over that with truncation 3/4
  (our sequence before issue 22, part 3), both written from the paper in
  ``tests/reference.py`` (``ref_hedged_cs``, its running intersection too), with the
  ratios' Monte Carlo SEs.
* Validity: the share of random orders of a whole population (N = 200, 1,000, 5,000)
  in which the sequence excludes the true mean at some t <= N - 1 (the census itself
  is the exact mean), with its Monte Carlo standard error.
* Near the census: of random orders of N = 1,000 parents read at t = 999, how many
  sequences are empty and how many miss the true mean (before issue 22 every sparse
  one was empty).

docs/guide/sequential.md shows the tables; tests/audit/test_sequential.py recomputes the
width tables and the validity table's N = 200 and 1,000 cells (2,000 orders each), checks
its N = 5,000 cells as printed and recomputes their first block of 250 orders. Usage:

    python tools/sequential_calibration.py [--orders 2000] [--width-orders 20] [--far] [--fresh]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ("sparse", "moderate", "skewed")
# Shapes the mixture's constants were not chosen on (the fresh-stream check, --fresh).
UNSEEN_SHAPES = ("bimodal", "uniform", "rare-negative")
ALL_SHAPES = (*SHAPES, *UNSEEN_SHAPES)  # a shape's index names its streams
FRESH_SEED = 2026  # populations of every shape drawn from streams the tuning never saw
WIDTH_SIZE = 5000
WIDTH_NS = (50, 200, 1000)
VALIDITY_SIZES = (200, 1000, 5000)


def population(shape: str, size: int, seed: int = 22) -> np.ndarray:
    """A fixed population of ``size`` gaps in [-1, 1] (its own seeded NumPy stream):
    ``sparse`` 3% nonzero (+1 seven times in ten, else -1); ``moderate`` public correct
    w.p. 0.7 minus the mean of two fresh forms correct w.p. 0.62; ``skewed`` 0 or +1
    (w.p. 0.15) minus 1 w.p. 0.05; and, unseen by the tuning, ``bimodal`` -0.8 or 0.9
    (even odds) plus uniform [0, 0.1], ``uniform`` on [-1, 1], ``rare-negative`` -1
    w.p. 0.08, else 0."""
    rng = np.random.default_rng([seed, ALL_SHAPES.index(shape), size])
    if shape == "sparse":
        signs = rng.choice([-1.0, 1.0], size, p=[0.3, 0.7])
        return np.where(rng.random(size) < 0.03, signs, 0.0)
    if shape == "moderate":
        public = (rng.random(size) < 0.7).astype(float)
        fresh = (rng.random((size, 2)) < 0.62).astype(float)
        return public - fresh.mean(axis=1)
    if shape == "skewed":
        return (rng.random(size) < 0.15).astype(float) - (rng.random(size) < 0.05)
    if shape == "bimodal":
        return np.where(rng.random(size) < 0.5, -0.8, 0.9) + 0.1 * rng.random(size)
    if shape == "uniform":
        return rng.uniform(-1.0, 1.0, size)
    if shape == "rare-negative":
        return np.where(rng.random(size) < 0.08, -1.0, 0.0)
    raise ValueError(f"shape must be one of {SHAPES}; got {shape!r}")


def _orders(shape: str, size: int, count: int, length: int, seed: int = 22) -> np.ndarray:
    """``count`` random orders of the population (``seed``'s), their first ``length``
    gaps."""
    pop = population(shape, size, seed)
    index = ALL_SHAPES.index(shape)
    stream = [23, index, size, count] if seed == 22 else [23, index, size, count, seed]
    rng = np.random.default_rng(stream)
    return np.stack([rng.permutation(pop)[:length] for _ in range(count)])


def _ratio_of_means(ours: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """sum(ours) / sum(theirs) over paired orders, and its Monte Carlo SE by the delta
    method, sqrt(sum (ours_i - r theirs_i)^2 / (k (k - 1))) / mean(theirs)."""
    k = ours.shape[0]
    r = float(ours.sum() / theirs.sum())
    resid = ours - r * theirs
    return r, math.sqrt(float(resid @ resid) / (k * (k - 1))) / float(theirs.mean())


def width_table(
    orders: int = 20,
    alpha: float = 0.05,
    ns: tuple[int, ...] = WIDTH_NS,
    shapes: tuple[str, ...] = SHAPES,
    seed: int = 22,
) -> dict[tuple[str, int], tuple[float, float, float, float]]:
    """{(shape, n): (mean width of ours / that of the reference hedged_cs at truncation
    1/2, its MC SE, ours / the reference at truncation 3/4 (our sequence before issue 22,
    part 3), its MC SE)}, over ``orders`` random orders (the same orders for all three)
    of the populations of ``seed`` (22: those the mixture was tuned on)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import truescore_fast as tf
    from reference import ref_hedged_cs

    out = {}
    for shape in shapes:
        d = _orders(shape, WIDTH_SIZE, orders, max(ns), seed)
        for n in ns:
            widths = np.zeros((3, orders))
            for i, row in enumerate(d):
                iv = tf.betting_confidence_sequence(row[:n], population_size=WIDTH_SIZE)
                widths[0, i] = iv.high - iv.low
                for j, c in ((1, 0.5), (2, 0.75)):
                    low, high = ref_hedged_cs((row[:n] + 1) / 2, WIDTH_SIZE, alpha, c=c)
                    widths[j, i] = 2.0 * (high - low)
            out[(shape, n)] = (
                *_ratio_of_means(widths[0], widths[1]),
                *_ratio_of_means(widths[0], widths[2]),
            )
    return out


def width_rows(widths: dict[tuple[str, int], tuple[float, float, float, float]]) -> list[str]:
    """The two width tables of the guide (against truncation 1/2, then 3/4), as lines."""
    lines = []
    for first, title in ((0, "1/2 (confseq's hedged_cs)"), (2, "3/4 (ours before)")):
        lines.append(f"Ours / the reference at truncation {title} (MC SE)")
        lines.append("| population | " + " | ".join(f"n = {n:,}" for n in WIDTH_NS) + " |")
        lines.append("|---|" + "---:|" * len(WIDTH_NS))
        for shape in SHAPES:
            cells = [widths[(shape, n)][first : first + 2] for n in WIDTH_NS]
            lines.append(
                f"| {shape} | " + " | ".join(f"{r:.3f} ({se:.3f})" for r, se in cells) + " |"
            )
        lines.append("")
    return lines


_CHUNK = 250  # orders per block of miss_rate, each block its own seeded stream


def fresh_rows(widths: dict[tuple[str, int], tuple[float, float, float, float]]) -> list[str]:
    """The fresh-stream table: per shape and n, ours / the better (narrower) of the two
    references, that is the larger of the two ratios, with its MC SE."""
    lines = ["Ours / the better reference, fresh populations (MC SE)"]
    lines.append("| population | " + " | ".join(f"n = {n:,}" for n in WIDTH_NS) + " |")
    lines.append("|---|" + "---:|" * len(WIDTH_NS))
    for shape in (*SHAPES, *UNSEEN_SHAPES):
        cells = [max(widths[(shape, n)][0:2], widths[(shape, n)][2:4]) for n in WIDTH_NS]
        lines.append(f"| {shape} | " + " | ".join(f"{r:.3f} ({se:.3f})" for r, se in cells) + " |")
    return lines


def miss_count(shape: str, size: int, start: int, rows: int, alpha: float = 0.05) -> int:
    """Of the ``rows`` random orders of block ``start`` (a multiple of 250; its own NumPy
    stream), how many sequences exclude the true mean at some t <= N - 1."""
    from truescore_fast.studies.sequential import _first_hits

    pop = population(shape, size)
    truth = math.fsum(pop) / size
    rng = np.random.default_rng([24, ALL_SHAPES.index(shape), size, start])
    d = np.stack([rng.permutation(pop)[: size - 1] for _ in range(rows)])
    x = (d + 1.0) / 2.0
    up, down = _first_hits(x, np.full(rows, (truth + 1.0) / 2.0), size, alpha, None)
    return int(np.sum(np.minimum(up, down) <= size - 1))


def miss_rate(shape: str, size: int, orders: int, alpha: float = 0.05) -> tuple[float, float]:
    """(share of orders whose sequence excludes the true mean at some t <= N - 1, its
    Monte Carlo SE sqrt(p (1 - p) / orders)), over blocks of 250 orders
    (:func:`miss_count`)."""
    misses = sum(
        miss_count(shape, size, start, min(_CHUNK, orders - start), alpha)
        for start in range(0, orders, _CHUNK)
    )
    p = misses / orders
    return p, math.sqrt(p * (1.0 - p) / orders)


def near_census(shape: str, size: int, orders: int, alpha: float = 0.05) -> tuple[int, int, int]:
    """(orders whose sequence read at t = N - 1 is empty, orders in which it misses the
    true mean, empty orders in which the loop reference of tests/reference.py does not
    reject the true mean: false verdicts) over ``orders`` random orders."""
    sys.path.insert(0, str(ROOT / "tests"))
    import truescore_fast as tf
    from reference import ref_betting_sequence_rejects

    pop = population(shape, size)
    truth = math.fsum(pop) / size
    rng = np.random.default_rng([25, ALL_SHAPES.index(shape), size])
    empty = missed = false = 0
    for _ in range(orders):
        d = rng.permutation(pop)[: size - 1]
        iv = tf.betting_confidence_sequence(d, population_size=size, alpha=alpha)
        empty += iv.empty
        missed += not iv.contains(truth)
        if iv.empty:
            false += not ref_betting_sequence_rejects(d, truth, size, alpha)
    return empty, missed, false


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=2000, help="orders per validity cell")
    parser.add_argument("--width-orders", type=int, default=20, help="orders per width cell")
    parser.add_argument(
        "--far", action="store_true", help="also the widths at n = 2,000 and 4,000 (10 orders)"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="also the widths on fresh populations (seed 2026) of the three shapes and of "
        "three shapes the mixture was not tuned on",
    )
    args = parser.parse_args(argv)
    widths = width_table(args.width_orders)
    print(f"Width at N = {WIDTH_SIZE}, {args.width_orders} orders per cell")
    print("\n".join(width_rows(widths)))
    if args.far:
        far = width_table(10, ns=(2000, 4000))
        for shape in SHAPES:
            for n in (2000, 4000):
                r_half, _, r_three, _ = far[(shape, n)]
                print(f"{shape} n = {n}: {r_half:.3f} (1/2), {r_three:.3f} (3/4)")
        print()
    if args.fresh:
        fresh = width_table(args.width_orders, shapes=(*SHAPES, *UNSEEN_SHAPES), seed=FRESH_SEED)
        print("\n".join(fresh_rows(fresh)))
        print()
    print(f"Time-uniform miss rate at alpha = 0.05, {args.orders} orders per cell (MC SE)")
    print("| population | " + " | ".join(f"N = {n:,}" for n in VALIDITY_SIZES) + " |")
    print("|---|" + "---:|" * len(VALIDITY_SIZES))
    for shape in SHAPES:
        cells = [miss_rate(shape, size, args.orders) for size in VALIDITY_SIZES]
        print(f"| {shape} | " + " | ".join(f"{p:.4f} ({se:.4f})" for p, se in cells) + " |")
    print()
    print(f"Read at t = N - 1 = 999, {args.orders} orders")
    print("| population | empty | missing the true mean | empty, the true mean not rejected |")
    print("|---|---:|---:|---:|")
    for shape in ("sparse", "moderate"):
        empty, missed, false = near_census(shape, 1000, args.orders)
        print(f"| {shape} | {empty} | {missed} | {false} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

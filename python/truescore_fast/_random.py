"""Seeds to Philox keys: how every randomised function turns ``seed`` into streams.

A study's randomness is one Philox4x64-10 key; task t (a block of replications, a grid
cell, a resample) draws from counter ``[0, 0, t, 0]`` under that key. No task's draws
depend on which thread, process or machine ran it, and the stream of any task can be
reproduced with NumPy alone::

    numpy.random.Philox(key=np.array(philox_key(seed), dtype=np.uint64),
                        counter=np.array([0, 0, t, 0], dtype=np.uint64))

Pass the key as a uint64 array: NumPy reads a tuple of large Python ints differently.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["SeedLike", "philox_key"]

SeedLike = int | np.integer | np.random.SeedSequence | np.random.Generator


def philox_key(seed: SeedLike) -> tuple[int, int]:
    """The two 64-bit key words for ``seed``.

    Args:
        seed: A non-negative integer or a ``SeedSequence`` (the key is
            ``SeedSequence(seed).generate_state(2, uint64)``), or a ``Generator``, from
            which two 64-bit words are drawn (advancing it, reproducibly).

    Raises:
        ValueError: for a negative integer or any other type (None included: a study
            whose seed was never recorded cannot be re-run).
    """
    words: npt.NDArray[Any]
    if isinstance(seed, np.random.Generator):
        words = seed.integers(0, 2**64, size=2, dtype=np.uint64)
    elif isinstance(seed, np.random.SeedSequence):
        words = seed.generate_state(2, np.uint64)
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer; got {seed}")
        words = np.random.SeedSequence(int(seed)).generate_state(2, np.uint64)
    else:
        raise ValueError(
            f"seed must be a non-negative int, a numpy SeedSequence or a numpy Generator; "
            f"got {seed!r}"
        )
    return int(words[0]), int(words[1])

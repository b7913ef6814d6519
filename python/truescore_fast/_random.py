"""Seeds to Philox keys: how every randomised function turns ``seed`` into streams.

A study's randomness is one Philox4x64-10 key; task t (a block of replications, a grid
cell, a resample) draws from counter ``[0, 0, t, 0]`` under that key. No task's draws
depend on which thread, process or machine ran it, and the stream of any task can be
reproduced with NumPy alone: :func:`philox_stream` (``philox_stream(philox_key(seed), t)``)
is that Generator, and the one place the library builds a NumPy Philox from a key::

    numpy.random.Philox(key=np.array(philox_key(seed), dtype=np.uint64),
                        counter=np.array([0, 0, t, 0], dtype=np.uint64))

Pass the key as a uint64 array: NumPy reads a tuple of large Python ints differently.

Every seed ``numpy.random.default_rng`` accepts is accepted, and maps to the two key words
as follows:

- an int (``bool`` and NumPy integers included), a sequence or array of non-negative
  ints, or a ``SeedSequence``: ``SeedSequence(seed).generate_state(2, uint64)`` -- the
  same entropy ``default_rng(seed)`` would be built from;
- a ``Generator``, a ``BitGenerator`` (``PCG64(0)``, ...) or a legacy ``RandomState``:
  two uint64 words drawn from it, advancing it (reproducibly: the same generator state
  gives the same key);
- ``None``: fresh entropy from the operating system, for the truescore drop-ins only
  (truescore's ``seed=None`` means that); the library's own functions refuse it, since a
  study whose seed was never recorded cannot be re-run.

The convention of the library's own (non-drop-in) functions: every randomised function
takes ``seed: SeedLike = 0`` -- a fixed default, so a call without a seed is reproducible
and two runs agree -- and normalises it with :func:`philox_key` (so every function accepts
the same seeds and refuses ``None`` with the same message). Functions that need the seed
as one int (the audit's parent order and Audit-Prune's folds seed NumPy's and
scikit-learn's generators with it) or record it on their result (the audit, the
randomization test, shard orders) take it from :func:`seed_int`: re-running with the
recorded int replays the result, even when the seed was a ``Generator``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from truescore_fast._validation import one_line
from truescore_fast.errors import ArgumentError, ArgumentTypeError

__all__ = ["SeedLike", "dropin_philox_key", "philox_key", "philox_stream", "seed_int"]

SeedLike = (
    int
    | np.integer
    | Sequence[int]
    | npt.NDArray[np.integer]
    | np.random.SeedSequence
    | np.random.BitGenerator
    | np.random.Generator
    | np.random.RandomState
)


def _key_words(seed: Any) -> tuple[int, int]:
    """The key for ``seed``; an invalid seed raises NumPy's own exception and message."""
    words: npt.NDArray[Any]
    if isinstance(seed, np.random.Generator):
        words = seed.integers(0, 2**64, size=2, dtype=np.uint64)
    elif isinstance(seed, (np.random.BitGenerator, np.random.RandomState)):
        # default_rng wraps the caller's own bit generator: drawing advances its state.
        words = np.random.default_rng(seed).integers(0, 2**64, size=2, dtype=np.uint64)
    else:
        sequence = (
            seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
        )
        words = sequence.generate_state(2, np.uint64)
    return int(words[0]), int(words[1])


def philox_key(seed: SeedLike) -> tuple[int, int]:
    """The two 64-bit key words for ``seed`` (see the module docstring for the mapping).

    Raises:
        ValueError: ``None`` (record a seed to make a study re-runnable) or a negative
            integer.
        TypeError: any other type (a float, a string, ...).
    """
    if seed is None:
        raise ArgumentError(
            "seed",
            "seed must be given (an int, a sequence of ints, a SeedSequence, a "
            "BitGenerator or a Generator); None is refused so that the study can be re-run",
        )
    try:
        return _key_words(seed)
    except TypeError as error:
        raise ArgumentTypeError(
            "seed",
            "seed must be a non-negative int, a sequence of them, a numpy SeedSequence, "
            f"BitGenerator or Generator; got {one_line(seed)}",
        ) from error
    except ValueError as error:
        raise ArgumentError(
            "seed", f"seed must be a non-negative integer; got {one_line(seed)}"
        ) from error


def philox_stream(key: tuple[int, int], task: int = 0) -> np.random.Generator:
    """A NumPy Generator on task ``task``'s stream of ``key`` (two 64-bit words, as
    :func:`philox_key` gives them): Philox4x64-10 at counter ``[0, 0, task, 0]``, the
    stream the compiled core's ``Philox::for_task(key0, key1, task)`` draws from."""
    return np.random.Generator(
        np.random.Philox(
            key=np.array(key, dtype=np.uint64),
            counter=np.array([0, 0, task, 0], dtype=np.uint64),
        )
    )


def dropin_philox_key(seed: Any) -> tuple[int, int]:
    """The key for a truescore drop-in's ``seed``: whatever truescore accepts, and its errors.

    truescore passes ``seed`` to ``numpy.random.default_rng``, so ``None`` draws fresh
    entropy and an invalid seed raises exactly NumPy's exception and message.
    """
    return _key_words(seed)


def seed_int(seed: SeedLike) -> int:
    """``seed`` as one non-negative int, for functions that record it on their result.

    An int (a NumPy integer, a bool) comes back unchanged, however large. Any other seed is
    validated as by :func:`philox_key` and gives the top 32 bits of its first key word; a
    ``Generator`` is advanced. Passing the returned int as the seed replays the result.

    Raises:
        ValueError, TypeError: as :func:`philox_key`.
    """
    if type(seed) is int and seed >= 0:
        return seed  # every non-negative int is a valid seed: nothing to check or hash
    words = philox_key(seed)
    if isinstance(seed, (int, np.integer)):
        return int(seed)
    return words[0] >> 32

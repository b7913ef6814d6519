"""The compiled kernels' paths, switched for a test or a benchmark.

Where the CPU has AVX-512 the core runs its AVX-512 kernels, and within them the
gathered sums (the bootstraps' draws added up) load the values with vector gathers or
with scalar loads, as the CPU decides; elsewhere it runs the portable code. Every path
gives the same bits: tests run each (``KERNEL_PATHS``) and compare.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from truescore_fast import _core

# (avx512, gather) for each path; without AVX-512 the first two run the portable code.
KERNEL_PATHS = [(True, True), (True, False), (False, False)]
KERNEL_PATH_IDS = ["avx512-if-available-gathers", "avx512-if-available-scalar-loads", "portable"]
every_kernel_path = pytest.mark.parametrize("avx512, gather", KERNEL_PATHS, ids=KERNEL_PATH_IDS)


def gather_default() -> bool:
    """Whether the gathered sums use vector gathers now (the CPU's choice unless switched)."""
    current = _core.testing.set_gather_sums(True)
    _core.testing.set_gather_sums(current)
    return current


@contextmanager
def kernel_path(avx512: bool = True, gather: bool | None = None) -> Iterator[None]:
    """Run the block with the AVX-512 kernels on (where the CPU has them) or off, and the
    gathered sums' vector gathers on or off (None: as they are); both are restored after."""
    previous = _core.testing.set_avx512(avx512)
    previous_gather = _core.testing.set_gather_sums(gather_default() if gather is None else gather)
    try:
        yield
    finally:
        _core.testing.set_avx512(previous)
        _core.testing.set_gather_sums(previous_gather)

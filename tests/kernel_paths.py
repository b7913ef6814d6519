"""The compiled kernels' paths, switched for a test or a benchmark.

Where the CPU has AVX-512 the core runs its AVX-512 kernels (bulk Philox words, index
draws cut in registers, the bootstraps' fused sums); elsewhere, or switched off here, the
portable code. Both give the same bits: tests run each (``every_kernel_path``) and
compare.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from truescore_fast import _core

# Without AVX-512 both run the portable code.
KERNEL_PATHS = [True, False]
every_kernel_path = pytest.mark.parametrize(
    "avx512", KERNEL_PATHS, ids=["avx512-if-available", "portable"]
)


@contextmanager
def kernel_path(avx512: bool) -> Iterator[None]:
    """Run the block with the AVX-512 kernels on (where the CPU has them) or off; the
    previous setting is restored after."""
    previous = _core.testing.simd_level()
    _core.testing.simd_level(3 if avx512 else 2)
    try:
        yield
    finally:
        _core.testing.simd_level(previous)

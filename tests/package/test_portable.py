"""portable.hpp: the plain C++ fallbacks (the branch a compiler other than GCC, Clang or
MSVC takes) against the native branch this build uses, and both against Python's exact
integers, on random 64-bit words and the edge values."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from truescore_fast._core import testing

SOURCES = Path(__file__).resolve().parents[2] / "src" / "cpp"
MAX = 2**64 - 1
EDGES = [0, 1, 2, 3, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**63 - 1, 2**63, 2**63 + 1, MAX - 1, MAX]


def words(seed: int, n: int) -> list[int]:
    """n random words: uniform, and uniform on a random bit length (small words too)."""
    rng = np.random.default_rng(seed)
    uniform = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    lengths = rng.integers(0, 65, size=n)
    short = [int(w) >> (64 - int(k)) if k else 0 for w, k in zip(uniform, lengths, strict=True)]
    return [int(w) for w in uniform] + short


def u64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def as_ints(array: np.ndarray) -> list[int]:
    return [int(v) for v in array]


@pytest.mark.parametrize("portable", [True, False])
def test_mul_wide_is_the_exact_128_bit_product(portable):
    a = words(1, 2000) + [x for x in EDGES for _ in EDGES]
    b = words(2, 2000) + EDGES * len(EDGES)
    hi, lo = testing.mul_wide(u64(a), u64(b), portable)
    assert [h * 2**64 + low for h, low in zip(as_ints(hi), as_ints(lo), strict=True)] == [
        x * y for x, y in zip(a, b, strict=True)
    ]


def test_mul_wide_fallback_equals_native():
    a, b = u64(words(3, 5000)), u64(words(4, 5000))
    native, fallback = testing.mul_wide(a, b, False), testing.mul_wide(a, b, True)
    assert all((n == f).all() for n, f in zip(native, fallback, strict=True))


@pytest.mark.parametrize("portable", [True, False])
def test_div_wide_is_the_exact_quotient_and_remainder(portable):
    rng = np.random.default_rng(5)
    d = [max(x, 1) for x in words(6, 1000)] + [1, 2, 2**32, 2**63, MAX - 1, MAX] * 3
    hi = [int(rng.integers(0, x, dtype=np.uint64)) if x > 1 else 0 for x in d]
    hi[-6:] = [0] * 6  # the smallest dividends too
    hi[-12:-6] = [x - 1 for x in d[-12:-6]]  # and the largest (quotient near 2**64)
    lo = words(7, 1000) + [0, MAX, 1, 2**63, MAX, 12345] * 3
    q, r = testing.div_wide(u64(hi), u64(lo), u64(d), portable)
    assert list(zip(as_ints(q), as_ints(r), strict=True)) == [
        divmod(h * 2**64 + low, x) for h, low, x in zip(hi, lo, d, strict=True)
    ]


def test_div_wide_refuses_a_quotient_too_wide():
    with pytest.raises(ValueError, match="d must exceed hi"):
        testing.div_wide(u64([5]), u64([0]), u64([5]), True)


@pytest.mark.parametrize("portable", [True, False])
@pytest.mark.parametrize("bits", [32, 64])
def test_popcount_counts_the_set_bits(portable, bits):
    x = words(8, 3000) + EDGES
    got = testing.popcount(u64(x), bits, portable)
    assert as_ints(got) == [bin(v & (2**bits - 1)).count("1") for v in x]


def test_cpu_features_from_the_registers_equal_the_compilers():
    # the CPUID/XGETBV reading MSVC builds use, here read through <cpuid.h>, against
    # GCC's or Clang's own __builtin_cpu_supports on this machine
    if not testing.has_cpuid():
        assert testing.cpu_features(True) == dict.fromkeys(testing.cpu_features(False), False)
        return
    assert testing.cpu_features(True) == testing.cpu_features(False)


# Register bits from the Intel SDM (vol. 2A, CPUID): leaf 1 ECX bit 23 POPCNT, 27 OSXSAVE,
# 28 AVX; leaf 7 EBX bit 5 AVX2, bit 16 AVX512F; XCR0 bits 1, 2 (SSE, AVX state), 5-7
# (opmask, ZMM_Hi256, Hi16_ZMM).
POPCNT, OSXSAVE, AVX = 1 << 23, 1 << 27, 1 << 28
AVX2, AVX512F = 1 << 5, 1 << 16
XCR0_AVX, XCR0_AVX512 = 0b110 | 1, 0b11100110 | 1


@pytest.mark.parametrize(
    "registers, expected",
    [
        ((7, POPCNT | OSXSAVE | AVX, AVX2 | AVX512F, XCR0_AVX512), (1, 1, 1, 1)),
        # the OS saves no ZMM registers: no AVX-512, whatever the CPU has
        ((7, POPCNT | OSXSAVE | AVX, AVX2 | AVX512F, XCR0_AVX), (1, 1, 1, 0)),
        # no OSXSAVE: XCR0 cannot be read, so no AVX of any kind
        ((7, POPCNT | AVX, AVX2 | AVX512F, XCR0_AVX512), (1, 0, 0, 0)),
        # the OS saves no YMM registers
        ((7, POPCNT | OSXSAVE | AVX, AVX2 | AVX512F, 0b11), (1, 0, 0, 0)),
        # leaf 7 absent: its register is not trusted
        ((6, POPCNT | OSXSAVE | AVX, AVX2 | AVX512F, XCR0_AVX512), (1, 1, 0, 0)),
        ((7, OSXSAVE, 0, XCR0_AVX512), (0, 0, 0, 0)),
        ((0, POPCNT | OSXSAVE | AVX, AVX2 | AVX512F, XCR0_AVX512), (0, 0, 0, 0)),
        # AVX2 needs AVX
        ((7, POPCNT | OSXSAVE, AVX2, XCR0_AVX512), (1, 0, 0, 0)),
    ],
)
def test_decode_cpuid_reads_the_documented_bits(registers, expected):
    got = testing.decode_cpuid(*registers)
    assert (got["popcnt"], got["avx"], got["avx2"], got["avx512f"]) == tuple(map(bool, expected))


def test_only_portable_hpp_uses_compiler_extensions():
    # unsigned __int128 and __builtin_* exist on GCC and Clang only (MSVC has neither):
    # everything else goes through portable.hpp, whose branches the tests above check
    found = [
        f"{path.relative_to(SOURCES)}:{n}: {line.strip()}"
        for path in sorted(SOURCES.rglob("*.[ch]pp"))
        if path.name != "portable.hpp"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"__int128|__builtin_", line.split("//")[0])
    ]
    assert found == []

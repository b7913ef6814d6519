// The few operations standard C++17 lacks, behind one header: the full 64 x 64 -> 128-bit
// product (and the division of such a product), population counts, a branch hint and the
// CPU's vector features.
//
// Each has a branch for GCC and Clang (unsigned __int128, __builtin_*), one for MSVC
// (_umul128 / __umulh, _udiv128, __popcnt64, __cpuid / _xgetbv) and plain C++ for any
// other compiler. The plain versions (the *_portable functions) are always compiled, and
// the testing hooks check them against the native ones, so the plain branch is tested on
// every build. The MSVC branch is not compiled here (no MSVC build runs; it was checked
// only against Microsoft's documented signatures). Every branch is meant to compute the
// same integers, so that results never depend on the compiler.
#pragma once

#include <cstdint>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
#endif

// Branch hint: TRUESCORE_LIKELY(cond) is cond, marked as usually true where the compiler
// takes hints.
#if defined(__GNUC__) || defined(__clang__)
#define TRUESCORE_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define TRUESCORE_LIKELY(x) (x)
#endif

namespace truescore {

// ---- 64 x 64 -> 128-bit products -----------------------------------------------------------

// The high word of a * b; *lo gets the low word. Four 32 x 32-bit products.
inline std::uint64_t mul_wide_u64_portable(std::uint64_t a, std::uint64_t b, std::uint64_t* lo) {
    const std::uint64_t a0 = a & 0xFFFFFFFFu, a1 = a >> 32, b0 = b & 0xFFFFFFFFu, b1 = b >> 32;
    const std::uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const std::uint64_t mid = (p00 >> 32) + (p01 & 0xFFFFFFFFu) + (p10 & 0xFFFFFFFFu);  // < 3 * 2^32
    *lo = (mid << 32) | (p00 & 0xFFFFFFFFu);
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

// The high word of a * b; *lo gets the low word.
inline std::uint64_t mul_wide_u64(std::uint64_t a, std::uint64_t b, std::uint64_t* lo) {
#if defined(__SIZEOF_INT128__)
    const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    *lo = static_cast<std::uint64_t>(p);
    return static_cast<std::uint64_t>(p >> 64);
#elif defined(_MSC_VER) && defined(_M_X64)
    std::uint64_t hi;
    *lo = _umul128(a, b, &hi);
    return hi;
#elif defined(_MSC_VER) && defined(_M_ARM64)
    *lo = a * b;
    return __umulh(a, b);
#else
    return mul_wide_u64_portable(a, b, lo);
#endif
}

// (hi * 2^64 + lo) / d, and *rem the remainder; needs hi < d (so the quotient fits in 64
// bits). Restoring division, one bit at a time.
inline std::uint64_t div_wide_u64_portable(std::uint64_t hi, std::uint64_t lo, std::uint64_t d,
                                           std::uint64_t* rem) {
    std::uint64_t r = hi, q = 0;
    for (int bit = 63; bit >= 0; --bit) {
        const bool carry = (r >> 63) != 0;  // r * 2 would overflow: then it certainly exceeds d
        r = (r << 1) | ((lo >> bit) & 1);
        q <<= 1;
        if (carry || r >= d) {
            r -= d;
            q |= 1;
        }
    }
    *rem = r;
    return q;
}

// (hi * 2^64 + lo) / d, and *rem the remainder; needs hi < d.
inline std::uint64_t div_wide_u64(std::uint64_t hi, std::uint64_t lo, std::uint64_t d, std::uint64_t* rem) {
#if defined(__SIZEOF_INT128__)
    const unsigned __int128 x = (static_cast<unsigned __int128>(hi) << 64) | lo;
    *rem = static_cast<std::uint64_t>(x % d);
    return static_cast<std::uint64_t>(x / d);
#elif defined(_MSC_VER) && defined(_M_X64) && _MSC_VER >= 1920
    return _udiv128(hi, lo, d, rem);
#else
    return div_wide_u64_portable(hi, lo, d, rem);
#endif
}

// ---- Population counts ----------------------------------------------------------------------

inline int popcount64_portable(std::uint64_t x) {
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

inline int popcount64(std::uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_popcountll(x);
#elif defined(_MSC_VER) && defined(_M_X64) && defined(__AVX__)
    // MSVC emits the POPCNT instruction whatever the CPU: only where /arch:AVX (which
    // implies it) already requires it.
    return static_cast<int>(__popcnt64(x));
#else
    return popcount64_portable(x);
#endif
}

inline int popcount32(std::uint32_t x) { return popcount64(x); }

// ---- CPU features ---------------------------------------------------------------------------

// The vector features the kernels choose between at run time, usable only when both the
// CPU has them and the operating system saves their registers.
struct CpuFeatures {
    bool popcnt = false;
    bool avx = false;
    bool avx2 = false;
    bool avx512f = false;
};

// The features from the x86 CPUID and XGETBV registers (Intel SDM vol. 2A, CPUID): leaf 1
// ECX bit 23 POPCNT, bit 27 OSXSAVE, bit 28 AVX; leaf 7 (subleaf 0) EBX bit 5 AVX2, bit 16
// AVX512F; XCR0 bits 1-2 (SSE and AVX state) and 5-7 (opmask and the ZMM registers) saved
// by the OS. max_leaf is CPUID leaf 0's EAX; xcr0 is read only when OSXSAVE is set.
inline CpuFeatures decode_cpuid(std::uint32_t max_leaf, std::uint32_t leaf1_ecx, std::uint32_t leaf7_ebx,
                                std::uint64_t xcr0) {
    CpuFeatures f;
    if (max_leaf < 1) return f;
    f.popcnt = (leaf1_ecx >> 23) & 1;
    const bool osxsave = (leaf1_ecx >> 27) & 1;
    const bool ymm = osxsave && (xcr0 & 0x6) == 0x6;
    const bool zmm = osxsave && (xcr0 & 0xE6) == 0xE6;
    f.avx = ymm && ((leaf1_ecx >> 28) & 1);
    if (max_leaf >= 7) {
        f.avx2 = f.avx && ((leaf7_ebx >> 5) & 1);
        f.avx512f = zmm && ((leaf7_ebx >> 16) & 1);
    }
    return f;
}

// Whether cpu_features_cpuid() reads the registers on this compiler and target.
#if (defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_IX86))) || \
    ((defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)))
#define TRUESCORE_HAVE_CPUID 1
#endif

// The features read from the registers themselves (x86 only; elsewhere none).
inline CpuFeatures cpu_features_cpuid() {
#if defined(TRUESCORE_HAVE_CPUID) && defined(_MSC_VER) && !defined(__clang__)
    int r[4];
    __cpuid(r, 0);
    const std::uint32_t max_leaf = static_cast<std::uint32_t>(r[0]);
    if (max_leaf < 1) return CpuFeatures{};
    __cpuid(r, 1);
    const std::uint32_t ecx1 = static_cast<std::uint32_t>(r[2]);
    std::uint32_t ebx7 = 0;
    if (max_leaf >= 7) {
        __cpuidex(r, 7, 0);
        ebx7 = static_cast<std::uint32_t>(r[1]);
    }
    const std::uint64_t xcr0 = ((ecx1 >> 27) & 1) ? _xgetbv(0) : 0;
    return decode_cpuid(max_leaf, ecx1, ebx7, xcr0);
#elif defined(TRUESCORE_HAVE_CPUID)
    unsigned a = 0, b = 0, c = 0, d = 0;
    const unsigned max_leaf = __get_cpuid_max(0, nullptr);
    if (max_leaf < 1) return CpuFeatures{};
    __cpuid(1, a, b, c, d);
    const std::uint32_t ecx1 = c;
    std::uint32_t ebx7 = 0;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        ebx7 = b;
    }
    std::uint64_t xcr0 = 0;
    if ((ecx1 >> 27) & 1) {
        unsigned lo = 0, hi = 0;
        __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));  // xgetbv
        xcr0 = (static_cast<std::uint64_t>(hi) << 32) | lo;
    }
    return decode_cpuid(max_leaf, ecx1, ebx7, xcr0);
#else
    return CpuFeatures{};
#endif
}

// The features, as the compiler's runtime reports them (GCC and Clang on x86), from the
// registers (MSVC on x86), or none (every other target: the kernels' plain loops run).
inline CpuFeatures cpu_features() {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    CpuFeatures f;
    f.popcnt = __builtin_cpu_supports("popcnt");
    f.avx = __builtin_cpu_supports("avx");
    f.avx2 = __builtin_cpu_supports("avx2");
    f.avx512f = __builtin_cpu_supports("avx512f");
    return f;
#elif defined(TRUESCORE_HAVE_CPUID)
    return cpu_features_cpuid();
#else
    return CpuFeatures{};
#endif
}

}  // namespace truescore

// Counter-based random numbers: Philox4x64-10 (Salmon, Moraes, Dror & Shaw, SC 2011).
//
// Its raw 64-bit stream equals numpy.random.Philox for the same key and counter, so a
// NumPy reference can reproduce any stream of ours draw for draw. Every task of a study
// gets its own stream from (key, task index) -- counter words 2 and 3 hold the task
// index, words 0 and 1 count blocks within the task -- so which thread, process or
// machine runs a task never changes what it draws.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "truescore/portable.hpp"

// AVX-512 kernels (bulk Philox here, index cutting in sampling.hpp) are compiled with
// function target attributes, so the library still runs on any x86-64 CPU, and chosen at
// run time. They compute with integers only: their output is bit-identical to the
// portable code's, which every other platform runs.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define TRUESCORE_AVX512 1
#include <immintrin.h>
#define TRUESCORE_TARGET_AVX512 __attribute__((target("avx512f,popcnt")))
#endif
// GCC 12 warns about its own intrinsics (_mm512_undefined_epi32 in avx512fintrin.h) when
// they are inlined: silence exactly that around the AVX-512 code.
#if defined(TRUESCORE_AVX512) && defined(__GNUC__) && !defined(__clang__)
#define TRUESCORE_AVX512_BEGIN \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
        _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define TRUESCORE_AVX512_END _Pragma("GCC diagnostic pop")
#else
#define TRUESCORE_AVX512_BEGIN
#define TRUESCORE_AVX512_END
#endif

namespace truescore {

namespace simd {

// The one switch of every vector kernel: the widest level that may run (3 AVX-512, 2 AVX,
// 1 SSE2, 0 the plain loops), the CPU's and the build's answer, read once, capped by a
// process-wide request (cap_level: the testing hook _core.testing.simd_level sets it,
// never while a kernel runs) so that tests can run every path. Every level gives the same
// bits. The AVX-512 kernels (bulk Philox, index cutting, the sign-flip screen, the rank
// tests' rows) run at level 3; the betting interval's and the rank tests' 256- and 128-bit
// loops at levels 2 and 1.
inline constexpr int kAvx512Level = 3;
inline int best_level() {
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__)) && defined(__SSE2__)
    static const int best = [] {
        const CpuFeatures f = cpu_features();
#ifdef TRUESCORE_AVX512
        if (f.avx512f && f.popcnt) return kAvx512Level;
#endif
        return f.avx ? 2 : 1;
    }();
    return best;
#elif defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
    return 1;
#else
    return 0;
#endif
}
inline std::atomic<int>& requested_level() {
    static std::atomic<int> requested{kAvx512Level};
    return requested;
}
inline int level() { return std::min(best_level(), requested_level().load(std::memory_order_relaxed)); }
// Whether the AVX-512 kernels run.
inline bool avx512() { return level() >= kAvx512Level; }
// request >= 0 caps the level at request (for tests; process-wide), request < 0 only asks;
// returns the level now in use.
inline int cap_level(int request) {
    if (request >= 0) requested_level().store(request, std::memory_order_relaxed);
    return level();
}

}  // namespace simd

class Philox {
public:
    // counter as NumPy's Philox(counter=...) takes it: the first block is generated from
    // counter + 1, exactly as NumPy does.
    Philox(std::uint64_t key0, std::uint64_t key1, std::uint64_t c0 = 0, std::uint64_t c1 = 0,
           std::uint64_t c2 = 0, std::uint64_t c3 = 0)
        : key_{key0, key1}, ctr_{c0, c1, c2, c3} {}

    // The stream of task `task` under `key`: NumPy's Philox(key=key, counter=[0, 0, lo, hi]).
    static Philox for_task(std::uint64_t key0, std::uint64_t key1, std::uint64_t task) {
        return Philox(key0, key1, 0, 0, task, 0);
    }

    std::uint64_t next_u64() {
        if (pos_ == 4) refill();
        return buf_[pos_++];
    }

    // The next `count` raw words, exactly the words `count` calls of next_u64() would
    // return (and the generator ends in the same state). Whole blocks are generated
    // kLanes at a time: their multiply chains are independent, so they overlap in the
    // pipeline instead of waiting on each other's latency.
    void next_words(std::uint64_t* out, std::size_t count) {
        while (count > 0 && pos_ < 4) {
            *out++ = buf_[pos_++];
            --count;
        }
#ifdef TRUESCORE_AVX512
        if (count >= 4 * kWideBlocks && simd::avx512()) {
            while (count >= 4 * kWideBlocks) {
                next_wide_stored(out);
                out += 4 * kWideBlocks;
                count -= 4 * kWideBlocks;
            }
        }
#endif
        while (count >= 4 * kLanes) {
            blocks(out);
            out += 4 * kLanes;
            count -= 4 * kLanes;
        }
        while (count > 0) {
            *out++ = next_u64();
            --count;
        }
    }

    // Uniform on [0, 1) with 53 random bits, as numpy.random.Generator.random().
    double next_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

    // Uniform integer on [0, n), n >= 1, unbiased (Lemire's multiply-and-reject).
    std::uint64_t below(std::uint64_t n) {
        return below_from([this] { return next_u64(); }, n);
    }

    // below(n) on the words next() returns (one, or more on a rejection): the same value
    // below() computes from the same words.
    template <class Next>
    static std::uint64_t below_from(Next next, std::uint64_t n) {
        std::uint64_t low;
        std::uint64_t high = mul_wide_u64(next(), n, &low);
        if (low < n) {
            const std::uint64_t threshold = (0 - n) % n;
            while (low < threshold) high = mul_wide_u64(next(), n, &low);
        }
        return high;
    }

#ifdef TRUESCORE_AVX512
    TRUESCORE_AVX512_BEGIN
    static constexpr std::size_t kWideBlocks = 16;  // two registers of eight blocks

    // Whether the next raw word starts a block (no word of the current block is left):
    // next_wide() may run.
    bool at_block() const { return pos_ == 4; }

    // The next kWideBlocks + Extra blocks (exactly what next_words gives when at_block()):
    // the first kWideBlocks in block order in w[0 .. 8) (w[k] holds words 8k .. 8k + 7),
    // for the kernels that cut them in registers, and the Extra after them in
    // extra[0 .. 4 Extra), computed with scalar instructions in the same rounds (the
    // integer units are otherwise idle while the vector units run the rounds). Requires
    // at_block(); stays at a block boundary.
    //
    // after_round(r) is called after round r (0 to 9) of the generation: work that does
    // not depend on these blocks placed there runs in the gaps of the rounds' long
    // multiply chains instead of after them.
    template <std::size_t Extra, class AfterRound>
    TRUESCORE_TARGET_AVX512 inline __attribute__((always_inline)) void next_wide(__m512i* w, std::uint64_t* extra,
                                                                              AfterRound after_round) {
        __m512i x[2][4];
        std::uint64_t s[Extra > 0 ? Extra : 1][4];
        if (ctr_[0] <= ~std::uint64_t{0} - (kWideBlocks + Extra)) {
            // No carry out of word 0 in these steps: the counters are computed in the
            // registers (scalar stores read back as vectors would stall on forwarding).
            const __m512i base = _mm512_set1_epi64(static_cast<long long>(ctr_[0]));
            x[0][0] = _mm512_add_epi64(base, _mm512_setr_epi64(1, 2, 3, 4, 5, 6, 7, 8));
            x[1][0] = _mm512_add_epi64(base, _mm512_setr_epi64(9, 10, 11, 12, 13, 14, 15, 16));
            for (int v = 0; v < 2; ++v)
                for (int q = 1; q < 4; ++q) x[v][q] = _mm512_set1_epi64(static_cast<long long>(ctr_[q]));
            for (std::size_t l = 0; l < Extra; ++l) {
                s[l][0] = ctr_[0] + kWideBlocks + 1 + l;
                for (int q = 1; q < 4; ++q) s[l][q] = ctr_[q];
            }
            ctr_[0] += kWideBlocks + Extra;
        } else {
            alignas(64) std::uint64_t c[4][kWideBlocks];
            for (std::size_t l = 0; l < kWideBlocks; ++l) {
                increment();
                for (int q = 0; q < 4; ++q) c[q][l] = ctr_[q];
            }
            for (int v = 0; v < 2; ++v)
                for (int q = 0; q < 4; ++q) x[v][q] = _mm512_load_si512(c[q] + 8 * v);
            for (std::size_t l = 0; l < Extra; ++l) {
                increment();
                for (int q = 0; q < 4; ++q) s[l][q] = ctr_[q];
            }
        }
        wide_rounds<Extra>(x, s, key_[0], key_[1], after_round);
        for (std::size_t l = 0; l < Extra; ++l)
            for (int q = 0; q < 4; ++q) extra[4 * l + q] = s[l][q];
        // Transpose to block order: word q of block l goes to w[l / 2], lane 4 (l % 2) + q.
        for (int v = 0; v < 2; ++v) {
            const __m512i t0 = _mm512_unpacklo_epi64(x[v][0], x[v][1]);  // w0 w1 of blocks 0, 2, 4, 6
            const __m512i t1 = _mm512_unpackhi_epi64(x[v][0], x[v][1]);  // w0 w1 of blocks 1, 3, 5, 7
            const __m512i t2 = _mm512_unpacklo_epi64(x[v][2], x[v][3]);  // w2 w3 of blocks 0, 2, 4, 6
            const __m512i t3 = _mm512_unpackhi_epi64(x[v][2], x[v][3]);  // w2 w3 of blocks 1, 3, 5, 7
            const __m512i a = _mm512_shuffle_i64x2(t0, t2, 0x44), b = _mm512_shuffle_i64x2(t1, t3, 0x44);
            const __m512i c = _mm512_shuffle_i64x2(t0, t2, 0xEE), d = _mm512_shuffle_i64x2(t1, t3, 0xEE);
            w[4 * v + 0] = _mm512_shuffle_i64x2(a, b, 0x88);  // blocks 0, 1
            w[4 * v + 1] = _mm512_shuffle_i64x2(a, b, 0xDD);  // blocks 2, 3
            w[4 * v + 2] = _mm512_shuffle_i64x2(c, d, 0x88);  // blocks 4, 5
            w[4 * v + 3] = _mm512_shuffle_i64x2(c, d, 0xDD);  // blocks 6, 7
        }
    }
    TRUESCORE_AVX512_END
#endif

private:
    static void mulhilo(std::uint64_t a, std::uint64_t b, std::uint64_t* hi, std::uint64_t* lo) {
        *hi = mul_wide_u64(a, b, lo);
    }

    static constexpr std::size_t kLanes = 2;

    // One Philox round on the block x with round key (k0, k1).
    static void round_scalar(std::uint64_t* x, std::uint64_t k0, std::uint64_t k1) {
        std::uint64_t hi0, lo0, hi1, lo1;
        mulhilo(0xD2E7470EE14C6C93ULL, x[0], &hi0, &lo0);
        mulhilo(0xCA5A826395121157ULL, x[2], &hi1, &lo1);
        const std::uint64_t y0 = hi1 ^ x[1] ^ k0, y2 = hi0 ^ x[3] ^ k1;
        x[0] = y0;
        x[1] = lo1;
        x[2] = y2;
        x[3] = lo0;
    }

#ifdef TRUESCORE_AVX512
    TRUESCORE_AVX512_BEGIN
    // hi:lo = x * m for eight 64-bit lanes, from four 32 x 32-bit products.
    TRUESCORE_TARGET_AVX512 static void mulhilo8(__m512i x, std::uint64_t m, __m512i* hi, __m512i* lo) {
        const __m512i low32 = _mm512_set1_epi64(0xFFFFFFFFLL);
        const __m512i ml = _mm512_set1_epi64(static_cast<long long>(m & 0xFFFFFFFFu));
        const __m512i mh = _mm512_set1_epi64(static_cast<long long>(m >> 32));
        const __m512i xh = _mm512_srli_epi64(x, 32);
        const __m512i ll = _mm512_mul_epu32(x, ml), lh = _mm512_mul_epu32(xh, ml);
        const __m512i hl = _mm512_mul_epu32(x, mh), hh = _mm512_mul_epu32(xh, mh);
        const __m512i t = _mm512_add_epi64(lh, _mm512_srli_epi64(ll, 32));  // < 2^64
        const __m512i u = _mm512_add_epi64(hl, _mm512_and_si512(t, low32));  // < 2^64
        *hi = _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(t, 32)), _mm512_srli_epi64(u, 32));
        *lo = _mm512_or_si512(_mm512_slli_epi64(u, 32), _mm512_and_si512(ll, low32));
    }

    // Philox's ten rounds on the blocks whose counters are in x (x[v][q]: word q of
    // blocks 8v .. 8v + 7, one block per 64-bit lane) and in s[0 .. Extra): refill()'s
    // rounds, lane-wise and scalar.
    template <std::size_t Extra, class AfterRound>
    TRUESCORE_TARGET_AVX512 static inline __attribute__((always_inline)) void wide_rounds(
        __m512i (&x)[2][4], std::uint64_t (*s)[4], std::uint64_t k0, std::uint64_t k1, AfterRound& after_round) {
        for (int round = 0; round < 10; ++round) {
            if (round > 0) {
                k0 += 0x9E3779B97F4A7C15ULL;
                k1 += 0xBB67AE8584CAA73BULL;
            }
            const __m512i kk0 = _mm512_set1_epi64(static_cast<long long>(k0));
            const __m512i kk1 = _mm512_set1_epi64(static_cast<long long>(k1));
            for (int v = 0; v < 2; ++v) {
                __m512i hi0, lo0, hi1, lo1;
                mulhilo8(x[v][0], 0xD2E7470EE14C6C93ULL, &hi0, &lo0);
                mulhilo8(x[v][2], 0xCA5A826395121157ULL, &hi1, &lo1);
                x[v][0] = _mm512_ternarylogic_epi64(hi1, x[v][1], kk0, 0x96);  // three-way xor
                x[v][1] = lo1;
                x[v][2] = _mm512_ternarylogic_epi64(hi0, x[v][3], kk1, 0x96);
                x[v][3] = lo0;
            }
            for (std::size_t l = 0; l < Extra; ++l) round_scalar(s[l], k0, k1);
            after_round(round);
        }
    }

    // next_wide() into out[0 .. 64).
    TRUESCORE_TARGET_AVX512 void next_wide_stored(std::uint64_t* out) {
        __m512i w[8];
        next_wide<0>(w, nullptr, [](int) {});
        for (int k = 0; k < 8; ++k) _mm512_storeu_si512(out + 8 * k, w[k]);
    }
    TRUESCORE_AVX512_END
#endif

    // The 256-bit counter, one step on.
    void increment() {
        if (++ctr_[0] == 0 && ++ctr_[1] == 0 && ++ctr_[2] == 0) ++ctr_[3];
    }

    // kLanes blocks into out[0 .. 4 kLanes), buffer empty (pos_ == 4) before and after:
    // the same rounds as refill(), interleaved across the blocks.
    void blocks(std::uint64_t* out) {
        std::uint64_t x[kLanes][4];
        for (std::size_t l = 0; l < kLanes; ++l) {
            increment();
            for (int w = 0; w < 4; ++w) x[l][w] = ctr_[w];
        }
        std::uint64_t k0 = key_[0], k1 = key_[1];
        for (int round = 0; round < 10; ++round) {
            if (round > 0) {
                k0 += 0x9E3779B97F4A7C15ULL;
                k1 += 0xBB67AE8584CAA73BULL;
            }
            for (std::size_t l = 0; l < kLanes; ++l) round_scalar(x[l], k0, k1);
        }
        for (std::size_t l = 0; l < kLanes; ++l)
            for (int w = 0; w < 4; ++w) out[4 * l + w] = x[l][w];
    }

    void refill() {
        // Increment the 256-bit counter, then encrypt it with 10 rounds.
        increment();
        std::uint64_t x[4] = {ctr_[0], ctr_[1], ctr_[2], ctr_[3]};
        std::uint64_t k0 = key_[0], k1 = key_[1];
        for (int round = 0; round < 10; ++round) {
            if (round > 0) {
                k0 += 0x9E3779B97F4A7C15ULL;
                k1 += 0xBB67AE8584CAA73BULL;
            }
            round_scalar(x, k0, k1);
        }
        for (int w = 0; w < 4; ++w) buf_[w] = x[w];
        pos_ = 0;
    }

    std::uint64_t key_[2];
    std::uint64_t ctr_[4];
    std::uint64_t buf_[4] = {0, 0, 0, 0};
    int pos_ = 4;
};

}  // namespace truescore

// Issue 24's generator decision, reproducible: raw stream cost of Philox4x64-10 (the library's next_words, AVX-512) against
// Philox4x32-10 (16 blocks per register set, AVX-512), per 64 random bits.
// Build and run from the repository root (not part of the pytest run):
//   g++ -O2 -std=c++17 -Isrc/cpp benchmarks/generator/philox_streams.cpp -o /tmp/philox_streams && /tmp/philox_streams
// It checks Philox4x32-10 against Random123's known answers and its vector form against
// the scalar one, then prints ns per 64 random bits of each (five repeats).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include "truescore/random.hpp"

using namespace truescore;

TRUESCORE_TARGET_AVX512 static inline void mul16(__m512i x, __m512i m, __m512i* hi, __m512i* lo) {
    const __m512i pe = _mm512_mul_epu32(x, m);                        // even lanes: 64-bit products
    const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(x, 32), m);  // odd lanes
    *lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
}

// 2 x 16 blocks of Philox4x32-10 (counters c0 = base + lane, c1..c3 fixed), words out
// in SoA order (for cost only; a real stream would transpose).
TRUESCORE_TARGET_AVX512 static void philox4x32_32blocks(uint32_t base, uint32_t k0, uint32_t k1, uint32_t* out) {
    __m512i x[2][4];
    for (int v = 0; v < 2; ++v) {
        x[v][0] = _mm512_add_epi32(_mm512_set1_epi32(base + 16 * v),
                                   _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
        x[v][1] = _mm512_set1_epi32(7);
        x[v][2] = _mm512_set1_epi32(9);
        x[v][3] = _mm512_setzero_si512();
    }
    const __m512i m0 = _mm512_set1_epi64(0xD2511F53), m1 = _mm512_set1_epi64(0xCD9E8D57);
    for (int r = 0; r < 10; ++r) {
        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        const __m512i kk0 = _mm512_set1_epi32(k0), kk1 = _mm512_set1_epi32(k1);
        for (int v = 0; v < 2; ++v) {
            __m512i hi0, lo0, hi1, lo1;
            mul16(x[v][0], m0, &hi0, &lo0);
            mul16(x[v][2], m1, &hi1, &lo1);
            x[v][0] = _mm512_ternarylogic_epi32(hi1, x[v][1], kk0, 0x96);
            x[v][1] = lo1;
            x[v][2] = _mm512_ternarylogic_epi32(hi0, x[v][3], kk1, 0x96);
            x[v][3] = lo0;
        }
    }
    for (int v = 0; v < 2; ++v)
        for (int q = 0; q < 4; ++q) _mm512_storeu_si512(out + 64 * v + 16 * q, x[v][q]);
}

// Scalar reference, Random123's philox4x32 with 10 rounds.
static void philox4x32_scalar(const uint32_t in[4], uint32_t k0, uint32_t k1, uint32_t out[4]) {
    uint32_t x[4] = {in[0], in[1], in[2], in[3]};
    for (int r = 0; r < 10; ++r) {
        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        const uint64_t p0 = uint64_t(0xD2511F53) * x[0], p1 = uint64_t(0xCD9E8D57) * x[2];
        const uint32_t y0 = uint32_t(p1 >> 32) ^ x[1] ^ k0, y2 = uint32_t(p0 >> 32) ^ x[3] ^ k1;
        x[0] = y0; x[1] = uint32_t(p1); x[2] = y2; x[3] = uint32_t(p0);
    }
    std::memcpy(out, x, 16);
}

int main() {
    // Random123 known-answer test: ctr = key = 0 -> 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
    uint32_t z[4] = {0, 0, 0, 0}, o[4];
    philox4x32_scalar(z, 0, 0, o);
    std::printf("KAT 4x32 zero: %08x %08x %08x %08x\n", o[0], o[1], o[2], o[3]);
    if (o[0] != 0x6627e8d5u || o[1] != 0xe169c58du || o[2] != 0xbc57ac4cu || o[3] != 0x9b00dbd8u) return 1;
    uint32_t f[4] = {~0u, ~0u, ~0u, ~0u};
    philox4x32_scalar(f, ~0u, ~0u, o);
    std::printf("KAT 4x32 ones: %08x %08x %08x %08x\n", o[0], o[1], o[2], o[3]);
    if (o[0] != 0x408f276du || o[1] != 0x41c83b0eu || o[2] != 0xa20bc7c6u || o[3] != 0x6d5451fdu) return 1;
    // The vector version against the scalar one.
    alignas(64) uint32_t buf[128];
    philox4x32_32blocks(100, 0x1234, 0x5678, buf);
    int bad = 0;
    for (int b = 0; b < 32; ++b) {
        uint32_t c[4] = {100u + b, 7, 9, 0}, s[4];
        philox4x32_scalar(c, 0x1234, 0x5678, s);
        for (int q = 0; q < 4; ++q) bad += s[q] != buf[64 * (b / 16) + 16 * q + (b % 16)];
    }
    std::printf("vector vs scalar mismatches: %d\n", bad);
    if (bad != 0) return 1;

    const std::size_t words = std::size_t{1} << 26;  // 64-bit words
    std::vector<std::uint64_t> out(4096);
    for (int rep = 0; rep < 5; ++rep) {
        Philox g(1, 2);
        auto t0 = std::chrono::steady_clock::now();
        std::uint64_t acc = 0;
        for (std::size_t i = 0; i < words; i += 4096) { g.next_words(out.data(), 4096); acc ^= out[17]; }
        auto t1 = std::chrono::steady_clock::now();
        alignas(64) uint32_t b32[128];
        uint32_t acc2 = 0;
        // 32 blocks x 128 bits = 64 words of 64 bits per call
        for (std::size_t i = 0; i < words; i += 64) { philox4x32_32blocks(uint32_t(i), 1, 2, b32); acc2 ^= b32[5]; }
        auto t2 = std::chrono::steady_clock::now();
        const double a = std::chrono::duration<double, std::nano>(t1 - t0).count() / words;
        const double b = std::chrono::duration<double, std::nano>(t2 - t1).count() / words;
        std::printf("ns per 64 random bits: Philox4x64-10 %.3f  Philox4x32-10 %.3f  ratio %.2f (%llu %u)\n", a, b, a / b,
                    (unsigned long long)acc, acc2);
    }
}

// Summation in NumPy's exact order.
//
// numpy.add.reduce over a contiguous float64 run uses pairwise summation with eight
// accumulators and blocks of 128. Reproducing that order (rather than a plain or Kahan
// loop) is what makes our means and standard deviations bit-identical to NumPy's, and
// therefore to truescore's, while keeping pairwise summation's O(log n) error growth.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define TRUESCORE_SSE2_LEAVES 1
#endif
// The 256- and 512-bit leaves are compiled with function target attributes (GCC and
// Clang on x86-64) and chosen at run time, so the library still runs on any x86-64 CPU.
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define TRUESCORE_WIDE_LEAVES 1
#define TRUESCORE_TARGET_AVX_LEAF __attribute__((target("avx")))
#define TRUESCORE_TARGET_AVX512_LEAF __attribute__((target("avx512f")))
#endif

namespace truescore {

// Sum of f(0), ..., f(n-1) in numpy's pairwise order. f must be cheap and pure.
template <class F>
double pairwise_sum(std::size_t n, const F& f, std::size_t offset = 0) {
    if (n < 8) {
        double res = 0.0;
        for (std::size_t i = 0; i < n; ++i) res += f(offset + i);
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (std::size_t k = 0; k < 8; ++k) r[k] = f(offset + k);
        std::size_t i = 8;
        const std::size_t whole = n - (n % 8);
        for (; i < whole; i += 8)
            for (std::size_t k = 0; k < 8; ++k) r[k] += f(offset + i + k);
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += f(offset + i);
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(n2, f, offset) + pairwise_sum(n - n2, f, offset + n2);
}

// numpy's pairwise sum of n values produced in order by fill(out, count) (which writes the
// next `count` values to out) without storing them all: the same tree over the same
// sequence as pairwise_sum over a buffer holding them, so the same bits. Each subtree of
// at most `capacity` values is filled into `buffer` (capacity >= 128 entries) in one call
// and summed there; fill is called in order. For values generated on the fly.
template <class Fill>
double pairwise_sum_stream(std::size_t n, Fill& fill, double* buffer, std::size_t capacity) {
    if (n <= capacity || n <= 128) {
        fill(buffer, n);
        return pairwise_sum(n, [buffer](std::size_t i) { return buffer[i]; });
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    const double left = pairwise_sum_stream(n2, fill, buffer, capacity);  // left's values come first
    return left + pairwise_sum_stream(n - n2, fill, buffer, capacity);
}

// 0.0 + pairwise: numpy starts an add-reduction from the identity.
inline double numpy_sum(const double* x, std::size_t n) {
    return 0.0 + pairwise_sum(n, [x](std::size_t i) { return x[i]; });
}

// ---- The rank test's two passes over a row ---------------------------------------------
//
// numpy_sum_count_ge: the row's sum in NumPy's order and, in the same pass, the count of
// values >= a threshold; numpy_sum_sq_dev: the sum of squared deviations from the mean,
// in NumPy's order (numpy.var's). Each has four kernels, all giving the same bits: the
// plain loops, and leaves in which NumPy's eight accumulators r[0..7] live in lanes (SSE2:
// four registers of two; AVX: two of four; AVX-512: one of eight) and receive exactly the
// additions of the scalar leaf, in the same order. The leaf's closing
// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) is done by swapping lanes and adding:
// r0 + r1 and r1 + r0 are the same double, so every lane's sum is the tree's. The counts
// are order-free integers. The tree above the leaves (n > 128) is NumPy's split.
enum class RowPath { plain = 0, sse2 = 1, avx = 2, avx512 = 3 };

namespace rank_leaf {

inline double plain_sum_count_ge(const double* x, std::size_t n, double threshold, std::int64_t* count) {
    if (n < 8) {
        double res = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            res += x[i];
            *count += x[i] >= threshold;
        }
        return res;
    }
    if (n <= 128) {
        double r[8];
        std::int64_t c[8];
        for (std::size_t k = 0; k < 8; ++k) {
            r[k] = x[k];
            c[k] = x[k] >= threshold;
        }
        std::size_t i = 8;
        const std::size_t whole = n - (n % 8);
        for (; i < whole; i += 8)
            for (std::size_t k = 0; k < 8; ++k) {
                r[k] += x[i + k];
                c[k] += x[i + k] >= threshold;
            }
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        *count += ((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]));
        for (; i < n; ++i) {
            res += x[i];
            *count += x[i] >= threshold;
        }
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    const double left = plain_sum_count_ge(x, n2, threshold, count);
    return left + plain_sum_count_ge(x + n2, n - n2, threshold, count);
}

inline double plain_sum_sq_dev(const double* x, std::size_t n, double mean) {
    return pairwise_sum(n, [x, mean](std::size_t i) {
        const double d = x[i] - mean;
        return d * d;
    });
}

// The scalar ends of a leaf (n % 8 values after the lanes) and rows of under 8 values.
inline double tail_count_ge(const double* x, std::size_t i, std::size_t n, double res, double threshold,
                            std::int64_t* count) {
    for (; i < n; ++i) {
        res += x[i];
        *count += x[i] >= threshold;
    }
    return res;
}
inline double tail_sq_dev(const double* x, std::size_t i, std::size_t n, double res, double mean) {
    for (; i < n; ++i) {
        const double d = x[i] - mean;
        res += d * d;
    }
    return res;
}

#ifdef TRUESCORE_SSE2_LEAVES
// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) from (r0, r1), ..., (r6, r7).
inline double sse2_combine(__m128d a, __m128d b, __m128d c, __m128d d) {
    const __m128d ab = _mm_add_sd(_mm_add_sd(a, _mm_unpackhi_pd(a, a)), _mm_add_sd(b, _mm_unpackhi_pd(b, b)));
    const __m128d cd = _mm_add_sd(_mm_add_sd(c, _mm_unpackhi_pd(c, c)), _mm_add_sd(d, _mm_unpackhi_pd(d, d)));
    return _mm_cvtsd_f64(_mm_add_sd(ab, cd));
}

inline double sse2_sum_count_ge(const double* x, std::size_t n, double threshold, std::int64_t* count) {
    if (n < 8) return tail_count_ge(x, 0, n, 0.0, threshold, count);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = sse2_sum_count_ge(x, n2, threshold, count);
        return left + sse2_sum_count_ge(x + n2, n - n2, threshold, count);
    }
    const __m128d t = _mm_set1_pd(threshold);
    __m128d r0 = _mm_loadu_pd(x), r1 = _mm_loadu_pd(x + 2), r2 = _mm_loadu_pd(x + 4), r3 = _mm_loadu_pd(x + 6);
    __m128i c = _mm_setzero_si128();
    c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(r0, t)));
    c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(r1, t)));
    c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(r2, t)));
    c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(r3, t)));
    const std::size_t whole = n - (n % 8);
    std::size_t i = 8;
    for (; i < whole; i += 8) {
        const __m128d a = _mm_loadu_pd(x + i), b = _mm_loadu_pd(x + i + 2);
        const __m128d e = _mm_loadu_pd(x + i + 4), f = _mm_loadu_pd(x + i + 6);
        r0 = _mm_add_pd(r0, a);
        r1 = _mm_add_pd(r1, b);
        r2 = _mm_add_pd(r2, e);
        r3 = _mm_add_pd(r3, f);
        c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(a, t)));
        c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(b, t)));
        c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(e, t)));
        c = _mm_sub_epi64(c, _mm_castpd_si128(_mm_cmpge_pd(f, t)));
    }
    alignas(16) std::int64_t lanes[2];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), c);
    *count += lanes[0] + lanes[1];
    return tail_count_ge(x, i, n, sse2_combine(r0, r1, r2, r3), threshold, count);
}

inline double sse2_sum_sq_dev(const double* x, std::size_t n, double mean) {
    if (n < 8) return tail_sq_dev(x, 0, n, 0.0, mean);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = sse2_sum_sq_dev(x, n2, mean);
        return left + sse2_sum_sq_dev(x + n2, n - n2, mean);
    }
    const __m128d mu = _mm_set1_pd(mean);
    auto sq = [mu](const double* p) {
        const __m128d d = _mm_sub_pd(_mm_loadu_pd(p), mu);
        return _mm_mul_pd(d, d);
    };
    __m128d r0 = sq(x), r1 = sq(x + 2), r2 = sq(x + 4), r3 = sq(x + 6);
    const std::size_t whole = n - (n % 8);
    std::size_t i = 8;
    for (; i < whole; i += 8) {
        r0 = _mm_add_pd(r0, sq(x + i));
        r1 = _mm_add_pd(r1, sq(x + i + 2));
        r2 = _mm_add_pd(r2, sq(x + i + 4));
        r3 = _mm_add_pd(r3, sq(x + i + 6));
    }
    return tail_sq_dev(x, i, n, sse2_combine(r0, r1, r2, r3), mean);
}
#endif

#ifdef TRUESCORE_WIDE_LEAVES
// (r0 + r1) + (r2 + r3) in every lane of (r0, r1, r2, r3): adjacent lanes, then halves.
TRUESCORE_TARGET_AVX_LEAF inline __m256d avx_quad(__m256d a) {
    const __m256d pairs = _mm256_add_pd(a, _mm256_permute_pd(a, 0x5));
    return _mm256_add_pd(pairs, _mm256_permute2f128_pd(pairs, pairs, 0x01));
}
TRUESCORE_TARGET_AVX_LEAF inline double avx_combine(__m256d lo, __m256d hi) {
    return _mm_cvtsd_f64(_mm256_castpd256_pd128(_mm256_add_pd(avx_quad(lo), avx_quad(hi))));
}

// Counts in double lanes (AVX has no 256-bit integer subtraction): exact below 2^53.
TRUESCORE_TARGET_AVX_LEAF inline double avx_sum_count_ge(const double* x, std::size_t n, double threshold,
                                                        std::int64_t* count) {
    if (n < 8) return tail_count_ge(x, 0, n, 0.0, threshold, count);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = avx_sum_count_ge(x, n2, threshold, count);
        return left + avx_sum_count_ge(x + n2, n - n2, threshold, count);
    }
    const __m256d t = _mm256_set1_pd(threshold), one = _mm256_set1_pd(1.0);
    __m256d lo = _mm256_loadu_pd(x), hi = _mm256_loadu_pd(x + 4);
    __m256d c = _mm256_add_pd(_mm256_and_pd(_mm256_cmp_pd(lo, t, _CMP_GE_OQ), one),
                              _mm256_and_pd(_mm256_cmp_pd(hi, t, _CMP_GE_OQ), one));
    const std::size_t whole = n - (n % 8);
    std::size_t i = 8;
    for (; i < whole; i += 8) {
        const __m256d a = _mm256_loadu_pd(x + i), b = _mm256_loadu_pd(x + i + 4);
        lo = _mm256_add_pd(lo, a);
        hi = _mm256_add_pd(hi, b);
        c = _mm256_add_pd(c, _mm256_add_pd(_mm256_and_pd(_mm256_cmp_pd(a, t, _CMP_GE_OQ), one),
                                           _mm256_and_pd(_mm256_cmp_pd(b, t, _CMP_GE_OQ), one)));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, c);
    *count += static_cast<std::int64_t>((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]));
    return tail_count_ge(x, i, n, avx_combine(lo, hi), threshold, count);
}

TRUESCORE_TARGET_AVX_LEAF inline double avx_sum_sq_dev(const double* x, std::size_t n, double mean, std::ptrdiff_t ahead) {
    if (n < 8) return tail_sq_dev(x, 0, n, 0.0, mean);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = avx_sum_sq_dev(x, n2, mean, ahead);
        return left + avx_sum_sq_dev(x + n2, n - n2, mean, ahead);
    }
    const __m256d mu = _mm256_set1_pd(mean);
    __m256d d = _mm256_sub_pd(_mm256_loadu_pd(x), mu), e = _mm256_sub_pd(_mm256_loadu_pd(x + 4), mu);
    __m256d lo = _mm256_mul_pd(d, d), hi = _mm256_mul_pd(e, e);
    const std::size_t whole = n - (n % 8);
    std::size_t i = 8;
    for (; i < whole; i += 8) {
        _mm_prefetch(reinterpret_cast<const char*>(x + i) + ahead, _MM_HINT_T0);
        d = _mm256_sub_pd(_mm256_loadu_pd(x + i), mu);
        e = _mm256_sub_pd(_mm256_loadu_pd(x + i + 4), mu);
        lo = _mm256_add_pd(lo, _mm256_mul_pd(d, d));
        hi = _mm256_add_pd(hi, _mm256_mul_pd(e, e));
    }
    return tail_sq_dev(x, i, n, avx_combine(lo, hi), mean);
}

// GCC 12 warns about its own AVX-512 intrinsics when they are inlined (as random.hpp
// notes): silenced for exactly these leaves.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)) in lane 0 of (r0, ..., r7).
TRUESCORE_TARGET_AVX512_LEAF inline double avx512_combine(__m512d r) {
    const __m512d pairs = _mm512_add_pd(r, _mm512_permute_pd(r, 0x55));
    const __m512d quads = _mm512_add_pd(pairs, _mm512_shuffle_f64x2(pairs, pairs, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m512d all = _mm512_add_pd(quads, _mm512_shuffle_f64x2(quads, quads, _MM_SHUFFLE(1, 0, 3, 2)));
    return _mm_cvtsd_f64(_mm512_castpd512_pd128(all));
}

TRUESCORE_TARGET_AVX512_LEAF inline double avx512_sum_count_ge(const double* x, std::size_t n, double threshold,
                                                              std::int64_t* count) {
    if (n < 8) return tail_count_ge(x, 0, n, 0.0, threshold, count);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = avx512_sum_count_ge(x, n2, threshold, count);
        return left + avx512_sum_count_ge(x + n2, n - n2, threshold, count);
    }
    const __m512d t = _mm512_set1_pd(threshold);
    const __m512i one = _mm512_set1_epi64(1);
    __m512d r = _mm512_loadu_pd(x);
    __m512i c = _mm512_maskz_mov_epi64(_mm512_cmp_pd_mask(r, t, _CMP_GE_OQ), one);
    const std::size_t whole = n - (n % 8);
    std::size_t i = 8;
    for (; i < whole; i += 8) {
        const __m512d a = _mm512_loadu_pd(x + i);
        r = _mm512_add_pd(r, a);
        c = _mm512_mask_add_epi64(c, _mm512_cmp_pd_mask(a, t, _CMP_GE_OQ), c, one);
    }
    *count += _mm512_reduce_add_epi64(c);
    return tail_count_ge(x, i, n, avx512_combine(r), threshold, count);
}

TRUESCORE_TARGET_AVX512_LEAF inline double avx512_sum_sq_dev(const double* x, std::size_t n, double mean, std::ptrdiff_t ahead) {
    if (n < 8) return tail_sq_dev(x, 0, n, 0.0, mean);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = avx512_sum_sq_dev(x, n2, mean, ahead);
        return left + avx512_sum_sq_dev(x + n2, n - n2, mean, ahead);
    }
    const __m512d mu = _mm512_set1_pd(mean);
    __m512d d = _mm512_sub_pd(_mm512_loadu_pd(x), mu);
    __m512d r = _mm512_mul_pd(d, d);
    const std::size_t whole = n - (n % 8);
    std::size_t i = 8;
    for (; i < whole; i += 8) {
        _mm_prefetch(reinterpret_cast<const char*>(x + i) + ahead, _MM_HINT_T0);
        d = _mm512_sub_pd(_mm512_loadu_pd(x + i), mu);
        r = _mm512_add_pd(r, _mm512_mul_pd(d, d));
    }
    return tail_sq_dev(x, i, n, avx512_combine(r), mean);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif

}  // namespace rank_leaf

// numpy_sum(x, n) without the leading 0.0 + and, in the same pass, #{i : x[i] >= threshold}
// (added to *count), on the kernel `path`.
inline double numpy_sum_count_ge(RowPath path, const double* x, std::size_t n, double threshold,
                                 std::int64_t* count) {
    switch (path) {
#ifdef TRUESCORE_WIDE_LEAVES
        case RowPath::avx512: return rank_leaf::avx512_sum_count_ge(x, n, threshold, count);
        case RowPath::avx: return rank_leaf::avx_sum_count_ge(x, n, threshold, count);
#endif
#ifdef TRUESCORE_SSE2_LEAVES
        case RowPath::sse2: return rank_leaf::sse2_sum_count_ge(x, n, threshold, count);
#endif
        default: return rank_leaf::plain_sum_count_ge(x, n, threshold, count);
    }
}

// sum_i (x[i] - mean)^2 in numpy's pairwise order (without numpy's leading 0.0 +):
// numpy.var's sum of squared deviations, on the kernel `path`.
inline double numpy_sum_sq_dev(RowPath path, const double* x, std::size_t n, double mean,
                               std::ptrdiff_t ahead = 0) {
    static_cast<void>(ahead);  // only the 256- and 512-bit leaves prefetch
    switch (path) {
#ifdef TRUESCORE_WIDE_LEAVES
        case RowPath::avx512: return rank_leaf::avx512_sum_sq_dev(x, n, mean, ahead);
        case RowPath::avx: return rank_leaf::avx_sum_sq_dev(x, n, mean, ahead);
#endif
#ifdef TRUESCORE_SSE2_LEAVES
        case RowPath::sse2: return rank_leaf::sse2_sum_sq_dev(x, n, mean);
#endif
        default: return rank_leaf::plain_sum_sq_dev(x, n, mean);
    }
}

}  // namespace truescore

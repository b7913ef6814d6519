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

#if defined(__SSE2__) || defined(_M_X64)
// The leaves of the two passes of the rank test (numpy_sum_count_ge, numpy_sum_sq_dev)
// in SSE2, which every x86-64 CPU has: the eight accumulators r[0..7] live in four
// registers as the pairs (r0, r1), (r2, r3), (r4, r5), (r6, r7) and receive exactly the
// additions of the scalar leaf, in the same order, so the sums are bit-identical; the
// counts (order-free integers) subtract the all-ones compare masks.
namespace sse2_leaf {

// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), as the scalar leaf combines them.
inline double combine(__m128d a, __m128d b, __m128d c, __m128d d) {
    const double ab = _mm_cvtsd_f64(_mm_add_sd(a, _mm_unpackhi_pd(a, a))) +
                      _mm_cvtsd_f64(_mm_add_sd(b, _mm_unpackhi_pd(b, b)));
    const double cd = _mm_cvtsd_f64(_mm_add_sd(c, _mm_unpackhi_pd(c, c))) +
                      _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
    return ab + cd;
}

// 8 <= n <= 128, n - n % 8 values in the registers, the rest added one by one.
inline double sum_count_ge(const double* x, std::size_t n, double threshold, std::int64_t* count) {
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
    double res = combine(r0, r1, r2, r3);
    alignas(16) std::int64_t lanes[2];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), c);
    *count += lanes[0] + lanes[1];
    for (; i < n; ++i) {
        res += x[i];
        *count += x[i] >= threshold;
    }
    return res;
}

// The leaf of numpy_sum_sq_dev: terms (x[i] - mean)^2.
inline double sum_sq_dev(const double* x, std::size_t n, double mean) {
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
    double res = combine(r0, r1, r2, r3);
    for (; i < n; ++i) {
        const double d = x[i] - mean;
        res += d * d;
    }
    return res;
}

}  // namespace sse2_leaf
#define TRUESCORE_SSE2_LEAVES 1
#endif

// sum_i (x[i] - mean)^2 in numpy's pairwise order (without numpy's leading 0.0 +):
// numpy.var's sum of squared deviations.
inline double numpy_sum_sq_dev(const double* x, std::size_t n, double mean) {
#ifdef TRUESCORE_SSE2_LEAVES
    if (n >= 8 && n <= 128) return sse2_leaf::sum_sq_dev(x, n, mean);
    if (n > 128) {
        std::size_t n2 = n / 2;
        n2 -= n2 % 8;
        const double left = numpy_sum_sq_dev(x, n2, mean);
        return left + numpy_sum_sq_dev(x + n2, n - n2, mean);
    }
#endif
    return pairwise_sum(n, [x, mean](std::size_t i) {
        const double d = x[i] - mean;
        return d * d;
    });
}

// numpy_sum(x, n) and, in the same pass, #{i : x[i] >= threshold}. The count is
// order-free, so folding it into the summation loop changes no bit of the sum.
inline double numpy_sum_count_ge(const double* x, std::size_t n, double threshold,
                                 std::int64_t* count) {
#ifdef TRUESCORE_SSE2_LEAVES
    if (n >= 8 && n <= 128) return sse2_leaf::sum_count_ge(x, n, threshold, count);
#endif
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
    const double left = numpy_sum_count_ge(x, n2, threshold, count);
    return left + numpy_sum_count_ge(x + n2, n - n2, threshold, count);
}

}  // namespace truescore

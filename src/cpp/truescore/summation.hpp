// Summation in NumPy's exact order.
//
// numpy.add.reduce over a contiguous float64 run uses pairwise summation with eight
// accumulators and blocks of 128. Reproducing that order (rather than a plain or Kahan
// loop) is what makes our means and standard deviations bit-identical to NumPy's, and
// therefore to truescore's, while keeping pairwise summation's O(log n) error growth.
#pragma once

#include <cstddef>
#include <cstdint>

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

// numpy_sum(x, n) and, in the same pass, #{i : x[i] >= threshold}. The count is
// order-free, so folding it into the summation loop changes no bit of the sum.
inline double numpy_sum_count_ge(const double* x, std::size_t n, double threshold,
                                 std::int64_t* count) {
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

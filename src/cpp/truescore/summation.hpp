// Summation in NumPy's exact order.
//
// numpy.add.reduce over a contiguous float64 run uses pairwise summation with eight
// accumulators and blocks of 128. Reproducing that order (rather than a plain or Kahan
// loop) is what makes our means and standard deviations bit-identical to NumPy's, and
// therefore to truescore's, while keeping pairwise summation's O(log n) error growth.
#pragma once

#include <cstddef>

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

// 0.0 + pairwise: numpy starts an add-reduction from the identity.
inline double numpy_sum(const double* x, std::size_t n) {
    return 0.0 + pairwise_sum(n, [x](std::size_t i) { return x[i]; });
}

}  // namespace truescore

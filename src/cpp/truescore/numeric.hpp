// Small numeric helpers shared by the interval formulas and the calibration engine.
#pragma once

#include <cstddef>

#include "truescore/summation.hpp"

namespace truescore {

// Two-sided normal quantile Phi^{-1}(p) to full double precision (0 < p < 1; NaN outside).
double normal_quantile(double p);

// np.mean(d): numpy_sum / n.
inline double numpy_mean(const double* d, std::size_t n) { return numpy_sum(d, n) / static_cast<double>(n); }

// np.var(d, ddof=1) given the NumPy mean: deviations from it, squared, pairwise-summed,
// divided by n - 1.
inline double numpy_variance(const double* d, std::size_t n, double mean) {
    const double ss = 0.0 + pairwise_sum(n, [d, mean](std::size_t i) {
                          const double e = d[i] - mean;
                          return e * e;
                      });
    return ss / static_cast<double>(n - 1);
}

}  // namespace truescore

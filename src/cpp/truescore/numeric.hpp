// Small numeric helpers shared by the interval formulas and the calibration engine.
#pragma once

#include <cmath>
#include <cstddef>

#include "truescore/summation.hpp"

namespace truescore {

// Standard normal quantile Phi^{-1}(p) to full double precision (0 < p < 1; NaN outside);
// for subnormal p (below ~2.2e-308) to ~1e-9 relative.
double normal_quantile(double p);

// Acklam's lower-tail approximation Phi^{-1}(p) for p < 0.02425 given ln p (~1e-9 relative):
// the quantile of a tail too small for a double (half the smallest subnormal).
double lower_tail_quantile_from_log(double log_p);

// The 1 - tail quantile Phi^{-1}(1 - tail). Below kSmallTail it is -Phi^{-1}(tail):
// 1 - tail would round (to 1 below ~1.1e-16, where the quantile is infinite) and lose the
// tail's digits. From kSmallTail up it is Phi^{-1}(1 - tail) as always (results keep their
// bits; there the rounding moves the quantile by less than 1e-13).
constexpr double kSmallTail = 1e-3;
inline double upper_normal_quantile(double tail) {
    return tail < kSmallTail ? -normal_quantile(tail) : normal_quantile(1.0 - tail);
}

// log(k / a) for k > 0 and a in (0, 1): as written where k / a is finite (its bits are the
// ones results always had), log(k) - log(a) where k / a overflows (a below ~4e-308): the
// log stays finite, so a half-width is a finite number or +inf, never inf * 0 = NaN.
inline double log_ratio(double k, double a) {
    const double r = k / a;
    return r <= 1.7976931348623157e308 ? std::log(r) : std::log(k) - std::log(a);
}

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

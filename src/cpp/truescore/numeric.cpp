#include "truescore/numeric.hpp"

#include <cmath>
#include <limits>

namespace truescore {

double lower_tail_quantile_from_log(double log_p) {
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double e[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    const double q = std::sqrt(-2.0 * log_p);
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1.0);
}

double normal_quantile(double p) {
    if (!(p > 0.0 && p < 1.0)) return std::numeric_limits<double>::quiet_NaN();
    // Acklam's rational approximation (relative error ~1e-9), then two Halley steps on
    // Phi(x) - p using erfc, which brings it to full double precision.
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                               -2.759285104469687e+02, 1.383577518672690e+02,
                               -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                               -1.556989798598866e+02, 6.680131188771972e+01,
                               -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                               -2.400758277161838e+00, -2.549732539343734e+00,
                               4.374664141464968e+00,  2.938163982698783e+00};
    static const double e[] = {7.784695709041462e-03, 3.224671290700398e-01,
                               2.445134137142996e+00, 3.754408661907416e+00};
    const double p_low = 0.02425;
    double x;
    if (p < p_low) {
        x = lower_tail_quantile_from_log(std::log(p));
    } else if (p <= 1.0 - p_low) {
        const double q = p - 0.5, r = q * q;
        x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
            (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    } else {
        const double q = std::sqrt(-2.0 * std::log1p(-p));
        x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
            ((((e[0] * q + e[1]) * q + e[2]) * q + e[3]) * q + 1.0);
    }
    const double sqrt2pi = 2.5066282746310002;
    for (int step = 0; step < 2; ++step) {
        // Work in the smaller tail so the residual is not swamped by rounding.
        double err;
        if (x < 0) {
            err = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
        } else {
            err = (1.0 - p) - 0.5 * std::erfc(x / std::sqrt(2.0));
        }
        // 1 / phi(x) overflows past |x| ~ 37.5 (p below ~1e-308); the approximation is
        // already good to ~1e-9 there, and a step on a zero residual changes nothing.
        const double inverse_density = sqrt2pi * std::exp(0.5 * x * x);
        if (err == 0.0 || !std::isfinite(inverse_density)) break;
        const double u = err * inverse_density;
        x = x - u / (1.0 + 0.5 * x * u);
    }
    return x;
}

}  // namespace truescore

#include "truescore/betting.hpp"

#include <cmath>
#include <vector>

#include "truescore/numeric.hpp"

namespace truescore {

namespace {

constexpr double kBetTruncation = 0.75;  // c in Waudby-Smith & Ramdas
constexpr double kBisectionTolerance = 1e-9;


// The betting state that does not depend on the candidate mean: x_t on [0, 1], the
// predictable plug-in bet lambda_t (from x_1..x_{t-1}), and the without-replacement
// conditional mean m_t = (N m - S_{t-1}) / (N - t + 1) written as slope[t] m - offset[t]
// (slope = N / (N - t + 1), offset = S_{t-1} / (N - t + 1); 1 and 0 without a population),
// so the inner loop, run ~60 times per interval, multiplies instead of dividing.
struct BettingPath {
    const double* x;
    const double* lam;
    const double* slope;
    const double* offset;
    std::size_t n;
    double alpha;
    // 2/alpha, the capital that rejects (0.5 * capital >= 1/alpha, exactly), and its log
    // ln 2 - ln alpha. For alpha below ~1.1e-308 the quotient overflows to inf: the capital
    // is then tracked as a mantissa and a power of two (tracked_capital_reaches) and
    // compared in logs, so a subnormal alpha still rejects what its threshold rejects.
    double threshold;
    double log_threshold;
    bool huge() const { return !std::isfinite(threshold); }

    // Whether the product of factor(0), ..., factor(t) reaches the threshold at some t
    // when the threshold overflows (factor(i) < 0 stands for "m is infeasible at step i":
    // rejects at once). The usual path is the plain loops below, kept apart because this
    // one costs a frexp per step.
    template <class Factor>
    bool tracked_capital_reaches(Factor factor) const {
        constexpr double kLn2 = 0.69314718055994530942;
        // capital = mantissa * 2^exponent, mantissa in [0.5, 1): a finite factor never overflows it.
        double mantissa = 0.5;
        long long exponent = 1;
        const long long below = static_cast<long long>(std::floor(log_threshold / kLn2));
        for (std::size_t i = 0; i < n; ++i) {
            const double f = factor(i);
            if (f < 0.0) return true;
            if (f == 0.0) return false;  // the capital is gone for good
            int e = 0;
            mantissa = std::frexp(mantissa * f, &e);
            exponent += e;
            if (exponent >= below && std::log(mantissa) + static_cast<double>(exponent) * kLn2 >= log_threshold)
                return true;
        }
        return false;
    }

    // True when m lies below the interval: the capital betting on "mean > m" reaches
    // 2/alpha (hedged with weight 1/2) at some t, or m is infeasible given the draws.
    bool rejects_from_below(double m) const {
        if (huge()) return tracked_capital_reaches([&](std::size_t i) { return factor_below(m, i); });
        double capital = 1.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double mt = slope[i] * m - offset[i];
            if (mt < 0.0) return true;
            double l = lam[i];
            // min(lam, c / mt) without the division unless the truncation binds
            if (l * mt > kBetTruncation) l = kBetTruncation / mt;
            capital *= 1.0 + l * (x[i] - mt);
            if (capital >= threshold) return true;
        }
        return false;
    }

    bool rejects_from_above(double m) const {
        if (huge()) return tracked_capital_reaches([&](std::size_t i) { return factor_above(m, i); });
        double capital = 1.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double mt = slope[i] * m - offset[i];
            if (mt > 1.0) return true;
            double l = lam[i];
            if (l * (1.0 - mt) > kBetTruncation) l = kBetTruncation / (1.0 - mt);
            capital *= 1.0 - l * (x[i] - mt);
            if (capital >= threshold) return true;
        }
        return false;
    }

    // Step i's factor of the capitals above (-1: m infeasible), for the tracked path.
    double factor_below(double m, std::size_t i) const {
        const double mt = slope[i] * m - offset[i];
        if (mt < 0.0) return -1.0;
        double l = lam[i];
        if (l * mt > kBetTruncation) l = kBetTruncation / mt;
        return 1.0 + l * (x[i] - mt);
    }
    double factor_above(double m, std::size_t i) const {
        const double mt = slope[i] * m - offset[i];
        if (mt > 1.0) return -1.0;
        double l = lam[i];
        if (l * (1.0 - mt) > kBetTruncation) l = kBetTruncation / (1.0 - mt);
        return 1.0 - l * (x[i] - mt);
    }
};

// The edge of the candidate means m in [0, 1] that `rejects` rejects, when the rejected
// ones form one end of [0, 1] (the end `rejected_end`, 0 or 1). Bisection to
// kBisectionTolerance returns the outer (last rejected) point, so the interval it bounds is
// never narrower than the exact set.
template <class Rejects>
double rejection_edge(const Rejects& rejects, double rejected_end) {
    const double kept_end = 1.0 - rejected_end;
    if (!rejects(rejected_end)) return rejected_end;
    if (rejects(kept_end)) return kept_end;
    double rejected = rejected_end, kept = kept_end;
    while (std::abs(kept - rejected) > kBisectionTolerance) {
        const double mid = 0.5 * (rejected + kept);
        if (rejects(mid)) rejected = mid; else kept = mid;
    }
    return rejected;
}

}  // namespace

GapInterval betting_interval(const double* d, std::size_t n, double population_size, double alpha,
                             double* scratch) {
    std::vector<double> own;
    if (scratch == nullptr) {
        own.resize(kBettingScratchPerParent * n);
        scratch = own.data();
    }
    double* x = scratch;
    double* lam = scratch + n;
    double* slope = scratch + 2 * n;
    double* offset = scratch + 3 * n;
    const double nd = static_cast<double>(n);
    if (population_size == nd) {
        // A census: the mean is known exactly, and the interval is that point.
        const double mean = numpy_mean(d, n);
        return {mean, mean, mean, 0.0};
    }
    const double log_term = log_ratio(2.0, alpha);
    const bool finite = population_size > 0.0;
    double s = 0.0, sq = 0.0, var_prev = 0.25;
    for (std::size_t i = 0; i < n; ++i) {
        const double t = static_cast<double>(i + 1);
        x[i] = (d[i] + 1.0) * 0.5;
        lam[i] = std::sqrt(2.0 * log_term / (nd * var_prev));
        if (finite) {
            const double remaining = population_size - static_cast<double>(i);
            slope[i] = population_size / remaining;
            offset[i] = s / remaining;
        } else {
            slope[i] = 1.0;
            offset[i] = 0.0;
        }
        s += x[i];
        const double mu = (0.5 + s) / (t + 1.0);
        const double dev = x[i] - mu;
        sq += dev * dev;
        var_prev = (0.25 + sq) / (t + 1.0);
    }
    const BettingPath path{x, lam, slope, offset, n, alpha, 2.0 / alpha, log_term};

    double lower = rejection_edge([&](double m) { return path.rejects_from_below(m); }, 0.0);
    double upper = rejection_edge([&](double m) { return path.rejects_from_above(m); }, 1.0);
    const double low = 2.0 * lower - 1.0, high = 2.0 * upper - 1.0;
    // Both capitals large at once: no mean survives, and the confidence set is empty
    // (reported as such, low > high and width 0; it supports no claim about the mean).
    if (lower > upper) return {low, high, numpy_mean(d, n), 0.0};
    return {low, high, numpy_mean(d, n), 0.5 * (high - low)};
}

}  // namespace truescore

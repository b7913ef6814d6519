#include "truescore/intervals.hpp"
#include "truescore/errors.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "truescore/betting.hpp"
#include "truescore/numeric.hpp"
#include "truescore/parallel.hpp"

namespace truescore {

namespace {

constexpr double kRange = 2.0;  // d in [-1, 1]

}  // namespace

GapInterval symmetric_interval(double estimate, double half) {
    return {std::max(-1.0, estimate - half), std::min(1.0, estimate + half), estimate, half};
}

bool matched_form_gaps(const double* public_scores, const double* fresh, std::size_t n, std::size_t k, double* d,
                       MatchedFormSums* sums) {
    if (k < 1 || k >= 8) return false;
    // A score is usable when it lies in [0, 1] (NaN fails both comparisons) and is not -0.0.
    auto usable = [](double x) { return x >= 0.0 && x <= 1.0 && !std::signbit(x); };
    std::int64_t nonzero = 0;
    const double kd = static_cast<double>(k);
    for (std::size_t i = 0; i < n; ++i) {
        const double* row = fresh + i * k;
        double s = 0.0;  // NumPy's add.reduce starts from its identity
        bool ok = usable(public_scores[i]);
        for (std::size_t j = 0; j < k; ++j) {
            ok = ok && usable(row[j]);
            s += row[j];
        }
        if (!ok) return false;
        d[i] = public_scores[i] - s / kd;
        nonzero += d[i] != 0.0;
    }
    sums->nonzero = nonzero;
    sums->public_sum = numpy_sum(public_scores, n);
    sums->fresh_sum = numpy_sum(fresh, n * k);
    sums->gap_sum = numpy_sum(d, n);
    return true;
}

std::string check_gaps(const double* d, std::size_t n, double population_size, const char* name) {
    const std::string prefix(name);
    if (n < 2) return prefix + " needs at least 2 parents; got " + std::to_string(n);
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(d[i]))
            return prefix + " contains a non-finite value (NaN or inf) at position " + std::to_string(i);
        if (d[i] < -1.0 || d[i] > 1.0)
            return prefix + " must lie in [-1, 1]; position " + std::to_string(i) + " holds " +
                   std::to_string(d[i]);
    }
    if (population_size > 0.0 && population_size < static_cast<double>(n))
        return "population_size must be at least the number of parents n = " + std::to_string(n) +
               "; got " + std::to_string(population_size);
    return {};
}

IntervalConstants::IntervalConstants(double a, bool with_z)
    : alpha(a), log_2_alpha(log_ratio(2.0, a)), log_4_alpha(log_ratio(4.0, a)),
      z(!with_z          ? std::numeric_limits<double>::quiet_NaN()
        : a / 2.0 > 0.0 ? upper_normal_quantile(a / 2.0)
                        : -lower_tail_quantile_from_log(std::log(a) - std::log(2.0))) {}  // a / 2 underflows

double hoeffding_half_width(std::size_t n, const IntervalConstants& c) {
    return kRange * std::sqrt(c.log_2_alpha / (2.0 * static_cast<double>(n)));
}

double bernstein_half_width(double variance, std::size_t n, const IntervalConstants& c) {
    const double nd = static_cast<double>(n), l = c.log_4_alpha;
    return std::sqrt(2.0 * variance * l / nd) + 7.0 * kRange * l / (3.0 * (nd - 1.0));
}

double wald_half_width(double variance, std::size_t n, double population_size,
                       const IntervalConstants& c) {
    const double nd = static_cast<double>(n);
    const double fpc = population_size > 0.0 ? 1.0 - nd / population_size : 1.0;
    return c.z * std::sqrt(fpc * variance / nd);
}

double hoeffding_serfling_half_width(std::size_t n, double population_size,
                                     const IntervalConstants& c) {
    const double nd = static_cast<double>(n);
    return kRange * std::sqrt((1.0 - (nd - 1.0) / population_size) * c.log_2_alpha / (2.0 * nd));
}

FeasibleRange feasible_range(double mean, std::size_t n, double population_size) {
    const double nd = static_cast<double>(n);
    if (nd >= population_size) return {mean, mean};  // a census: the mean is known
    const double sum = mean * nd, rest = population_size - nd;
    return {std::max(-1.0, (sum - rest) / population_size - kFeasibleSlack),
            std::min(1.0, (sum + rest) / population_size + kFeasibleSlack)};
}

GapInterval within_feasible_range(IntervalMethod method, GapInterval iv, std::size_t n,
                                  double population_size) {
    if (!(population_size > 0.0) || iv.low > iv.high) return iv;
    const FeasibleRange r = feasible_range(iv.estimate, n, population_size);
    iv.low = std::max(iv.low, r.low);
    iv.high = std::min(iv.high, r.high);
    if (method == IntervalMethod::betting) iv.half_width = iv.low > iv.high ? 0.0 : 0.5 * (iv.high - iv.low);
    return iv;
}

namespace {

GapInterval moment_interval_unclipped(IntervalMethod method, double mean, double variance, std::size_t n,
                                      double population_size, const IntervalConstants& c) {
    switch (method) {
        case IntervalMethod::hoeffding: return symmetric_interval(mean, hoeffding_half_width(n, c));
        case IntervalMethod::bernstein:
            return symmetric_interval(mean, bernstein_half_width(variance, n, c));
        case IntervalMethod::wald:
            return symmetric_interval(mean, wald_half_width(variance, n, population_size, c));
        case IntervalMethod::hoeffding_serfling:
            return symmetric_interval(mean, hoeffding_serfling_half_width(n, population_size, c));
        case IntervalMethod::betting: break;
    }
    throw std::invalid_argument("the betting interval depends on the order of the sample, not on its moments");
}

GapInterval gap_interval_unclipped(IntervalMethod method, const double* d, std::size_t n,
                                   double population_size, double alpha, double* scratch) {
    switch (method) {
        case IntervalMethod::hoeffding: return hoeffding_interval(d, n, alpha);
        case IntervalMethod::bernstein: return bernstein_interval(d, n, alpha);
        case IntervalMethod::wald: return wald_interval(d, n, population_size, alpha);
        case IntervalMethod::hoeffding_serfling:
            if (!(population_size > 0.0))
                throw argument_error("population_size", " is required for the Hoeffding-Serfling interval");
            return hoeffding_serfling_interval(d, n, population_size, alpha);
        case IntervalMethod::betting: return betting_interval(d, n, population_size, alpha, scratch);
    }
    throw std::invalid_argument("unknown interval method");
}

}  // namespace

GapInterval moment_interval(IntervalMethod method, double mean, double variance, std::size_t n,
                            double population_size, const IntervalConstants& c) {
    return within_feasible_range(method, moment_interval_unclipped(method, mean, variance, n, population_size, c), n,
                                 population_size);
}

GapInterval hoeffding_interval(const double* d, std::size_t n, double alpha) {
    return symmetric_interval(numpy_mean(d, n), hoeffding_half_width(n, IntervalConstants(alpha, false)));
}

GapInterval bernstein_interval(const double* d, std::size_t n, double alpha) {
    const double m = numpy_mean(d, n), s2 = numpy_variance(d, n, m);
    return symmetric_interval(m, bernstein_half_width(s2, n, IntervalConstants(alpha, false)));
}

GapInterval wald_interval(const double* d, std::size_t n, double population_size, double alpha) {
    const double m = numpy_mean(d, n), s2 = numpy_variance(d, n, m);
    return symmetric_interval(m, wald_half_width(s2, n, population_size, IntervalConstants(alpha)));
}

GapInterval hoeffding_serfling_interval(const double* d, std::size_t n, double population_size,
                                        double alpha) {
    return symmetric_interval(numpy_mean(d, n),
                              hoeffding_serfling_half_width(n, population_size, IntervalConstants(alpha, false)));
}

GapInterval gap_interval(IntervalMethod method, const double* d, std::size_t n,
                         double population_size, double alpha, double* scratch) {
    return within_feasible_range(method, gap_interval_unclipped(method, d, n, population_size, alpha, scratch), n,
                                 population_size);
}

void gap_intervals(const IntervalMethod* methods, std::size_t n_methods, const double* d,
                         std::size_t n_audits, std::size_t n, const double* population_size,
                         double alpha, double* low, double* high, double* estimate,
                         double* half_width, int n_threads) {
    if (!(alpha > 0.0 && alpha < 1.0))
        throw argument_error("alpha", " must lie in (0, 1); got " + std::to_string(alpha));
    for (std::size_t k = 0; k < n_methods; ++k) {
        const int code = static_cast<int>(methods[k]);
        if (code < 0 || code >= kIntervalMethodCount) throw std::invalid_argument("unknown interval method");
    }
    for (std::size_t a = 0; a < n_audits; ++a) {
        const double pop = population_size ? population_size[a] : 0.0;
        std::string msg = check_gaps(d + a * n, n, pop, "gaps");
        if (!msg.empty()) {
            if (n_audits > 1) msg = "audit " + std::to_string(a) + ": " + msg;
            throw std::invalid_argument(msg);
        }
        for (std::size_t k = 0; k < n_methods; ++k)
            if (interval_traits(methods[k]).needs_population && !(pop > 0.0))
                throw std::invalid_argument(std::string("population_size is required for the ") +
                                            interval_traits(methods[k]).name + " interval");
    }
    parallel_for_blocks(n_audits, n_threads, kMinAuditsPerThread, [&](std::size_t begin, std::size_t end) {
        std::vector<double> scratch(kBettingScratchPerParent * n);
        CancelEvery cancel;
        for (std::size_t a = begin; a < end; ++a) {
            cancel.add(n * n_methods);
            const double pop = population_size ? population_size[a] : 0.0;
            for (std::size_t k = 0; k < n_methods; ++k) {
                const GapInterval r = gap_interval(methods[k], d + a * n, n, pop, alpha, scratch.data());
                const std::size_t o = k * n_audits + a;
                low[o] = r.low;
                high[o] = r.high;
                estimate[o] = r.estimate;
                half_width[o] = r.half_width;
            }
        }
    });
}

}  // namespace truescore

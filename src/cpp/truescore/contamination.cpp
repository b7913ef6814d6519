#include "truescore/contamination.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/summation.hpp"

namespace truescore {
namespace {

// Mean and sd when NumPy's direct formula would overflow (|values| beyond ~1e154 make
// squared deviations infinite). Scaling by the largest magnitude keeps every
// intermediate bounded; NumPy itself returns inf or nan here.
void scaled_moments(const double* x, std::size_t m, bool need_mean, double* mean, double* sd) {
    double scale = 0.0;
    for (std::size_t i = 0; i < m; ++i) scale = std::max(scale, std::fabs(x[i]));
    if (scale == 0.0) {
        if (need_mean) *mean = 0.0;
        *sd = 0.0;
        return;
    }
    const double mean_s =
        pairwise_sum(m, [x, scale](std::size_t i) { return x[i] / scale; }) / static_cast<double>(m);
    if (need_mean) *mean = mean_s * scale;
    if (m < 2) {
        *sd = 0.0;
        return;
    }
    const double ss = pairwise_sum(m, [x, scale, mean_s](std::size_t i) {
        const double d = x[i] / scale - mean_s;
        return d * d;
    });
    *sd = scale * std::sqrt(ss / static_cast<double>(m - 1));
}

}  // namespace

bool rank_test_one(double canonical, const double* x, std::size_t m, std::int64_t* count,
                   double* p_value, double* mean, double* sd, double* z_score) {
    std::int64_t c = 0;
    double mu = (0.0 + numpy_sum_count_ge(x, m, canonical, &c)) / static_cast<double>(m);
    double s = 0.0;
    if (!std::isfinite(mu)) {
        // A NaN or infinity in x makes the sum non-finite; so can an overflow of finite
        // values. Only now is it worth looking at every value.
        for (std::size_t i = 0; i < m; ++i)
            if (!std::isfinite(x[i])) return false;
        scaled_moments(x, m, true, &mu, &s);
    } else if (m > 1) {
        // numpy.std(ddof=1): squared deviations from the mean, pairwise-summed.
        const double ss = 0.0 + pairwise_sum(m, [x, mu](std::size_t i) {
                              const double d = x[i] - mu;
                              return d * d;
                          });
        s = std::sqrt(ss / static_cast<double>(m - 1));
        if (!std::isfinite(s)) scaled_moments(x, m, false, &mu, &s);
    }
    *count = c;
    // Same expression and rounding as truescore: (1 + count) / (m + 1) in doubles.
    *p_value = (1.0 + static_cast<double>(c)) / (static_cast<double>(m) + 1.0);
    *mean = mu;
    *sd = s;
    *z_score = s > 0.0 ? (canonical - mu) / s : 0.0;
    return true;
}

namespace {

template <class Offset>
std::int64_t rank_tests_impl(const double* canonical, const double* values, Offset offset,
                             std::size_t n_shards, RankOutputs out, int n_threads) {
    const int threads = resolve_threads(n_threads);
    // Each block records its own first bad shard; blocks are disjoint and ordered, so the
    // minimum over blocks is the first bad shard overall, whatever the thread count.
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    std::mutex lock;
    parallel_for_blocks(n_shards, threads, 64, [&](std::size_t begin, std::size_t end) {
        std::int64_t local = std::numeric_limits<std::int64_t>::max();
        for (std::size_t i = begin; i < end; ++i) {
            const std::size_t lo = offset(i), hi = offset(i + 1);
            if (!rank_test_one(canonical[i], values + lo, hi - lo, out.count + i, out.p_value + i,
                               out.mean + i, out.sd + i, out.z_score + i)) {
                local = static_cast<std::int64_t>(i);
                break;
            }
        }
        std::lock_guard<std::mutex> guard(lock);
        bad = std::min(bad, local);
    });
    return bad == std::numeric_limits<std::int64_t>::max() ? -1 : bad;
}

}  // namespace

std::int64_t rank_tests_dense(const double* canonical, const double* permuted,
                              std::size_t n_shards, std::size_t m, RankOutputs out,
                              int n_threads) {
    return rank_tests_impl(
        canonical, permuted, [m](std::size_t i) { return i * m; }, n_shards, out, n_threads);
}

std::int64_t rank_tests_ragged(const double* canonical, const double* values,
                               const std::int64_t* offsets, std::size_t n_shards,
                               RankOutputs out, int n_threads) {
    return rank_tests_impl(
        canonical, values, [offsets](std::size_t i) { return static_cast<std::size_t>(offsets[i]); },
        n_shards, out, n_threads);
}

std::int64_t row_means_ragged(const double* values, const std::int64_t* offsets,
                              std::size_t n_rows, double* means, int n_threads) {
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    std::mutex lock;
    parallel_for_blocks(n_rows, resolve_threads(n_threads), 64,
                        [&](std::size_t begin, std::size_t end) {
        std::int64_t local = std::numeric_limits<std::int64_t>::max();
        for (std::size_t i = begin; i < end; ++i) {
            const double* x = values + offsets[i];
            const std::size_t m = static_cast<std::size_t>(offsets[i + 1] - offsets[i]);
            bool finite = true;
            for (std::size_t j = 0; j < m; ++j) finite &= std::isfinite(x[j]);
            if (!finite) {
                local = static_cast<std::int64_t>(i);
                break;
            }
            double mu = numpy_sum(x, m) / static_cast<double>(m);
            if (!std::isfinite(mu)) {
                double unused = 0.0;
                scaled_moments(x, m, true, &mu, &unused);
            }
            means[i] = mu;
        }
        std::lock_guard<std::mutex> guard(lock);
        bad = std::min(bad, local);
    });
    return bad == std::numeric_limits<std::int64_t>::max() ? -1 : bad;
}

double fisher_log_sf(double x, std::int64_t k) {
    // P(chi2_{2k} > x) = P(Poisson(x/2) <= k-1) = sum_{j<k} e^{-h} h^j / j!, h = x/2.
    // Terms rise then fall; accumulate log-sum-exp around the largest term.
    if (x <= 0.0) return 0.0;
    const double h = x / 2.0, log_h = std::log(h);
    double max_term = -std::numeric_limits<double>::infinity();
    for (std::int64_t j = 0; j < k; ++j)
        max_term = std::max(max_term, static_cast<double>(j) * log_h - std::lgamma(static_cast<double>(j) + 1.0));
    double acc = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
        acc += std::exp(static_cast<double>(j) * log_h - std::lgamma(static_cast<double>(j) + 1.0) - max_term);
    return std::min(0.0, -h + max_term + std::log(acc));
}

}  // namespace truescore


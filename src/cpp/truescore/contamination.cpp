#include "truescore/contamination.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/summation.hpp"

namespace truescore {
namespace {

// Moments when NumPy's direct formula would overflow (|values| beyond ~1e154 make the
// squared deviations infinite; NumPy then reports inf or nan). The values are scaled by
// a power of two, which is exact, so this is the same arithmetic as the direct formula
// carried out with a wider exponent range. z is formed in the scaled units: sd itself
// can exceed the largest double when the values come near it, and z must stay a number.
struct Scaled {
    double mean;
    double sd;
    double z;
};

Scaled scaled_moments(const double* x, std::size_t m, double canonical) {
    double largest = 0.0;
    for (std::size_t i = 0; i < m; ++i) largest = std::max(largest, std::fabs(x[i]));
    if (largest == 0.0) return {0.0, 0.0, 0.0};
    int exponent = 0;
    std::frexp(largest, &exponent);
    const int down = -exponent;  // x * 2^down has magnitude below 1
    const double mean_s =
        pairwise_sum(m, [x, down](std::size_t i) { return std::ldexp(x[i], down); }) /
        static_cast<double>(m);
    const double mean = std::ldexp(mean_s, exponent);
    if (m < 2) return {mean, 0.0, 0.0};
    const double ss = pairwise_sum(m, [x, down, mean_s](std::size_t i) {
        const double d = std::ldexp(x[i], down) - mean_s;
        return d * d;
    });
    const double sd_s = std::sqrt(ss / static_cast<double>(m - 1));
    const double z = sd_s > 0.0 ? (std::ldexp(canonical, down) - mean_s) / sd_s : 0.0;
    return {mean, std::ldexp(sd_s, exponent), z};
}

}  // namespace

namespace {

// The kernel the row passes run: AVX-512 where the CPU has it (and the switch allows),
// else the vector level (random.hpp). All give the same bits.
RowPath row_path() {
    if (simd::avx512()) return RowPath::avx512;
    return static_cast<RowPath>(simd::level());
}

// One shard on the kernel `path` (rank_test).
bool rank_row(RowPath path, double canonical, const double* x, std::size_t m, std::int64_t* count,
              double* p_value, double* mean, double* sd, double* z_score, std::ptrdiff_t ahead = 0) {
    std::int64_t c = 0;
    double mu = (0.0 + numpy_sum_count_ge(path, x, m, canonical, &c)) / static_cast<double>(m);
    double s = 0.0;
    double z = 0.0;
    if (!std::isfinite(mu)) {
        // A NaN or infinity in x makes the sum non-finite; so can an overflow of finite
        // values. Only now is it worth looking at every value.
        for (std::size_t i = 0; i < m; ++i)
            if (!std::isfinite(x[i])) return false;
        const Scaled r = scaled_moments(x, m, canonical);
        mu = r.mean;
        s = r.sd;
        z = r.z;
    } else if (m > 1) {
        // numpy.std(ddof=1): squared deviations from the mean, pairwise-summed.
        const double ss = 0.0 + numpy_sum_sq_dev(path, x, m, mu, ahead);
        s = std::sqrt(ss / static_cast<double>(m - 1));
        if (std::isfinite(s)) {
            z = s > 0.0 ? (canonical - mu) / s : 0.0;
        } else {
            const Scaled r = scaled_moments(x, m, canonical);
            s = r.sd;
            z = r.z;
        }
    }
    *count = c;
    // Same expression and rounding as truescore: (1 + count) / (m + 1) in doubles.
    *p_value = (1.0 + static_cast<double>(c)) / (static_cast<double>(m) + 1.0);
    *mean = mu;
    *sd = s;
    *z_score = z;
    return true;
}

}  // namespace

const char* rank_tests_vector_path() {
    switch (row_path()) {
        case RowPath::avx512: return "avx512";
        case RowPath::avx: return "avx";
        case RowPath::sse2: return "sse2";
        default: return "plain";
    }
}

bool rank_test(double canonical, const double* x, std::size_t m, std::int64_t* count,
                   double* p_value, double* mean, double* sd, double* z_score) {
    return rank_row(row_path(), canonical, x, m, count, p_value, mean, sd, z_score);
}

namespace {

// Where shard i's permutations lie in the values: [start, start + length).
struct Row {
    std::size_t start;
    std::size_t length;
};

template <class Rows>
std::int64_t rank_tests_impl(const double* canonical, const double* values, Rows row,
                             std::size_t n_shards, RankOutputs out, int n_threads) {
    const int threads = resolve_threads(n_threads);
    // Shards are claimed kShardsPerClaim at a time by whichever worker is free (one atomic
    // increment per claim), not split in fixed shares: a worker whose core another process
    // takes computes fewer shards instead of keeping the whole call waiting for its share
    // (two threads were slower than one on a loaded machine that way). A shard's outputs
    // depend on its row alone, so who computes it never changes a bit. Each claim stops at
    // its first bad shard; every claim is run, so the minimum over them is the first bad
    // shard overall, whatever the thread count and the claiming order.
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    std::mutex lock;
    const RowPath path = row_path();
    std::atomic<std::size_t> next{0};
    parallel_for_blocks(n_shards, threads, kMinShardsPerThread, [&](std::size_t, std::size_t) {
        std::int64_t local = std::numeric_limits<std::int64_t>::max();
        CancelEvery cancel;
        for (;;) {
            const std::size_t begin = next.fetch_add(kShardsPerClaim, std::memory_order_relaxed);
            if (begin >= n_shards) break;
            const std::size_t end = std::min(n_shards, begin + kShardsPerClaim);
            for (std::size_t i = begin; i < end; ++i) {
                const Row r = row(i);
                cancel.add(r.length);
                // The second pass over the row reads it from L1; meanwhile the next row is
                // prefetched, so the memory stays busy and the row is read from DRAM once.
                const std::ptrdiff_t ahead =
                    i + 1 < end ? static_cast<std::ptrdiff_t>(row(i + 1).start - r.start) * 8 : 0;
                if (!rank_row(path, canonical[i], values + r.start, r.length, out.count + i, out.p_value + i,
                              out.mean + i, out.sd + i, out.z_score + i, ahead)) {
                    local = std::min(local, static_cast<std::int64_t>(i));
                    break;
                }
            }
        }
        std::lock_guard<std::mutex> guard(lock);
        bad = std::min(bad, local);
    });
    return bad == std::numeric_limits<std::int64_t>::max() ? -1 : bad;
}

}  // namespace

std::int64_t rank_tests_dense(const double* canonical, const double* permuted,
                              std::size_t n_shards, std::size_t m, std::size_t row_stride,
                              RankOutputs out, int n_threads) {
    return rank_tests_impl(
        canonical, permuted, [m, row_stride](std::size_t i) { return Row{i * row_stride, m}; }, n_shards, out,
        n_threads);
}

std::int64_t rank_tests_ragged(const double* canonical, const double* values,
                               const std::int64_t* offsets, std::size_t n_shards,
                               RankOutputs out, int n_threads) {
    return rank_tests_impl(
        canonical, values,
        [offsets](std::size_t i) {
            return Row{static_cast<std::size_t>(offsets[i]), static_cast<std::size_t>(offsets[i + 1] - offsets[i])};
        },
        n_shards, out, n_threads);
}

std::int64_t row_means_ragged(const double* values, const std::int64_t* offsets,
                              std::size_t n_rows, double* means, int n_threads) {
    std::int64_t bad = std::numeric_limits<std::int64_t>::max();
    std::mutex lock;
    parallel_for_blocks(n_rows, resolve_threads(n_threads), kMinShardsPerThread,
                        [&](std::size_t begin, std::size_t end) {
        std::int64_t local = std::numeric_limits<std::int64_t>::max();
        CancelEvery cancel;
        for (std::size_t i = begin; i < end; ++i) {
            const double* x = values + offsets[i];
            const std::size_t m = static_cast<std::size_t>(offsets[i + 1] - offsets[i]);
            cancel.add(m);
            bool finite = true;
            for (std::size_t j = 0; j < m; ++j) finite &= std::isfinite(x[j]);
            if (!finite) {
                local = static_cast<std::int64_t>(i);
                break;
            }
            double mu = numpy_sum(x, m) / static_cast<double>(m);
            if (!std::isfinite(mu)) mu = scaled_moments(x, m, 0.0).mean;
            means[i] = mu;
        }
        std::lock_guard<std::mutex> guard(lock);
        bad = std::min(bad, local);
    });
    return bad == std::numeric_limits<std::int64_t>::max() ? -1 : bad;
}

double fisher_log_sf(double x, std::int64_t k) {
    // P(chi2_{2k} > x) = P(Poisson(h) <= k - 1) = e^{-h} sum_{j<k} h^j / j!, h = x / 2.
    // Sum the terms relative to the largest one (j* = min(k - 1, floor(h))), walking
    // down and up from it by the ratios j / h and h / (j + 1) until they no longer
    // register: O(sqrt(h)) terms, each a multiply, and no underflow anywhere.
    if (x <= 0.0) return 0.0;
    const double h = x / 2.0;
    const double top = std::min(static_cast<double>(k - 1), std::floor(h));
    const std::int64_t mode = static_cast<std::int64_t>(top);
    double sum = 1.0;
    double term = 1.0;
    for (std::int64_t j = mode; j > 0; --j) {
        term *= static_cast<double>(j) / h;
        sum += term;
        if (term < 1e-17 * sum) break;
    }
    term = 1.0;
    for (std::int64_t j = mode + 1; j < k; ++j) {
        term *= h / static_cast<double>(j);
        sum += term;
        if (term < 1e-17 * sum) break;
    }
    const double log_mode_term = static_cast<double>(mode) * std::log(h) - std::lgamma(top + 1.0);
    return std::min(0.0, -h + log_mode_term + std::log(sum));
}

}  // namespace truescore

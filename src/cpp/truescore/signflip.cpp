#include "truescore/signflip.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"

namespace truescore {

namespace {

struct Counts {
    std::int64_t greater = 0, less = 0, two_sided = 0, k0 = 0;
};

// Classify one pattern from the sum of its flipped differences and how many it flips;
// writes the pattern's critical mean (NaN for the identity-like pattern with nothing
// flipped, which counts for every mu).
inline void classify(double flipped_sum, std::size_t k, double total, double tol, Counts& c,
                     double* critical) {
    if (k == 0) {
        ++c.greater;
        ++c.less;
        ++c.two_sided;
        ++c.k0;
        *critical = std::numeric_limits<double>::quiet_NaN();
        return;
    }
    if (flipped_sum <= tol) ++c.greater;
    if (flipped_sum >= -tol) ++c.less;
    if (std::fabs(total - 2.0 * flipped_sum) >= std::fabs(total) - 2.0 * tol) ++c.two_sided;
    *critical = flipped_sum / static_cast<double>(k);
}

}  // namespace

SignFlipResult sign_flip_test(const double* d, std::size_t n, bool exact,
                              std::int64_t n_resamples, std::uint64_t key0, std::uint64_t key1,
                              double alpha_tail, int n_threads) {
    double total = 0.0, abs_total = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        total += d[i];
        abs_total += std::fabs(d[i]);
    }
    const double tol = 8.0 * static_cast<double>(n) * DBL_EPSILON * abs_total;

    const std::size_t n_patterns =
        exact ? (std::size_t{1} << n) : static_cast<std::size_t>(n_resamples);
    std::vector<double> critical(n_patterns);
    const int threads = resolve_threads(n_threads);

    // Work is split in fixed blocks of patterns; each block keeps its own counts, summed
    // in block order afterwards (integer sums: order would not matter anyway).
    const std::size_t block = static_cast<std::size_t>(kSignFlipBlock);
    const std::size_t n_blocks = (n_patterns + block - 1) / block;
    std::vector<Counts> per_block(n_blocks);
    const std::size_t words = (n + 63) / 64;

    parallel_for_blocks(n_blocks, threads, 4, [&](std::size_t b0, std::size_t b1) {
        std::vector<std::uint64_t> bits(words);
        for (std::size_t blk = b0; blk < b1; ++blk) {
            Counts c;
            const std::size_t first = blk * block;
            const std::size_t last = std::min(n_patterns, first + block);
            Philox gen = Philox::for_task(key0, key1, static_cast<std::uint64_t>(blk));
            for (std::size_t p = first; p < last; ++p) {
                if (exact) {
                    bits[0] = static_cast<std::uint64_t>(p);
                } else {
                    for (std::size_t w = 0; w < words; ++w) bits[w] = gen.next_u64();
                }
                double flipped = 0.0;
                std::size_t k = 0;
                for (std::size_t i = 0; i < n; ++i) {
                    if ((bits[i >> 6] >> (i & 63)) & 1u) {
                        flipped += d[i];
                        ++k;
                    }
                }
                classify(flipped, k, total, tol, c, &critical[p]);
            }
            per_block[blk] = c;
        }
    });

    Counts sum;
    for (const Counts& c : per_block) {
        sum.greater += c.greater;
        sum.less += c.less;
        sum.two_sided += c.two_sided;
        sum.k0 += c.k0;
    }

    // p(mu) = (base + k0 + #{m_S <= mu}) / N for "greater"; the confidence set
    // {mu : p(mu) > alpha_tail} is [r-th smallest m_S, inf) with r below.
    critical.erase(std::remove_if(critical.begin(), critical.end(),
                                  [](double v) { return std::isnan(v); }),
                   critical.end());
    const std::int64_t base = exact ? 0 : 1;
    const double big_n = static_cast<double>(n_patterns) + static_cast<double>(base);
    const std::int64_t r =
        static_cast<std::int64_t>(std::floor(alpha_tail * big_n)) + 1 - base - sum.k0;
    const double inf = std::numeric_limits<double>::infinity();
    double lower = -inf, upper = inf;
    const auto m = static_cast<std::int64_t>(critical.size());
    if (r > 0 && r <= m) {
        std::nth_element(critical.begin(), critical.begin() + (r - 1), critical.end());
        lower = critical[static_cast<std::size_t>(r - 1)];
        std::nth_element(critical.begin(), critical.begin() + (m - r), critical.end());
        upper = critical[static_cast<std::size_t>(m - r)];
    }
    return SignFlipResult{static_cast<std::int64_t>(n_patterns), sum.greater, sum.less,
                          sum.two_sided, lower, upper};
}

}  // namespace truescore

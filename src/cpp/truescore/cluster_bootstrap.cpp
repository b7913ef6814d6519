#include "truescore/cluster_bootstrap.hpp"

#include <algorithm>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"

namespace truescore {

void cluster_bootstrap_difference(const double* treated_sum, const double* treated_count,
                                  const double* control_sum, const double* control_count,
                                  std::size_t n_families, std::int64_t n_resamples,
                                  std::uint64_t key0, std::uint64_t key1, double* out,
                                  int n_threads) {
    const std::size_t total = static_cast<std::size_t>(n_resamples);
    const std::size_t block = static_cast<std::size_t>(kClusterBlock);
    const std::size_t n_blocks = (total + block - 1) / block;
    const auto f = static_cast<std::uint64_t>(n_families);
    parallel_for_blocks(n_blocks, resolve_threads(n_threads), 2, [&](std::size_t b0, std::size_t b1) {
        for (std::size_t blk = b0; blk < b1; ++blk) {
            Philox gen = Philox::for_task(key0, key1, static_cast<std::uint64_t>(blk));
            const std::size_t last = std::min(total, (blk + 1) * block);
            for (std::size_t r = blk * block; r < last; ++r) {
                // Sums in draw order: fixed, so the statistic is reproducible bit for bit.
                double ts = 0.0, tn = 0.0, cs = 0.0, cn = 0.0;
                for (std::size_t j = 0; j < n_families; ++j) {
                    const std::size_t k = static_cast<std::size_t>(gen.below(f));
                    ts += treated_sum[k];
                    tn += treated_count[k];
                    cs += control_sum[k];
                    cn += control_count[k];
                }
                out[r] = ts / tn - cs / cn;
            }
        }
    });
}

}  // namespace truescore

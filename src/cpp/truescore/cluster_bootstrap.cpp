#include "truescore/cluster_bootstrap.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "truescore/parallel.hpp"
#include "truescore/random.hpp"
#include "truescore/sampling.hpp"

namespace truescore {

namespace {

// The statistic of cluster_bootstrap_means: columns (sum, size).
struct RatioMean {
    const double* sums;
    const std::int64_t* sizes;
    struct Totals {
        double sum = 0.0;
        std::int64_t size = 0;
    };
    void add(Totals& t, std::size_t c) const {
        t.sum += sums[c];
        t.size += sizes[c];
    }
    double value(const Totals& t) const { return t.sum / static_cast<double>(t.size); }
};

// The statistic of cluster_bootstrap_difference: columns (treated sum, treated count,
// control sum, control count).
struct RatioDifference {
    const double *treated_sum, *treated_count, *control_sum, *control_count;
    struct Totals {
        double ts = 0.0, tn = 0.0, cs = 0.0, cn = 0.0;
    };
    void add(Totals& t, std::size_t c) const {
        t.ts += treated_sum[c];
        t.tn += treated_count[c];
        t.cs += control_sum[c];
        t.cn += control_count[c];
    }
    double value(const Totals& t) const { return t.ts / t.tn - t.cs / t.cn; }
};

// The one cluster-bootstrap loop: out[r] = statistic of the column sums over n_clusters
// indices drawn by Sampler from resample r's block stream, sums in draw order.
template <class Sampler, class Statistic>
void cluster_resamples(const StreamBlocks& streams, std::size_t n_clusters, const Statistic& statistic,
                       double* out, int n_threads) {
    const auto f = static_cast<std::uint64_t>(n_clusters);
    for_each_stream_block(streams, n_threads, min_blocks_for_steps(streams.block, n_clusters), no_state,
                          [&](NoState&, Philox& gen, std::size_t, std::size_t r_begin, std::size_t r_end) {
        Sampler pick(gen, f);
        for (std::size_t r = r_begin; r < r_end; ++r) {
            typename Statistic::Totals totals;
            for (std::size_t j = 0; j < n_clusters; ++j) statistic.add(totals, static_cast<std::size_t>(pick.draw()));
            out[r] = statistic.value(totals);
        }
    });
}

// cluster_bootstrap_means' loop: resample r's sum of drawn cluster sums is gathered_sum's
// (draw i to accumulator i mod 4) over the block's r-th run of G draws (gathered_sums: one
// wide stream per block of resamples, the fused AVX-512 kernel where the CPU has it), and
// its total size an exact tally of the same draws -- or G times the size when every
// cluster has the same size (no tally needed: the same number).
void cluster_mean_resamples(const StreamBlocks& streams, std::size_t n_clusters, const RatioMean& statistic,
                            double* out, int n_threads) {
    const auto f = static_cast<std::uint64_t>(n_clusters);
    const std::int64_t* sizes = statistic.sizes;
    const bool equal = std::all_of(sizes, sizes + n_clusters, [&](std::int64_t s) { return s == sizes[0]; });
    const double equal_size = static_cast<double>(sizes[0]) * static_cast<double>(n_clusters);
    // The sizes as doubles for the tally: sums of integers below 2^53, so exact in any
    // order.
    std::vector<double> size_of(sizes, sizes + n_clusters);
    const double* tally_of = equal ? nullptr : size_of.data();
    // Free workers claim the next block (as bootstrap_means does): a worker whose core is
    // shared with another process does fewer; each block is the same for every thread count.
    for_each_stream_block_claimed(streams, n_threads, min_blocks_for_steps(streams.block, n_clusters), 1,
                                  [] { return std::vector<std::uint64_t>(kIndexChunk); },
                                  [&](std::vector<std::uint64_t>& idx, Philox& gen, std::size_t,
                                      std::size_t r_begin, std::size_t r_end) {
        PackedIndexSampler pick(gen, f);
        double* o = out + r_begin;
        gathered_sums(pick, statistic.sums, tally_of, n_clusters, r_end - r_begin, idx.data(),
                      [o, equal, equal_size](std::size_t r, double sum, double size) {
                          o[r] = sum / (equal ? equal_size : size);
                      });
    });
}

}  // namespace

void cluster_bootstrap_means(const double* sums, const std::int64_t* sizes, std::size_t n_clusters,
                             std::size_t n_boot, std::uint64_t key0, std::uint64_t key1, double* out,
                             int n_threads) {
    if (n_clusters == 0) throw std::invalid_argument("cluster bootstrap needs clusters");
    cluster_mean_resamples(StreamBlocks{key0, key1, n_boot, kBootstrapBlock}, n_clusters, RatioMean{sums, sizes},
                           out, n_threads);
}

void cluster_bootstrap_difference(const double* treated_sum, const double* treated_count,
                                  const double* control_sum, const double* control_count,
                                  std::size_t n_families, std::size_t n_resamples,
                                  std::uint64_t key0, std::uint64_t key1, double* out,
                                  int n_threads) {
    if (n_families == 0) throw std::invalid_argument("cluster bootstrap needs families");
    cluster_resamples<BelowSampler>(StreamBlocks{key0, key1, n_resamples, kFamilyBootstrapBlock}, n_families,
                                    RatioDifference{treated_sum, treated_count, control_sum, control_count},
                                    out, n_threads);
}

}  // namespace truescore

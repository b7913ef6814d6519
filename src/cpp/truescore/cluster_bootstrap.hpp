// The cluster bootstrap: resample whole clusters (task families, documents, prompts
// sharing a template) with replacement, since their members are correlated and resampling
// observations would understate the variance.
//
// One loop serves both statistics: resample r draws n_clusters cluster indices with
// replacement and adds up, in draw order, the per-cluster columns the statistic needs,
// then forms the statistic from those sums:
//
//   cluster_bootstrap_means       sum of drawn sums / sum of drawn sizes (one group);
//   cluster_bootstrap_difference  treated sums / treated counts - control sums / control
//                                 counts (two groups observed in every family).
//
// Randomness: resample r draws from the Philox stream of its block (parallel.hpp's table):
// cluster_bootstrap_means, blocks of kBootstrapBlock resamples and PackedIndexSampler
// indices (as compare.hpp's bootstrap_means); cluster_bootstrap_difference, blocks of
// kFamilyBootstrapBlock and one Philox::below per index. The two keep the draws they were
// released with (the reproducibility contract), so the same data give different
// resamples under the two entry points; neither depends on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

// sums, sizes: n_clusters >= 1 entries, sizes >= 1. Writes n_boot ratio means to out.
void cluster_bootstrap_means(const double* sums, const std::int64_t* sizes, std::size_t n_clusters,
                             std::size_t n_boot, std::uint64_t key0, std::uint64_t key1, double* out,
                             int n_threads);

// Per-family sums and counts (length n_families >= 1, every count >= 1). Writes
// n_resamples statistics to out, in resample order.
void cluster_bootstrap_difference(const double* treated_sum, const double* treated_count,
                                  const double* control_sum, const double* control_count,
                                  std::size_t n_families, std::size_t n_resamples,
                                  std::uint64_t key0, std::uint64_t key1, double* out,
                                  int n_threads);

}  // namespace truescore

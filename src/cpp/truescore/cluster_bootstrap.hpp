// Family-clustered bootstrap of a difference in means.
//
// Observations come in families (task families, documents, prompts sharing a template)
// whose members are correlated; resampling observations would understate the variance.
// Each resample draws F families with replacement and recomputes
//
//     (sum of treated sums / sum of treated counts) - (sum of control sums / sum of control counts)
//
// over the drawn families. Resample b draws its F family indices from the Philox stream
// of task b / kClusterBlock, so the resampled statistics do not depend on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace truescore {

inline constexpr std::int64_t kClusterBlock = 64;

// Per-family sums and counts (length n_families, every count >= 1). Writes n_resamples
// statistics to out, in resample order.
void cluster_bootstrap_difference(const double* treated_sum, const double* treated_count,
                                  const double* control_sum, const double* control_count,
                                  std::size_t n_families, std::int64_t n_resamples,
                                  std::uint64_t key0, std::uint64_t key1, double* out,
                                  int n_threads);

}  // namespace truescore
